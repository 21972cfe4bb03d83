//! `/compare` and its JSON and CSV twins: GPUs side by side per model in
//! one scenario, with each model's best GPU, the savings and the ranges the
//! intervals allow, and a headline only where the spread supports one.

mod rows;

use rows::*;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, CompareParams, PageParams, Params, ViewParams};
use crate::view::{charts, format, model_path, view_of, view_query, View};
use crate::AppState;
use wattcounts_analytics::compare::{self, Comparison, ScenarioKey};
use wattcounts_analytics::leaderboard::LeaderboardRow;
use wattcounts_analytics::verdict::Estimate;
use wattcounts_service::views::CompareRequest;

struct Compared {
    comparison: Comparison,
    /// The rows compared: the chosen GPUs in the chosen scenario, by
    /// model, then least energy first.
    rows: Vec<LeaderboardRow>,
    headlines: Vec<compare::Headline>,
    present: Vec<ScenarioKey>,
    known: Vec<(String, String)>,
    view: View,
}

/// The compared GPUs and scenario, checked against the data (the
/// service's `compare_view`), and the view they were read from.
async fn comparison(
    s: &AppState,
    (params, view): &(CompareParams, ViewParams),
) -> Result<Compared, ApiError> {
    let q = view_query(view)?;
    let request = CompareRequest {
        // `gpu=a&gpu=b` (the form's checkboxes) or the older `gpus=a,b`.
        gpus: params
            .gpu
            .iter()
            .cloned()
            .chain(
                params
                    .gpus
                    .iter()
                    .flat_map(|v| v.split(',').map(str::to_string)),
            )
            .collect(),
        reference: given(&params.reference).map(str::to_string),
        scenario: params.scenario.clone(),
    };
    let (c, board) = s.service.compare_view(&q, &request).await?;
    Ok(Compared {
        comparison: c.comparison,
        rows: c.rows,
        headlines: c.headlines,
        present: c.present,
        known: c.known,
        view: view_of(&board, &q, view),
    })
}

#[derive(Template)]
#[template(path = "compare.html")]
struct ComparePage {
    /// Id, full name and the column's name (the full one in its title).
    gpus: Vec<(String, String, String)>,
    all_gpus: Vec<(String, String, bool)>,
    references: Vec<(String, String, bool)>,
    scenarios: Vec<(String, String, bool)>,
    scenario_label: String,
    latency_name: String,
    headline: String,
    rows: Vec<CompareRow>,
    headlines: Vec<HeadlineRow>,
    chart: String,
    json_link: String,
    csv_link: String,
    view: View,
    layout: crate::layout::Layout,
}

pub async fn compare_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<(CompareParams, ViewParams)>,
) -> Result<Response, PageError> {
    let Compared {
        comparison: c,
        headlines,
        present,
        known,
        view,
        ..
    } = comparison(&s, &params).await?;
    let selected: Vec<&String> = c.gpus.iter().map(|g| &g.0).collect();
    let gpu_param: Vec<String> = c.gpus.iter().map(|g| g.0.clone()).collect();
    let reference = c.headline.reference_gpu.as_ref().map(|r| r.0.clone());
    let kind = c.scenario.scenario;
    let chart = charts::dot_rows(
        &format!("compare-{}", c.scenario.slug()),
        &format!("Energy per token by model, {}", c.scenario.label()),
        "Each model as a row, each compared GPU as a coloured dot at its median energy per generated token (J) with its interval; GPUs that did not measure a model have no dot.",
        "J / token",
        &c.gpus.iter().map(|g| g.1.clone()).collect::<Vec<_>>(),
        &c.rows
            .iter()
            .map(|r| {
                (
                    r.model.clone(),
                    r.energy_per_token_j
                        .iter()
                        .zip(&r.energy_per_token_interval)
                        .map(|(v, i)| v.map(|v| Estimate::new(v, *i)))
                        .collect(),
                )
            })
            .collect::<Vec<_>>(),
    );
    let mut page = ComparePage {
        csv_link: String::new(),
        all_gpus: known
            .iter()
            .map(|(id, name)| (id.clone(), name.clone(), selected.contains(&id)))
            .collect(),
        references: c
            .gpus
            .iter()
            .map(|(id, name)| (id.clone(), name.clone(), Some(id) == reference.as_ref()))
            .collect(),
        scenarios: present
            .iter()
            .map(|k| (k.param(), k.label(), *k == c.scenario))
            .collect(),
        scenario_label: c.scenario.label(),
        latency_name: format!("{} ms", compare::latency_name(kind)),
        headline: headline_sentence(&c.headline),
        chart,
        rows: c
            .rows
            .iter()
            .map(|r| CompareRow {
                model: r.model.clone(),
                model_link: format!("{}?{}", model_path(&r.model), view.query),
                precision: crate::view::format::precision_of(&r.model),
                cells: r
                    .energy_per_token_j
                    .iter()
                    .zip(&r.energy_per_token_interval)
                    .enumerate()
                    .map(|(i, (v, iv))| {
                        let e = v.map(|v| Estimate::new(v, *iv));
                        CompareCell {
                            ept: format::value(e, 1.0),
                            range: format::range(e, 1.0),
                            best: r.best == Some(i),
                            winner: r.winner == Some(i),
                            measured: v.is_some(),
                        }
                    })
                    .collect(),
                savings: r
                    .saving
                    .iter()
                    .enumerate()
                    .map(|(i, sv)| match sv {
                        Some(sv) => format::saving(sv),
                        None if r.best == Some(i) => "best".into(),
                        None if r.energy_per_token_j[i].is_none() => "not measured".into(),
                        None => "–".into(),
                    })
                    .collect(),
                latencies: r
                    .latency_s
                    .iter()
                    .map(|l| {
                        l.map_or("–".into(), |v| {
                            wattcounts_analytics::verdict::sig(v * 1e3)
                        })
                    })
                    .collect(),
                tie: r.verdict.as_ref().is_some_and(|v| v.is_tie()),
                verdict: match (&r.verdict, r.best) {
                    (Some(v), Some(_)) if v.is_tie() => "tie within measurement noise".into(),
                    (Some(_), Some(b)) if r.winner == Some(b) => {
                        format!("{} uses less", c.gpus[b].1)
                    }
                    (Some(_), Some(b)) => format!("{} lowest; others within noise", c.gpus[b].1),
                    _ => "one GPU only: no comparison".into(),
                },
            })
            .collect(),
        headlines: headlines
            .iter()
            .map(|h| headline_row(h, h.scenario == c.scenario))
            .collect(),
        json_link: format!(
            "/api/v1/compare?gpus={}&scenario={}{}{}",
            gpu_param.join(","),
            c.scenario.param(),
            reference
                .as_ref()
                .map_or(String::new(), |r| format!("&ref={r}")),
            if view.query.is_empty() {
                String::new()
            } else {
                format!("&{}", view.query)
            }
        ),
        gpus: c
            .gpus
            .into_iter()
            .map(|(id, name)| {
                let short = column_name(&name).to_string();
                (id, name, short)
            })
            .collect(),
        layout: crate::layout::Layout::of(view.demo),
        view,
    };
    page.csv_link = crate::view::csv_twin(&page.json_link);
    Ok(render(StatusCode::OK, &page))
}

/// `/api/v1/compare`.
#[derive(Serialize, ToSchema)]
pub struct CompareAnswer {
    /// The view in words.
    pub view: String,
    pub comparison: Comparison,
    pub headlines: Vec<compare::Headline>,
}

#[utoipa::path(get, path = "/api/v1/compare.csv", tag = "gpus",
    summary = "The compared rows as CSV: the chosen GPUs in the chosen scenario, the leaderboard CSV's columns",
    params(CompareParams, ViewParams),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn compare_csv(
    State(s): State<AppState>,
    Params(params): Params<(CompareParams, ViewParams)>,
) -> Result<Response, ApiError> {
    let c = comparison(&s, &params).await?;
    Ok(crate::view::csv::rows_response(
        "wattcounts-compare.csv",
        &c.rows,
        1,
    ))
}

#[utoipa::path(get, path = "/api/v1/compare", tag = "gpus",
    summary = "Two or more GPUs side by side per model, with the saving and its verdict",
    params(CompareParams, ViewParams),
    responses((status = 200, body = CompareAnswer)))]
pub async fn compare_json(
    State(s): State<AppState>,
    Params(params): Params<(CompareParams, ViewParams)>,
) -> Result<Response, ApiError> {
    let c = comparison(&s, &params).await?;
    Ok(Json(CompareAnswer {
        view: c.view.note,
        comparison: c.comparison,
        headlines: c.headlines,
    })
    .into_response())
}

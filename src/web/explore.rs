//! The reader's pages beyond the leaderboard, each with a JSON twin:
//! `/gpus`, `/gpus/{id}`, `/compare`, `/models/{id}`. Accepted data only;
//! parameters come from allow-lists and anything else is a 400.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;

use super::charts::{self, Dot};
use super::error::ApiError;
use super::pages::{render, PageError, VERSION};
use super::AppState;
use crate::catalog;
use crate::compare::{self, Comparison, ModelScenario, ScenarioKey};
use crate::leaderboard::{self, Entry};

/// Every accepted group of the view the reader picked (origin, protocol):
/// a page compares within one view, never across.
async fn entries(
    s: &AppState,
    params: &HashMap<String, String>,
    narrow: impl FnOnce(&mut leaderboard::Query),
) -> Result<(Vec<Entry>, View), ApiError> {
    let mut q = view_query(params)?;
    narrow(&mut q);
    let board = s.service.all_groups(&q).await?;
    let view = View {
        note: super::pages::view_note(&board, &q),
        demo: board.origin == crate::domain::Origin::Demo,
        query: view_params(params),
    };
    Ok((board.entries, view))
}

/// Which view a page shows, in words, and the parameters that chose it
/// (kept on links that stay in the view).
pub(crate) struct View {
    pub note: String,
    pub demo: bool,
    pub query: String,
}

/// `origin` and `protocol`, parsed as the leaderboard parses them.
fn view_query(params: &HashMap<String, String>) -> Result<leaderboard::Query, ApiError> {
    let view: HashMap<String, String> = params
        .iter()
        .filter(|(k, _)| VIEW_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    super::pages::parse_query(&view)
}

const VIEW_PARAMS: [&str; 2] = ["origin", "protocol"];

fn view_params(params: &HashMap<String, String>) -> String {
    let mut pairs: Vec<String> = VIEW_PARAMS
        .iter()
        .filter_map(|k| {
            params
                .get(*k)
                .filter(|v| !v.is_empty())
                .map(|v| format!("{k}={v}"))
        })
        .collect();
    pairs.sort();
    pairs.join("&")
}

fn only_params(params: &HashMap<String, String>, allowed: &[&str]) -> Result<(), ApiError> {
    match params.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(ApiError::bad_request(
            "unknown_parameter",
            format!(
                "unknown parameter '{k}'; this page takes {}",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// `scenario=batch` or `server@RATE`, one of those present in the data.
fn pick_scenario(
    params: &HashMap<String, String>,
    present: &[ScenarioKey],
) -> Result<Option<ScenarioKey>, ApiError> {
    match params.get("scenario").filter(|v| !v.is_empty()) {
        None => Ok(present.first().copied()),
        Some(v) => present
            .iter()
            .find(|k| k.param() == *v)
            .copied()
            .map(Some)
            .ok_or_else(|| {
                ApiError::bad_request(
                    "bad_parameter",
                    format!(
                        "scenario='{v}' is not in the data; expected one of {}",
                        present
                            .iter()
                            .map(|k| k.param())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            }),
    }
}

#[derive(Serialize)]
struct GpuSummary {
    id: String,
    name: String,
    architecture: String,
    tdp_w: f64,
    memory_gb: f64,
    idle_w: f64,
    configurations: usize,
    models: usize,
}

fn summaries(entries: &[Entry]) -> Vec<GpuSummary> {
    catalog::gpus()
        .iter()
        .map(|g| {
            let mine: Vec<&Entry> = entries.iter().filter(|e| e.gpu_id == g.id).collect();
            let mut models: Vec<&str> = mine.iter().map(|e| e.model.as_str()).collect();
            models.sort_unstable();
            models.dedup();
            GpuSummary {
                id: g.id.clone(),
                name: g.nvml_name.clone(),
                architecture: g.architecture.clone(),
                tdp_w: g.tdp_w,
                memory_gb: g.memory_gb,
                idle_w: g.idle_w,
                configurations: mine.len(),
                models: models.len(),
            }
        })
        .collect()
}

#[derive(Template)]
#[template(path = "gpus.html")]
struct GpusPage {
    gpus: Vec<GpuSummary>,
    view: String,
    view_query: String,
    demo: bool,
    version: &'static str,
}

pub async fn gpus_page(
    State(s): State<AppState>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, PageError> {
    only_params(&params, &VIEW_PARAMS)?;
    let (e, view) = entries(&s, &params, |_| {}).await?;
    Ok(render(
        StatusCode::OK,
        &GpusPage {
            demo: view.demo,
            view: view.note,
            view_query: view.query,
            gpus: summaries(&e),
            version: VERSION,
        },
    ))
}

pub async fn gpus_json(
    State(s): State<AppState>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    only_params(&params, &VIEW_PARAMS)?;
    let (e, view) = entries(&s, &params, |_| {}).await?;
    Ok(Json(json!({ "view": view.note, "gpus": summaries(&e) })).into_response())
}

struct GpuRow {
    model: String,
    ept: String,
    throughput: String,
    power: String,
    latency: String,
    evidence: String,
}

#[derive(Template)]
#[template(path = "gpu.html")]
struct GpuPage {
    gpu: GpuSummary,
    scenarios: Vec<(String, String, bool)>,
    scenario_label: String,
    chart: String,
    rows: Vec<GpuRow>,
    submissions: Vec<GpuSubmission>,
    json_link: String,
    view: String,
    view_query: String,
    demo: bool,
    version: &'static str,
}

/// An accepted submission measured on the GPU.
#[derive(Serialize)]
struct GpuSubmission {
    submission_id: String,
    submitter: String,
    received_at: String,
    demo: bool,
}

/// How many of the newest accepted submissions a GPU page lists.
const GPU_SUBMISSIONS_LISTED: u32 = 500;

struct GpuView {
    view: View,
    gpu: GpuSummary,
    present: Vec<ScenarioKey>,
    scenario: Option<ScenarioKey>,
    rows: Vec<Entry>,
    submissions: Vec<GpuSubmission>,
}

async fn gpu_data(
    s: &AppState,
    id: &str,
    params: &HashMap<String, String>,
) -> Result<GpuView, ApiError> {
    only_params(params, &["scenario", "origin", "protocol"])?;
    let (mine, view) = entries(s, params, |q| q.gpu = Some(id.to_string())).await?;
    let gpu = summaries(&mine)
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| ApiError::not_found(format!("no GPU '{id}' in the catalogue; see /gpus")))?;
    let present = compare::scenarios(&mine);
    let scenario = pick_scenario(params, &present)?;
    let mut rows: Vec<Entry> = mine
        .into_iter()
        .filter(|e| scenario.is_some_and(|k| compare::key_of(e) == k))
        .collect();
    rows.sort_by(|a, b| a.energy_per_token_j.total_cmp(&b.energy_per_token_j));
    let submissions = s
        .service
        .submissions_on_gpu(id, GPU_SUBMISSIONS_LISTED)
        .await?
        .into_iter()
        .map(|r| GpuSubmission {
            submission_id: r.id.to_string(),
            submitter: r.handle,
            received_at: crate::store::ts(&r.received_at),
            demo: r.is_demo,
        })
        .collect();
    Ok(GpuView {
        view,
        gpu,
        present,
        scenario,
        rows,
        submissions,
    })
}

pub async fn gpu_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let GpuView {
        view,
        gpu,
        present,
        scenario,
        rows,
        submissions,
    } = gpu_data(&s, &id, &params).await?;
    let label = scenario.map(|k| k.label()).unwrap_or_default();
    let chart = charts::bars(
        &format!("Energy per token on the {}, {label}", gpu.name),
        &format!(
            "Median energy per generated token (joules) of each model on the {} in the {label} scenario, least first.",
            gpu.name
        ),
        "J / token",
        &rows
            .iter()
            .map(|e| (e.model.clone(), e.energy_per_token_j))
            .collect::<Vec<_>>(),
    );
    let page = GpuPage {
        scenarios: present
            .iter()
            .map(|k| (k.param(), k.label(), Some(*k) == scenario))
            .collect(),
        scenario_label: label,
        chart,
        rows: rows
            .iter()
            .map(|e| GpuRow {
                model: e.model.clone(),
                ept: format!("{:.4}", e.energy_per_token_j),
                throughput: format!("{:.0}", e.throughput_tok_s),
                power: format!("{:.0}", e.power_mean_w),
                latency: match scenario.map(|k| k.scenario) {
                    Some(crate::bundle::harness::Scenario::Server) => e
                        .ttft_p50_s
                        .map_or("–".into(), |v| format!("{v:.3} s TTFT")),
                    _ => e
                        .itl_s
                        .map_or("–".into(), |v| format!("{:.2} ms ITL", v * 1e3)),
                },
                evidence: e.evidence.to_string(),
            })
            .collect(),
        json_link: format!(
            "/api/v1/gpus/{}?scenario={}",
            gpu.id,
            scenario.map(|k| k.param()).unwrap_or_default()
        ),
        demo: view.demo,
        view: view.note,
        view_query: view.query,
        gpu,
        submissions,
        version: VERSION,
    };
    Ok(render(StatusCode::OK, &page))
}

pub async fn gpu_json(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let v = gpu_data(&s, &id, &params).await?;
    Ok(Json(json!({
        "gpu": v.gpu,
        "scenarios": v.present.iter().map(|k| k.param()).collect::<Vec<_>>(),
        "scenario": v.scenario,
        "entries": v.rows,
        "submissions": v.submissions,
    }))
    .into_response())
}

/// The compared GPUs and scenario, checked against the data.
async fn comparison(
    s: &AppState,
    params: &HashMap<String, String>,
) -> Result<(Comparison, Vec<compare::Headline>, Vec<ScenarioKey>, View), ApiError> {
    only_params(params, &["gpus", "scenario", "origin", "protocol"])?;
    let (all, view) = entries(s, params, |_| {}).await?;
    let known: Vec<String> = {
        let mut k: Vec<String> = all.iter().map(|e| e.gpu_id.clone()).collect();
        k.sort();
        k.dedup();
        k
    };
    let gpus: Vec<String> = match params.get("gpus").filter(|v| !v.is_empty()) {
        Some(v) => v.split(',').map(|g| g.trim().to_string()).collect(),
        None => known.clone(),
    };
    if let Some(bad) = gpus.iter().find(|g| !known.contains(g)) {
        return Err(ApiError::bad_request(
            "bad_parameter",
            format!("gpus: '{bad}' has no data; known: {}", known.join(", ")),
        ));
    }
    if gpus.len() < 2 {
        return Err(ApiError::bad_request(
            "bad_parameter",
            "gpus: name at least two GPU ids, comma separated (e.g. gpus=l4,h100-pcie)",
        ));
    }
    let present = compare::scenarios(&all);
    let scenario = pick_scenario(params, &present)?
        .ok_or_else(|| ApiError::not_found("no accepted data to compare yet"))?;
    let headlines = present
        .iter()
        .map(|k| compare::compare(&all, &gpus, *k).headline)
        .collect();
    Ok((
        compare::compare(&all, &gpus, scenario),
        headlines,
        present,
        view,
    ))
}

struct CompareRow {
    model: String,
    cells: Vec<(String, bool)>,
    savings: Vec<String>,
}

struct HeadlineRow {
    scenario: String,
    models: usize,
    best_vs_worst: String,
    vs_h100: String,
}

#[derive(Template)]
#[template(path = "compare.html")]
struct ComparePage {
    gpus: Vec<(String, String)>,
    all_gpus: Vec<(String, String, bool)>,
    scenarios: Vec<(String, String, bool)>,
    scenario_label: String,
    rows: Vec<CompareRow>,
    headlines: Vec<HeadlineRow>,
    json_link: String,
    view: String,
    view_query: String,
    demo: bool,
    version: &'static str,
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |p| format!("{p:.0} %"))
}

pub async fn compare_page(
    State(s): State<AppState>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let (c, headlines, present, view) = comparison(&s, &params).await?;
    let selected: Vec<&String> = c.gpus.iter().map(|g| &g.0).collect();
    let all_gpus = catalog::gpus()
        .iter()
        .map(|g| (g.id.clone(), g.nvml_name.clone(), selected.contains(&&g.id)))
        .collect();
    let gpu_param: Vec<String> = c.gpus.iter().map(|g| g.0.clone()).collect();
    let page = ComparePage {
        all_gpus,
        scenarios: present
            .iter()
            .map(|k| (k.param(), k.label(), *k == c.scenario))
            .collect(),
        scenario_label: c.scenario.label(),
        rows: c
            .rows
            .iter()
            .map(|r| CompareRow {
                model: r.model.clone(),
                cells: r
                    .energy_per_token_j
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        (
                            v.map_or("–".into(), |x| format!("{x:.4}")),
                            r.winner == Some(i),
                        )
                    })
                    .collect(),
                savings: r.saving_pct.iter().map(|p| pct(*p)).collect(),
            })
            .collect(),
        headlines: headlines
            .iter()
            .map(|h| HeadlineRow {
                scenario: h.scenario.label(),
                models: h.models,
                best_vs_worst: format!(
                    "{} (up to {})",
                    pct(h.best_vs_worst_median_pct),
                    pct(h.best_vs_worst_max_pct)
                ),
                vs_h100: match &h.vs_h100_gpu {
                    Some(g) => format!("{} vs {g}", pct(h.best_vs_h100_median_pct)),
                    None => "no H100 compared".into(),
                },
            })
            .collect(),
        json_link: format!(
            "/api/v1/compare?gpus={}&scenario={}&{}",
            gpu_param.join(","),
            c.scenario.param(),
            view.query
        ),
        gpus: c.gpus,
        demo: view.demo,
        view: view.note,
        view_query: view.query,
        version: VERSION,
    };
    Ok(render(StatusCode::OK, &page))
}

pub async fn compare_json(
    State(s): State<AppState>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let (c, headlines, _, view) = comparison(&s, &params).await?;
    Ok(Json(json!({ "view": view.note, "comparison": c, "headlines": headlines })).into_response())
}

async fn model_data(
    s: &AppState,
    id: &str,
    params: &HashMap<String, String>,
) -> Result<(Vec<ModelScenario>, View), ApiError> {
    only_params(params, &VIEW_PARAMS)?;
    let (all, view) = entries(s, params, |q| q.model = Some(id.to_string())).await?;
    if all.is_empty() {
        return Err(ApiError::not_found(format!(
            "no accepted data for model '{id}' in this view ({}); see /leaderboard for the models measured",
            view.note
        )));
    }
    Ok((compare::model_summary(&all, id), view))
}

struct ModelSection {
    label: String,
    best: String,
    chart: String,
    rows: Vec<(String, String, String, bool)>,
}

#[derive(Template)]
#[template(path = "model.html")]
struct ModelPage {
    model: String,
    params: String,
    sections: Vec<ModelSection>,
    json_link: String,
    view: String,
    demo: bool,
    version: &'static str,
}

pub async fn model_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let (summary, view) = model_data(&s, &id, &params).await?;
    let sections = summary
        .iter()
        .map(|m| {
            let label = m.scenario.label();
            let best = m.points.first().map_or("–".into(), |p| {
                let runner = m.points.get(1).map_or(String::new(), |q| {
                    format!(
                        ", {:.0} % less than the runner-up ({})",
                        compare::saving_pct(p.energy_per_token_j, q.energy_per_token_j),
                        q.gpu_name
                    )
                });
                // Readers ask "and against the H100?": say it outright.
                let h100 = m
                    .points
                    .iter()
                    .skip(2)
                    .find(|q| q.gpu_id == "h100-pcie")
                    .map_or(String::new(), |q| {
                        format!(
                            ", {:.0} % less than the {} ({:.4} J/token)",
                            compare::saving_pct(p.energy_per_token_j, q.energy_per_token_j),
                            q.gpu_name,
                            q.energy_per_token_j
                        )
                    });
                format!("{}: {:.4} J/token{runner}{h100}", p.gpu_name, p.energy_per_token_j)
            });
            // Batch inter-token latencies are milliseconds; TTFT is seconds.
            let (scale, unit) = match m.scenario.scenario {
                crate::bundle::harness::Scenario::Batch => (1e3, "ms"),
                crate::bundle::harness::Scenario::Server => (1.0, "s"),
            };
            let chart = charts::scatter(
                &format!("{id}: energy per token against {} ({label})", m.latency_metric),
                &format!(
                    "Each GPU as a point: energy per generated token (J) across, {} ({unit}) up; the Pareto front (no other GPU is better on both) is joined.",
                    m.latency_metric
                ),
                "J / token",
                &format!("{} ({unit})", m.latency_metric),
                &m.points
                    .iter()
                    .map(|p| Dot {
                        label: p.gpu_name.clone(),
                        x: p.energy_per_token_j,
                        y: p.latency_s * scale,
                        highlight: p.pareto,
                    })
                    .collect::<Vec<_>>(),
            );
            ModelSection {
                label,
                best,
                chart,
                rows: m
                    .points
                    .iter()
                    .map(|p| {
                        (
                            p.gpu_name.clone(),
                            format!("{:.4}", p.energy_per_token_j),
                            format!("{:.3} {unit}", p.latency_s * scale),
                            p.pareto,
                        )
                    })
                    .collect(),
            }
        })
        .collect();
    let facts = catalog::model_by_id(&id).map_or("parameters unknown".into(), |m| {
        format!("{} B parameters, {} layers", m.params_b, m.layers)
    });
    Ok(render(
        StatusCode::OK,
        &ModelPage {
            json_link: format!("/api/v1/models/{id}?{}", view.query),
            model: id,
            params: facts,
            sections,
            demo: view.demo,
            view: view.note,
            version: VERSION,
        },
    ))
}

pub async fn model_json(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let (summary, view) = model_data(&s, &id, &params).await?;
    Ok(Json(json!({ "model": id, "view": view.note, "scenarios": summary })).into_response())
}

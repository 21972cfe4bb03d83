//! The pages that answer "which GPU for my model": `/models` (every model
//! with its best GPU per scenario, searchable), `/models/{id}` (verdicts
//! with intervals, the choice under a deadline, energy per request and its
//! footprint), their JSON twins, and `/methodology`, which every verdict
//! links to.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::charts::{self, Dot};
use super::error::ApiError;
use super::explore::{entries, view_params, view_query, View};
use super::format;
use super::pages::{model_path, render, PageError, VERSION};
use super::params::{given, DeadlineParams, ModelSearchParams, PageParams, Params, ViewParams};
use super::AppState;
use wattcounts_analytics::compare::{self, BestOf, ModelListing, ModelScenario, ScenarioKey};
use wattcounts_analytics::deadline::{self, Deadline, Meets};
use wattcounts_analytics::verdict::{sig, Verdict};
use wattcounts_rules::domain::{Scenario, TARGET_CONFIDENCE};

struct ListingRow {
    model: String,
    link: String,
    size: String,
    params: String,
    gpus: usize,
    /// Per scenario: the best GPU's name, a note (tie, alone), its page.
    best: Vec<(String, String, Option<String>)>,
}

#[derive(Template)]
#[template(path = "models.html")]
struct ModelsPage {
    q: String,
    all_models: Vec<String>,
    scenarios: Vec<String>,
    rows: Vec<ListingRow>,
    total: usize,
    json_link: String,
    view: View,
    demo: bool,
    version: &'static str,
}

/// The index of one view, and which of its models a case-insensitive
/// search `q` keeps.
async fn listing(
    s: &AppState,
    (search, view): &(ModelSearchParams, ViewParams),
) -> Result<(Vec<ScenarioKey>, Vec<ModelListing>, Vec<bool>, View), ApiError> {
    let (all, view) = entries(s, view, |_| {}).await?;
    let (keys, listings) = compare::model_index(&all);
    let q = given(&search.q)
        .map(|q| q.trim().to_lowercase())
        .unwrap_or_default();
    let kept = listings
        .iter()
        .map(|m| q.is_empty() || m.model.to_lowercase().contains(&q))
        .collect();
    Ok((keys, listings, kept, view))
}

/// A model's page, in the view given by `view_query` (the pickers' and a
/// one-match search's answer).
fn to_model(model: &str, view_query: &str) -> Response {
    let query = if view_query.is_empty() {
        String::new()
    } else {
        format!("?{view_query}")
    };
    Redirect::to(&format!("{}{query}", model_path(model))).into_response()
}

pub async fn models_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<(ModelSearchParams, ViewParams)>,
) -> Result<Response, PageError> {
    // A picked model needs no listing: checked parameters, then its page.
    if let Some(model) = given(&params.0.model).map(str::trim) {
        view_query(&params.1)?;
        return Ok(to_model(model, &view_params(&params.1)));
    }
    let (keys, listings, kept, view) = listing(&s, &params).await?;
    let shown: Vec<&ModelListing> = listings
        .iter()
        .zip(&kept)
        .filter(|(_, k)| **k)
        .map(|(m, _)| m)
        .collect();
    // One model matches the search: its page is the answer.
    if shown.len() == 1 && given(&params.0.q).is_some() {
        return Ok(to_model(&shown[0].model, &view.query));
    }
    let rows = shown
        .iter()
        .map(|m| ListingRow {
            link: format!("{}?{}", model_path(&m.model), view.query),
            model: m.model.clone(),
            size: m.size_class.map_or("–".into(), |c| c.name().to_string()),
            params: m.params_b.map_or("–".into(), |p| format!("{p} B")),
            gpus: m.gpus_measured,
            best: m
                .best
                .iter()
                .map(|b| match b {
                    None => ("–".into(), String::new(), None),
                    Some(b) => (
                        b.gpu_name.clone(),
                        if b.alone {
                            "only GPU measured".into()
                        } else if b.tie {
                            "tie within noise".into()
                        } else {
                            String::new()
                        },
                        wattcounts_rules::catalog::gpu_by_id(&b.gpu_id)
                            .map(|g| format!("/gpus/{}?{}", g.id, view.query)),
                    ),
                })
                .collect(),
        })
        .collect();
    let page = ModelsPage {
        q: params.0.q.clone().unwrap_or_default(),
        all_models: listings.iter().map(|m| m.model.clone()).collect(),
        scenarios: keys.iter().map(|k| k.label()).collect(),
        rows,
        total: listings.len(),
        json_link: format!("/api/v1/models?{}", view.query),
        demo: view.demo,
        view,
        version: VERSION,
    };
    Ok(render(StatusCode::OK, &page))
}

/// `/api/v1/models`.
#[derive(Serialize, ToSchema)]
pub struct ModelIndex {
    /// The view in words.
    pub view: String,
    /// Models in the view before `q` filtered them.
    pub total: usize,
    /// The view's scenarios (`batch`, `server@RATE`), the keys of `best`.
    pub scenarios: Vec<String>,
    pub models: Vec<ModelEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct ModelEntry {
    pub model: String,
    pub size_class: Option<wattcounts_analytics::leaderboard::SizeClass>,
    pub params_b: Option<f64>,
    /// Distinct GPUs that measured it in any scenario.
    pub gpus_measured: usize,
    /// Per scenario that measured it: the GPU with the least energy per token.
    pub best: BTreeMap<String, BestOf>,
}

#[utoipa::path(get, path = "/api/v1/models", tag = "models",
    summary = "Every model of the view with its best GPU per scenario",
    params(ModelSearchParams, ViewParams),
    responses((status = 200, body = ModelIndex)))]
pub async fn models_json(
    State(s): State<AppState>,
    Params(params): Params<(ModelSearchParams, ViewParams)>,
) -> Result<Response, ApiError> {
    let (keys, listings, kept, view) = listing(&s, &params).await?;
    let total = listings.len();
    let models = listings
        .iter()
        .zip(&kept)
        .filter(|(_, k)| **k)
        .map(|(m, _)| ModelEntry {
            model: m.model.clone(),
            size_class: m.size_class,
            params_b: m.params_b,
            gpus_measured: m.gpus_measured,
            best: keys
                .iter()
                .zip(&m.best)
                .filter_map(|(k, b)| Some((k.param(), b.clone()?)))
                .collect(),
        })
        .collect();
    Ok(Json(ModelIndex {
        view: view.note,
        total,
        scenarios: keys.iter().map(|k| k.param()).collect(),
        models,
    })
    .into_response())
}

/// The deadlines a reader typed in (`ttft_ms`, `itl_ms`, `min_tok_s`).
fn asked_deadlines(params: &DeadlineParams) -> Result<Vec<Deadline>, ApiError> {
    params
        .named()
        .into_iter()
        .filter_map(|(p, v)| Some((p, given(v)?)))
        .map(|(p, v)| {
            Deadline::parse(p, v).map_err(|why| ApiError::bad_request("bad_parameter", why))
        })
        .collect()
}

async fn model_data(
    s: &AppState,
    id: &str,
    (deadlines, view): &(DeadlineParams, ViewParams),
) -> Result<(Vec<ModelScenario>, View), ApiError> {
    let asked = asked_deadlines(deadlines)?;
    let budget = match given(&deadlines.max_j_per_token) {
        None => None,
        Some(v) => Some(
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|b| b.is_finite() && *b > 0.0)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "bad_parameter",
                        format!(
                            "max_j_per_token='{v}' is not a positive number of joules per token"
                        ),
                    )
                })?,
        ),
    };
    let (all, view) = entries(s, view, |q| q.model = Some(id.to_string())).await?;
    if all.is_empty() {
        return Err(ApiError::not_found(format!(
            "no accepted data for model '{id}' in this view ({}); see /models for the models measured",
            view.note
        )));
    }
    Ok((
        compare::model_summary_within(&all, id, &asked, budget),
        view,
    ))
}

struct PointRow {
    gpu: String,
    gpu_link: Option<String>,
    ept: String,
    ept_range: String,
    confidence: String,
    epr: String,
    epr_range: String,
    wh_per_1000: String,
    co2_per_1000: String,
    latency: String,
    latency_range: String,
    itl: String,
    itl_range: String,
    throughput: String,
    throughput_range: String,
    iterations: String,
    pareto: bool,
    evidence: String,
}

struct ChoiceRow {
    label: String,
    asked: bool,
    pick: String,
    pick_ept: String,
    borderline: bool,
    runner_up: String,
    saving: String,
    tie: bool,
    missing: usize,
}

struct ModelSection {
    anchor: String,
    label: String,
    /// "L4: 0.0123 J/token (0.0121–0.0125, 75 % interval)".
    best: String,
    /// The verdict against the runner-up, or why it is a tie.
    verdict: String,
    tie: bool,
    alone: bool,
    per_request: String,
    latency_header: String,
    server: bool,
    chart: String,
    rows: Vec<PointRow>,
    choices: Vec<ChoiceRow>,
}

#[derive(Template)]
#[template(path = "model.html")]
struct ModelPage {
    model: String,
    facts: String,
    leaderboard_link: String,
    sections: Vec<ModelSection>,
    ttft_ms: String,
    itl_ms: String,
    min_tok_s: String,
    max_j_per_token: String,
    footprint: String,
    json_link: String,
    csv_link: String,
    /// Estimates for the catalogue GPUs without a group: below the
    /// measured tables, never among them.
    estimates: super::estimates::UnmeasuredSection,
    view: View,
    demo: bool,
    version: &'static str,
}

fn verdict_text(v: &Verdict, best: &str, other: &str) -> String {
    match v {
        Verdict::Less { saving } => format!(
            "{best} uses less energy than the runner-up, the {other}: {} less",
            format::saving(saving)
        ),
        Verdict::Tie { why, saving } => format!(
            "Tie within measurement noise: {best} and {other} ({:.0} % apart at the medians), because {why}.",
            saving.median_pct
        ),
    }
}

fn choice_row(c: &deadline::Choice, asked: bool) -> ChoiceRow {
    ChoiceRow {
        label: c.label.clone(),
        asked,
        pick: c.pick.as_ref().map_or(
            if c.budget_j_per_token.is_some() {
                "none meets both".into()
            } else {
                "none meets it".into()
            },
            |p| p.gpu_name.clone(),
        ),
        pick_ept: c.pick.as_ref().map_or("–".into(), |p| sig(p.energy.median)),
        borderline: c
            .pick
            .as_ref()
            .is_some_and(|p| p.meets == Meets::Borderline),
        runner_up: c
            .runner_up
            .as_ref()
            .map_or("–".into(), |p| p.gpu_name.clone()),
        saving: match &c.verdict {
            Some(v) => format::saving(&v.saving()),
            None => "–".into(),
        },
        tie: c.verdict.as_ref().is_some_and(Verdict::is_tie),
        missing: c.missing,
    }
}

fn section(
    id: &str,
    m: &ModelScenario,
    footprint: &wattcounts_analytics::units::Footprint,
    view_query: &str,
) -> ModelSection {
    // The presets come first in `choices`; any after them were asked for.
    let presets = Deadline::presets(m.scenario.scenario).len();
    let label = m.scenario.label();
    let server = m.scenario.scenario == Scenario::Server;
    let first = m.points.first();
    let best = first.map_or("–".into(), |p| {
        format!(
            "{}: {}",
            p.gpu_name,
            format::estimate(&p.energy_per_token, "J/token")
        )
    });
    let verdict = match (&m.verdict, m.points.as_slice()) {
        (Some(v), [a, b, ..]) => verdict_text(v, &a.gpu_name, &b.gpu_name),
        _ => "Only one GPU measured this model here: no comparison to make.".into(),
    };
    let per_request = first
        .and_then(|p| Some((p, p.energy_per_request?)))
        .map_or(String::new(), |(p, e)| {
            format!(
                "Per request on the {}: {} · {} Wh per 1,000 requests · {} gCO₂e per 1,000 requests ({}).",
                p.gpu_name,
                format::estimate(&e, "J"),
                sig(wattcounts_analytics::units::wh_per_1000(e).median),
                sig(footprint.g_co2e_per_1000(e).median),
                footprint.describe()
            )
        });
    let chart = charts::scatter(
        &format!("model-{}", m.scenario.slug()),
        &format!("{id}: energy per token against {} ({label})", m.latency_metric),
        &format!(
            "Each GPU as a point: median energy per generated token (J) across, {} (ms) up, each with its interval as error bars; the Pareto front (no other GPU is better on both) is joined.",
            m.latency_metric
        ),
        "J / token",
        &format!("{} (ms)", m.latency_metric),
        &m.points
            .iter()
            .filter_map(|p| {
                Some(Dot {
                    label: p.gpu_name.clone(),
                    x: p.energy_per_token,
                    y: p.latency?.scaled(1e3),
                    highlight: p.pareto,
                })
            })
            .collect::<Vec<_>>(),
    );
    ModelSection {
        anchor: m.scenario.slug(),
        label,
        best,
        tie: m.verdict.as_ref().is_some_and(Verdict::is_tie),
        alone: m.verdict.is_none(),
        verdict,
        per_request,
        latency_header: format!("{} ms", m.latency_metric),
        server,
        chart,
        rows: m
            .points
            .iter()
            .map(|p| PointRow {
                gpu: p.gpu_name.clone(),
                gpu_link: wattcounts_rules::catalog::gpu_by_id(&p.gpu_id).map(|g| {
                    format!(
                        "/gpus/{}?scenario={}&{view_query}",
                        g.id,
                        m.scenario.param()
                    )
                }),
                ept: format::value(Some(p.energy_per_token), 1.0),
                ept_range: format::range(Some(p.energy_per_token), 1.0),
                confidence: format::confidence(Some(p.energy_per_token)),
                epr: format::value(p.energy_per_request, 1.0),
                epr_range: format::under(p.energy_per_request, 1.0),
                itl_range: format::under(p.itl, 1e3),
                throughput_range: format::under(Some(p.throughput), 1.0),
                wh_per_1000: format::value(
                    p.energy_per_request
                        .map(wattcounts_analytics::units::wh_per_1000),
                    1.0,
                ),
                co2_per_1000: format::value(
                    p.energy_per_request.map(|e| footprint.g_co2e_per_1000(e)),
                    1.0,
                ),
                latency: format::value(p.latency, 1e3),
                latency_range: format::range(p.latency, 1e3),
                itl: format::value(p.itl, 1e3),
                throughput: format::thousands(p.throughput.median.round() as u64),
                iterations: format::thousands(p.iterations),
                pareto: p.pareto,
                evidence: p.evidence.to_string(),
            })
            .collect(),
        choices: m
            .choices
            .iter()
            .enumerate()
            .map(|(i, c)| choice_row(c, i >= presets))
            .collect(),
    }
}

pub async fn model_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    PageParams(params): PageParams<(DeadlineParams, ViewParams)>,
) -> Result<Response, PageError> {
    let (summary, view) = model_data(&s, &id, &params).await?;
    let sections = summary
        .iter()
        .map(|m| section(&id, m, &s.footprint, &view.query))
        .collect();
    let facts =
        wattcounts_rules::catalog::model_by_id(&id).map_or("parameters unknown".into(), |m| {
            format!(
                "{} B parameters, {} layers, size class {}",
                m.params_b,
                m.layers,
                wattcounts_analytics::leaderboard::SizeClass::of_model(&id)
                    .map_or("–", |c| c.name())
            )
        });
    let field = |v: &Option<String>| v.clone().unwrap_or_default();
    let estimates = super::estimates::unmeasured_section(&s, &id);
    Ok(render(
        StatusCode::OK,
        &ModelPage {
            json_link: format!("/api/v1{}?{}", model_path(&id), view.query),
            csv_link: super::pages::csv_twin(&format!("/api/v1{}?{}", model_path(&id), view.query)),
            leaderboard_link: format!(
                "/leaderboard?model={}&{}",
                super::pages::url_encode(&id),
                view.query
            ),
            model: id,
            facts,
            sections,
            ttft_ms: field(&params.0.ttft_ms),
            itl_ms: field(&params.0.itl_ms),
            min_tok_s: field(&params.0.min_tok_s),
            max_j_per_token: field(&params.0.max_j_per_token),
            estimates,
            footprint: s.footprint.describe(),
            demo: view.demo,
            view,
            version: VERSION,
        },
    ))
}

/// `/api/v1/models/{id}`.
#[derive(Serialize, ToSchema)]
pub struct ModelAnswer {
    pub model: String,
    /// The view in words.
    pub view: String,
    /// What the gCO₂e figures assume.
    pub footprint: wattcounts_analytics::units::Footprint,
    /// Per scenario: every GPU's point, the least-energy verdict and the
    /// deadline choices.
    pub scenarios: Vec<ModelScenario>,
    /// Per scenario, in the same order: each point's energy per 1,000
    /// requests (server scenarios; null in batch).
    pub per_1000_requests: Vec<Vec<PerThousand>>,
}

#[derive(Serialize, ToSchema)]
pub struct PerThousand {
    pub gpu_id: String,
    pub wh_per_1000_requests: Option<wattcounts_analytics::verdict::Estimate>,
    pub g_co2e_per_1000_requests: Option<wattcounts_analytics::verdict::Estimate>,
}

/// The model's measured rows in the view, every scenario, as the
/// leaderboard CSV writes them (`/api/v1/models/{id}.csv`).
async fn model_rows_csv(s: &AppState, id: &str, view: &ViewParams) -> Result<Response, ApiError> {
    let (mut rows, view) = entries(s, view, |q| q.model = Some(id.to_string())).await?;
    if rows.is_empty() {
        return Err(ApiError::not_found(format!(
            "no accepted data for model '{id}' in this view ({}); see /models for the models measured",
            view.note
        )));
    }
    rows.sort_by(|a, b| {
        a.lambda_qps
            .unwrap_or(-1.0)
            .total_cmp(&b.lambda_qps.unwrap_or(-1.0))
            .then(a.energy_per_token_j.total_cmp(&b.energy_per_token_j))
    });
    let name = id.replace('/', "_");
    Ok(super::csv_export::rows_response(
        &format!("wattcounts-model-{name}.csv"),
        &rows,
        1,
    ))
}

/// Documents `/api/v1/models/{id}.csv`, answered through the catch-all.
#[utoipa::path(get, path = "/api/v1/models/{id}.csv", tag = "models",
    summary = "The model's measured rows in the view, every scenario, as CSV (the leaderboard CSV's columns)",
    params(("id" = String, Path, description = "The model's Hugging Face id (it holds a slash)"), ViewParams),
    responses((status = 200, content_type = "text/csv", body = String),
        (status = 404, description = "No accepted data for the model in this view", body = super::error::ErrorBody)))]
pub async fn model_csv(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(params): Params<ViewParams>,
) -> Result<Response, ApiError> {
    model_rows_csv(&s, &id, &params).await
}

#[utoipa::path(get, path = "/api/v1/models/{id}", tag = "models",
    summary = "Which GPU uses the least energy for one model, per scenario",
    description = "`id` is the Hugging Face id and holds a `/` (`meta-llama/Llama-3.1-8B-Instruct`), sent as it is. Deadlines (`ttft_ms`, `itl_ms`, `min_tok_s`) add choices marked `custom`.",
    params(("id" = String, Path, description = "The model's Hugging Face id"),
        DeadlineParams, ViewParams),
    responses((status = 200, body = ModelAnswer),
        (status = 404, description = "No accepted data for this model in the view", body = super::error::ErrorBody)))]
pub async fn model_json(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(params): Params<(DeadlineParams, ViewParams)>,
) -> Result<Response, ApiError> {
    // Model ids hold a slash, so the estimates of one ride on this route.
    if let Some(model) = id.strip_suffix("/estimates.csv") {
        return Ok(super::estimates::unmeasured_response(&s, model, true));
    }
    if let Some(model) = id.strip_suffix("/estimates") {
        return Ok(super::estimates::unmeasured_response(&s, model, false));
    }
    if let Some(model) = id.strip_suffix(".csv") {
        return model_rows_csv(&s, model, &params.1).await;
    }
    let (summary, view) = model_data(&s, &id, &params).await?;
    let footprint = s.footprint;
    let per_1000_requests = summary
        .iter()
        .map(|m| {
            m.points
                .iter()
                .map(|p| PerThousand {
                    gpu_id: p.gpu_id.clone(),
                    wh_per_1000_requests: p
                        .energy_per_request
                        .map(wattcounts_analytics::units::wh_per_1000),
                    g_co2e_per_1000_requests: p
                        .energy_per_request
                        .map(|e| footprint.g_co2e_per_1000(e)),
                })
                .collect()
        })
        .collect();
    Ok(Json(ModelAnswer {
        model: id,
        view: view.note,
        footprint,
        scenarios: summary,
        per_1000_requests,
    })
    .into_response())
}

#[derive(Template)]
#[template(path = "methodology.html")]
struct MethodologyPage {
    target_confidence: String,
    /// (values, which order statistics, the coverage they achieve).
    coverage: Vec<(usize, String, String)>,
    grid: f64,
    pue: f64,
    demo: bool,
    version: &'static str,
}

pub async fn methodology_page(State(s): State<AppState>) -> Result<Response, PageError> {
    // The intervals the pages show, computed by the same function.
    let coverage = (2..=12)
        .map(|n| {
            let values: Vec<f64> = (1..=n).map(|v| v as f64).collect();
            let i = wattcounts_rules::stats::median_interval(&values).expect("n ≥ 2");
            let k = i.lo as usize;
            let which = if k == 1 {
                "min–max".to_string()
            } else {
                format!("{k}th lowest – {k}th highest")
            };
            (n, which, format!("{:.2} %", i.confidence * 100.0))
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &MethodologyPage {
            target_confidence: format!("{:.0} %", TARGET_CONFIDENCE * 100.0),
            coverage,
            grid: s.footprint.grid_g_per_kwh,
            pue: s.footprint.pue,
            demo: false,
            version: VERSION,
        },
    ))
}

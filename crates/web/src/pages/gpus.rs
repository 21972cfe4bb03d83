//! The reader's GPU pages, each with a JSON twin: `/gpus`, `/gpus/{id}`,
//! and `/gpus/{id}.csv` (`/compare` is `pages::compare`, the model pages
//! `pages::models`). Accepted data only;
//! parameters come from allow-lists and anything else is a 400.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{GpuParams, PageParams, Params, ScenarioParam, ViewParams};
use crate::extract::resource_path::GpuPath;
use crate::view::{charts, format, model_path, view_of, view_query, View};
use crate::AppState;
use wattcounts_analytics::compare::{self, ScenarioKey};
use wattcounts_analytics::leaderboard::LeaderboardRow;
use wattcounts_analytics::verdict::Estimate;
use wattcounts_rules::domain::Scenario;
use wattcounts_service::views::GpuSummary;

#[derive(Template)]
#[template(path = "gpus.html")]
struct GpusPage {
    gpus: Vec<GpuSummary>,
    view: View,
    layout: crate::layout::Layout,
}

pub async fn gpus_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<ViewParams>,
) -> Result<Response, PageError> {
    let q = view_query(&params)?;
    let (gpus, board) = s.service.gpus_view(&q).await?;
    let view = view_of(&board, &q, &params);
    Ok(render(
        StatusCode::OK,
        &GpusPage {
            layout: crate::layout::Layout::of(view.demo),
            view,
            gpus,
        },
    ))
}

/// `/api/v1/gpus`.
#[derive(Serialize, ToSchema)]
pub struct GpuList {
    /// The view in words.
    pub view: String,
    /// Every catalogue GPU, with what the view measured on it.
    pub gpus: Vec<GpuSummary>,
}

#[utoipa::path(get, path = "/api/v1/gpus", tag = "gpus",
    summary = "Every catalogue GPU with the view's groups and models on it",
    params(ViewParams),
    responses((status = 200, body = GpuList)))]
pub async fn gpus_json(
    State(s): State<AppState>,
    Params(params): Params<ViewParams>,
) -> Result<Response, ApiError> {
    let q = view_query(&params)?;
    let (gpus, board) = s.service.gpus_view(&q).await?;
    let view = view_of(&board, &q, &params);
    Ok(Json(GpuList {
        view: view.note,
        gpus,
    })
    .into_response())
}

struct GpuRow {
    model: String,
    model_link: String,
    ept: String,
    ept_range: String,
    confidence: String,
    epr: String,
    epr_range: String,
    wh_per_1000: String,
    throughput: String,
    throughput_range: String,
    power: String,
    latency: String,
    latency_range: String,
    iterations: String,
    evidence: String,
}

#[derive(Template)]
#[template(path = "gpu.html")]
struct GpuPage {
    gpu: GpuSummary,
    scenarios: Vec<(String, String, bool)>,
    scenario_label: String,
    latency_header: String,
    chart: String,
    rows: Vec<GpuRow>,
    submissions: Vec<GpuSubmission>,
    /// Whether the list starts after a `before=` (not the newest).
    paged: bool,
    older_link: Option<String>,
    newest_link: String,
    json_link: String,
    csv_link: String,
    view: View,
    layout: crate::layout::Layout,
}

/// An accepted submission measured on the GPU.
#[derive(Serialize, ToSchema)]
pub struct GpuSubmission {
    submission_id: String,
    submitter: String,
    received_at: String,
    #[serde(skip)]
    received: String,
    demo: bool,
}

struct GpuView {
    view: View,
    gpu: GpuSummary,
    present: Vec<ScenarioKey>,
    scenario: Option<ScenarioKey>,
    rows: Vec<LeaderboardRow>,
    submissions: Vec<GpuSubmission>,
    paged: bool,
    /// The last submission listed, when older ones follow (the next
    /// page's `before=`).
    older: Option<uuid::Uuid>,
    /// The page's own path and query, without `before=`.
    newest: String,
}

impl GpuView {
    /// The link to the next page of submissions, when there is one.
    fn older_link(&self) -> Option<String> {
        let sep = if self.newest.contains('?') { '&' } else { '?' };
        self.older
            .map(|o| format!("{}{sep}before={o}#submissions", self.newest))
    }
}

async fn gpu_data(
    s: &AppState,
    id: &str,
    scenario: Option<&str>,
    before: Option<&str>,
    params: &ViewParams,
) -> Result<GpuView, ApiError> {
    let q = view_query(params)?;
    let before = before.filter(|b| !b.is_empty());
    let (d, board) = s.service.gpu_view(&q, id, scenario, before).await?;
    let view = view_of(&board, &q, params);
    let query: Vec<String> = [view.query.clone()]
        .into_iter()
        .chain(d.scenario.map(|k| format!("scenario={}", k.param())))
        .filter(|q| !q.is_empty())
        .collect();
    let newest = match query.is_empty() {
        true => format!("/gpus/{id}"),
        false => format!("/gpus/{id}?{}", query.join("&")),
    };
    let submissions = d
        .submissions
        .into_iter()
        .map(|r| GpuSubmission {
            submission_id: r.id.to_string(),
            submitter: r.handle,
            received_at: wattcounts_rules::timestamp::ts(&r.received_at),
            received: format::date(&r.received_at),
            demo: r.is_demo,
        })
        .collect();
    Ok(GpuView {
        view,
        gpu: d.gpu,
        present: d.present,
        scenario: d.scenario,
        rows: d.rows,
        submissions,
        paged: before.is_some(),
        older: d.older,
        newest,
    })
}

pub async fn gpu_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    PageParams((g, params)): PageParams<(GpuParams, ViewParams)>,
) -> Result<Response, PageError> {
    let v = gpu_data(&s, &id, g.scenario.as_deref(), g.before.as_deref(), &params).await?;
    let older = v.older_link();
    let GpuView {
        view,
        gpu,
        present,
        scenario,
        rows,
        submissions,
        paged,
        newest,
        ..
    } = v;
    let label = scenario.map(|k| k.label()).unwrap_or_default();
    let kind = scenario.map_or(Scenario::Batch, |k| k.scenario);
    let chart = charts::bars(
        &format!("gpu-{}", scenario.map(|k| k.slug()).unwrap_or_default()),
        &format!("Energy per token on the {}, {label}", gpu.name),
        &format!(
            "Median energy per generated token (joules) of each model on the {} in the {label} scenario, least first, with its interval as error bars.",
            gpu.name
        ),
        "J / token",
        &rows
            .iter()
            .map(|e| (e.model.clone(), compare::energy_of(e)))
            .collect::<Vec<_>>(),
    );
    let mut page = GpuPage {
        csv_link: String::new(),
        scenarios: present
            .iter()
            .map(|k| (k.param(), k.label(), Some(*k) == scenario))
            .collect(),
        scenario_label: label,
        latency_header: format!("{} ms", compare::latency_name(kind)),
        chart,
        rows: rows
            .iter()
            .map(|e| {
                let ept = compare::energy_of(e);
                let epr = Estimate::of(e.energy_per_request_j, e.intervals.energy_per_request_j);
                GpuRow {
                    model: e.model.clone(),
                    model_link: format!("{}?{}", model_path(&e.model), view.query),
                    ept: format::value(Some(ept), 1.0),
                    ept_range: format::range(Some(ept), 1.0),
                    confidence: format::confidence(Some(ept)),
                    epr: format::value(epr, 1.0),
                    epr_range: format::under(epr, 1.0),
                    throughput_range: format::under(
                        Some(Estimate::new(
                            e.throughput_tok_s,
                            e.intervals.throughput_tok_s,
                        )),
                        1.0,
                    ),
                    latency_range: format::under(compare::latency_of(e), 1e3),
                    wh_per_1000: format::value(
                        epr.map(wattcounts_analytics::units::wh_per_1000),
                        1.0,
                    ),
                    throughput: format::thousands(e.throughput_tok_s.round() as u64),
                    power: format!("{:.0}", e.power_mean_w),
                    latency: format::value(compare::latency_of(e), 1e3),
                    iterations: format::thousands(e.iterations),
                    evidence: e.evidence.to_string(),
                }
            })
            .collect(),
        json_link: format!(
            "/api/v1/gpus/{}?scenario={}",
            gpu.id,
            scenario.map(|k| k.param()).unwrap_or_default()
        ),
        layout: crate::layout::Layout::of(view.demo),
        view,
        gpu,
        submissions,
        paged,
        older_link: older,
        newest_link: format!("{newest}#submissions"),
    };
    page.csv_link = crate::view::csv_twin(&page.json_link);
    Ok(render(StatusCode::OK, &page))
}

/// `/api/v1/gpus/{id}`.
#[derive(Serialize, ToSchema)]
pub struct GpuDetail {
    pub gpu: GpuSummary,
    /// The scenarios measured on it (`batch`, `server@RATE`).
    pub scenarios: Vec<String>,
    /// The one shown.
    pub scenario: Option<ScenarioKey>,
    pub entries: Vec<LeaderboardRow>,
    /// Its accepted submissions, newest first, 50 at a time: the newest, or
    /// those received before `before=`.
    pub submissions: Vec<GpuSubmission>,
    /// The next page's `before=` when older submissions follow.
    pub older_submissions: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/gpus/{id}", tag = "gpus",
    summary = "One GPU across models, in one scenario",
    params(("id" = String, Path, description = "Catalogue GPU id, e.g. `h100-sxm`"),
        GpuParams, ViewParams),
    responses((status = 200, body = GpuDetail),
        (status = 400, description = "A parameter names what the data does not hold, e.g. a `before=` that is no accepted submission on this GPU", body = crate::error::ErrorBody),
        (status = 404, description = "No such GPU in the catalogue", body = crate::error::ErrorBody)))]
pub async fn gpu_json(
    State(s): State<AppState>,
    GpuPath { id, csv }: GpuPath,
    Params((g, params)): Params<(GpuParams, ViewParams)>,
) -> Result<Response, ApiError> {
    let v = gpu_data(&s, &id, g.scenario.as_deref(), g.before.as_deref(), &params).await?;
    // `/api/v1/gpus/{id}.csv` rides on this route (one path segment).
    if csv {
        return Ok(crate::view::csv::rows_response(
            &format!("wattcounts-gpu-{id}.csv"),
            &v.rows,
            1,
        ));
    }
    let older_submissions = v.older.map(|o| o.to_string());
    Ok(Json(GpuDetail {
        gpu: v.gpu,
        scenarios: v.present.iter().map(|k| k.param()).collect(),
        scenario: v.scenario,
        entries: v.rows,
        submissions: v.submissions,
        older_submissions,
    })
    .into_response())
}

/// The GPU table as CSV (answered by [`gpu_json`]'s route).
#[utoipa::path(get, path = "/api/v1/gpus/{id}.csv", tag = "gpus",
    summary = "One GPU across models in one scenario as CSV, the leaderboard CSV's columns",
    params(("id" = String, Path, description = "Catalogue GPU id, e.g. `h100-pcie`"),
        ScenarioParam, ViewParams),
    responses((status = 200, content_type = "text/csv", body = String),
        (status = 404, description = "No such GPU in the catalogue", body = crate::error::ErrorBody)))]
pub async fn gpu_csv(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params((sc, params)): Params<(ScenarioParam, ViewParams)>,
) -> Result<Response, ApiError> {
    let v = gpu_data(&s, &id, sc.scenario.as_deref(), None, &params).await?;
    Ok(crate::view::csv::rows_response(
        &format!("wattcounts-gpu-{id}.csv"),
        &v.rows,
        1,
    ))
}

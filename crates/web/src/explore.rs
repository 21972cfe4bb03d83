//! The reader's GPU pages, each with a JSON twin: `/gpus`, `/gpus/{id}`,
//! `/compare` (the model pages are in `models_pages`). Accepted data only;
//! parameters come from allow-lists and anything else is a 400.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::charts;
use super::error::ApiError;
use super::format;
use super::pages::{model_path, render, url_encode, Opt, PageError, VERSION};
use super::params::{
    given, CompareParams, LeaderboardParams, PageParams, Params, ScenarioParam, ViewParams,
};
use super::AppState;
use wattcounts_analytics::compare::{self, Comparison, ScenarioKey};
use wattcounts_analytics::leaderboard::{self, LeaderboardRow};
use wattcounts_analytics::verdict::Estimate;
use wattcounts_rules::catalog;
use wattcounts_rules::domain::Scenario;

/// Every accepted group of the view the reader picked (origin, protocol):
/// a page compares within one view, never across.
pub(crate) async fn entries(
    s: &AppState,
    params: &ViewParams,
    narrow: impl FnOnce(&mut leaderboard::Query),
) -> Result<(Vec<LeaderboardRow>, View), ApiError> {
    let mut q = view_query(params)?;
    narrow(&mut q);
    let board = s.service.all_groups(&q).await?;
    let (origins, protocols) = super::pages::view_controls(&board, &q);
    let view = View {
        note: super::pages::view_note(&board, &q),
        demo: board.origin == wattcounts_rules::domain::Origin::Demo,
        query: view_params(params),
        origins,
        protocols,
    };
    Ok((board.entries, view))
}

/// Which view a page shows, in words, the parameters that chose it (kept
/// on links that stay in the view), and the controls that change it.
pub(crate) struct View {
    pub note: String,
    pub demo: bool,
    pub query: String,
    pub origins: Vec<Opt>,
    pub protocols: Vec<Opt>,
}

/// `origin` and `protocol`, parsed as the leaderboard parses them.
pub(crate) fn view_query(params: &ViewParams) -> Result<leaderboard::Query, ApiError> {
    super::pages::parse_query(&LeaderboardParams::of_view(params))
}

/// The view's parameters as a query string (empty ones left out).
pub(crate) fn view_params(params: &ViewParams) -> String {
    let mut pairs: Vec<String> = [("origin", &params.origin), ("protocol", &params.protocol)]
        .into_iter()
        .filter_map(|(k, v)| given(v).map(|v| format!("{k}={}", url_encode(v))))
        .collect();
    pairs.sort();
    pairs.join("&")
}

/// `scenario=batch` or `server@RATE`, one of those present in the data.
pub(crate) fn pick_scenario(
    scenario: &Option<String>,
    present: &[ScenarioKey],
) -> Result<Option<ScenarioKey>, ApiError> {
    match scenario.as_deref().filter(|v| !v.is_empty()) {
        None => Ok(present.first().copied()),
        Some(v) => present
            .iter()
            .find(|k| k.param() == v)
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

#[derive(Serialize, ToSchema)]
pub struct GpuSummary {
    id: String,
    name: String,
    architecture: String,
    tdp_w: f64,
    memory_gb: f64,
    idle_w: f64,
    /// Groups of the view measured on it.
    configurations: usize,
    models: usize,
}

fn summaries(entries: &[LeaderboardRow]) -> Vec<GpuSummary> {
    catalog::gpus()
        .iter()
        .map(|g| {
            let mine: Vec<&LeaderboardRow> = entries.iter().filter(|e| e.gpu_id == g.id).collect();
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
    view: View,
    demo: bool,
    version: &'static str,
}

pub async fn gpus_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<ViewParams>,
) -> Result<Response, PageError> {
    let (e, view) = entries(&s, &params, |_| {}).await?;
    Ok(render(
        StatusCode::OK,
        &GpusPage {
            demo: view.demo,
            view,
            gpus: summaries(&e),
            version: VERSION,
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
    let (e, view) = entries(&s, &params, |_| {}).await?;
    Ok(Json(GpuList {
        view: view.note,
        gpus: summaries(&e),
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
    json_link: String,
    csv_link: String,
    view: View,
    demo: bool,
    version: &'static str,
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

/// How many of the newest accepted submissions a GPU page lists.
const GPU_SUBMISSIONS_LISTED: u32 = 500;

struct GpuView {
    view: View,
    gpu: GpuSummary,
    present: Vec<ScenarioKey>,
    scenario: Option<ScenarioKey>,
    rows: Vec<LeaderboardRow>,
    submissions: Vec<GpuSubmission>,
}

async fn gpu_data(
    s: &AppState,
    id: &str,
    (scenario, params): &(ScenarioParam, ViewParams),
) -> Result<GpuView, ApiError> {
    let (mine, view) = entries(s, params, |q| q.gpu = Some(id.to_string())).await?;
    let gpu = summaries(&mine)
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| ApiError::not_found(format!("no GPU '{id}' in the catalogue; see /gpus")))?;
    let present = compare::scenarios(&mine);
    let scenario = pick_scenario(&scenario.scenario, &present)?;
    let mut rows: Vec<LeaderboardRow> = mine
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
            received_at: wattcounts_rules::timestamp::ts(&r.received_at),
            received: format::date(&r.received_at),
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
    PageParams(params): PageParams<(ScenarioParam, ViewParams)>,
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
        demo: view.demo,
        view,
        gpu,
        submissions,
        version: VERSION,
    };
    page.csv_link = super::pages::csv_twin(&page.json_link);
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
    /// Its newest accepted submissions.
    pub submissions: Vec<GpuSubmission>,
}

#[utoipa::path(get, path = "/api/v1/gpus/{id}", tag = "gpus",
    summary = "One GPU across models, in one scenario",
    params(("id" = String, Path, description = "Catalogue GPU id, e.g. `h100-sxm`"),
        ScenarioParam, ViewParams),
    responses((status = 200, body = GpuDetail),
        (status = 404, description = "No such GPU in the catalogue", body = super::error::ErrorBody)))]
pub async fn gpu_json(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(params): Params<(ScenarioParam, ViewParams)>,
) -> Result<Response, ApiError> {
    // `/api/v1/gpus/{id}.csv` rides on this route (one path segment).
    if let Some(gpu) = id.strip_suffix(".csv") {
        let v = gpu_data(&s, gpu, &params).await?;
        return Ok(super::csv_export::rows_response(
            &format!("wattcounts-gpu-{gpu}.csv"),
            &v.rows,
            1,
        ));
    }
    let v = gpu_data(&s, &id, &params).await?;
    Ok(Json(GpuDetail {
        gpu: v.gpu,
        scenarios: v.present.iter().map(|k| k.param()).collect(),
        scenario: v.scenario,
        entries: v.rows,
        submissions: v.submissions,
    })
    .into_response())
}

/// The GPUs a comparison names: `gpu=a&gpu=b` (the form's checkboxes) or
/// the older `gpus=a,b`; every GPU with data when neither is given.
fn compared_gpus(params: &CompareParams, known: &[String]) -> Result<Vec<String>, ApiError> {
    let mut gpus: Vec<String> = Vec::new();
    let named = params
        .gpu
        .iter()
        .map(String::as_str)
        .chain(params.gpus.iter().flat_map(|v| v.split(',')));
    for g in named.map(str::trim).filter(|g| !g.is_empty()) {
        if !gpus.iter().any(|x| x == g) {
            gpus.push(g.to_string());
        }
    }
    if gpus.is_empty() {
        gpus = known.to_vec();
    }
    if let Some(bad) = gpus.iter().find(|g| !known.contains(g)) {
        return Err(ApiError::bad_request(
            "bad_parameter",
            format!(
                "gpus: '{bad}' has no data in this view; known: {}",
                known.join(", ")
            ),
        ));
    }
    if gpus.len() < 2 {
        return Err(ApiError::bad_request(
            "bad_parameter",
            "gpus: choose at least two GPUs (gpu=l4&gpu=h100-pcie, or gpus=l4,h100-pcie)",
        ));
    }
    Ok(gpus)
}

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

/// The compared GPUs and scenario, checked against the data.
async fn comparison(
    s: &AppState,
    (params, view): &(CompareParams, ViewParams),
) -> Result<Compared, ApiError> {
    let (all, view) = entries(s, view, |_| {}).await?;
    let mut known: Vec<(String, String)> = all
        .iter()
        .map(|e| (e.gpu_id.clone(), e.gpu_name.clone()))
        .collect();
    known.sort();
    known.dedup();
    let ids: Vec<String> = known.iter().map(|k| k.0.clone()).collect();
    let gpus = compared_gpus(params, &ids)?;
    let reference = match given(&params.reference) {
        Some(r) if gpus.iter().any(|g| g == r) => Some(r.to_string()),
        Some(r) => {
            return Err(ApiError::bad_request(
                "bad_parameter",
                format!(
                    "ref='{r}' is not one of the compared GPUs ({})",
                    gpus.join(", ")
                ),
            ))
        }
        None => None,
    };
    let present = compare::scenarios(&all);
    let scenario = pick_scenario(&params.scenario, &present)?
        .ok_or_else(|| ApiError::not_found("no accepted data to compare yet"))?;
    // Every scenario's headline; the chosen one's rows are shown too.
    let mut rows: Vec<LeaderboardRow> = all
        .iter()
        .filter(|e| compare::key_of(e) == scenario && gpus.contains(&e.gpu_id))
        .cloned()
        .collect();
    rows.sort_by(|a, b| {
        a.model
            .to_lowercase()
            .cmp(&b.model.to_lowercase())
            .then(a.energy_per_token_j.total_cmp(&b.energy_per_token_j))
    });
    let mut comparison = None;
    let mut headlines = Vec::with_capacity(present.len());
    for k in &present {
        let c = compare::compare(&all, &gpus, *k, reference.as_deref());
        headlines.push(c.headline.clone());
        if *k == scenario {
            comparison = Some(c);
        }
    }
    Ok(Compared {
        comparison: comparison.expect("the scenario was picked from those present"),
        rows,
        headlines,
        present,
        known,
        view,
    })
}

struct CompareCell {
    ept: String,
    range: String,
    best: bool,
    winner: bool,
    measured: bool,
}

struct CompareRow {
    model: String,
    model_link: String,
    cells: Vec<CompareCell>,
    savings: Vec<String>,
    latencies: Vec<String>,
    verdict: String,
    tie: bool,
}

struct HeadlineRow {
    scenario: String,
    current: bool,
    best: String,
    models: String,
    vs_worst: String,
    vs_reference: String,
}

#[derive(Template)]
#[template(path = "compare.html")]
struct ComparePage {
    gpus: Vec<(String, String)>,
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
    demo: bool,
    version: &'static str,
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |p| format!("{p:.0} %"))
}

/// How many of the best GPU's models are ties, when any are.
fn within_noise(ties: usize, before: &str, after: &str) -> String {
    if ties == 0 {
        return String::new();
    }
    format!("{before}{ties}{after}")
}

fn headline_row(h: &compare::Headline, current: bool) -> HeadlineRow {
    HeadlineRow {
        scenario: h.scenario.label(),
        current,
        best: h.best_gpu.as_ref().map_or("–".into(), |g| g.1.clone()),
        models: match h.best_gpu {
            Some(_) => format!(
                "{} of {}{}",
                h.best_for,
                h.models,
                within_noise(h.best_ties, " (", " within noise)")
            ),
            None => "no model measured by two of them".into(),
        },
        vs_worst: format!(
            "{} (up to {})",
            pct(h.best_vs_worst_median_pct),
            pct(h.best_vs_worst_max_pct)
        ),
        vs_reference: match (&h.reference_gpu, &h.best_gpu) {
            (Some(r), Some(b)) if r.0 == b.0 => format!("{} is the reference", r.1),
            (Some(r), _) => format!("{} vs {}", pct(h.best_vs_reference_median_pct), r.1),
            (None, _) => "no reference chosen".into(),
        },
    }
}

/// One sentence: which GPU is best, for how many models, and by how much.
fn headline_sentence(h: &compare::Headline) -> String {
    let Some((_, best)) = &h.best_gpu else {
        return "No model here was measured by two of these GPUs: nothing to compare.".into();
    };
    let mut s = format!(
        "{best} uses the least energy for {} of the {} models measured by at least two of these GPUs{}; median saving against each model's most energy-hungry GPU {} (up to {})",
        h.best_for,
        h.models,
        within_noise(h.best_ties, ", ", " of them within measurement noise"),
        pct(h.best_vs_worst_median_pct),
        pct(h.best_vs_worst_max_pct),
    );
    match &h.reference_gpu {
        Some(r) if Some(&r.0) != h.best_gpu.as_ref().map(|b| &b.0) => s.push_str(&format!(
            ", and {} against the {} (median over the models both measured).",
            pct(h.best_vs_reference_median_pct),
            r.1
        )),
        _ => s.push('.'),
    }
    s
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
        gpus: c.gpus,
        demo: view.demo,
        view,
        version: VERSION,
    };
    page.csv_link = super::pages::csv_twin(&page.json_link);
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
    Ok(super::csv_export::rows_response(
        "wattcounts-compare.csv",
        &c.rows,
        1,
    ))
}

/// The GPU table as CSV (answered by [`gpu_json`]'s route).
#[utoipa::path(get, path = "/api/v1/gpus/{id}.csv", tag = "gpus",
    summary = "One GPU across models in one scenario as CSV, the leaderboard CSV's columns",
    params(("id" = String, Path, description = "Catalogue GPU id, e.g. `h100-pcie`"),
        ScenarioParam, ViewParams),
    responses((status = 200, content_type = "text/csv", body = String),
        (status = 404, description = "No such GPU in the catalogue", body = super::error::ErrorBody)))]
pub async fn gpu_csv(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(params): Params<(ScenarioParam, ViewParams)>,
) -> Result<Response, ApiError> {
    let v = gpu_data(&s, &id, &params).await?;
    Ok(super::csv_export::rows_response(
        &format!("wattcounts-gpu-{id}.csv"),
        &v.rows,
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

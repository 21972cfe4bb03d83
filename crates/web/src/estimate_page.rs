//! `/estimate`, `/api/v1/estimate` and `/api/v1/estimator`: what the
//! estimator (issue #28) says of a GPU × model × scenario, labelled as an
//! estimate with its interval, the validation split the interval comes
//! from, the nearest measured groups and, for a measured pair, the
//! measurement beside it; or why it will not say. Also the model page's
//! "GPUs nobody has measured" rows and their exports. Estimates never
//! enter a measured ranking, verdict, headline, CSV or snapshot.

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::ApiError;
use super::insights_page::SYNTHETIC_NOTE;
use super::pages::{model_path, render, url_encode, PageError, VERSION};
use super::params::{given, PageParams, Params};
use super::AppState;
use wattcounts_core::catalog::{self, GpuSpec, ModelSpec};
use wattcounts_core::domain::{Interval, Origin, ScenarioKey};
use wattcounts_core::estimator::answer::{Answer, Band, IntervalSource, Neighbour, Refusal};
use wattcounts_core::estimator::features::{ITL_EXTRA_FEATURES, POWER_FEATURES};
use wattcounts_core::estimator::trained::Trained;
use wattcounts_core::estimator::validation::Line;
use wattcounts_core::estimator::Settings;
use wattcounts_core::leaderboard::Query;
use wattcounts_core::verdict::sig;
use wattcounts_service::estimates::{EstimatorView, Phase};

/// Where refusals point for what the rules are.
const RULES_LINK: &str = "/methodology#estimates";

/// The question.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EstimateParams {
    /// The Hugging Face id of a catalogue model.
    pub model: Option<String>,
    /// The site's GPU id (`a100-sxm4-40gb`) or its NVML name.
    pub gpu: Option<String>,
    /// `batch`, `server` (with `rate`) or `server@RATE`.
    #[param(pattern = "^(batch|server(@[0-9]+(\\.[0-9]+)?)?)$")]
    pub scenario: Option<String>,
    /// Server arrival rate, requests per second.
    pub rate: Option<String>,
    /// The intervals' level, between 0 and 1 (the configured one, 0.8 by
    /// default, when absent).
    pub level: Option<String>,
}

/// A parsed question.
pub(crate) struct Question {
    pub gpu: &'static GpuSpec,
    pub model: &'static ModelSpec,
    pub lambda_qps: Option<f64>,
    pub level: Option<f64>,
}

fn refused(code: &'static str, message: String) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        format!("{message} (rules: {RULES_LINK})"),
    )
}

fn missing(name: &str, expected: &str) -> ApiError {
    ApiError::bad_request(
        "missing_parameter",
        format!("{name} is required: {expected} (rules: {RULES_LINK})"),
    )
}

/// A GPU by the site's id or its NVML name.
pub(crate) fn gpu_named(v: &str) -> Option<&'static GpuSpec> {
    catalog::gpu_by_id(v)
        .or_else(|| catalog::gpu_by_id(&catalog::gpu_id(v)))
        .or_else(|| {
            catalog::gpus()
                .iter()
                .find(|g| g.nvml_name.eq_ignore_ascii_case(v.trim()))
        })
}

fn parse_rate(v: &str) -> Result<f64, ApiError> {
    match v.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(refused(
            "bad_rate",
            format!("rate = '{v}' is not a positive finite number of requests per second"),
        )),
    }
}

pub(crate) fn parse_question(p: &EstimateParams) -> Result<Question, ApiError> {
    let model_id = given(&p.model).ok_or_else(|| {
        missing(
            "model",
            "a catalogue model's Hugging Face id, e.g. meta-llama/Llama-3.1-8B-Instruct (the list: /api/v1/models)",
        )
    })?;
    let gpu_id = given(&p.gpu).ok_or_else(|| {
        missing(
            "gpu",
            "a catalogue GPU's id, e.g. a100-sxm4-40gb, or its NVML name (the list: /api/v1/gpus)",
        )
    })?;
    let scenario = given(&p.scenario)
        .ok_or_else(|| missing("scenario", "batch, server (with rate) or server@RATE"))?;
    let model = catalog::model_by_id(model_id.trim()).ok_or_else(|| {
        refused(
            "unknown_model",
            format!(
                "model = '{model_id}' is not in the catalogue; expected one of its {} Hugging Face ids (/api/v1/models)",
                catalog::models().len()
            ),
        )
    })?;
    let gpu = gpu_named(gpu_id).ok_or_else(|| {
        refused(
            "unknown_gpu",
            format!(
                "gpu = '{gpu_id}' is not in the catalogue; expected one of {} (or their NVML names)",
                catalog::gpus()
                    .iter()
                    .map(|g| g.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let rate = given(&p.rate);
    let lambda_qps = match scenario.trim() {
        "batch" => {
            if let Some(r) = rate {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    format!("rate = '{r}' applies to the server scenario only; scenario is batch"),
                ));
            }
            None
        }
        "server" => Some(parse_rate(rate.ok_or_else(|| {
            missing(
                "rate",
                "the server scenario's arrival rate in requests per second, e.g. 0.33",
            )
        })?)?),
        s => match s.strip_prefix("server@") {
            Some(r) => {
                let from_scenario = parse_rate(r)?;
                if let Some(other) = rate {
                    if parse_rate(other)? != from_scenario {
                        return Err(ApiError::bad_request(
                            "bad_parameter",
                            format!("scenario = '{s}' and rate = '{other}' disagree; give the rate once"),
                        ));
                    }
                }
                Some(from_scenario)
            }
            None => {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    format!("scenario = '{s}'; expected batch, server (with rate) or server@RATE"),
                ))
            }
        },
    };
    let level = match given(&p.level) {
        None => None,
        Some(v) => match v.trim().parse::<f64>() {
            Ok(l) if l > 0.0 && l < 1.0 => Some(l),
            _ => {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    format!("level = '{v}'; expected a share between 0 and 1, e.g. 0.8"),
                ))
            }
        },
    };
    Ok(Question {
        gpu,
        model,
        lambda_qps,
        level,
    })
}

/// The fit answering now, or why none does: 503 with Retry-After while
/// the first fit runs, 422 `estimator_unavailable` when the data cannot
/// give one.
pub(crate) fn current(view: &EstimatorView) -> Result<Arc<Trained>, ApiError> {
    if let Some(t) = &view.current {
        return Ok(t.clone());
    }
    Err(match &view.phase {
        Phase::Unavailable { why } => {
            refused("estimator_unavailable", format!("no estimates: {why}"))
        }
        _ => ApiError {
            retry_after_secs: Some(5),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "estimator_not_ready",
                "the estimator's first fit is running; try again in a few seconds",
            )
        },
    })
}

/// What the estimator was fitted on.
#[derive(Serialize, ToSchema)]
pub struct TrainedOn {
    pub groups: usize,
    pub gpus: usize,
    pub models: usize,
    pub origin: String,
    pub protocol: String,
}

/// Which fit answered.
#[derive(Serialize, ToSchema)]
pub struct FitId {
    pub version: String,
    pub data_stamp: String,
    pub fitted_at: String,
    pub trained_on: TrainedOn,
    /// `ready`, or `fitting` when a newer fit is being made and this, the
    /// previous one, answers meanwhile.
    pub status: String,
}

fn fit_id(t: &Trained, view: &EstimatorView) -> FitId {
    let (gpus, models) = t.counts();
    FitId {
        version: t.version.clone(),
        data_stamp: t.provenance.data_stamp.clone(),
        fitted_at: t.provenance.fitted_at.clone(),
        trained_on: TrainedOn {
            groups: t.rows.len(),
            gpus,
            models,
            origin: t.provenance.origin.clone(),
            protocol: t.provenance.protocol.clone(),
        },
        status: status_word(&view.phase).into(),
    }
}

fn status_word(p: &Phase) -> &'static str {
    match p {
        Phase::Fitting { .. } => "fitting",
        Phase::Ready => "ready",
        Phase::Unavailable { .. } => "unavailable",
    }
}

/// The measured group of a measured pair, shown beside the estimate.
#[derive(Serialize, ToSchema)]
pub struct Measured {
    pub energy_per_token_j: f64,
    pub energy_per_token_interval: Interval,
    pub energy_per_request_j: Option<f64>,
    pub power_w: f64,
    pub itl_s: Option<f64>,
    pub submissions: u64,
    /// The leaderboard rows behind it.
    pub link: String,
}

/// A measured group near the question, with where to see it.
#[derive(Serialize, ToSchema)]
pub struct NeighbourView {
    #[serde(flatten)]
    pub group: Neighbour,
    pub scenario: String,
    pub link: String,
}

/// `/api/v1/estimate`.
#[derive(Serialize, ToSchema)]
pub struct EstimateAnswer {
    /// Always `estimate`: this is not a measurement.
    pub kind: &'static str,
    pub model: String,
    pub gpu: String,
    pub gpu_name: String,
    /// `batch` or `server@RATE`.
    pub scenario: String,
    pub lambda_qps: Option<f64>,
    pub energy_per_token_j: Option<Band>,
    /// Why J/token is absent, when it is.
    pub energy_per_token_note: Option<String>,
    pub energy_per_request_j: Option<Band>,
    pub power_w: Band,
    pub itl_s: Band,
    /// Server: the model's measured output tokens per request (median of
    /// its server groups), by which J/request becomes J/token.
    pub tokens_per_request: Option<f64>,
    pub level: f64,
    pub interval_from: IntervalSource,
    pub gpu_measured: bool,
    pub model_measured: bool,
    /// The group's own measurement for a measured pair, else null.
    pub measured: Option<Measured>,
    pub neighbours: Vec<NeighbourView>,
    pub estimator: FitId,
    /// The estimator's validation line of the split that applies.
    pub validation: Option<Line>,
    pub synthetic: bool,
    pub note: Option<String>,
}

fn scenario_param(lambda: Option<f64>) -> String {
    match lambda {
        Some(l) => format!("server@{l}"),
        None => "batch".into(),
    }
}

fn leaderboard_link(model: &str, gpu: &str, lambda: Option<f64>, origin: &str) -> String {
    format!(
        "/leaderboard?model={}&gpu={}&scenario={}&origin={origin}",
        url_encode(model),
        url_encode(gpu),
        url_encode(&scenario_param(lambda))
    )
}

async fn measured(s: &AppState, t: &Trained, q: &Question) -> Result<Option<Measured>, ApiError> {
    let origin = Origin::parse(&t.provenance.origin).unwrap_or(Origin::Real);
    let board = s
        .service
        .all_groups(&Query {
            model: Some(q.model.id.clone()),
            gpu: Some(q.gpu.id.clone()),
            origin: Some(origin),
            ..Query::default()
        })
        .await?;
    let want = ScenarioKey {
        scenario: if q.lambda_qps.is_some() {
            wattcounts_core::domain::Scenario::Server
        } else {
            wattcounts_core::domain::Scenario::Batch
        },
        lambda_qps: q.lambda_qps,
    };
    Ok(board
        .entries
        .iter()
        .find(|e| want.same(&wattcounts_core::compare::key_of(e)))
        .map(|e| Measured {
            energy_per_token_j: e.energy_per_token_j,
            energy_per_token_interval: e.energy_per_token_interval,
            energy_per_request_j: e.energy_per_request_j,
            power_w: e.power_mean_w,
            itl_s: e.itl_s,
            submissions: e.submissions,
            link: leaderboard_link(&e.model, &e.gpu_id, e.lambda_qps, origin.as_str()),
        }))
}

fn refusal_error(r: &Refusal) -> ApiError {
    refused(r.code(), r.message().to_string())
}

pub(crate) async fn estimate(s: &AppState, q: &Question) -> Result<EstimateAnswer, ApiError> {
    let view = s.service.estimator();
    let t = current(&view)?;
    let mut rules = view.rules;
    if let Some(l) = q.level {
        rules.level = l;
    }
    let a: Answer = t
        .answer(q.gpu, q.model, q.lambda_qps, &rules)
        .map_err(|r| refusal_error(&r))?;
    let measured = match &a.measured {
        Some(_) => measured(s, &t, q).await?,
        None => None,
    };
    let synthetic = t.provenance.origin == "demo";
    let origin = t.provenance.origin.clone();
    Ok(EstimateAnswer {
        kind: "estimate",
        model: q.model.id.clone(),
        gpu: q.gpu.id.clone(),
        gpu_name: q.gpu.nvml_name.clone(),
        scenario: scenario_param(q.lambda_qps),
        lambda_qps: q.lambda_qps,
        energy_per_token_j: a.energy_per_token_j,
        energy_per_token_note: a.energy_per_token_note,
        energy_per_request_j: a.energy_per_request_j,
        power_w: a.power_w,
        itl_s: a.itl_s,
        tokens_per_request: a.tokens_per_request,
        level: a.level,
        interval_from: a.interval_from,
        gpu_measured: a.gpu_measured,
        model_measured: a.model_measured,
        measured,
        neighbours: a
            .neighbours
            .into_iter()
            .map(|n| NeighbourView {
                scenario: scenario_param(n.lambda_qps),
                link: leaderboard_link(&n.model, &n.gpu_id, n.lambda_qps, &origin),
                group: n,
            })
            .collect(),
        estimator: fit_id(&t, &view),
        validation: a.validation,
        synthetic,
        note: synthetic.then(|| SYNTHETIC_NOTE.to_string()),
    })
}

#[utoipa::path(get, path = "/api/v1/estimate", tag = "estimates",
    summary = "An estimate (never a measurement) for a GPU × model × scenario, with its interval and nearest measured groups",
    params(EstimateParams),
    responses(
        (status = 200, body = EstimateAnswer),
        (status = 400, description = "A missing or malformed parameter", body = super::error::ErrorBody),
        (status = 422, description = "An unknown model or GPU, a pair that does not fit, outside the measured domain, a mixture of experts, or too little data (estimator_unavailable)", body = super::error::ErrorBody),
        (status = 503, description = "The first fit is running; see Retry-After", body = super::error::ErrorBody)))]
pub async fn estimate_json(
    State(s): State<AppState>,
    Params(p): Params<EstimateParams>,
) -> Result<Response, ApiError> {
    let q = parse_question(&p)?;
    Ok(Json(estimate(&s, &q).await?).into_response())
}

/// `/api/v1/estimator`.
#[derive(Serialize, ToSchema)]
pub struct EstimatorAnswer {
    /// `fitting`, `ready` or `unavailable`.
    pub status: String,
    /// Why it is unavailable, or since when it fits.
    pub why: Option<String>,
    pub version: Option<String>,
    pub data_stamp: Option<String>,
    pub fitted_at: Option<String>,
    pub fit_seconds: Option<f64>,
    pub validation_seconds: Option<f64>,
    pub trained_on: Option<TrainedOn>,
    pub settings: Settings,
    pub level: f64,
    pub domain_factor: f64,
    pub threads: usize,
    pub features: Features,
    pub validation: Vec<Line>,
    /// WattGPU's published figures, for the same splits.
    pub wattgpu: Vec<String>,
    /// Fits this process made, and stored fits it loaded instead.
    pub fits_made: u64,
    pub fits_loaded: u64,
    pub synthetic: bool,
    pub note: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Features {
    pub power: Vec<&'static str>,
    pub itl: Vec<&'static str>,
}

/// WattGPU's published validation figures (dense LLMs × 8 GPUs).
pub const WATTGPU: &[&str] = &[
    "power MdAPE offline: 1.6 % (grouped CV), 3.4 % (LOGO), 2.0 % (LOLO)",
    "power MdAPE server: 5.5 % (grouped CV), 13.5 % (LOGO), 6.7 % (LOLO)",
    "ITL MdAPE on unseen GPUs (LOGO): 24.9 % offline, 8.5 % server",
    "Kendall τ of each model's GPU ranking by power under LOGO: .95 offline, .76 server",
];

pub(crate) fn estimator_answer(view: &EstimatorView) -> EstimatorAnswer {
    let t = view.current.as_deref();
    let (gpus, models) = t.map_or((0, 0), Trained::counts);
    let synthetic = t.is_some_and(|t| t.provenance.origin == "demo");
    EstimatorAnswer {
        status: status_word(&view.phase).into(),
        why: match &view.phase {
            Phase::Unavailable { why } => Some(why.clone()),
            Phase::Fitting { since } => Some(format!(
                "fitting since {}{}",
                since.to_rfc3339(),
                if t.is_some() {
                    "; the previous fit answers meanwhile"
                } else {
                    ""
                }
            )),
            Phase::Ready => None,
        },
        version: t.map(|t| t.version.clone()),
        data_stamp: t.map(|t| t.provenance.data_stamp.clone()),
        fitted_at: t.map(|t| t.provenance.fitted_at.clone()),
        fit_seconds: t.map(|t| t.provenance.fit_seconds),
        validation_seconds: t.map(|t| t.provenance.validation_seconds),
        trained_on: t.map(|t| TrainedOn {
            groups: t.rows.len(),
            gpus,
            models,
            origin: t.provenance.origin.clone(),
            protocol: t.provenance.protocol.clone(),
        }),
        settings: view.config.settings(),
        level: view.rules.level,
        domain_factor: view.rules.domain_factor,
        threads: view.config.threads,
        features: Features {
            power: POWER_FEATURES.to_vec(),
            itl: POWER_FEATURES
                .iter()
                .chain(ITL_EXTRA_FEATURES)
                .copied()
                .collect(),
        },
        validation: t.map(|t| t.report.lines.clone()).unwrap_or_default(),
        wattgpu: WATTGPU.iter().map(|s| s.to_string()).collect(),
        fits_made: view.fits_made,
        fits_loaded: view.fits_loaded,
        synthetic,
        note: synthetic.then(|| format!("{SYNTHETIC_NOTE} {DEMO_PHYSICS_NOTE}")),
    }
}

/// What the demo's validation scores mean.
pub const DEMO_PHYSICS_NOTE: &str = "The demo's physics is a formula of the very catalogue features the estimator reads: its validation scores check the pipeline, not hardware.";

#[utoipa::path(get, path = "/api/v1/estimator", tag = "estimates",
    summary = "The estimator: status, version, what it was fitted on, settings, features and its validation table",
    responses((status = 200, body = EstimatorAnswer)))]
pub async fn estimator_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(estimator_answer(&s.service.estimator())).into_response())
}

// The validation table as pages show it.

pub(crate) struct ValidationRow {
    pub split: &'static str,
    pub scenario: &'static str,
    pub method: String,
    pub folds: usize,
    pub rows: usize,
    pub power: String,
    pub itl: String,
    pub energy: String,
    pub pearson: String,
    pub gpu_tau: String,
    pub model_tau: String,
    pub top1: String,
    pub coverage: String,
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.1} %"))
}

fn num(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.2}"))
}

pub(crate) fn validation_rows(lines: &[Line]) -> Vec<ValidationRow> {
    lines
        .iter()
        .map(|l| {
            let s = &l.scores;
            ValidationRow {
                split: l.split.as_str(),
                scenario: l.scenario.as_str(),
                method: l.method.clone(),
                folds: l.folds,
                rows: s.rows,
                power: pct(s.power_mdape_pct),
                itl: pct(s.itl_mdape_pct),
                energy: pct(s.energy_mdape_pct),
                pearson: num(s.energy_pearson_r),
                gpu_tau: num(s.gpu_ranking_tau),
                model_tau: num(s.model_ranking_tau),
                top1: s
                    .top1_share
                    .map_or("–".into(), |v| format!("{:.0} %", v * 100.0)),
                coverage: s
                    .coverage
                    .map_or("–".into(), |v| format!("{:.0} %", v * 100.0)),
            }
        })
        .collect()
}

/// The validation block pages include: the table and what it rests on.
pub(crate) struct ValidationBlock {
    pub rows: Vec<ValidationRow>,
    pub summary: String,
    pub wattgpu: &'static [&'static str],
    pub synthetic: bool,
}

pub(crate) fn validation_block(view: &EstimatorView) -> ValidationBlock {
    let a = estimator_answer(view);
    let summary = match (&a.trained_on, &a.version) {
        (Some(t), Some(v)) => format!(
            "Estimator {} ({}), fitted {} on {} {} groups of the {} protocol ({} GPUs, {} models) in {:.2} s; validated in {:.1} s.",
            &v[..12.min(v.len())],
            a.status,
            a.fitted_at.clone().unwrap_or_default(),
            t.groups,
            t.origin,
            t.protocol,
            t.gpus,
            t.models,
            a.fit_seconds.unwrap_or(0.0),
            a.validation_seconds.unwrap_or(0.0)
        ),
        _ => format!(
            "No fit yet ({}): {}",
            a.status,
            a.why.clone().unwrap_or_default()
        ),
    };
    ValidationBlock {
        rows: validation_rows(&a.validation),
        summary,
        wattgpu: WATTGPU,
        synthetic: a.synthetic,
    }
}

// The form.

struct Choice {
    value: String,
    label: String,
    selected: bool,
}

/// One figure of a result, as the page prints it.
struct Figure {
    name: &'static str,
    point: String,
    interval: String,
    measured: String,
}

fn band_cells(b: &Band) -> (String, String) {
    (
        sig(b.point),
        match (b.lo, b.hi) {
            (Some(lo), Some(hi)) => format!("{} – {}", sig(lo), sig(hi)),
            _ => "too few residuals for this level".into(),
        },
    )
}

#[derive(Template)]
#[template(path = "estimate.html")]
struct EstimatePage {
    models: Vec<Choice>,
    gpus: Vec<Choice>,
    batch: bool,
    rate: String,
    error: Option<String>,
    answer_title: String,
    figures: Vec<Figure>,
    interval_note: String,
    neighbours: Vec<(String, String, String, String, String)>,
    measured_link: Option<String>,
    json_link: String,
    validation: ValidationBlock,
    synthetic_note: &'static str,
    demo_physics_note: &'static str,
    demo: bool,
    version: &'static str,
}

pub async fn estimate_page(
    State(s): State<AppState>,
    PageParams(p): PageParams<EstimateParams>,
) -> Result<Response, PageError> {
    let view = s.service.estimator();
    let asked =
        given(&p.model).is_some() || given(&p.gpu).is_some() || given(&p.scenario).is_some();
    let chosen_model = given(&p.model).unwrap_or("meta-llama/Llama-3.1-8B-Instruct");
    let chosen_gpu = given(&p.gpu)
        .and_then(gpu_named)
        .map_or("l40s", |g| g.id.as_str());
    let batch = given(&p.scenario).is_none_or(|v| v == "batch");
    let mut page = EstimatePage {
        models: catalog::models()
            .iter()
            .map(|m| Choice {
                value: m.id.clone(),
                label: format!("{} ({} B)", m.id, m.params_b),
                selected: m.id == chosen_model,
            })
            .collect(),
        gpus: catalog::gpus()
            .iter()
            .map(|g| Choice {
                value: g.id.clone(),
                label: g.nvml_name.clone(),
                selected: g.id == chosen_gpu,
            })
            .collect(),
        batch,
        rate: given(&p.rate)
            .map(str::to_string)
            .or_else(|| {
                given(&p.scenario)
                    .and_then(|v| v.strip_prefix("server@"))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "0.33".into()),
        error: None,
        answer_title: String::new(),
        figures: Vec::new(),
        interval_note: String::new(),
        neighbours: Vec::new(),
        measured_link: None,
        json_link: String::new(),
        validation: validation_block(&view),
        synthetic_note: SYNTHETIC_NOTE,
        demo_physics_note: DEMO_PHYSICS_NOTE,
        demo: view
            .current
            .as_ref()
            .is_some_and(|t| t.provenance.origin == "demo"),
        version: VERSION,
    };
    let mut status = StatusCode::OK;
    if asked {
        let result = match parse_question(&p) {
            Ok(q) => estimate(&s, &q).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(a) => {
                page.json_link = format!(
                    "/api/v1/estimate?model={}&gpu={}&scenario={}",
                    url_encode(&a.model),
                    url_encode(&a.gpu),
                    url_encode(&a.scenario)
                );
                page.answer_title = format!(
                    "Estimate: {} on {}, {}",
                    a.model,
                    a.gpu_name,
                    if a.lambda_qps.is_some() {
                        format!("server at {} req/s", a.lambda_qps.unwrap_or_default())
                    } else {
                        "batch".into()
                    }
                );
                let m = a.measured.as_ref();
                let mut figure = |name: &'static str, b: Option<&Band>, measured: Option<f64>| {
                    if let Some(b) = b {
                        let (point, interval) = band_cells(b);
                        page.figures.push(Figure {
                            name,
                            point,
                            interval,
                            measured: measured.map_or("not measured".into(), sig),
                        });
                    }
                };
                figure(
                    "energy per token (J)",
                    a.energy_per_token_j.as_ref(),
                    m.map(|m| m.energy_per_token_j),
                );
                figure(
                    "energy per request (J)",
                    a.energy_per_request_j.as_ref(),
                    m.and_then(|m| m.energy_per_request_j),
                );
                figure("mean power (W)", Some(&a.power_w), m.map(|m| m.power_w));
                figure(
                    "inter-token latency (s)",
                    Some(&a.itl_s),
                    m.and_then(|m| m.itl_s),
                );
                page.interval_note = format!(
                    "{:.0} % intervals, split-conformal from the {} out-of-fold residuals of {} ({}){}.{}",
                    a.level * 100.0,
                    a.interval_from.residuals,
                    a.interval_from.split,
                    a.interval_from.scenario.as_str(),
                    a.interval_from
                        .coverage_achieved
                        .map_or(String::new(), |c| format!(
                            "; validation found {:.0} % of held-out rows inside at 80 %",
                            c * 100.0
                        )),
                    a.energy_per_token_note
                        .as_ref()
                        .map_or(String::new(), |n| format!(" {n}."))
                );
                page.measured_link = m.map(|m| m.link.clone());
                page.neighbours = a
                    .neighbours
                    .iter()
                    .map(|n| {
                        (
                            n.group.gpu_id.clone(),
                            n.group.model.clone(),
                            n.scenario.clone(),
                            // The figure the estimate leads with: J/token in
                            // batch, J/request in server.
                            match (n.group.lambda_qps, n.group.energy_per_request_j) {
                                (Some(_), Some(r)) => format!("{} J/request", sig(r)),
                                _ => format!("{} J/token", sig(n.group.energy_per_token_j)),
                            },
                            n.link.clone(),
                        )
                    })
                    .collect();
            }
            Err(e) => {
                status = e.status;
                page.error = Some(format!("{} ({})", e.message, e.code));
            }
        }
    }
    let mut resp = render(status, &page);
    if status == StatusCode::SERVICE_UNAVAILABLE {
        resp.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("5"),
        );
    }
    Ok(resp)
}

// The model page's estimates of the GPUs nobody measured for it.

/// One catalogue GPU × scenario the model has no group for.
#[derive(Serialize, ToSchema)]
pub struct UnmeasuredRow {
    /// Always `estimate`.
    pub kind: &'static str,
    pub gpu_id: String,
    pub gpu_name: String,
    pub scenario: String,
    pub energy_per_token_j: Option<Band>,
    pub energy_per_request_j: Option<Band>,
    pub power_w: Option<Band>,
    pub itl_s: Option<Band>,
    /// Why there is no estimate (`does_not_fit` is an answer too).
    pub refused: Option<String>,
    pub refusal_code: Option<String>,
    pub link: String,
}

/// `/api/v1/models/{id}/estimates`.
#[derive(Serialize, ToSchema)]
pub struct UnmeasuredAnswer {
    pub model: String,
    pub kind: &'static str,
    pub estimator: Option<FitId>,
    /// Why there are no rows, when the estimator cannot answer.
    pub why_empty: Option<String>,
    pub level: f64,
    pub rows: Vec<UnmeasuredRow>,
    pub synthetic: bool,
}

/// Every catalogue GPU × scenario of the fit's data (batch, each measured
/// server rate) that has no group of this model in the fit's rows.
pub(crate) fn unmeasured(view: &EstimatorView, model_id: &str) -> UnmeasuredAnswer {
    let mut out = UnmeasuredAnswer {
        model: model_id.to_string(),
        kind: "estimate",
        estimator: None,
        why_empty: None,
        level: view.rules.level,
        rows: Vec::new(),
        synthetic: false,
    };
    let t = match current(view) {
        Ok(t) => t,
        Err(e) => {
            out.why_empty = Some(e.message);
            return out;
        }
    };
    let Some(model) = catalog::model_by_id(model_id) else {
        out.why_empty = Some(format!(
            "{model_id} is not in the catalogue: the estimator reads its features from there"
        ));
        return out;
    };
    out.synthetic = t.provenance.origin == "demo";
    out.estimator = Some(fit_id(&t, view));
    let mut scenarios: Vec<Option<f64>> = vec![None];
    let mut rates: Vec<f64> = t.rows.iter().filter_map(|r| r.lambda_qps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    scenarios.extend(rates.into_iter().map(Some));
    for lambda in scenarios {
        for g in catalog::gpus() {
            let measured = t
                .rows
                .iter()
                .any(|r| r.gpu_id == g.id && r.model == model.id && r.lambda_qps == lambda);
            if measured {
                continue;
            }
            let scenario = scenario_param(lambda);
            let link = format!(
                "/estimate?model={}&gpu={}&scenario={}",
                url_encode(&model.id),
                url_encode(&g.id),
                url_encode(&scenario)
            );
            let row = match t.answer(g, model, lambda, &view.rules) {
                Ok(a) => UnmeasuredRow {
                    kind: "estimate",
                    gpu_id: g.id.clone(),
                    gpu_name: g.nvml_name.clone(),
                    scenario,
                    energy_per_token_j: a.energy_per_token_j,
                    energy_per_request_j: a.energy_per_request_j,
                    power_w: Some(a.power_w),
                    itl_s: Some(a.itl_s),
                    refused: None,
                    refusal_code: None,
                    link,
                },
                Err(r) => UnmeasuredRow {
                    kind: "estimate",
                    gpu_id: g.id.clone(),
                    gpu_name: g.nvml_name.clone(),
                    scenario,
                    energy_per_token_j: None,
                    energy_per_request_j: None,
                    power_w: None,
                    itl_s: None,
                    refused: Some(r.message().to_string()),
                    refusal_code: Some(r.code().to_string()),
                    link,
                },
            };
            out.rows.push(row);
        }
    }
    out
}

pub const UNMEASURED_CSV_COLUMNS: &[&str] = &[
    "kind",
    "model",
    "gpu_id",
    "gpu_name",
    "scenario",
    "energy_per_token_j",
    "energy_per_token_lo_j",
    "energy_per_token_hi_j",
    "energy_per_request_j",
    "energy_per_request_lo_j",
    "energy_per_request_hi_j",
    "power_w",
    "power_lo_w",
    "power_hi_w",
    "itl_s",
    "itl_lo_s",
    "itl_hi_s",
    "level",
    "refusal_code",
    "refused",
    "estimator_version",
    "synthetic",
];

pub(crate) fn unmeasured_csv(a: &UnmeasuredAnswer) -> Vec<u8> {
    use super::csv_export::opt;
    use wattcounts_core::spreadsheet::text_cell;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(UNMEASURED_CSV_COLUMNS)
        .expect("write to memory");
    let version = a
        .estimator
        .as_ref()
        .map(|e| e.version.clone())
        .unwrap_or_default();
    for r in &a.rows {
        let three = |b: &Option<Band>| {
            [
                opt(b.map(|b| b.point)),
                opt(b.and_then(|b| b.lo)),
                opt(b.and_then(|b| b.hi)),
            ]
        };
        let mut record = vec![
            "estimate".to_string(),
            text_cell(&a.model),
            text_cell(&r.gpu_id),
            text_cell(&r.gpu_name),
            text_cell(&r.scenario),
        ];
        record.extend(three(&r.energy_per_token_j));
        record.extend(three(&r.energy_per_request_j));
        record.extend(three(&r.power_w));
        record.extend(three(&r.itl_s));
        record.push(a.level.to_string());
        record.push(r.refusal_code.clone().unwrap_or_default());
        record.push(r.refused.as_deref().map(text_cell).unwrap_or_default());
        record.push(version.clone());
        record.push(a.synthetic.to_string());
        w.write_record(record).expect("write to memory");
    }
    w.into_inner().expect("memory")
}

/// `/api/v1/models/{id}/estimates` and `.csv` (answered through the
/// model catch-all route, since model ids hold a slash).
pub(crate) fn unmeasured_response(s: &AppState, model_id: &str, csv: bool) -> Response {
    let a = unmeasured(&s.service.estimator(), model_id);
    if csv {
        (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"wattcounts-estimates.csv\"",
                ),
            ],
            unmeasured_csv(&a),
        )
            .into_response()
    } else {
        Json(a).into_response()
    }
}

/// The model page's section, as it renders.
pub(crate) struct UnmeasuredSection {
    pub why_empty: Option<String>,
    pub rows: Vec<(String, String, String, String, String)>,
    pub json_link: String,
    pub csv_link: String,
    pub level: String,
}

pub(crate) fn unmeasured_section(s: &AppState, model_id: &str) -> UnmeasuredSection {
    let a = unmeasured(&s.service.estimator(), model_id);
    let cell = |b: &Option<Band>| {
        b.as_ref().map(|b| {
            let (p, i) = band_cells(b);
            format!("{p} ({i})")
        })
    };
    UnmeasuredSection {
        why_empty: a.why_empty.clone(),
        rows: a
            .rows
            .iter()
            .map(|r| {
                (
                    r.gpu_name.clone(),
                    r.scenario.clone(),
                    cell(&r.energy_per_token_j)
                        .or_else(|| r.refused.clone())
                        .unwrap_or_else(|| "–".into()),
                    cell(&r.energy_per_request_j).unwrap_or_else(|| "–".into()),
                    r.link.clone(),
                )
            })
            .collect(),
        json_link: format!("/api/v1{}/estimates", model_path(model_id)),
        csv_link: format!("/api/v1{}/estimates.csv", model_path(model_id)),
        level: format!("{:.0} %", a.level * 100.0),
    }
}

#[utoipa::path(get, path = "/api/v1/models/{id}/estimates", tag = "estimates",
    summary = "Estimates (never measurements) for every catalogue GPU × scenario this model has no group on, or why each is refused",
    params(("id" = String, Path, description = "The model's Hugging Face id (it holds a slash)")),
    responses((status = 200, body = UnmeasuredAnswer)))]
pub async fn model_estimates_json(
    State(s): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    unmeasured_response(&s, &id, false)
}

#[utoipa::path(get, path = "/api/v1/models/{id}/estimates.csv", tag = "estimates",
    summary = "The model's estimates for unmeasured GPUs as CSV, one row per GPU × scenario",
    params(("id" = String, Path, description = "The model's Hugging Face id (it holds a slash)")),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn model_estimates_csv(
    State(s): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    unmeasured_response(&s, &id, true)
}

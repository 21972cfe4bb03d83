//! `/api/v1/estimate`: the estimate of one question, the measured group
//! beside it when the pair was measured, and its neighbours.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::question::{parse_question, Question};
use super::*;
use crate::extract::query::{EstimateParams, Params};
use crate::pages::insights::SYNTHETIC_NOTE;
use crate::AppState;
use wattcounts_analytics::estimator::answer::{Answer, IntervalSource, Neighbour, Refusal};
use wattcounts_analytics::estimator::validation::Line;
use wattcounts_analytics::leaderboard::Query;
use wattcounts_rules::domain::{Interval, Origin};

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
    /// What to weigh beside the interval: a mixture of experts estimated
    /// while none was measured.
    pub caveat: Option<String>,
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
    let want = scenario_key(q.lambda_qps);
    Ok(board
        .entries
        .iter()
        .find(|e| want.same(&wattcounts_analytics::compare::key_of(e)))
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
        caveat: a.caveat,
        synthetic,
        note: synthetic.then(|| SYNTHETIC_NOTE.to_string()),
    })
}

#[utoipa::path(get, path = "/api/v1/estimate", tag = "estimates",
    summary = "An estimate (never a measurement) for a GPU × model × scenario, with its interval and nearest measured groups",
    params(EstimateParams),
    responses(
        (status = 200, body = EstimateAnswer),
        (status = 400, description = "A missing or malformed parameter", body = crate::error::ErrorBody),
        (status = 422, description = "An unknown model or GPU, a pair that does not fit, outside the measured domain, or too little data (estimator_unavailable)", body = crate::error::ErrorBody),
        (status = 503, description = "The first fit is running; see Retry-After", body = crate::error::ErrorBody)))]
pub async fn estimate_json(
    State(s): State<AppState>,
    Params(p): Params<EstimateParams>,
) -> Result<Response, ApiError> {
    let q = parse_question(&p)?;
    Ok(Json(estimate(&s, &q).await?).into_response())
}

//! `/estimate`, `/api/v1/estimate` and `/api/v1/estimator`: what the
//! estimator (issue #28) says of a GPU × model × scenario, labelled as an
//! estimate with its interval, the validation split the interval comes
//! from, the nearest measured groups and, for a measured pair, the
//! measurement beside it; or why it will not say. Also the model page's
//! "GPUs nobody has measured" rows and their exports. Estimates never
//! enter a measured ranking, verdict, headline, CSV or snapshot.
//!
//! Arrows: form → (question, answer, estimator); answer → question;
//! unmeasured → this module's shared parts only.

pub mod answer;
pub mod estimator;
pub mod form;
pub mod question;
pub mod unmeasured;

pub use crate::extract::query::EstimateParams;
pub(crate) use estimator::{real_hardware, validation_block, ValidationBlock, DEMO_PHYSICS_NOTE};
pub(crate) use unmeasured::{unmeasured_response, unmeasured_section, UnmeasuredSection};

use std::sync::Arc;

use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::view::url_encode;
use wattcounts_analytics::estimator::answer::Band;
use wattcounts_analytics::estimator::trained::Trained;
use wattcounts_analytics::verdict::sig;
use wattcounts_rules::domain::{Scenario, ScenarioKey};
use wattcounts_service::estimates::{EstimatorView, Phase};

/// Where refusals point for what the rules are.
const RULES_LINK: &str = "/methodology#estimates";

fn refused(code: &'static str, message: String) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        format!("{message} (rules: {RULES_LINK})"),
    )
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

impl TrainedOn {
    fn of(t: &Trained) -> TrainedOn {
        let (gpus, models) = t.counts();
        TrainedOn {
            groups: t.rows.len(),
            gpus,
            models,
            origin: t.provenance.origin.clone(),
            protocol: t.provenance.protocol.clone(),
        }
    }
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
    FitId {
        version: t.version.clone(),
        data_stamp: t.provenance.data_stamp.clone(),
        fitted_at: t.provenance.fitted_at.clone(),
        trained_on: TrainedOn::of(t),
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

/// Batch (no rate) or server at `lambda`.
fn scenario_key(lambda: Option<f64>) -> ScenarioKey {
    ScenarioKey {
        scenario: if lambda.is_some() {
            Scenario::Server
        } else {
            Scenario::Batch
        },
        lambda_qps: lambda,
    }
}

/// `batch` or `server@RATE`, as the `scenario` parameter takes it.
fn scenario_param(lambda: Option<f64>) -> String {
    scenario_key(lambda).param()
}

fn leaderboard_link(model: &str, gpu: &str, lambda: Option<f64>, origin: &str) -> String {
    format!(
        "/leaderboard?model={}&gpu={}&scenario={}&origin={origin}",
        url_encode(model),
        url_encode(gpu),
        url_encode(&scenario_param(lambda))
    )
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

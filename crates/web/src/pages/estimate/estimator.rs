//! `/api/v1/estimator` and the validation table pages include: the fit
//! answering now, what it rests on, its settings and how well it does on
//! groups it did not see.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::*;
use crate::pages::insights::SYNTHETIC_NOTE;
use crate::AppState;
use wattcounts_analytics::estimator::features::{ITL_EXTRA_FEATURES, POWER_FEATURES};
use wattcounts_analytics::estimator::validation::Line;
use wattcounts_analytics::estimator::Settings;

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
    /// The same physics fitted on a peer's real measurements and scored
    /// there (null until a v3 release is imported and scored).
    pub real_hardware: Option<RealHardware>,
}

/// "Validated on real hardware (ML.ENERGY v3)": leave-one-LLM-out and
/// leave-one-batch-size-out per task, against the named baselines.
#[derive(Serialize, ToSchema)]
pub struct RealHardware {
    pub statement: String,
    pub source: crate::pages::peers::api::PeerSourceJson,
    pub release_id: i64,
    pub release_label: String,
    pub rows: usize,
    pub models: usize,
    pub seconds: f64,
    /// How energy per token is made from the two models' outputs.
    pub energy_formula: &'static str,
    pub baselines: Vec<&'static str>,
    pub features: Vec<&'static str>,
    pub lines: Vec<wattcounts_analytics::estimator::peer::PeerLine>,
    /// Why `lines` is empty, when it is.
    pub why_not: Option<String>,
}

pub(crate) fn real_hardware(v: &wattcounts_service::peers::RealHardwareValidation) -> RealHardware {
    RealHardware {
        statement: match &v.why_not {
            None => format!(
                "Validated on real hardware ({}, release {}): {} published configurations of {} LLMs on H100 and B200, scored per task on rows each fit did not see. Estimates stay labelled and never enter a measured table.",
                v.info.name, v.release_label, v.rows, v.models
            ),
            Some(why) => format!("Not validated on {}: {why}.", v.info.name),
        },
        source: v.info.into(),
        release_id: v.release_id,
        release_label: v.release_label.clone(),
        rows: v.rows,
        models: v.models,
        seconds: v.seconds,
        energy_formula: "J/token = predicted power (GPUs x TDP x predicted share) x predicted median ITL / (max_num_seqs x f), f = the training rows' median of P x ITL / (max_num_seqs x J/token)",
        baselines: vec![
            "tdp: power = GPUs x TDP; ITL = roofline (the longer of reading the active weights at full bandwidth and the batch's 2 x active-parameter FLOPs at the tensor peak)",
            "load_scaled_tdp: power = GPUs x TDP x the training rows' median power share at that batch-size setting; ITL = roofline",
            "roofline ITL: the itl_mdape_pct of either baseline",
        ],
        features: wattcounts_analytics::estimator::peer::FEATURES.to_vec(),
        lines: v.lines.clone(),
        why_not: v.why_not.clone(),
    }
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
        trained_on: t.map(TrainedOn::of),
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
        real_hardware: None,
    }
}

/// What the demo's validation scores mean.
pub const DEMO_PHYSICS_NOTE: &str = "The demo's physics is a formula of the very catalogue features the estimator reads: its validation scores check the pipeline, not hardware.";

#[utoipa::path(get, path = "/api/v1/estimator", tag = "estimates",
    summary = "The estimator: status, version, what it was fitted on, settings, features and its validation table",
    responses((status = 200, body = EstimatorAnswer)))]
pub async fn estimator_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    let mut answer = estimator_answer(&s.service.estimator());
    answer.real_hardware = s
        .service
        .real_hardware_validation()
        .await
        .as_deref()
        .map(real_hardware);
    Ok(Json(answer).into_response())
}

// The validation table as pages show it.

pub(crate) struct ValidationRow {
    /// A baseline's line (shown muted), not the estimator's.
    pub baseline: bool,
    pub cells: [String; 13],
}

pub(crate) fn validation_rows(lines: &[Line]) -> Vec<ValidationRow> {
    lines
        .iter()
        .map(|l| ValidationRow {
            baseline: l.method != "estimator",
            cells: l.cells(),
        })
        .collect()
}

/// The validation block pages include: the table and what it rests on.
pub(crate) struct ValidationBlock {
    pub head: [&'static str; 13],
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
        head: wattcounts_analytics::estimator::validation::TABLE_HEAD,
        rows: validation_rows(&a.validation),
        summary,
        wattgpu: WATTGPU,
        synthetic: a.synthetic,
    }
}

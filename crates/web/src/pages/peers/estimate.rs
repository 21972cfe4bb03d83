//! Estimates under a peer's protocol (issue #54): `/peers/{slug}/estimate`
//! (a form and its answer, without JavaScript) and
//! `/api/v1/peers/{slug}/estimate`. The answer is labelled with the peer's
//! protocol and release and sits on the peer's own pages: it is never put
//! beside a Watt Counts figure, as the peer's measurements are not.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, PageParams, Params, PeerEstimateParams};
use crate::pages::estimate::question::gpu_named;
use crate::AppState;
use wattcounts_analytics::estimator::peer::{PeerEstimate, PeerEstimator, PeerQuestion};
use wattcounts_rules::catalog;
use wattcounts_rules::peer::{PeerSource, SourceInfo};
use wattcounts_service::peers::RealHardwareValidation;

/// The task a question without one is asked of.
const DEFAULT_TASK: &str = "lm-arena-chat";

/// `/api/v1/peers/{slug}/estimate`.
#[derive(Serialize, ToSchema)]
pub struct PeerEstimateAnswer {
    /// Always `estimate`: this is not a measurement.
    pub kind: &'static str,
    /// The protocol it is an estimate under, e.g. `peer:mlenergy-v3`.
    pub protocol: &'static str,
    pub protocol_name: &'static str,
    /// The peer release the estimator was fitted on.
    pub release: String,
    #[serde(flatten)]
    pub estimate: PeerEstimate,
    pub note: String,
}

fn note(info: &SourceInfo, release: &str) -> String {
    format!(
        "An estimate under {}'s protocol (its load variable is {}), fitted on its release {release}: never comparable with a Watt Counts figure, and never shown beside one. The interval is the 80th percentile of the task's leave-one-LLM-out errors.",
        info.name, info.load_variable
    )
}

/// The fitted estimator for `slug`, or why there is none.
async fn estimator_of(
    s: &AppState,
    slug: &str,
) -> Result<(Arc<RealHardwareValidation>, Arc<PeerEstimator>), ApiError> {
    let Some(source) = PeerSource::ALL.into_iter().find(|p| p.info().slug == slug) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_peer",
            format!("no peer dataset is called '{slug}' (the list: /api/v1/peers)"),
        ));
    };
    let Some(v) = s.service.real_hardware_validation().await else {
        return Err(ApiError {
            retry_after_secs: Some(5),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "estimator_not_ready",
                "the peer estimator is being fitted (or no release of the peer it is fitted on is imported yet); try again in a few seconds",
            )
        });
    };
    if v.info.slug != slug {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_peer_estimator",
            format!(
                "{} gets no estimates: the estimator answers under {}'s protocol only, the one peer that publishes power and latency per configuration",
                source.info().name,
                v.info.name
            ),
        ));
    }
    match &v.estimator {
        Some(e) => Ok((v.clone(), e.clone())),
        None => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "estimator_unavailable",
            v.why_not
                .clone()
                .unwrap_or_else(|| "the peer estimator could not be fitted".into()),
        )),
    }
}

fn count(name: &str, v: Option<&str>, default: Option<u32>) -> Result<Option<u32>, ApiError> {
    match v {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=65_536).contains(&n) => Ok(Some(n)),
            _ => Err(ApiError::bad_request(
                "bad_parameter",
                format!("{name} = '{v}' is not a whole number from 1 to 65536"),
            )),
        },
    }
}

fn question(p: &PeerEstimateParams) -> Result<PeerQuestion, ApiError> {
    let required = |name: &str, v: &Option<String>, what: &str| {
        given(v).map(str::to_string).ok_or_else(|| {
            ApiError::bad_request("missing_parameter", format!("{name} is required: {what}"))
        })
    };
    let model = required(
        "model",
        &p.model,
        "a Hugging Face id the peer published or the catalogue holds, e.g. meta-llama/Llama-3.1-70B-Instruct",
    )?;
    let gpu_id = required("gpu", &p.gpu, "a catalogue GPU's id, e.g. b200")?;
    let gpu = gpu_named(&gpu_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_gpu",
            format!(
                "gpu = '{gpu_id}' is not in the catalogue ({} GPUs: /api/v1/gpus)",
                catalog::gpus().len()
            ),
        )
    })?;
    let seqs = given(&p.max_num_seqs).ok_or_else(|| {
        ApiError::bad_request(
            "missing_parameter",
            "max_num_seqs is required: the batch-size cap (vLLM max_num_seqs), e.g. 128",
        )
    })?;
    Ok(PeerQuestion {
        task: given(&p.task).unwrap_or(DEFAULT_TASK).trim().to_string(),
        model: model.trim().to_string(),
        gpu,
        num_gpus: count("num_gpus", given(&p.num_gpus), Some(1))?.unwrap_or(1),
        tensor_parallel: count("tensor_parallel", given(&p.tensor_parallel), None)?,
        expert_parallel: count("expert_parallel", given(&p.expert_parallel), None)?,
        max_num_seqs: count("max_num_seqs", Some(seqs), None)?.unwrap_or(1),
        weight_precision: given(&p.weight_precision).map(|v| v.trim().to_ascii_lowercase()),
    })
}

async fn answer(
    s: &AppState,
    slug: &str,
    p: &PeerEstimateParams,
) -> Result<PeerEstimateAnswer, ApiError> {
    let (v, e) = estimator_of(s, slug).await?;
    let q = question(p)?;
    let estimate = e.answer(&q).map_err(|r| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            r.code,
            format!("{} (rules: /methodology#peer-estimates)", r.message),
        )
    })?;
    Ok(PeerEstimateAnswer {
        kind: "estimate",
        protocol: v.info.origin,
        protocol_name: v.info.name,
        note: note(v.info, &v.release_label),
        release: v.release_label.clone(),
        estimate,
    })
}

#[utoipa::path(get, path = "/api/v1/peers/{slug}/estimate", tag = "peers",
    summary = "An estimate (never a measurement) under a peer's protocol: model, GPU, GPU count, parallelism, batch-size cap and task",
    params(("slug" = String, Path, description = "The peer dataset, e.g. mlenergy-v3"), PeerEstimateParams),
    responses(
        (status = 200, body = PeerEstimateAnswer),
        (status = 400, description = "A missing or malformed parameter", body = crate::error::ErrorBody),
        (status = 404, description = "No such peer", body = crate::error::ErrorBody),
        (status = 422, description = "Refused: unknown model, GPU, task or precision; weights that do not fit; outside the published domain; a peer without an estimator", body = crate::error::ErrorBody),
        (status = 503, description = "Being fitted; see Retry-After", body = crate::error::ErrorBody)))]
pub async fn peer_estimate_json(
    State(s): State<AppState>,
    Path(slug): Path<String>,
    Params(p): Params<PeerEstimateParams>,
) -> Result<Response, ApiError> {
    Ok(Json(answer(&s, &slug, &p).await?).into_response())
}

/// The form as the peer page and the answer page show it.
pub(crate) struct PeerEstimateForm {
    pub action: String,
    pub tasks: Vec<(String, bool)>,
    pub models: Vec<String>,
    pub model: String,
    pub gpu: String,
    pub num_gpus: String,
    pub max_num_seqs: String,
    /// ("" for as published, then each precision; whether chosen).
    pub precisions: Vec<(&'static str, bool)>,
}

impl PeerEstimateForm {
    pub(crate) fn of(slug: &str, e: &PeerEstimator, p: &PeerEstimateParams) -> PeerEstimateForm {
        let task = given(&p.task).unwrap_or(DEFAULT_TASK);
        let or = |v: &Option<String>, d: &str| given(v).unwrap_or(d).to_string();
        PeerEstimateForm {
            action: format!("/peers/{slug}/estimate"),
            tasks: e
                .tasks()
                .into_iter()
                .map(|t| (t.to_string(), t == task))
                .collect(),
            models: e.peer_models().into_iter().map(str::to_string).collect(),
            model: or(&p.model, "meta-llama/Llama-3.1-70B-Instruct"),
            gpu: or(&p.gpu, "b200"),
            num_gpus: or(&p.num_gpus, "2"),
            max_num_seqs: or(&p.max_num_seqs, "96"),
            precisions: ["", "bfloat16", "float16", "fp8", "mxfp4"]
                .into_iter()
                .map(|v| (v, given(&p.weight_precision).unwrap_or_default() == v))
                .collect(),
        }
    }
}

/// The form on `/peers/{slug}`, when that peer has an estimator.
pub(crate) async fn form_for(s: &AppState, slug: &str) -> Option<PeerEstimateForm> {
    let (_, e) = estimator_of(s, slug).await.ok()?;
    Some(PeerEstimateForm::of(
        slug,
        &e,
        &PeerEstimateParams::default(),
    ))
}

#[derive(Template)]
#[template(path = "peer_estimate.html")]
struct PeerEstimatePage {
    info: &'static SourceInfo,
    form: Option<PeerEstimateForm>,
    answer: Option<PeerEstimateAnswer>,
    error: Option<String>,
    json_link: String,
    layout: crate::layout::Layout,
}

pub async fn peer_estimate_page(
    State(s): State<AppState>,
    Path(slug): Path<String>,
    PageParams(p): PageParams<PeerEstimateParams>,
) -> Result<Response, PageError> {
    let info = PeerSource::ALL
        .into_iter()
        .map(|p| p.info())
        .find(|i| i.slug == slug)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_peer",
                format!("no peer dataset is called '{slug}'"),
            )
        })?;
    let form = match estimator_of(&s, &slug).await {
        Ok((_, e)) => Some(PeerEstimateForm::of(&slug, &e, &p)),
        Err(_) => None,
    };
    // The form alone until a question is asked; a refusal is said on the
    // page, in words, with the form to change it.
    let asked = given(&p.model).is_some() || given(&p.max_num_seqs).is_some();
    let (answer, error) = if asked {
        match answer(&s, &slug, &p).await {
            Ok(a) => (Some(a), None),
            Err(e) => (None, Some(e.message)),
        }
    } else {
        (None, None)
    };
    let query = serde_html_form::to_string([
        ("task", given(&p.task).unwrap_or(DEFAULT_TASK)),
        ("model", given(&p.model).unwrap_or_default()),
        ("gpu", given(&p.gpu).unwrap_or_default()),
        ("num_gpus", given(&p.num_gpus).unwrap_or_default()),
        ("max_num_seqs", given(&p.max_num_seqs).unwrap_or_default()),
    ])
    .unwrap_or_default();
    let page = PeerEstimatePage {
        info,
        form,
        answer,
        error,
        json_link: format!("/api/v1/peers/{slug}/estimate?{query}"),
        layout: crate::layout::Layout::of(false),
    };
    Ok(render(StatusCode::OK, &page))
}

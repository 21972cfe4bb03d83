//! Maintainer API: the review queue and decisions. Every call needs a
//! bearer token (see `auth`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::auth::Maintainer;
use super::error::ApiError;
use super::AppState;
use crate::checks::CheckResult;
use crate::service::moderation::{self, Decision, ModerationError};
use crate::store::SubmissionRecord;

impl From<ModerationError> for ApiError {
    fn from(e: ModerationError) -> Self {
        match e {
            ModerationError::NotFound(m) => ApiError::not_found(m),
            ModerationError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "wrong_status", m),
            ModerationError::Invalid(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_decision", m)
            }
            ModerationError::Store(s) => s.into(),
        }
    }
}

pub fn parse_id(id: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(id).map_err(|_| {
        ApiError::bad_request("bad_id", format!("'{id}' is not a submission id (a UUID)"))
    })
}

/// One queued submission with the checks that flagged it.
#[derive(serde::Serialize)]
pub struct QueueItem {
    pub submission_id: uuid::Uuid,
    pub submitter: String,
    pub received_at: String,
    pub gpu: String,
    pub run_name: String,
    pub demo: bool,
    pub warnings: Vec<CheckResult>,
}

/// The needs_review submissions, oldest first, with their warnings.
pub async fn review_queue(s: &AppState) -> Result<Vec<QueueItem>, ApiError> {
    let records: Vec<SubmissionRecord> = s.service.review_queue(200).await?;
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let warnings = s
            .service
            .check_results(r.id)
            .await?
            .into_iter()
            .filter(CheckResult::is_problem)
            .collect();
        out.push(QueueItem {
            submission_id: r.id,
            submitter: r.handle,
            received_at: crate::store::ts(&r.received_at),
            gpu: r.gpu_name,
            run_name: r.run_name,
            demo: r.is_demo,
            warnings,
        });
    }
    Ok(out)
}

pub async fn queue(State(s): State<AppState>, _m: Maintainer) -> Result<Response, ApiError> {
    let items = review_queue(&s).await?;
    Ok(Json(json!({ "needs_review": items })).into_response())
}

#[derive(Deserialize)]
pub struct DecisionBody {
    pub decision: Decision,
    pub reason: String,
}

pub async fn decide(
    State(s): State<AppState>,
    m: Maintainer,
    Path(id): Path<String>,
    Json(body): Json<DecisionBody>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let by = moderation::actor(&m.name, &body.reason)?;
    s.service.decide(id, body.decision, &by).await?;

    let receipt = s
        .service
        .receipt(id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no submission {id}")))?;
    Ok(Json(receipt).into_response())
}

#[derive(Deserialize)]
pub struct ReasonBody {
    pub reason: String,
}

pub async fn suspend(
    State(s): State<AppState>,
    m: Maintainer,
    Path(handle): Path<String>,
    Json(body): Json<ReasonBody>,
) -> Result<Response, ApiError> {
    let by = moderation::actor(&m.name, &body.reason)?;
    s.service.suspend(&handle, &by).await?;
    Ok(
        Json(json!({ "submitter": handle, "suspended_at": crate::store::ts(&by.at) }))
            .into_response(),
    )
}

#[derive(Deserialize)]
pub struct RevokeBody {
    pub fingerprint: String,
    /// RFC 3339; now when absent.
    #[serde(default)]
    pub effective_at: Option<String>,
    pub reason: String,
}

pub async fn revoke(
    State(s): State<AppState>,
    m: Maintainer,
    Json(body): Json<RevokeBody>,
) -> Result<Response, ApiError> {
    let by = moderation::actor(&m.name, &body.reason)?;
    let at = moderation::parse_time(body.effective_at.as_deref().unwrap_or(""))?;
    let rejected = s.service.revoke(&body.fingerprint, at, &by).await?;

    Ok(Json(json!({
        "fingerprint": body.fingerprint.trim(),
        "revoked_from": crate::store::ts(&at.unwrap_or(by.at)),
        "rejected_submissions": rejected,
    }))
    .into_response())
}

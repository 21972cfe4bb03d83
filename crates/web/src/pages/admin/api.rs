//! Maintainer API: the review queue and decisions. Every call needs a
//! bearer token (see `auth`).

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Maintainer;
use crate::error::{ApiError, ErrorBody};
use crate::AppState;
use wattcounts_rules::checks::CheckResult;
use wattcounts_service::moderation::{self, Decision, ModerationError};
use wattcounts_service::read::SubmissionRecord;

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
#[derive(Serialize, ToSchema)]
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
            received_at: wattcounts_rules::timestamp::ts(&r.received_at),
            gpu: r.gpu_name,
            run_name: r.run_name,
            demo: r.is_demo,
            warnings,
        });
    }
    Ok(out)
}

/// `/api/v1/admin/review`.
#[derive(Serialize, ToSchema)]
pub struct ReviewQueue {
    /// Oldest first.
    pub needs_review: Vec<QueueItem>,
}

#[utoipa::path(get, path = "/api/v1/admin/review", tag = "maintainers",
    summary = "Submissions waiting for a decision, with the checks that flagged them",
    security(("maintainer" = [])),
    responses((status = 200, body = ReviewQueue),
        (status = 401, description = "No or a wrong maintainer token", body = ErrorBody)))]
pub async fn queue(State(s): State<AppState>, _m: Maintainer) -> Result<Response, ApiError> {
    let needs_review = review_queue(&s).await?;
    Ok(Json(ReviewQueue { needs_review }).into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct DecisionBody {
    pub decision: Decision,
    pub reason: String,
}

#[utoipa::path(post, path = "/api/v1/admin/submissions/{id}/decision", tag = "maintainers",
    summary = "Approve or reject a submission that needs review",
    params(("id" = uuid::Uuid, Path, description = "The submission")),
    request_body = DecisionBody,
    security(("maintainer" = [])),
    responses((status = 200, description = "Decided: the submission's receipt", body = wattcounts_rules::receipt::Receipt),
        (status = 401, description = "No or a wrong maintainer token", body = ErrorBody),
        (status = 404, description = "No such submission", body = ErrorBody),
        (status = 409, description = "It is not waiting for review", body = ErrorBody),
        (status = 422, description = "No reason given", body = ErrorBody)))]
pub async fn decide(
    State(s): State<AppState>,
    m: Maintainer,
    Path(id): Path<String>,
    body: Result<Json<DecisionBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let Json(body) = body.map_err(ApiError::bad_json)?;
    let by = moderation::actor(&m.name, &body.reason)?;
    s.service.decide(id, body.decision, &by).await?;

    let receipt = s
        .service
        .receipt(id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no submission {id}")))?;
    Ok(Json(receipt).into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct ReasonBody {
    pub reason: String,
}

/// What a suspension did.
#[derive(Serialize, ToSchema)]
pub struct Suspended {
    pub submitter: String,
    /// RFC 3339, UTC.
    pub suspended_at: String,
}

#[utoipa::path(post, path = "/api/v1/admin/submitters/{handle}/suspend", tag = "maintainers",
    summary = "Suspend a submitter: their new uploads are refused",
    params(("handle" = String, Path, description = "The submitter's handle")),
    request_body = ReasonBody,
    security(("maintainer" = [])),
    responses((status = 200, body = Suspended),
        (status = 401, description = "No or a wrong maintainer token", body = ErrorBody),
        (status = 404, description = "No such submitter", body = ErrorBody),
        (status = 409, description = "Already suspended", body = ErrorBody),
        (status = 422, description = "No reason given", body = ErrorBody)))]
pub async fn suspend(
    State(s): State<AppState>,
    m: Maintainer,
    Path(handle): Path<String>,
    body: Result<Json<ReasonBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(ApiError::bad_json)?;
    let by = moderation::actor(&m.name, &body.reason)?;
    s.service.suspend(&handle, &by).await?;
    Ok(Json(Suspended {
        submitter: handle,
        suspended_at: wattcounts_rules::timestamp::ts(&by.at),
    })
    .into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct RevokeBody {
    pub fingerprint: String,
    /// RFC 3339; now when absent.
    #[serde(default)]
    pub effective_at: Option<String>,
    pub reason: String,
}

/// What a revocation did.
#[derive(Serialize, ToSchema)]
pub struct Revoked {
    pub fingerprint: String,
    /// RFC 3339: entries signed from then on are refused.
    pub revoked_from: String,
    /// Stored submissions signed after that time, now rejected.
    pub rejected_submissions: Vec<uuid::Uuid>,
}

#[utoipa::path(post, path = "/api/v1/admin/keys/revoke", tag = "maintainers",
    summary = "Revoke a key from a time on (earlier logged entries stay valid)",
    request_body = RevokeBody,
    security(("maintainer" = [])),
    responses((status = 200, body = Revoked),
        (status = 401, description = "No or a wrong maintainer token", body = ErrorBody),
        (status = 404, description = "No such key", body = ErrorBody),
        (status = 409, description = "Already revoked", body = ErrorBody),
        (status = 422, description = "No reason, or a time that does not parse", body = ErrorBody)))]
pub async fn revoke(
    State(s): State<AppState>,
    m: Maintainer,
    body: Result<Json<RevokeBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(ApiError::bad_json)?;
    let by = moderation::actor(&m.name, &body.reason)?;
    let at = moderation::parse_time(body.effective_at.as_deref().unwrap_or(""))?;
    let rejected = s.service.revoke(&body.fingerprint, at, &by).await?;

    Ok(Json(Revoked {
        fingerprint: body.fingerprint.trim().to_string(),
        revoked_from: wattcounts_rules::timestamp::ts(&at.unwrap_or(by.at)),
        rejected_submissions: rejected,
    })
    .into_response())
}

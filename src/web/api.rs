//! JSON API handlers.

use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::error::ApiError;
use super::AppState;
use crate::ingest::Outcome;
use crate::service::register::Registration;

pub async fn healthz(State(s): State<AppState>) -> Response {
    match s.service.ping().await {
        Ok(()) => Json(json!({"status": "ok", "backend": s.service.backend(), "public_url": s.service.config().public_url})).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

pub async fn not_found() -> ApiError {
    ApiError::not_found("no such page or endpoint")
}

pub async fn register(
    State(s): State<AppState>,
    body: Result<Json<Registration>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body.map_err(|e| ApiError::bad_request("bad_json", e.body_text()))?;
    let done = s.service.register(&req).await?;
    Ok((StatusCode::CREATED, Json(done)).into_response())
}

pub async fn submit(
    State(s): State<AppState>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let (bundle, signature) = read_upload(&s, &headers, multipart).await?;
    let (outcome, receipt) = s
        .service
        .submit(bundle.to_vec(), signature.to_vec())
        .await?;
    let status = match outcome {
        Outcome::Created => StatusCode::CREATED,
        Outcome::Replayed => StatusCode::OK,
    };
    Ok((status, Json(receipt)).into_response())
}

/// The `bundle` and `signature` parts of an upload, within the body limit
/// (a declared Content-Length over it is refused before reading).
pub async fn read_upload(
    s: &AppState,
    headers: &HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(axum::body::Bytes, axum::body::Bytes), ApiError> {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > s.max_body_bytes) {
        return Err(ApiError::too_large(s.max_body_bytes));
    }
    let mut multipart = multipart.map_err(|e| {
        ApiError::bad_request(
            "bad_multipart",
            format!(
                "expected multipart/form-data with parts 'bundle' and 'signature': {}",
                e.body_text()
            ),
        )
    })?;
    let mut bundle = None;
    let mut signature = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(multipart_error(e, s.max_body_bytes)),
        };
        let name = field.name().unwrap_or("").to_string();
        let data = field
            .bytes()
            .await
            .map_err(|e| multipart_error(e, s.max_body_bytes))?;
        match name.as_str() {
            "bundle" if bundle.is_none() => bundle = Some(data),
            "signature" if signature.is_none() => signature = Some(data),
            "bundle" | "signature" => {
                return Err(ApiError::bad_request(
                    "duplicate_part",
                    format!("part '{name}' appears twice"),
                ))
            }
            other => {
                return Err(ApiError::bad_request(
                    "unknown_part",
                    format!("unexpected part '{other}'; send only 'bundle' and 'signature'"),
                ))
            }
        }
    }
    let bundle = bundle.ok_or_else(|| {
        ApiError::bad_request("missing_part", "the 'bundle' part (the .tar.gz) is missing")
    })?;
    let signature = signature.ok_or_else(|| {
        ApiError::bad_request(
            "missing_part",
            "the 'signature' part (the .sig file) is missing",
        )
    })?;
    Ok((bundle, signature))
}

fn multipart_error(e: axum::extract::multipart::MultipartError, limit: u64) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(limit)
    } else {
        ApiError::bad_request(
            "bad_multipart",
            format!("the multipart body could not be read: {}", e.body_text()),
        )
    }
}

pub async fn submission(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = uuid::Uuid::parse_str(&id).map_err(|_| {
        ApiError::bad_request("bad_id", format!("'{id}' is not a submission id (a UUID)"))
    })?;
    match s.service.receipt(id).await? {
        Some(r) => Ok(Json(r).into_response()),
        None => Err(ApiError::not_found(format!("no submission {id}"))),
    }
}

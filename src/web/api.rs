//! JSON API handlers.

use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::error::ApiError;
use super::guard::{ClientIp, Pace};
use super::AppState;
use crate::ingest::Outcome;
use crate::limits::Action;
use crate::service::register::Registration;
use crate::service::upload::StagedUpload;

pub async fn healthz(State(s): State<AppState>) -> Response {
    match s.service.ping().await {
        Ok(()) => Json(json!({"status": "ok", "backend": s.service.backend(), "public_url": s.service.config().public_url})).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// 200 only when the database and the blob store answer (a load
/// balancer's question); 503 naming what does not.
pub async fn readyz(State(s): State<AppState>) -> Response {
    match s.service.ready().await {
        Ok(()) => Json(json!({"status": "ready"})).into_response(),
        Err(why) => {
            tracing::warn!(%why, "not ready");
            let mut e = ApiError::unavailable();
            e.message = format!("not ready: {why}");
            e.into_response()
        }
    }
}

pub async fn not_found() -> ApiError {
    ApiError::not_found("no such page or endpoint")
}

pub async fn register(
    State(s): State<AppState>,
    ip: ClientIp,
    body: Result<Json<Registration>, JsonRejection>,
) -> Result<Response, ApiError> {
    ip.count(&s, Action::Register).await?;
    let Json(req) = body.map_err(|e| ApiError::bad_request("bad_json", e.body_text()))?;
    let done = s.service.register(&req).await?;
    Ok((StatusCode::CREATED, Json(done)).into_response())
}

pub async fn submit(
    State(s): State<AppState>,
    ip: ClientIp,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    ip.count(&s, Action::Submit).await?;
    let (bundle, signature) = read_upload(&s, &headers, multipart).await?;
    let (outcome, receipt) = s
        .service
        .submit_upload(bundle, signature, &mut Default::default())
        .await?;
    let status = match outcome {
        Outcome::Created => StatusCode::CREATED,
        Outcome::Replayed => StatusCode::OK,
    };
    Ok((status, Json(receipt)).into_response())
}

/// Largest signature part: an armored sshsig is well under 1 KiB.
const MAX_SIGNATURE_BYTES: usize = 64 * 1024;

/// The `bundle` part streamed to a staging file (digested on the way) and
/// the `signature` part, within the body limit (a declared Content-Length
/// over it is refused before reading) and the upload pace.
pub async fn read_upload(
    s: &AppState,
    headers: &HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StagedUpload, Vec<u8>), ApiError> {
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
    let pace = Pace::start(&s.deadlines);
    let mut received = 0u64;
    let mut bundle = None;
    let mut signature: Option<Vec<u8>> = None;
    loop {
        let field = match paced(&pace, received, multipart.next_field()).await? {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(multipart_error(e, s.max_body_bytes)),
        };
        let name = field.name().unwrap_or("").to_string();
        match name.as_str() {
            "bundle" if bundle.is_none() => {}
            "signature" if signature.is_none() => {}
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
        let mut field = field;
        let mut upload = if name == "bundle" {
            Some(s.service.begin_upload()?)
        } else {
            None
        };
        let mut text = Vec::new();
        loop {
            let chunk = match paced(&pace, received, field.chunk()).await? {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(multipart_error(e, s.max_body_bytes)),
            };
            received += chunk.len() as u64;
            pace.check(received)?;
            match upload.as_mut() {
                Some(u) => u.write(&chunk).await?,
                None if text.len() + chunk.len() > MAX_SIGNATURE_BYTES => {
                    return Err(ApiError::bad_request(
                        "signature_too_large",
                        format!("the 'signature' part is over {MAX_SIGNATURE_BYTES} bytes; send the .sig file of `wattcounts pack`"),
                    ))
                }
                None => text.extend_from_slice(&chunk),
            }
        }
        match upload {
            Some(u) => bundle = Some(u.finish().await?),
            None => signature = Some(text),
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

/// Awaits one read of the body, judging the upload's pace every second
/// while it waits, so a stalled body is cut even when no byte arrives.
/// The read itself is never dropped half way.
async fn paced<T>(
    pace: &Pace,
    received: u64,
    read: impl std::future::Future<Output = T>,
) -> Result<T, ApiError> {
    tokio::pin!(read);
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(1), &mut read).await {
            Ok(v) => return Ok(v),
            Err(_) => pace.check(received)?,
        }
    }
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

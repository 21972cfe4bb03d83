//! The API's write side and its probes: `/healthz`, `/readyz`, registering
//! a submitter, uploading a bundle (the multipart read under the body
//! limit and the upload pace) and a submission's receipt; the 404 answer.
//! The read views' JSON twins live beside their pages (pages/gpus.rs,
//! pages/models.rs, pages/log.rs, pages/snapshots.rs).

use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::client_ip::ClientIp;
use crate::layers::deadline::Pace;
use crate::AppState;
use wattcounts_rules::receipt::Receipt;
use wattcounts_service::ingest::Novelty;
use wattcounts_service::limits::Action;
use wattcounts_service::register::Registration;
use wattcounts_service::upload::StagedUpload;

/// `/healthz`: the process answers and reaches its database.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` in a 200.
    pub status: &'static str,
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    pub public_url: String,
}

/// `/readyz` in a 200.
#[derive(Serialize, ToSchema)]
pub struct Ready {
    /// Always `ready`.
    pub status: &'static str,
}

#[utoipa::path(get, path = "/healthz", tag = "service",
    summary = "Liveness: the process answers and its database does",
    responses((status = 200, body = Health)))]
pub async fn healthz(State(s): State<AppState>) -> Response {
    match s.service.ping().await {
        Ok(()) => Json(Health {
            status: "ok",
            backend: s.service.backend(),
            public_url: s.service.config().public_url.clone(),
        })
        .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// 200 only when the database and the blob store answer (a load
/// balancer's question); 503 naming what does not.
#[utoipa::path(get, path = "/readyz", tag = "service",
    summary = "Readiness: the database and the blob store both answer",
    description = "A load balancer's question. 503 names what does not answer.",
    responses((status = 200, body = Ready)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    match s.service.ready().await {
        Ok(()) => Json(Ready { status: "ready" }).into_response(),
        Err(why) => {
            tracing::warn!(%why, "not ready");
            let mut e = ApiError::unavailable();
            e.message = format!("not ready: {why}");
            e.into_response()
        }
    }
}

/// An unknown path: an HTML page for a browser (it asks for text/html),
/// the JSON envelope for the API (`/api/…`) and for tools.
pub async fn not_found(headers: HeaderMap, uri: axum::http::Uri) -> Response {
    for_the_asker(
        &headers,
        &uri,
        ApiError::not_found("no such page or endpoint"),
    )
}

/// A known path asked with a method it does not take (405), answered as
/// [`not_found`] answers.
pub async fn method_not_allowed(headers: HeaderMap, uri: axum::http::Uri) -> Response {
    for_the_asker(
        &headers,
        &uri,
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!(
                "{} does not take this method (/api describes each path)",
                uri.path()
            ),
        ),
    )
}

fn for_the_asker(headers: &HeaderMap, uri: &axum::http::Uri, e: ApiError) -> Response {
    let browser = !uri.path().starts_with("/api/")
        && headers
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/html"));
    if browser {
        crate::error::PageError(e).into_response()
    } else {
        e.into_response()
    }
}

#[utoipa::path(post, path = "/api/v1/submitters", tag = "submitters",
    summary = "Register a handle and an SSH public key",
    description = "`proof` is an sshsig (namespace `wattcounts-register`) over the registration message; `wattcounts keygen --register` writes one.",
    request_body = Registration,
    responses(
        (status = 201, description = "Registered", body = wattcounts_service::register::Registered),
        (status = 403, description = "The proof does not verify", body = ErrorBody),
        (status = 409, description = "The handle or key is taken", body = ErrorBody),
        (status = 413, description = "Body over 64 KiB", body = ErrorBody),
        (status = 422, description = "A field breaks a rule (handle, key type)", body = ErrorBody),
        (status = 429, description = "Too many registrations from this address", body = ErrorBody),
    ))]
pub async fn register(
    State(s): State<AppState>,
    ip: ClientIp,
    body: Result<Json<Registration>, JsonRejection>,
) -> Result<Response, ApiError> {
    ip.count(&s, Action::Register).await?;
    let Json(req) = body.map_err(ApiError::bad_json)?;
    let done = s.service.register(&req).await?;
    Ok((StatusCode::CREATED, Json(done)).into_response())
}

#[utoipa::path(post, path = "/api/v1/submissions", tag = "submissions",
    summary = "Upload a signed bundle",
    description = "Multipart parts `bundle` (the .tar.gz of `wattcounts pack`) and `signature` (its sshsig, namespace `wattcounts-submission`). 201 with the receipt when stored (accepted, needs_review or rejected by a hard check); 200 with the same receipt when these bytes were stored before and signed by the same key.",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The same bytes were stored before: their receipt", body = Receipt),
        (status = 201, description = "Stored: the receipt", body = Receipt),
        (status = 403, description = "Signature, key or audience refused", body = ErrorBody),
        (status = 409, description = "A known submission_id with other bytes", body = ErrorBody),
        (status = 413, description = "Body or unpacked bundle over a limit", body = ErrorBody),
        (status = 422, description = "The bundle breaks a rule (schema, CSV, digests); details name the file, pointer or row", body = ErrorBody),
        (status = 429, description = "Too many uploads from this address or key", body = ErrorBody),
        (status = 431, description = "A multipart part's headers are over 8 KiB", body = ErrorBody),
        (status = 507, description = "The service's disk is full: nothing was stored; send it again after Retry-After", body = ErrorBody),
    ))]
pub async fn submit(
    State(s): State<AppState>,
    ip: ClientIp,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    ip.count(&s, Action::Submit).await?;
    let (bundle, signature) = read_upload(&s, &headers, multipart).await?;
    let (outcome, receipt) = s.service.submit_upload(bundle, signature).await?;
    let status = match outcome {
        Novelty::Created => StatusCode::CREATED,
        Novelty::Replayed => StatusCode::OK,
    };
    Ok((status, Json(receipt)).into_response())
}

/// The upload's multipart parts, as the document describes them.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The bundle, a gzip tar.
    #[schema(value_type = String, format = Binary)]
    bundle: Vec<u8>,
    /// The armoured sshsig of the bundle's bytes.
    signature: String,
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
    if crate::layers::part_headers::caused_by_long_header(&e) {
        ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "part_header_too_large",
            format!(
                "a part's headers are over {} bytes; nothing was stored. Send the parts 'bundle' and 'signature' with ordinary headers (Content-Disposition and Content-Type)",
                crate::layers::part_headers::MAX_PART_HEADER_BYTES
            ),
        )
    } else if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(limit)
    } else {
        ApiError::bad_request(
            "bad_multipart",
            format!("the multipart body could not be read: {}", e.body_text()),
        )
    }
}

#[utoipa::path(get, path = "/api/v1/submissions/{id}", tag = "submissions",
    summary = "A submission's receipt",
    params(("id" = uuid::Uuid, Path, description = "The submission id (the manifest's submission_id)")),
    responses(
        (status = 200, body = Receipt),
        (status = 404, description = "No such submission", body = ErrorBody),
    ))]
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

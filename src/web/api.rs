//! JSON API handlers.

use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::error::ApiError;
use super::AppState;
use crate::ingest::{Outcome, DEMO_HANDLE};
use crate::signing;
use crate::store::{NewSubmitter, StoreError};

pub async fn healthz(State(s): State<AppState>) -> Response {
    match s.ingestor.store.ping().await {
        Ok(()) => Json(json!({"status": "ok", "backend": s.ingestor.store.backend(), "public_url": s.ingestor.config.public_url})).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

pub async fn not_found() -> ApiError {
    ApiError::not_found("no such page or endpoint")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub handle: String,
    #[serde(default)]
    pub display_name: Option<String>,
    /// OpenSSH public key line.
    pub public_key: String,
    /// sshsig, namespace `wattcounts-register`, over the registration message.
    pub proof: String,
}

pub fn valid_handle(h: &str) -> bool {
    (3..=39).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

const RESERVED_HANDLES: &[&str] = &[DEMO_HANDLE, "admin", "wattcounts", "maintainers"];

pub async fn register(
    State(s): State<AppState>,
    body: Result<Json<RegisterRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body.map_err(|e| ApiError::bad_request("bad_json", e.body_text()))?;
    if !valid_handle(&req.handle) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_handle",
            format!(
                "handle '{}' must be 3 to 39 characters of ASCII letters, digits and '-'",
                req.handle
            ),
        ));
    }
    if RESERVED_HANDLES.contains(&req.handle.to_ascii_lowercase().as_str()) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "handle_taken",
            format!("handle '{}' is reserved", req.handle),
        ));
    }
    let display_name = req
        .display_name
        .clone()
        .unwrap_or_else(|| req.handle.clone());
    if display_name.chars().count() > 100 || display_name.chars().any(char::is_control) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_display_name",
            "display name: at most 100 characters, no control characters",
        ));
    }
    let key = signing::parse_public_key(&req.public_key)?;
    let fingerprint = signing::fingerprint(&key);
    let proof =
        signing::parse_signature(req.proof.as_bytes(), signing::REGISTER_NAMESPACE, "proof")?;
    let message = signing::registration_message(
        &req.handle,
        s.ingestor.config.public_url.trim_end_matches('/'),
        &fingerprint,
    );
    signing::verify(
        &key,
        signing::REGISTER_NAMESPACE,
        message.as_bytes(),
        &proof,
        "proof",
    )?;
    let new = NewSubmitter {
        handle: req.handle.clone(),
        display_name: display_name.clone(),
        fingerprint: fingerprint.clone(),
        algorithm: signing::algorithm_name(&key).to_string(),
        public_key: key
            .to_openssh()
            .map_err(|_| ApiError::bad_request("bad_public_key", "cannot encode the key"))?,
    };
    match s.ingestor.store.create_submitter(&new).await {
        Ok(_) => Ok((
            StatusCode::CREATED,
            Json(json!({"handle": req.handle, "display_name": display_name, "key_fingerprint": fingerprint})),
        )
            .into_response()),
        Err(StoreError::Conflict("handle")) => Err(ApiError::new(StatusCode::CONFLICT, "handle_taken", format!("handle '{}' is already registered", req.handle))),
        Err(StoreError::Conflict(_)) => Err(ApiError::new(StatusCode::CONFLICT, "key_taken", format!("key {fingerprint} is already registered"))),
        Err(e) => Err(e.into()),
    }
}

pub async fn submit(
    State(s): State<AppState>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let (bundle, signature) = read_upload(&s, &headers, multipart).await?;
    let (outcome, receipt) = s
        .ingestor
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
    match s.ingestor.receipt(id).await? {
        Some(r) => Ok(Json(r).into_response()),
        None => Err(ApiError::not_found(format!("no submission {id}"))),
    }
}

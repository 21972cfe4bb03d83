//! The one JSON error envelope of the API
//! (`{"error":{"code":..,"message":..,"details":[..]}}`), the HTML error
//! page the pages answer with instead, and `render`, the one place a page
//! is rendered with its status and headers.

use askama::Template;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use wattcounts_rules::rejection::{Detail, RejectKind, Rejection};
use wattcounts_service::ingest::IngestError;
use wattcounts_service::{ErrorKind, ServiceError};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Vec<Detail>,
    /// Sent as `Retry-After` (429, 503).
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after_secs: None,
        }
    }
    /// `Retry-After` on an answer to this error (the JSON envelope or an
    /// HTML error page), when it passes with time.
    pub fn set_retry_after(&self, resp: &mut Response) {
        if let Some(secs) = self.retry_after_secs {
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
    }
    pub fn timeout(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, code, message)
    }
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    /// A JSON body that did not parse or does not fit the request's shape.
    pub fn bad_json(e: axum::extract::rejection::JsonRejection) -> Self {
        Self::bad_request("bad_json", e.body_text())
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    pub fn too_large(limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
    }
    pub(crate) fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; it has been logged",
        )
    }
    pub(crate) fn unavailable() -> Self {
        ApiError {
            retry_after_secs: Some(5),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the database is not answering; try again shortly",
            )
        }
    }
}

pub fn http_status_of(kind: RejectKind) -> StatusCode {
    match kind {
        RejectKind::Malformed => StatusCode::BAD_REQUEST,
        RejectKind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        RejectKind::Forbidden => StatusCode::FORBIDDEN,
        RejectKind::Conflict => StatusCode::CONFLICT,
        RejectKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        RejectKind::NotFound => StatusCode::NOT_FOUND,
        RejectKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        RejectKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        RejectKind::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
    }
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError {
            status: http_status_of(r.kind),
            code: r.code,
            message: r.message,
            details: r.details,
            retry_after_secs: r.retry_after_secs,
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e.kind {
            ErrorKind::Conflict => ApiError::new(StatusCode::CONFLICT, "conflict", e.message),
            ErrorKind::Unavailable => {
                tracing::warn!(error = %e.message, "database unavailable");
                ApiError::unavailable()
            }
            ErrorKind::Internal => {
                tracing::error!(error = %e.message, "service error");
                ApiError::internal()
            }
        }
    }
}

impl From<wattcounts_service::views::ViewError> for ApiError {
    fn from(e: wattcounts_service::views::ViewError) -> Self {
        use wattcounts_service::views::ViewError;
        match e {
            ViewError::BadParameter(m) => ApiError::bad_request("bad_parameter", m),
            ViewError::NotFound(m) => ApiError::not_found(m),
            ViewError::Service(e) => e.into(),
        }
    }
}

impl From<wattcounts_service::tlog::TlogError> for ApiError {
    fn from(e: wattcounts_service::tlog::TlogError) -> Self {
        use wattcounts_service::tlog::TlogError;
        match e {
            TlogError::NotFound(m) => ApiError::not_found(m),
            TlogError::Invalid(m) => ApiError::bad_request("bad_log_request", m),
            TlogError::Store(s) => s.into(),
            TlogError::KeyMismatch(m) | TlogError::Internal(m) => {
                tracing::error!(error = %m, "transparency log");
                ApiError::internal()
            }
        }
    }
}

impl From<wattcounts_service::register::RegisterError> for ApiError {
    fn from(e: wattcounts_service::register::RegisterError) -> Self {
        match e {
            wattcounts_service::register::RegisterError::Rejected(r) => r.into(),
            wattcounts_service::register::RegisterError::Store(s) => s.into(),
        }
    }
}

impl From<IngestError> for ApiError {
    fn from(e: IngestError) -> Self {
        match e {
            IngestError::Rejected(r) => r.into(),
            IngestError::Store(s) => s.into(),
            IngestError::Internal(m) => {
                tracing::error!(error = %m, "ingest failed");
                ApiError::internal()
            }
        }
    }
}

/// The envelope every API error is sent in.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorObject {
    /// Stable and machine-readable, e.g. `digest_mismatch`.
    pub code: &'static str,
    /// What went wrong and what to do, for a person.
    pub message: String,
    /// Where: the file, JSON pointer, CSV row or column, one entry each.
    pub details: Vec<Detail>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        wattcounts_service::telemetry::error_answer(self.code, self.status.as_u16());
        let retry_after = self.retry_after_secs;
        let body = ErrorBody {
            error: ErrorObject {
                code: self.code,
                message: self.message,
                details: self.details,
            },
        };
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(secs) = retry_after {
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        resp
    }
}

pub(crate) fn render(status: StatusCode, t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "template failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: &'a str,
    /// Where exactly (file, pointer, row, column) and what, one per line.
    details: Vec<String>,
    layout: crate::layout::Layout,
}

/// An HTML error page (the API has the JSON envelope instead).
pub struct PageError(pub ApiError);

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError(e)
    }
}

impl From<ServiceError> for PageError {
    fn from(e: ServiceError) -> Self {
        PageError(e.into())
    }
}

impl From<wattcounts_service::views::ViewError> for PageError {
    fn from(e: wattcounts_service::views::ViewError) -> Self {
        PageError(e.into())
    }
}

impl From<wattcounts_service::tlog::TlogError> for PageError {
    fn from(e: wattcounts_service::tlog::TlogError) -> Self {
        PageError(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        wattcounts_service::telemetry::error_answer(self.0.code, self.0.status.as_u16());
        let title = self.0.status.canonical_reason().unwrap_or("Error");
        let mut resp = render(
            self.0.status,
            &ErrorPage {
                title,
                message: &self.0.message,
                details: self.0.details.iter().map(ToString::to_string).collect(),
                layout: crate::layout::Layout::of(false),
            },
        );
        self.0.set_retry_after(&mut resp);
        resp
    }
}

//! `/submit` (how to submit, and a browser upload form) and `/checks`
//! (what every bundle goes through, with this service's thresholds).

use askama::Template;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::api::read_upload;
use super::pages::{render, PageError, VERSION};
use super::AppState;
use wattcounts_rules::checks::{self, Severity};

#[derive(Template)]
#[template(path = "submit.html")]
struct SubmitPage {
    public_url: String,
    max_mb: u64,
    demo: bool,
    version: &'static str,
}

pub async fn submit_page(State(s): State<AppState>) -> Response {
    render(
        StatusCode::OK,
        &SubmitPage {
            public_url: s.service.config().public_url.clone(),
            max_mb: s.max_body_bytes >> 20,
            demo: false,
            version: VERSION,
        },
    )
}

/// The form's upload: stored (or known) → the submission's page; refused
/// → an error page naming the file, pointer or row and the rule.
pub async fn submit_form(
    State(s): State<AppState>,
    ip: super::guard::ClientIp,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, PageError> {
    super::auth::same_origin(&headers, &s.service.config().public_url)?;
    ip.count(&s, wattcounts_service::limits::Action::Submit)
        .await?;
    let (bundle, signature) = read_upload(&s, &headers, multipart).await?;
    let (_, receipt) = s
        .service
        .submit_upload(bundle, signature, &mut Default::default())
        .await
        .map_err(super::error::ApiError::from)?;
    Ok(Redirect::to(&receipt.links.html).into_response())
}

struct RuleRow {
    id: &'static str,
    severity: &'static str,
    rule: &'static str,
}

#[derive(Template)]
#[template(path = "checks.html")]
struct ChecksPage {
    rules: Vec<RuleRow>,
    thresholds: String,
    demo: bool,
    version: &'static str,
}

/// `/api/v1/checks`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ChecksAnswer {
    /// Every rule a bundle is checked against.
    pub checks: Vec<checks::Rule>,
    /// This service's thresholds (configuration `[checks]`).
    pub thresholds: wattcounts_rules::checks::Thresholds,
}

/// `/checks` as JSON: every rule and this service's thresholds.
#[utoipa::path(get, path = "/api/v1/checks", tag = "submissions",
    summary = "Every check a bundle goes through, and this service's thresholds",
    responses((status = 200, body = ChecksAnswer)))]
pub async fn checks_json(State(s): State<AppState>) -> Response {
    axum::Json(ChecksAnswer {
        checks: checks::rules(),
        thresholds: s.service.config().thresholds.clone(),
    })
    .into_response()
}

pub async fn checks_page(State(s): State<AppState>) -> Response {
    render(
        StatusCode::OK,
        &ChecksPage {
            rules: checks::rules()
                .into_iter()
                .map(|r| RuleRow {
                    id: r.id,
                    severity: match r.severity {
                        Severity::Hard => "hard (rejects)",
                        Severity::Soft => "soft (needs review)",
                    },
                    rule: r.rule,
                })
                .collect(),
            thresholds: serde_yaml_ng::to_string(&s.service.config().thresholds)
                .unwrap_or_default(),
            demo: false,
            version: VERSION,
        },
    )
}

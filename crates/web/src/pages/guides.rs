//! `/submit` (how to submit, and a browser upload form) and `/checks`
//! (what every bundle goes through, with this service's thresholds).

use askama::Template;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use crate::error::{render, PageError};
use crate::pages::submissions::api::read_upload;
use crate::AppState;
use wattcounts_rules::checks::{self, Severity};
use wattcounts_rules::domain::TARGET_CONFIDENCE;

#[derive(Template)]
#[template(path = "submit.html")]
struct SubmitPage {
    public_url: String,
    max_mb: u64,
    layout: crate::layout::Layout,
}

pub async fn submit_page(State(s): State<AppState>) -> Response {
    render(
        StatusCode::OK,
        &SubmitPage {
            public_url: s.service.config().public_url.clone(),
            max_mb: s.max_body_bytes >> 20,
            layout: crate::layout::Layout::of(false),
        },
    )
}

/// The form's upload: stored (or known) → the submission's page; refused
/// → an error page naming the file, pointer or row and the rule.
pub async fn submit_form(
    State(s): State<AppState>,
    ip: crate::extract::client_ip::ClientIp,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, PageError> {
    crate::auth::same_origin(&headers, &s.service.config().public_url)?;
    ip.count(&s, wattcounts_service::limits::Action::Submit)
        .await?;
    let (bundle, signature) = read_upload(&s, &headers, multipart).await?;
    let (_, receipt) = s
        .service
        .submit_upload(bundle, signature)
        .await
        .map_err(crate::error::ApiError::from)?;
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
    layout: crate::layout::Layout,
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
            layout: crate::layout::Layout::of(false),
        },
    )
}

#[derive(Template)]
#[template(path = "methodology.html")]
struct MethodologyPage {
    target_confidence: String,
    /// (values, which order statistics, the coverage they achieve).
    coverage: Vec<(usize, String, String)>,
    grid: f64,
    pue: f64,
    layout: crate::layout::Layout,
}

pub async fn methodology_page(State(s): State<AppState>) -> Result<Response, PageError> {
    // The intervals the pages show, computed by the same function.
    let coverage = (2..=12)
        .map(|n| {
            let values: Vec<f64> = (1..=n).map(|v| v as f64).collect();
            let i = wattcounts_rules::stats::median_interval(&values).expect("n ≥ 2");
            let k = i.lo as usize;
            let which = if k == 1 {
                "min–max".to_string()
            } else {
                format!("{k}th lowest – {k}th highest")
            };
            (n, which, format!("{:.2} %", i.confidence * 100.0))
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &MethodologyPage {
            target_confidence: format!("{:.0} %", TARGET_CONFIDENCE * 100.0),
            coverage,
            grid: s.footprint.grid_g_per_kwh,
            pue: s.footprint.pue,
            layout: crate::layout::Layout::of(false),
        },
    ))
}

//! What a peer release says within itself: `/peers/{slug}/insights`,
//! `/insights?origin=peer:{slug}` and `/api/v1/peers/{slug}/insights`.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::{PeerReleaseJson, PeerSourceJson};
use crate::error::{render, ApiError, PageError};
use crate::view::url_encode;
use crate::AppState;
use wattcounts_rules::peer::SourceInfo;

/// `/api/v1/peers/{slug}/insights`.
#[derive(Serialize, ToSchema)]
pub struct PeerInsightsJson {
    pub source: PeerSourceJson,
    pub release: PeerReleaseJson,
    /// How the figures may be read.
    pub note: &'static str,
    pub savings: Vec<wattcounts_analytics::peer_insights::GpuSaving>,
    pub exponents: Vec<wattcounts_analytics::peer_insights::SizeExponent>,
}

const INSIGHTS_NOTE: &str = "Read within this dataset alone, under its own protocol: one published figure per configuration and no spread, so a GPU comparison is the ratio of energy per token over configurations both GPUs ran alike (same task, precision, GPU count, parallelism and batch-size setting), with its range and how many pairs agree; it is not a verdict, and no figure here is comparable with a Watt Counts figure.";

#[utoipa::path(get, path = "/api/v1/peers/{slug}/insights", tag = "peers",
    summary = "What a peer release says within itself: the newer GPU against the older per model, and the size exponent of its dense models",
    params(("slug" = String, Path, description = "The peer dataset, e.g. mlenergy-v3")),
    responses((status = 200, body = PeerInsightsJson),
        (status = 404, description = "Unknown, or not imported here", body = crate::error::ErrorBody)))]
pub async fn peer_insights_json(
    State(s): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    let v = s.service.peer_insights(&slug).await?;
    Ok(Json(PeerInsightsJson {
        source: v.info.into(),
        release: (&v.release).into(),
        note: INSIGHTS_NOTE,
        savings: v.insights.savings.clone(),
        exponents: v.insights.exponents.clone(),
    })
    .into_response())
}

#[derive(Template)]
#[template(path = "peer_insights.html")]
struct PeerInsightsPage {
    info: &'static SourceInfo,
    release: PeerReleaseJson,
    note: &'static str,
    reference: String,
    other: String,
    /// (task, model, nickname link, pairs, saving text, range text, agreement).
    savings: Vec<[String; 7]>,
    /// (task, GPU, batch setting, models, exponent, interval, points).
    exponents: Vec<[String; 7]>,
    json_link: String,
    layout: crate::layout::Layout,
}

/// `/peers/{slug}/insights`, and `/insights?origin=peer:{slug}`.
pub(crate) async fn peer_insights_response(
    s: &AppState,
    slug: &str,
) -> Result<Response, PageError> {
    let v = s.service.peer_insights(slug).await?;
    let slug = v.info.slug;
    let (reference, other) = v
        .insights
        .savings
        .first()
        .map(|g| (g.reference.clone(), g.other.clone()))
        .unwrap_or_default();
    let savings = v
        .insights
        .savings
        .iter()
        .map(|g| {
            let pct = |r: f64| format!("{:.0} %", (1.0 - r) * 100.0);
            [
                g.task.clone(),
                g.nickname.clone(),
                format!(
                    "/peers/{slug}?task={}&model={}",
                    url_encode(&g.task),
                    url_encode(&g.model)
                ),
                g.pairs.to_string(),
                if g.median_ratio <= 1.0 {
                    format!("{} less", pct(g.median_ratio))
                } else {
                    format!("{:.0} % more", (g.median_ratio - 1.0) * 100.0)
                },
                format!("ratio {:.2}–{:.2}", g.min_ratio, g.max_ratio),
                if g.other_less == g.pairs {
                    format!("less in all {} pairs", g.pairs)
                } else if g.other_less == 0 {
                    format!("more in all {} pairs", g.pairs)
                } else {
                    format!("less in {} of {} pairs", g.other_less, g.pairs)
                },
            ]
        })
        .collect();
    let exponents = v
        .insights
        .exponents
        .iter()
        .map(|e| {
            [
                e.task.clone(),
                e.gpu.clone(),
                e.batch_size_setting.to_string(),
                e.models.to_string(),
                format!("{:.2}", e.exponent),
                format!(
                    "{:.2} to {:.2} ({:.0} %)",
                    e.interval.lo,
                    e.interval.hi,
                    e.interval.confidence * 100.0
                ),
                e.points
                    .iter()
                    .map(|(m, p, j)| {
                        format!("{} ({p} B): {j:.4} J", m.rsplit('/').next().unwrap_or(m))
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ]
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &PeerInsightsPage {
            info: v.info,
            release: (&v.release).into(),
            note: INSIGHTS_NOTE,
            reference,
            other,
            savings,
            exponents,
            json_link: format!("/api/v1/peers/{slug}/insights"),
            layout: crate::layout::Layout::of(false),
        },
    ))
}

pub async fn peer_insights_page(
    State(s): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, PageError> {
    peer_insights_response(&s, &slug).await
}

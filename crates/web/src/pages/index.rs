//! The front page (`/`): headline figures, featured models and the latest
//! submissions; its JSON twin `/api/v1/stats`; and the two static assets
//! every page links (the stylesheet and the icon), compiled in.

use askama::Template;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::view::{format, model_path};
use crate::AppState;
use wattcounts_analytics::leaderboard;
use wattcounts_rules::domain::Origin;

pub async fn favicon() -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        include_str!("../../../../static/favicon.svg"),
    )
        .into_response()
}

pub async fn stylesheet() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../../../../static/style.css"),
    )
        .into_response()
}

struct LatestRow {
    id: String,
    received: String,
    handle: String,
    gpu: String,
    gpu_link: Option<String>,
    iterations: u64,
    demo: bool,
}

#[derive(Template)]
#[template(path = "index.html")]
struct IndexPage {
    /// (figure with thousands separators, what it counts).
    counts: Vec<(String, &'static str)>,
    latest: Vec<LatestRow>,
    /// Every model of the default view, for the picker.
    models: Vec<String>,
    /// Well-known models present, linked straight to their pages.
    featured: Vec<(String, String)>,
    /// Imported peer origins: real published measurements, one click away.
    peers: Vec<crate::view::Opt>,
    layout: crate::layout::Layout,
}

/// Models most readers ask about first, linked from the front page when
/// the data has them.
const FEATURED_MODELS: [&str; 5] = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "microsoft/phi-4",
    "google/gemma-3-12b-it",
];

/// The front page's JSON twin.
#[derive(Serialize, ToSchema)]
pub struct Stats {
    pub counts: wattcounts_service::read::DatasetCounts,
    /// The ten latest accepted submissions, newest first.
    pub latest: Vec<LatestSubmission>,
}

#[derive(Serialize, ToSchema)]
pub struct LatestSubmission {
    pub submission_id: uuid::Uuid,
    /// RFC 3339, UTC.
    pub received_at: String,
    pub submitter: String,
    pub gpu: String,
    pub iterations: u64,
    pub demo: bool,
}

/// The front page's JSON twin: dataset counts and the latest accepted
/// submissions.
#[utoipa::path(get, path = "/api/v1/stats", tag = "leaderboard",
    summary = "Dataset counts and the latest accepted submissions",
    responses((status = 200, body = Stats)))]
pub async fn stats_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    let counts = s.service.dataset_counts().await?;
    let latest = s
        .service
        .latest_submissions(10)
        .await?
        .into_iter()
        .map(|r| LatestSubmission {
            submission_id: r.id,
            received_at: wattcounts_rules::timestamp::ts(&r.received_at),
            submitter: r.handle,
            gpu: r.gpu_name,
            iterations: r.iterations,
            demo: r.is_demo,
        })
        .collect();
    Ok(Json(Stats { counts, latest }).into_response())
}

pub async fn index(State(s): State<AppState>) -> Result<Response, PageError> {
    let counts = s.service.dataset_counts().await?;
    let latest = s
        .service
        .latest_submissions(10)
        .await?
        .into_iter()
        .map(|r| LatestRow {
            id: r.id.to_string(),
            received: format::date(&r.received_at),
            handle: r.handle,
            gpu_link: r
                .gpu_id
                .as_deref()
                .and_then(wattcounts_rules::catalog::gpu_by_id)
                .map(|g| format!("/gpus/{}", g.id)),
            gpu: r.gpu_name,
            iterations: r.iterations,
            demo: r.is_demo,
        })
        .collect();
    // The pages show the demo only while no real data exists.
    let demo = counts.demo_submissions > 0 && counts.demo_submissions == counts.submissions;
    let models = s
        .service
        .facets(&leaderboard::Query {
            origin: Some(if demo { Origin::Demo } else { Origin::Real }),
            ..Default::default()
        })
        .await?
        .models;
    let featured = FEATURED_MODELS
        .iter()
        .filter(|m| models.iter().any(|x| x == *m))
        .map(|m| (model_path(m), m.rsplit('/').next().unwrap_or(m).to_string()))
        .collect();
    let peers = s
        .service
        .peer_origins()
        .await?
        .iter()
        .map(|p| crate::view::Opt {
            value: format!("/peers/{}", p.info.slug),
            label: format!(
                "{}: {} configurations on {}",
                p.info.name,
                p.configurations,
                p.gpus.join(" and ")
            ),
            selected: false,
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &IndexPage {
            peers,
            layout: crate::layout::Layout::of(demo),
            counts: vec![
                (format::thousands(counts.submissions), "submissions"),
                (format::thousands(counts.gpus), "GPUs"),
                (format::thousands(counts.models), "models"),
                (format::thousands(counts.iterations), "iterations"),
                (format::thousands(counts.power_samples), "power samples"),
            ],
            latest,
            models,
            featured,
        },
    ))
}

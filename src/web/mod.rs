//! HTTP: translates requests to calls and results to responses.

pub mod api;
pub mod error;
pub mod pages;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tower_http::trace::TraceLayer;

use crate::ingest::Ingestor;

#[derive(Clone)]
pub struct AppState {
    pub ingestor: Arc<Ingestor>,
    /// Largest accepted request body for a submission, bytes.
    pub max_body_bytes: u64,
}

pub fn app(state: AppState) -> Router {
    // The multipart reader enforces the cap while streaming; the handler
    // also refuses a declared Content-Length over it before reading.
    let limit = usize::try_from(state.max_body_bytes).unwrap_or(usize::MAX);
    Router::new()
        .route("/", get(pages::index))
        .route("/leaderboard", get(pages::leaderboard_page))
        .route("/static/style.css", get(pages::stylesheet))
        .route("/api/v1/leaderboard", get(pages::leaderboard_json))
        .route("/healthz", get(api::healthz))
        .route(
            "/api/v1/submitters",
            post(api::register).layer(DefaultBodyLimit::max(64 * 1024)),
        )
        .route(
            "/api/v1/submissions",
            post(api::submit).layer(DefaultBodyLimit::max(limit)),
        )
        .route("/api/v1/submissions/{id}", get(api::submission))
        .fallback(api::not_found)
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

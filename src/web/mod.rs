//! HTTP: translates requests to calls and results to responses.

pub mod admin_api;
pub mod admin_pages;
pub mod api;
pub mod auth;
pub mod cache;
pub mod charts;
pub mod csv_export;
pub mod download;
pub mod error;
pub mod explore;
pub mod format;
pub mod guard;
pub mod input_guard;
pub mod log_pages;
pub mod models_pages;
pub mod openapi;
pub mod pages;
pub mod server;
pub mod snapshots;
pub mod submission_page;
pub mod submit_page;
pub mod telemetry;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, Extensions, HeaderMap};
use axum::routing::{get, post};
use axum::Router;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use anyhow::Context;

use crate::config::ServeConfig;
use crate::ingest::IngestConfig;
use crate::service::Service;
use crate::store::Store;

#[derive(Clone)]
pub struct AppState {
    pub service: Arc<Service>,
    /// Largest accepted request body for a submission, bytes.
    pub max_body_bytes: u64,
    /// Maintainer tokens (hashes only).
    pub maintainers: Arc<auth::Maintainers>,
    pub cache: Arc<cache::ResponseCache>,
    /// Published dataset snapshots (`<data-dir>/snapshots`).
    pub snapshots: Arc<snapshots::Shelf>,
    pub deadlines: guard::Deadlines,
    /// Proxies whose X-Forwarded-For names the client.
    pub trusted_proxies: Arc<Vec<std::net::IpAddr>>,
    /// What the pages assume to state gCO₂e.
    pub footprint: crate::units::Footprint,
}

impl AppState {
    /// What `serve` runs: the store named by the configuration (created and
    /// migrated), the blobs and snapshots in its data dir.
    pub async fn build(cfg: &ServeConfig, public_url: String) -> anyhow::Result<AppState> {
        std::fs::create_dir_all(&cfg.data_dir)
            .with_context(|| format!("creating {}", cfg.data_dir.display()))?;
        let url = cfg.database_url();
        let store = crate::store::open(&url)
            .await
            .with_context(|| format!("opening {url}"))?;
        Self::with_store(store, cfg, public_url)
    }

    /// The same over a store opened elsewhere (tests give each case its own
    /// PostgreSQL schema).
    pub fn with_store(
        store: Arc<dyn Store>,
        cfg: &ServeConfig,
        public_url: String,
    ) -> anyhow::Result<AppState> {
        let (blobs, library) = crate::config::file_stores(&cfg.data_dir, cfg.blob_url.as_deref())?;
        Self::with_files(store, cfg, public_url, blobs, library)
    }

    /// The same with the bundles and snapshots kept where the caller says
    /// (tests give a bucket of their own test server).
    pub fn with_files(
        store: Arc<dyn Store>,
        cfg: &ServeConfig,
        public_url: String,
        blobs: crate::store::blobs::BlobStore,
        library: crate::snapshot::Library,
    ) -> anyhow::Result<AppState> {
        let log_key = cfg.log_key(&public_url)?;
        let service = Service::with_limits(
            store,
            blobs,
            IngestConfig {
                public_url,
                unpack: cfg.unpack_limits(),
                thresholds: cfg.check_thresholds()?,
            },
            cfg.admission_limits(),
            cfg.rate_limits(),
            Some(log_key),
        );
        Ok(AppState {
            service: Arc::new(service),
            max_body_bytes: cfg.max_body_bytes,
            maintainers: Arc::new(cfg.maintainers()?),
            cache: Arc::new(cache::ResponseCache::new(!cfg.no_response_cache)),
            snapshots: Arc::new(snapshots::Shelf::new(library)),
            deadlines: guard::Deadlines {
                request: std::time::Duration::from_secs(cfg.request_timeout_secs.max(1)),
                upload: std::time::Duration::from_secs(cfg.upload_timeout_secs.max(1)),
                upload_min_bytes_per_sec: cfg.upload_min_bytes_per_sec,
                upload_rate_grace: std::time::Duration::from_secs(cfg.upload_rate_grace_secs),
            },
            trusted_proxies: Arc::new(cfg.trusted_proxies.clone()),
            footprint: cfg.footprint(),
        })
    }
}

/// No inline script or style exists on any page, so the policy allows
/// none: a name that slipped through escaping could not run.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Headers every answer carries, error pages and cached answers included.
async fn security_headers(
    axum::extract::State(s): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::HeaderValue;
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if s.service.config().public_url.starts_with("https://") {
        h.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    resp
}

pub fn app(state: AppState) -> Router {
    // The multipart reader enforces the cap while streaming; the handler
    // also refuses a declared Content-Length over it before reading.
    let limit = usize::try_from(state.max_body_bytes).unwrap_or(usize::MAX);
    // Uploads (received and checked within the request) and a
    // maintainer's snapshot take long by nature: their own deadline.
    let long = Router::new()
        .route(
            "/api/v1/submissions",
            post(api::submit).layer(DefaultBodyLimit::max(limit)),
        )
        .route(
            "/submit",
            post(submit_page::submit_form).layer(DefaultBodyLimit::max(limit)),
        )
        .route("/api/v1/admin/snapshots", post(snapshots::create_api))
        .route("/admin/snapshots", post(snapshots::create_form))
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.upload,
            guard::deadline,
        ));
    Router::new()
        .route("/", get(pages::index))
        .route("/leaderboard", get(pages::leaderboard_page))
        .route("/static/style.css", get(pages::stylesheet))
        .route("/static/favicon.svg", get(pages::favicon))
        .route("/api/v1/leaderboard", get(pages::leaderboard_json))
        .route("/api/v1/leaderboard.csv", get(csv_export::leaderboard_csv))
        .route("/api/openapi.json", get(openapi::openapi_json))
        .route("/api", get(openapi::api_page))
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route(
            "/api/v1/submitters",
            post(api::register).layer(DefaultBodyLimit::max(64 * 1024)),
        )
        .route("/api/v1/submissions/{id}", get(api::submission))
        .route("/submissions/{id}", get(submission_page::submission_page))
        .route(
            "/submissions/{id}/bundle.tar.gz",
            get(submission_page::bundle_download),
        )
        .route(
            "/submissions/{id}/bundle.tar.gz.sig",
            get(submission_page::signature_download),
        )
        .route("/gpus", get(explore::gpus_page))
        .route("/gpus/{id}", get(explore::gpu_page))
        .route("/compare", get(explore::compare_page))
        .route("/models", get(models_pages::models_page))
        .route("/models/{*id}", get(models_pages::model_page))
        .route("/methodology", get(models_pages::methodology_page))
        .route("/api/v1/models", get(models_pages::models_json))
        .route("/api/v1/gpus", get(explore::gpus_json))
        .route("/api/v1/gpus/{id}", get(explore::gpu_json))
        .route("/api/v1/compare", get(explore::compare_json))
        .route("/api/v1/models/{*id}", get(models_pages::model_json))
        .route("/checks", get(submit_page::checks_page))
        .route("/api/v1/checks", get(submit_page::checks_json))
        .route("/api/v1/stats", get(pages::stats_json))
        .route("/submit", get(submit_page::submit_page))
        .route("/api/v1/admin/review", get(admin_api::queue))
        .route(
            "/api/v1/admin/submissions/{id}/decision",
            post(admin_api::decide),
        )
        .route(
            "/api/v1/admin/submitters/{handle}/suspend",
            post(admin_api::suspend),
        )
        .route("/api/v1/admin/keys/revoke", post(admin_api::revoke))
        .route("/snapshots", get(snapshots::list_page))
        .route("/snapshots/{id}", get(snapshots::snapshot_page))
        .route("/snapshots/{id}/{file}", get(snapshots::download))
        .route("/api/v1/snapshots", get(snapshots::list_json))
        .route("/api/v1/snapshots/{id}", get(snapshots::snapshot_json))
        .route("/log", get(log_pages::log_page))
        .route("/log/checkpoint", get(log_pages::checkpoint))
        .route("/log/key", get(log_pages::verifier_key))
        .route("/log/tile/{*rest}", get(log_pages::tile))
        .route("/.well-known/wattcounts-log", get(log_pages::well_known))
        .route("/api/v1/log", get(log_pages::log_json))
        .route("/api/v1/log/inclusion", get(log_pages::inclusion))
        .route("/api/v1/log/consistency", get(log_pages::consistency))
        .route("/api/v1/log/entries", get(log_pages::entries))
        .route("/api/v1/admin/log/checkpoint", post(log_pages::publish))
        .route("/admin", get(admin_pages::admin_home))
        .route("/admin/login", post(admin_pages::login))
        .route("/admin/logout", post(admin_pages::logout))
        .route(
            "/admin/submissions/{id}/decision",
            post(admin_pages::decide),
        )
        .route("/admin/submitters/suspend", post(admin_pages::suspend))
        .route("/admin/keys/revoke", post(admin_pages::revoke))
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.request,
            guard::deadline,
        ))
        .merge(long)
        .route_layer(axum::middleware::from_fn(telemetry::mark_route))
        .fallback(api::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cache::layer,
        ))
        // Bundles are gzip already; compressing them again wastes CPU.
        // Snapshot files (they accept ranges) are sent as stored, so their
        // bytes, length and ETag are the manifest's and downloads resume.
        .layer(
            CompressionLayer::new().compress_when(
                DefaultPredicate::new()
                    .and(NotForContentType::const_new("application/gzip"))
                    .and(|_, _, h: &HeaderMap, _: &Extensions| {
                        !h.contains_key(header::ACCEPT_RANGES)
                    }),
            ),
        )
        .layer(axum::middleware::from_fn(input_guard::request_guard))
        .layer(axum::middleware::from_fn(telemetry::track))
        .layer(TraceLayer::new_for_http())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security_headers,
        ))
        .with_state(state)
}

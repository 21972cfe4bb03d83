//! HTTP: translates requests to calls and results to responses.

pub mod admin_api;
pub mod admin_pages;
pub mod api;
pub mod api_page;
pub mod auth;
pub mod cache;
pub mod cache_policy;
pub mod charts;
pub mod csv_export;
pub mod download;
pub mod error;
pub mod explore;
pub mod format;
pub mod guard;
pub mod guide_pages;
pub mod input_guard;
pub mod models_pages;
pub mod openapi;
pub mod pages;
pub mod params;
pub mod server;
pub mod snapshots;
pub mod submission_page;
pub mod telemetry;
pub mod tlog_pages;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, Extensions, HeaderMap};
use axum::routing::{get, post};
use axum::Router;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use anyhow::Context;

use crate::analysis::IngestConfig;
use crate::config::ServeConfig;
use crate::service::Service;
use crate::store::Store;
use cache_policy::declare;
use cache_policy::CachePolicy::{DataVersioned, Immutable, NoStore, PublicFor, Revalidate};

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
            declare(
                &state,
                NoStore,
                post(api::submit).layer(DefaultBodyLimit::max(limit)),
            ),
        )
        .route(
            "/submit",
            declare(
                &state,
                NoStore,
                post(guide_pages::submit_form).layer(DefaultBodyLimit::max(limit)),
            ),
        )
        .route(
            "/api/v1/admin/snapshots",
            declare(&state, NoStore, post(snapshots::create_api)),
        )
        .route(
            "/admin/snapshots",
            declare(&state, NoStore, post(snapshots::create_form)),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.upload,
            guard::deadline,
        ));
    Router::new()
        .route("/", declare(&state, DataVersioned, get(pages::index)))
        .route(
            "/leaderboard",
            declare(&state, DataVersioned, get(pages::leaderboard_page)),
        )
        .route(
            "/static/style.css",
            declare(&state, PublicFor(3600), get(pages::stylesheet)),
        )
        .route(
            "/static/favicon.svg",
            declare(&state, PublicFor(86400), get(pages::favicon)),
        )
        .route(
            "/api/v1/leaderboard",
            declare(&state, DataVersioned, get(pages::leaderboard_json)),
        )
        .route(
            "/api/v1/leaderboard.csv",
            declare(&state, DataVersioned, get(csv_export::leaderboard_csv)),
        )
        .route(
            "/api/openapi.json",
            declare(&state, DataVersioned, get(openapi::openapi_json)),
        )
        .route(
            "/api",
            declare(&state, DataVersioned, get(api_page::api_page)),
        )
        .route("/healthz", declare(&state, NoStore, get(api::healthz)))
        .route("/readyz", declare(&state, NoStore, get(api::readyz)))
        .route(
            "/api/v1/submitters",
            declare(
                &state,
                NoStore,
                post(api::register).layer(DefaultBodyLimit::max(64 * 1024)),
            ),
        )
        .route(
            "/api/v1/submissions/{id}",
            declare(&state, DataVersioned, get(api::submission)),
        )
        .route(
            "/submissions/{id}",
            declare(&state, DataVersioned, get(submission_page::submission_page)),
        )
        .route(
            "/submissions/{id}/bundle.tar.gz",
            declare(&state, Immutable, get(submission_page::bundle_download)),
        )
        .route(
            "/submissions/{id}/bundle.tar.gz.sig",
            declare(&state, Immutable, get(submission_page::signature_download)),
        )
        .route(
            "/gpus",
            declare(&state, DataVersioned, get(explore::gpus_page)),
        )
        .route(
            "/gpus/{id}",
            declare(&state, DataVersioned, get(explore::gpu_page)),
        )
        .route(
            "/compare",
            declare(&state, DataVersioned, get(explore::compare_page)),
        )
        .route(
            "/models",
            declare(&state, DataVersioned, get(models_pages::models_page)),
        )
        .route(
            "/models/{*id}",
            declare(&state, DataVersioned, get(models_pages::model_page)),
        )
        .route(
            "/methodology",
            declare(&state, DataVersioned, get(models_pages::methodology_page)),
        )
        .route(
            "/api/v1/models",
            declare(&state, DataVersioned, get(models_pages::models_json)),
        )
        .route(
            "/api/v1/gpus",
            declare(&state, DataVersioned, get(explore::gpus_json)),
        )
        .route(
            "/api/v1/gpus/{id}",
            declare(&state, DataVersioned, get(explore::gpu_json)),
        )
        .route(
            "/api/v1/compare",
            declare(&state, DataVersioned, get(explore::compare_json)),
        )
        .route(
            "/api/v1/models/{*id}",
            declare(&state, DataVersioned, get(models_pages::model_json)),
        )
        .route(
            "/checks",
            declare(&state, DataVersioned, get(guide_pages::checks_page)),
        )
        .route(
            "/api/v1/checks",
            declare(&state, DataVersioned, get(guide_pages::checks_json)),
        )
        .route(
            "/api/v1/stats",
            declare(&state, DataVersioned, get(pages::stats_json)),
        )
        .route(
            "/submit",
            declare(&state, DataVersioned, get(guide_pages::submit_page)),
        )
        .route(
            "/api/v1/admin/review",
            declare(&state, NoStore, get(admin_api::queue)),
        )
        .route(
            "/api/v1/admin/submissions/{id}/decision",
            declare(&state, NoStore, post(admin_api::decide)),
        )
        .route(
            "/api/v1/admin/submitters/{handle}/suspend",
            declare(&state, NoStore, post(admin_api::suspend)),
        )
        .route(
            "/api/v1/admin/keys/revoke",
            declare(&state, NoStore, post(admin_api::revoke)),
        )
        .route(
            "/snapshots",
            declare(&state, Revalidate, get(snapshots::list_page)),
        )
        .route(
            "/snapshots/{id}",
            declare(&state, Revalidate, get(snapshots::snapshot_page)),
        )
        .route(
            "/snapshots/{id}/{file}",
            declare(&state, Immutable, get(snapshots::download)),
        )
        .route(
            "/api/v1/snapshots",
            declare(&state, Revalidate, get(snapshots::list_json)),
        )
        .route(
            "/api/v1/snapshots/{id}",
            declare(&state, Revalidate, get(snapshots::snapshot_json)),
        )
        .route(
            "/log",
            declare(&state, Revalidate, get(tlog_pages::log_page)),
        )
        .route(
            "/log/checkpoint",
            declare(&state, Revalidate, get(tlog_pages::checkpoint)),
        )
        .route(
            "/log/key",
            declare(&state, PublicFor(3600), get(tlog_pages::verifier_key)),
        )
        .route(
            "/log/tile/{*rest}",
            declare(&state, Immutable, get(tlog_pages::tile)),
        )
        .route(
            "/.well-known/wattcounts-log",
            declare(&state, Revalidate, get(tlog_pages::well_known)),
        )
        .route(
            "/api/v1/log",
            declare(&state, Revalidate, get(tlog_pages::log_json)),
        )
        .route(
            "/api/v1/log/inclusion",
            declare(&state, Revalidate, get(tlog_pages::inclusion)),
        )
        .route(
            "/api/v1/log/consistency",
            declare(&state, Revalidate, get(tlog_pages::consistency)),
        )
        .route(
            "/api/v1/log/entries",
            declare(&state, Revalidate, get(tlog_pages::entries)),
        )
        .route(
            "/api/v1/admin/log/checkpoint",
            declare(&state, NoStore, post(tlog_pages::publish)),
        )
        .route(
            "/admin",
            declare(&state, NoStore, get(admin_pages::admin_home)),
        )
        .route(
            "/admin/login",
            declare(&state, NoStore, post(admin_pages::login)),
        )
        .route(
            "/admin/logout",
            declare(&state, NoStore, post(admin_pages::logout)),
        )
        .route(
            "/admin/submissions/{id}/decision",
            declare(&state, NoStore, post(admin_pages::decide)),
        )
        .route(
            "/admin/submitters/suspend",
            declare(&state, NoStore, post(admin_pages::suspend)),
        )
        .route(
            "/admin/keys/revoke",
            declare(&state, NoStore, post(admin_pages::revoke)),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.request,
            guard::deadline,
        ))
        .merge(long)
        .route_layer(axum::middleware::from_fn(telemetry::mark_route))
        .fallback(api::not_found)
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
        .layer(axum::middleware::from_fn(cache_policy::require_declared))
        .layer(TraceLayer::new_for_http())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security_headers,
        ))
        .with_state(state)
}

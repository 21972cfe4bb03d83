//! HTTP: translates requests to calls and results to responses.

pub mod admin_api;
pub mod admin_pages;
pub mod api;
pub mod api_page;
pub mod auth;
pub mod cache;
pub mod cache_policy;
pub mod catalogue_api;
pub mod charts;
pub mod csv_export;
pub mod download;
pub mod error;
pub mod estimates;
pub mod explore;
pub mod format;
pub mod guard;
pub mod guide_pages;
pub mod input_guard;
pub mod insights_page;
pub mod models_pages;
pub mod openapi;
pub mod pages;
pub mod params;
pub mod routes;
pub mod server;
pub mod snapshots;
pub mod submission_page;
pub mod telemetry;
pub mod tlog_pages;

use std::sync::Arc;

use axum::http::{header, Extensions, HeaderMap};
use axum::Router;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use cache_policy::CachePolicy::{DataVersioned, Immutable, NoStore, PublicFor, Revalidate};
use wattcounts_service::snapshot::Library;
use wattcounts_service::Service;

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
    pub footprint: wattcounts_analytics::units::Footprint,
}

/// What the web layer is told beyond the service: the edge's limits and
/// who may moderate. `wattcounts serve` reads them from its configuration.
pub struct WebSettings {
    /// Largest accepted request body for a submission, bytes.
    pub max_body_bytes: u64,
    pub maintainers: auth::Maintainers,
    /// Whether pages are kept between data changes (`--no-response-cache`).
    pub response_cache: bool,
    pub deadlines: guard::Deadlines,
    /// Proxies whose X-Forwarded-For names the client.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub footprint: wattcounts_analytics::units::Footprint,
}

impl AppState {
    /// The router's state over a service and the shelf of published
    /// snapshots.
    pub fn new(service: Service, library: Library, settings: WebSettings) -> AppState {
        AppState {
            service: Arc::new(service),
            max_body_bytes: settings.max_body_bytes,
            maintainers: Arc::new(settings.maintainers),
            cache: Arc::new(cache::ResponseCache::new(settings.response_cache)),
            snapshots: Arc::new(snapshots::Shelf::new(library)),
            deadlines: settings.deadlines,
            trusted_proxies: Arc::new(settings.trusted_proxies),
            footprint: settings.footprint,
        }
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
    let (router, _) = app_and_routes(state).expect("the OpenAPI document renders");
    router
}

/// Every route the router registers, as the route table listed them.
pub fn route_list(state: &AppState) -> Vec<routes::Route> {
    route_table(state).finish().2
}

/// The router and what its route table registered.
pub fn app_and_routes(state: AppState) -> anyhow::Result<(Router, Vec<routes::Route>)> {
    let (router, paths, listed) = route_table(&state).finish();
    let document = std::sync::Arc::new(openapi::Document::new(paths)?);
    let router = router
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
        // The document the JSON and HTML references serve, rendered once.
        .layer(axum::Extension(document))
        .with_state(state);
    Ok((router, listed))
}

/// Each route once: its path, handler, cache policy and (for the JSON API)
/// its OpenAPI path, in routes.rs's table.
fn route_table(state: &AppState) -> routes::Table {
    use utoipa_axum::routes;
    let t = routes::Table::new(state);
    // The multipart reader enforces the cap while streaming; the handler
    // also refuses a declared Content-Length over it before reading.
    let limit = usize::try_from(state.max_body_bytes).unwrap_or(usize::MAX);
    // Uploads (received and checked within the request) and a
    // maintainer's snapshot take long by nature: their own deadline.
    let long = routes::Table::new(state)
        .api_limited(NoStore, Some(limit), routes!(api::submit))
        .post_limited("/submit", NoStore, limit, guide_pages::submit_form)
        .api(NoStore, routes!(snapshots::create_api))
        .post("/admin/snapshots", NoStore, snapshots::create_form)
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.upload,
            guard::deadline,
        ));
    t.get("/", DataVersioned, pages::index)
        .get("/leaderboard", DataVersioned, pages::leaderboard_page)
        .get("/static/style.css", PublicFor(3600), pages::stylesheet)
        .get("/static/favicon.svg", PublicFor(86400), pages::favicon)
        .api(DataVersioned, routes!(pages::leaderboard_json))
        .api(DataVersioned, routes!(csv_export::leaderboard_csv))
        .get("/api/openapi.json", DataVersioned, openapi::openapi_json)
        .get("/api", DataVersioned, api_page::api_page)
        .api(NoStore, routes!(api::healthz))
        .api(NoStore, routes!(api::readyz))
        .api_limited(NoStore, Some(64 * 1024), routes!(api::register))
        .api(DataVersioned, routes!(api::submission))
        .get(
            "/submissions/{id}",
            DataVersioned,
            submission_page::submission_page,
        )
        .get(
            "/submissions/{id}/bundle.tar.gz",
            Immutable,
            submission_page::bundle_download,
        )
        .get(
            "/submissions/{id}/bundle.tar.gz.sig",
            Immutable,
            submission_page::signature_download,
        )
        .get("/gpus", DataVersioned, explore::gpus_page)
        .get("/gpus/{id}", DataVersioned, explore::gpu_page)
        .get("/compare", DataVersioned, explore::compare_page)
        .get("/insights", DataVersioned, insights_page::insights_page)
        .api(DataVersioned, routes!(insights_page::insights_json))
        .api(DataVersioned, routes!(insights_page::insights_csv))
        .get("/estimate", DataVersioned, estimates::form::estimate_page)
        .api(DataVersioned, routes!(estimates::answer::estimate_json))
        .api(DataVersioned, routes!(estimates::estimator::estimator_json))
        .get("/models", DataVersioned, models_pages::models_page)
        .get("/models/{*id}", DataVersioned, models_pages::model_page)
        .get(
            "/methodology",
            DataVersioned,
            models_pages::methodology_page,
        )
        .api(DataVersioned, routes!(models_pages::models_json))
        .api_catch_all(DataVersioned, routes!(models_pages::model_json))
        .api_under_catch_all(routes!(models_pages::model_csv))
        .api_under_catch_all(routes!(estimates::unmeasured::model_estimates_json))
        .api_under_catch_all(routes!(estimates::unmeasured::model_estimates_csv))
        .api(DataVersioned, routes!(explore::gpus_json))
        .api(DataVersioned, routes!(explore::gpu_json))
        .api(DataVersioned, routes!(explore::compare_json))
        .api(DataVersioned, routes!(explore::compare_csv))
        .api_under_catch_all(routes!(explore::gpu_csv))
        .get("/checks", DataVersioned, guide_pages::checks_page)
        .api(DataVersioned, routes!(guide_pages::checks_json))
        .api(DataVersioned, routes!(pages::stats_json))
        .get("/submit", DataVersioned, guide_pages::submit_page)
        .api(NoStore, routes!(admin_api::queue))
        .api(NoStore, routes!(admin_api::decide))
        .api(NoStore, routes!(admin_api::suspend))
        .api(NoStore, routes!(admin_api::revoke))
        .api(NoStore, routes!(catalogue_api::add_gpu))
        .api(DataVersioned, routes!(catalogue_api::gpus))
        .get("/snapshots", Revalidate, snapshots::list_page)
        .get("/snapshots/{id}", Revalidate, snapshots::snapshot_page)
        .get("/snapshots/{id}/{file}", Immutable, snapshots::download)
        .api(Revalidate, routes!(snapshots::list_json))
        .api(Revalidate, routes!(snapshots::snapshot_json))
        .get("/log", Revalidate, tlog_pages::log_page)
        .get("/log/checkpoint", Revalidate, tlog_pages::checkpoint)
        .get("/log/key", PublicFor(3600), tlog_pages::verifier_key)
        .get("/log/tile/{*rest}", Immutable, tlog_pages::tile)
        .api(Revalidate, routes!(tlog_pages::well_known))
        .api(Revalidate, routes!(tlog_pages::log_json))
        .api(Revalidate, routes!(tlog_pages::inclusion))
        .api(Revalidate, routes!(tlog_pages::consistency))
        .api(Revalidate, routes!(tlog_pages::entries))
        .api(NoStore, routes!(tlog_pages::publish))
        .get("/admin", NoStore, admin_pages::admin_home)
        .post("/admin/login", NoStore, admin_pages::login)
        .post("/admin/logout", NoStore, admin_pages::logout)
        .post(
            "/admin/submissions/{id}/decision",
            NoStore,
            admin_pages::decide,
        )
        .post("/admin/submitters/suspend", NoStore, admin_pages::suspend)
        .post("/admin/keys/revoke", NoStore, admin_pages::revoke)
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.request,
            guard::deadline,
        ))
        .merge(long)
}

//! The one route list: every path with its handler, its cache policy and,
//! for the JSON API, its OpenAPI path (through `table::Table`, which keeps
//! the document and the router one list), then the layers that wrap them.

mod table;

pub use table::{is_api_path, Route, Table};

use axum::http::{header, Extensions, HeaderMap};
use axum::Router;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
use utoipa_axum::routes;

use crate::layers::cache_policy::CachePolicy::{
    DataVersioned, Immutable, NoStore, PublicFor, Revalidate,
};
use crate::{layers, openapi, pages, view, AppState};

pub fn app(state: AppState) -> Router {
    let (router, _) = app_and_routes(state).expect("the OpenAPI document renders");
    router
}

/// Every route the router registers, as the route table listed them.
pub fn route_list(state: &AppState) -> Vec<Route> {
    route_table(state).finish().2
}

/// The router and what its route table registered.
pub fn app_and_routes(state: AppState) -> anyhow::Result<(Router, Vec<Route>)> {
    let (router, paths, listed) = route_table(&state).finish();
    let document = std::sync::Arc::new(openapi::Document::new(paths)?);
    let router = router
        .route_layer(axum::middleware::from_fn(layers::telemetry::mark_route))
        .fallback(pages::submissions::api::not_found)
        .method_not_allowed_fallback(pages::submissions::api::method_not_allowed)
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
        .layer(axum::middleware::from_fn(
            layers::input_guard::request_guard,
        ))
        .layer(axum::middleware::from_fn(layers::telemetry::track))
        .layer(axum::middleware::from_fn(
            layers::cache_policy::require_declared,
        ))
        .layer(TraceLayer::new_for_http())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            layers::security_headers::security_headers,
        ))
        // The document the JSON and HTML references serve, rendered once.
        .layer(axum::Extension(document))
        .with_state(state);
    Ok((router, listed))
}

/// Each route once: its path, handler, cache policy and (for the JSON API)
/// its OpenAPI path, in routes.rs's table.
fn route_table(state: &AppState) -> Table {
    let t = Table::new(state);
    // The multipart reader enforces the cap while streaming; the handler
    // also refuses a declared Content-Length over it before reading.
    let limit = usize::try_from(state.max_body_bytes).unwrap_or(usize::MAX);
    // Uploads (received and checked within the request) and a
    // maintainer's snapshot take long by nature: their own deadline.
    let long = Table::new(state)
        .api_limited(
            NoStore,
            Some(limit),
            routes!(pages::submissions::api::submit),
        )
        .post_limited("/submit", NoStore, limit, pages::guides::submit_form)
        .api(NoStore, routes!(pages::snapshots::create_api))
        .post("/admin/snapshots", NoStore, pages::snapshots::create_form)
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.upload,
            layers::deadline::deadline,
        ))
        .route_layer(axum::middleware::map_request(layers::part_headers::guard));
    t.get("/", DataVersioned, pages::index::index)
        .get(
            "/leaderboard",
            DataVersioned,
            pages::leaderboard::leaderboard_page,
        )
        .get(
            "/static/style.css",
            PublicFor(3600),
            pages::index::stylesheet,
        )
        .get(
            "/static/favicon.svg",
            PublicFor(86400),
            pages::index::favicon,
        )
        .api(DataVersioned, routes!(pages::leaderboard::leaderboard_json))
        .api(DataVersioned, routes!(view::csv::leaderboard_csv))
        .get("/api/openapi.json", DataVersioned, openapi::openapi_json)
        .get("/api", DataVersioned, pages::api_guide::api_page)
        .api(NoStore, routes!(pages::submissions::api::healthz))
        .api(NoStore, routes!(pages::submissions::api::readyz))
        .api_limited(
            NoStore,
            Some(64 * 1024),
            routes!(pages::submissions::api::register),
        )
        .api(DataVersioned, routes!(pages::submissions::api::submission))
        .get(
            "/submissions/{id}",
            DataVersioned,
            pages::submissions::submission_page,
        )
        .get(
            "/submissions/{id}/bundle.tar.gz",
            Immutable,
            pages::submissions::bundle_download,
        )
        .get(
            "/submissions/{id}/bundle.tar.gz.sig",
            Immutable,
            pages::submissions::signature_download,
        )
        .get(
            "/feeds/submissions",
            DataVersioned,
            pages::feeds::submissions_feed,
        )
        .get("/feeds/gpus/{id}", DataVersioned, pages::feeds::gpu_feed)
        .get(
            "/feeds/models/{*id}",
            DataVersioned,
            pages::feeds::model_feed,
        )
        .get("/feeds/snapshots", Revalidate, pages::feeds::snapshots_feed)
        .get("/gpus", DataVersioned, pages::gpus::gpus_page)
        .get("/gpus/{id}", DataVersioned, pages::gpus::gpu_page)
        .get("/compare", DataVersioned, pages::compare::compare_page)
        .get("/insights", DataVersioned, pages::insights::insights_page)
        .api(DataVersioned, routes!(pages::insights::insights_json))
        .api(DataVersioned, routes!(pages::insights::insights_csv))
        .get(
            "/estimate",
            DataVersioned,
            pages::estimate::form::estimate_page,
        )
        .api(
            DataVersioned,
            routes!(pages::estimate::answer::estimate_json),
        )
        .api(
            DataVersioned,
            routes!(pages::estimate::estimator::estimator_json),
        )
        .get("/models", DataVersioned, pages::models::models_page)
        .get(
            "/models/{*id}",
            DataVersioned,
            pages::models::model::model_page,
        )
        .get(
            "/methodology",
            DataVersioned,
            pages::guides::methodology_page,
        )
        .api(DataVersioned, routes!(pages::models::models_json))
        .api_catch_all(DataVersioned, routes!(pages::models::model::model_json))
        .api_under_catch_all(routes!(pages::models::model::model_csv))
        .api_under_catch_all(routes!(pages::estimate::unmeasured::model_estimates_json))
        .api_under_catch_all(routes!(pages::estimate::unmeasured::model_estimates_csv))
        .api(DataVersioned, routes!(pages::gpus::gpus_json))
        .api(DataVersioned, routes!(pages::gpus::gpu_json))
        .api(DataVersioned, routes!(pages::compare::compare_json))
        .api(DataVersioned, routes!(pages::compare::compare_csv))
        .api_under_catch_all(routes!(pages::gpus::gpu_csv))
        .get("/peers", DataVersioned, pages::peers::peers_page)
        .get("/peers/{slug}", DataVersioned, pages::peers::peer_page)
        .get(
            "/peers/{slug}/estimate",
            DataVersioned,
            pages::peers::estimate::peer_estimate_page,
        )
        .get(
            "/peers/{slug}/insights",
            DataVersioned,
            pages::peers::insights::peer_insights_page,
        )
        .api(
            DataVersioned,
            routes!(pages::peers::insights::peer_insights_json),
        )
        .api(DataVersioned, routes!(pages::peers::api::peers_json))
        .api(DataVersioned, routes!(pages::peers::api::peer_json))
        .api(
            DataVersioned,
            routes!(pages::peers::estimate::peer_estimate_json),
        )
        .api(DataVersioned, routes!(pages::peers::api::peer_csv))
        .get("/checks", DataVersioned, pages::guides::checks_page)
        .api(DataVersioned, routes!(pages::guides::checks_json))
        .api(DataVersioned, routes!(pages::index::stats_json))
        .get("/submit", DataVersioned, pages::guides::submit_page)
        .api(NoStore, routes!(pages::admin::api::queue))
        .api(NoStore, routes!(pages::admin::api::decide))
        .api(NoStore, routes!(pages::admin::api::suspend))
        .api(NoStore, routes!(pages::admin::api::revoke))
        .api(NoStore, routes!(pages::admin::catalogue::add_gpu))
        .api(NoStore, routes!(pages::admin::catalogue::add_model))
        .api(DataVersioned, routes!(pages::admin::catalogue::gpus))
        .get("/snapshots", Revalidate, pages::snapshots::list_page)
        .get(
            "/snapshots/{id}",
            Revalidate,
            pages::snapshots::snapshot_page,
        )
        .get(
            "/snapshots/{id}/{file}",
            Immutable,
            pages::snapshots::download,
        )
        .api(Revalidate, routes!(pages::snapshots::list_json))
        .api(Revalidate, routes!(pages::snapshots::snapshot_json))
        .get("/log", Revalidate, pages::log::log_page)
        .get("/log/checkpoint", Revalidate, pages::log::checkpoint)
        .get("/log/key", PublicFor(3600), pages::log::verifier_key)
        .get("/log/tile/{*rest}", Immutable, pages::log::tile)
        .api(Revalidate, routes!(pages::log::well_known))
        .api(Revalidate, routes!(pages::log::log_json))
        .api(Revalidate, routes!(pages::log::inclusion))
        .api(Revalidate, routes!(pages::log::consistency))
        .api(Revalidate, routes!(pages::log::entries))
        .api(NoStore, routes!(pages::log::publish))
        .get("/admin", NoStore, pages::admin::admin_home)
        .post("/admin/login", NoStore, pages::admin::login)
        .post("/admin/logout", NoStore, pages::admin::logout)
        .post(
            "/admin/submissions/{id}/decision",
            NoStore,
            pages::admin::decide,
        )
        .post("/admin/submitters/suspend", NoStore, pages::admin::suspend)
        .post("/admin/keys/revoke", NoStore, pages::admin::revoke)
        .route_layer(axum::middleware::from_fn_with_state(
            state.deadlines.request,
            layers::deadline::deadline,
        ))
        .merge(long)
}

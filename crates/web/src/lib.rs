//! HTTP: translates requests to calls and results to responses. The map:
//! `routes` is the one route list (path, handler, cache policy, OpenAPI
//! path); `pages/<resource>` holds each resource's page and its JSON and
//! CSV twins; `extract` the typed query, path and client parts handlers
//! take; `layers` what wraps every route; `view` what pages share to turn
//! figures into text; `error` the JSON and HTML error answers.

pub mod auth;
pub mod download;
pub mod error;
pub mod extract;
pub mod layers;
pub mod layout;
pub mod openapi;
pub mod pages;
pub mod routes;
pub mod server;
pub mod view;

pub use routes::{app, app_and_routes, route_list};

/// This build's version, in every page's footer and the snapshot pages.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

use std::sync::Arc;

use wattcounts_service::Service;

#[derive(Clone)]
pub struct AppState {
    pub service: Arc<Service>,
    /// Largest accepted request body for a submission, bytes.
    pub max_body_bytes: u64,
    /// Maintainer tokens (hashes only).
    pub maintainers: Arc<auth::Maintainers>,
    pub cache: Arc<layers::response_cache::ResponseCache>,
    pub deadlines: layers::deadline::Deadlines,
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
    pub deadlines: layers::deadline::Deadlines,
    /// Proxies whose X-Forwarded-For names the client.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub footprint: wattcounts_analytics::units::Footprint,
}

impl AppState {
    /// The router's state over a service (which holds the published
    /// snapshots too).
    pub fn new(service: Service, settings: WebSettings) -> AppState {
        AppState {
            service: Arc::new(service),
            max_body_bytes: settings.max_body_bytes,
            maintainers: Arc::new(settings.maintainers),
            cache: Arc::new(layers::response_cache::ResponseCache::new(
                settings.response_cache,
            )),
            deadlines: settings.deadlines,
            trusted_proxies: Arc::new(settings.trusted_proxies),
            footprint: settings.footprint,
        }
    }
}

//! How each route's answers may be kept, declared where the route is
//! registered (as docs.rs does), and the one layer that turns that into
//! `Cache-Control`. A handler never writes the header: it may name another
//! policy for one answer (a `latest` alias that must not be kept) by
//! putting a [`CachePolicy`] in the response's extensions. In debug builds
//! a handler that writes the header itself, or a route answered without a
//! declared policy, fails an assertion (tests/it/operations/cache.rs holds both).

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;

use crate::AppState;

/// What a browser or a shared cache may do with an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePolicy {
    /// Depends only on stored data, the configuration and the query: kept
    /// in the response cache under the data version, with an ETag;
    /// browsers revalidate every time (a 304 is cheap).
    DataVersioned,
    /// Changes without the data version moving (snapshots, the log's
    /// checkpoint): browsers revalidate, nothing is kept here.
    Revalidate,
    /// The bytes at this URL never change (bundles, snapshot files, full
    /// log tiles).
    Immutable,
    /// Public for this many seconds (static assets, the log's key).
    PublicFor(u32),
    /// Kept nowhere: maintainers' pages, forms' answers, probes.
    NoStore,
}

impl CachePolicy {
    pub fn header_value(self) -> HeaderValue {
        match self {
            CachePolicy::DataVersioned | CachePolicy::Revalidate => {
                HeaderValue::from_static("no-cache")
            }
            CachePolicy::Immutable => {
                HeaderValue::from_static("public, max-age=31536000, immutable")
            }
            CachePolicy::PublicFor(s) => HeaderValue::from_str(&format!("public, max-age={s}"))
                .expect("digits are a valid header value"),
            CachePolicy::NoStore => HeaderValue::from_static("no-store"),
        }
    }
}

/// Marks a response whose Cache-Control came from a declared policy.
#[derive(Debug, Clone, Copy)]
struct Declared;

/// `route` with its answers kept as `policy` says. DataVersioned routes
/// also go through the response cache.
pub fn declare(
    state: &AppState,
    policy: CachePolicy,
    route: MethodRouter<AppState>,
) -> MethodRouter<AppState> {
    let route = if policy == CachePolicy::DataVersioned {
        route.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::layers::response_cache::layer,
        ))
    } else {
        route
    };
    with_policy(policy, route)
}

/// `route` with `policy`'s Cache-Control on its answers (and the debug
/// check that its handler wrote none), without the response cache.
pub fn with_policy<S: Clone + Send + Sync + 'static>(
    policy: CachePolicy,
    route: MethodRouter<S>,
) -> MethodRouter<S> {
    route.layer(axum::middleware::from_fn(move |req, next| {
        apply(policy, req, next)
    }))
}

async fn apply(policy: CachePolicy, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let mut resp = next.run(req).await;
    debug_assert!(
        !resp.headers().contains_key(header::CACHE_CONTROL),
        "the handler of {path} set Cache-Control itself; declare a CachePolicy where the route is registered (the route table in crates/web/src/lib.rs), or put one in the response's extensions"
    );
    // An error is about this request, never the URL's bytes.
    let chosen = if resp.status().is_client_error() || resp.status().is_server_error() {
        CachePolicy::NoStore
    } else {
        resp.extensions()
            .get::<CachePolicy>()
            .copied()
            .unwrap_or(policy)
    };
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, chosen.header_value());
    resp.extensions_mut().insert(Declared);
    resp
}

/// The outermost check: an answer of a route that declared no policy is
/// a debug-build failure naming the path (errors from the layers in front
/// of the routes, which answer before any route runs, are exempt).
pub async fn require_declared(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let resp = next.run(req).await;
    debug_assert!(
        resp.extensions().get::<Declared>().is_some()
            || resp.status().is_client_error()
            || resp.status().is_server_error(),
        "{path} answered {} without a declared CachePolicy: register it through the route table (routes::Table), which declares one",
        resp.status()
    );
    resp
}

/// A response asking for `policy` instead of its route's.
pub fn with(mut resp: Response, policy: CachePolicy) -> Response {
    resp.extensions_mut().insert(policy);
    resp
}

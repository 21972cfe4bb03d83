//! Request metrics and the metrics listener. A route layer notes which
//! route matched (in the response's extensions); the outer layer times
//! every request and labels it with that route, or with one label for
//! every path no route matched, so labels cannot grow with the paths
//! clients send.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::AppState;

/// The route that answered, carried in a response's extensions.
#[derive(Clone, Debug)]
pub struct Route(String);

/// Route layer: remembers the matched route for [`track`].
pub async fn mark_route(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let mut resp = next.run(req).await;
    if let Some(r) = route {
        resp.extensions_mut().insert(Route(r));
    }
    resp
}

/// Outer layer: counts and times every request by route, method, status.
pub async fn track(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().as_str().to_string();
    let resp = next.run(req).await;
    let route = resp
        .extensions()
        .get::<Route>()
        .map_or(wattcounts_service::telemetry::UNMATCHED, |r| r.0.as_str());
    wattcounts_service::telemetry::request(route, &method, resp.status().as_u16(), start.elapsed());
    resp
}

/// `GET /metrics` on the metrics listener: the Prometheus text format.
async fn metrics(
    State((s, handle)): State<(AppState, metrics_exporter_prometheus::PrometheusHandle)>,
) -> Response {
    let (in_use, idle) = s.service.pool_stats();
    wattcounts_service::telemetry::pool(in_use, idle);
    handle.run_upkeep();
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}

/// Serves `/metrics` on its own listener until the process ends.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    state: AppState,
    handle: metrics_exporter_prometheus::PrometheusHandle,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state((state, handle));
    axum::serve(listener, app).await
}

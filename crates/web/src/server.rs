//! The accept loop. `axum::serve` has no header timer and no connection
//! cap, so connections are served here through hyper's HTTP/1 builder:
//! a client that does not finish its request head within the header
//! timeout is disconnected (the same timer closes idle keep-alive
//! connections between requests), at most `max_connections` are open at
//! once (the rest wait in the kernel's backlog), and a shutdown stops
//! accepting, then lets the requests in flight, uploads included, finish.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Longest wait for a request head, from the connection's first byte or
    /// from the end of the previous response (idle keep-alive).
    pub header_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// How long a shutdown waits for requests in flight.
    pub drain_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.expect("the semaphore is never closed"),
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off rather
                    // than spin; the connection in the backlog waits.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let router = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            let router = router.clone();
            async move {
                use tower::ServiceExt;
                Ok::<_, Infallible>(
                    router
                        .oneshot(req)
                        .await
                        .unwrap_or_else(|never| match never {}),
                )
            }
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, %peer, "connection ended");
            }
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.drain_timeout) => {
            tracing::warn!("shutdown: requests still running after {:?}; leaving them", limits.drain_timeout);
        }
    }
    Ok(())
}

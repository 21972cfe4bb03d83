//! What every request is held to in time: a whole-request deadline (408
//! with the error envelope; uploads and snapshots get a longer one) and
//! the pace an upload body must keep.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Deadlines and the slowest upload accepted.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    pub request: Duration,
    pub upload: Duration,
    pub upload_min_bytes_per_sec: u64,
    pub upload_rate_grace: Duration,
}

/// 408 when a request's answer is not ready within `limit` (the router
/// gives uploads and snapshots their own, longer one). A response already
/// begun (a download streaming) is not cut.
pub async fn deadline(
    State(limit): State<Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => ApiError::timeout(
            "request_timeout",
            format!(
                "the request was not complete within {} s; send it again",
                limit.as_secs()
            ),
        )
        .into_response(),
    }
}

/// An upload's average rate, judged once the grace period is over.
pub struct Pace {
    started: Instant,
    min_bytes_per_sec: u64,
    grace: Duration,
}

impl Pace {
    pub fn start(d: &Deadlines) -> Self {
        Pace {
            started: Instant::now(),
            min_bytes_per_sec: d.upload_min_bytes_per_sec,
            grace: d.upload_rate_grace,
        }
    }
    pub fn check(&self, received: u64) -> Result<(), ApiError> {
        let elapsed = self.started.elapsed();
        if self.min_bytes_per_sec == 0 || elapsed < self.grace {
            return Ok(());
        }
        let rate = received as f64 / elapsed.as_secs_f64();
        if rate < self.min_bytes_per_sec as f64 {
            return Err(ApiError::timeout(
                "upload_too_slow",
                format!(
                    "the upload arrived at {rate:.0} bytes/s over {:.0} s; the slowest accepted is {} bytes/s",
                    elapsed.as_secs_f64(),
                    self.min_bytes_per_sec
                ),
            ));
        }
        Ok(())
    }
}

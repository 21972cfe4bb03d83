//! Prometheus metrics: every name and label the service exports, in one
//! place. The `metrics` macros are no-ops until `install` runs (only
//! `serve --metrics-bind` installs a recorder), so tests and tools pay
//! nothing. Labels come from fixed sets (matched routes, error codes,
//! stage names), never from raw paths or user input.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::analysis::StageTimings;

/// Label for requests no route matched: unknown paths share one series.
pub const UNMATCHED: &str = "unmatched";

/// Bucket bounds (seconds) for every latency histogram: 1 ms to 60 s.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Installs the process-wide recorder once and returns its handle.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(BUCKETS)?
        .install_recorder()?;
    Ok(HANDLE.get_or_init(|| handle).clone())
}

pub fn request(route: &str, method: &str, status: u16, elapsed: Duration) {
    let labels = [
        ("route", route.to_string()),
        ("method", method.to_string()),
        ("status", status.to_string()),
    ];
    counter!("wattcounts_http_requests_total", &labels).increment(1);
    histogram!("wattcounts_http_request_duration_seconds", &labels).record(elapsed.as_secs_f64());
}

/// Each ingest stage that ran, in seconds.
pub fn ingest_stages(t: &StageTimings) {
    for (stage, d) in [
        ("hash", t.hash),
        ("verify", t.verify),
        ("decompress", t.decompress),
        ("parse", t.parse),
        ("derive", t.derive),
        ("checks", t.checks),
        ("store", t.store),
    ] {
        if !d.is_zero() {
            histogram!("wattcounts_ingest_stage_seconds", "stage" => stage).record(d.as_secs_f64());
        }
    }
}

/// A stored submission: `outcome` created or replayed, with its status.
pub fn submission(outcome: &'static str, status: &'static str) {
    counter!("wattcounts_submissions_total", "outcome" => outcome, "status" => status).increment(1);
}

/// A bundle refused, by the error code its answer carries.
pub fn rejection(code: &'static str) {
    counter!("wattcounts_rejections_total", "code" => code).increment(1);
}

/// Every error answer of the API and pages, by code and status.
pub fn error_answer(code: &'static str, status: u16) {
    counter!("wattcounts_error_answers_total", "code" => code, "status" => status.to_string())
        .increment(1);
}

pub fn cache(hit: bool) {
    counter!("wattcounts_response_cache_total", "result" => if hit { "hit" } else { "miss" })
        .increment(1);
}

pub fn rebuild(elapsed: Duration) {
    counter!("wattcounts_read_model_rebuilds_total").increment(1);
    histogram!("wattcounts_read_model_rebuild_seconds").record(elapsed.as_secs_f64());
}

/// The database pool as it stands (set at each scrape).
pub fn pool(in_use: u32, idle: u32) {
    gauge!("wattcounts_db_pool_connections", "state" => "in_use").set(f64::from(in_use));
    gauge!("wattcounts_db_pool_connections", "state" => "idle").set(f64::from(idle));
}

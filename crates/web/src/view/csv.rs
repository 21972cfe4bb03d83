//! The leaderboard as CSV (`/api/v1/leaderboard.csv`, same filters as the
//! JSON). Text cells that a spreadsheet would run as a formula (starting
//! with = + - @ tab or CR) get a leading apostrophe; numbers stay numbers.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::extract::leaderboard_query::parse_query;
use crate::extract::query::{LeaderboardParams, Params};
use crate::pages::leaderboard::load;
use crate::AppState;
use wattcounts_analytics::leaderboard::LeaderboardRow;
use wattcounts_rules::spreadsheet::text_cell;

fn num(v: f64) -> String {
    format!("{v}")
}

/// A figure as a CSV cell: empty when absent.
pub(crate) fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

pub const COLUMNS: &[&str] = &[
    "rank",
    "gpu_id",
    "gpu_name",
    "model",
    "scenario",
    "lambda_qps",
    "origin",
    "protocol_id",
    "protocol",
    "energy_per_token_j",
    "energy_per_token_lo_j",
    "energy_per_token_hi_j",
    "energy_per_token_interval_confidence",
    "energy_per_token_cv",
    "energy_per_request_j",
    "throughput_tok_s",
    "power_mean_w",
    "ttft_p50_s",
    "itl_s",
    "mean_concurrency",
    "prefill_energy_share",
    "iterations",
    "submissions",
    "submitters",
    "needs_review",
    "demo",
    "evidence_submission_id",
];

pub fn to_csv(entries: &[LeaderboardRow], first_rank: usize) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS).expect("write to memory");
    for (i, e) in entries.iter().enumerate() {
        w.write_record([
            (first_rank + i).to_string(),
            text_cell(&e.gpu_id),
            text_cell(&e.gpu_name),
            text_cell(&e.model),
            e.scenario.as_str().to_string(),
            opt(e.lambda_qps),
            e.origin.as_str().to_string(),
            text_cell(&e.protocol_id),
            text_cell(&e.protocol),
            num(e.energy_per_token_j),
            num(e.energy_per_token_interval.lo),
            num(e.energy_per_token_interval.hi),
            num(e.energy_per_token_interval.confidence),
            num(e.energy_per_token_cv),
            opt(e.energy_per_request_j),
            num(e.throughput_tok_s),
            num(e.power_mean_w),
            opt(e.ttft_p50_s),
            opt(e.itl_s),
            opt(e.mean_concurrency),
            opt(e.prefill_energy_share),
            e.iterations.to_string(),
            e.submissions.to_string(),
            e.submitters.to_string(),
            e.needs_review.to_string(),
            e.demo.to_string(),
            e.evidence.to_string(),
        ])
        .expect("write to memory");
    }
    w.into_inner().expect("flush to memory")
}

#[utoipa::path(get, path = "/api/v1/leaderboard.csv", tag = "leaderboard",
    summary = "The leaderboard page as CSV, with the JSON's filters",
    params(LeaderboardParams),
    responses((status = 200, description = "One row per group; the header names the columns",
        content_type = "text/csv", body = String)))]
pub async fn leaderboard_csv(
    State(s): State<AppState>,
    Params(params): Params<LeaderboardParams>,
) -> Result<Response, ApiError> {
    let q = parse_query(&params)?;
    let entries = load(&s, &q).await?.entries;
    Ok(rows_response(
        "wattcounts-leaderboard.csv",
        &entries,
        (q.page - 1) * q.per_page + 1,
    ))
}

/// A table's rows as the leaderboard CSV writes them (its columns and
/// conventions), as a download named `filename`: the compare, model and
/// GPU tables' `.csv` twins.
pub(crate) fn rows_response(
    filename: &str,
    rows: &[LeaderboardRow],
    first_rank: usize,
) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        to_csv(rows, first_rank),
    )
        .into_response()
}

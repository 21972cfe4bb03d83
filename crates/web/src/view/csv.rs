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
use wattcounts_rules::spreadsheet::{write_csv, Cell, Column};

/// The leaderboard CSV's columns (and its twins', the compare, model and
/// GPU tables'), each with how a row fills it: one list for the header and
/// the records.
pub const COLUMNS: &[Column<LeaderboardRow>] = &[
    Column {
        name: "rank",
        cell: |at, _| Cell::Count(at as u64),
    },
    Column {
        name: "gpu_id",
        cell: |_, e| Cell::Text(e.gpu_id.clone()),
    },
    Column {
        name: "gpu_name",
        cell: |_, e| Cell::Text(e.gpu_name.clone()),
    },
    Column {
        name: "model",
        cell: |_, e| Cell::Text(e.model.clone()),
    },
    Column {
        name: "scenario",
        cell: |_, e| Cell::Own(e.scenario.as_str().into()),
    },
    Column {
        name: "lambda_qps",
        cell: |_, e| Cell::Figure(e.lambda_qps),
    },
    Column {
        name: "origin",
        cell: |_, e| Cell::Own(e.origin.as_str().into()),
    },
    Column {
        name: "protocol_id",
        cell: |_, e| Cell::Text(e.protocol_id.clone()),
    },
    Column {
        name: "protocol",
        cell: |_, e| Cell::Text(e.protocol.clone()),
    },
    Column {
        name: "energy_per_token_j",
        cell: |_, e| Cell::Figure(Some(e.energy_per_token_j)),
    },
    Column {
        name: "energy_per_token_lo_j",
        cell: |_, e| Cell::Figure(Some(e.energy_per_token_interval.lo)),
    },
    Column {
        name: "energy_per_token_hi_j",
        cell: |_, e| Cell::Figure(Some(e.energy_per_token_interval.hi)),
    },
    Column {
        name: "energy_per_token_interval_confidence",
        cell: |_, e| Cell::Figure(Some(e.energy_per_token_interval.confidence)),
    },
    Column {
        name: "energy_per_token_cv",
        cell: |_, e| Cell::Figure(Some(e.energy_per_token_cv)),
    },
    Column {
        name: "energy_per_request_j",
        cell: |_, e| Cell::Figure(e.energy_per_request_j),
    },
    Column {
        name: "throughput_tok_s",
        cell: |_, e| Cell::Figure(Some(e.throughput_tok_s)),
    },
    Column {
        name: "power_mean_w",
        cell: |_, e| Cell::Figure(Some(e.power_mean_w)),
    },
    Column {
        name: "ttft_p50_s",
        cell: |_, e| Cell::Figure(e.ttft_p50_s),
    },
    Column {
        name: "itl_s",
        cell: |_, e| Cell::Figure(e.itl_s),
    },
    Column {
        name: "mean_concurrency",
        cell: |_, e| Cell::Figure(e.mean_concurrency),
    },
    Column {
        name: "prefill_energy_share",
        cell: |_, e| Cell::Figure(e.prefill_energy_share),
    },
    Column {
        name: "iterations",
        cell: |_, e| Cell::Count(e.iterations),
    },
    Column {
        name: "submissions",
        cell: |_, e| Cell::Count(e.submissions),
    },
    Column {
        name: "submitters",
        cell: |_, e| Cell::Count(e.submitters),
    },
    Column {
        name: "needs_review",
        cell: |_, e| Cell::Flag(e.needs_review),
    },
    Column {
        name: "demo",
        cell: |_, e| Cell::Flag(e.demo),
    },
    Column {
        name: "evidence_submission_id",
        cell: |_, e| Cell::Own(e.evidence.to_string()),
    },
];

pub fn to_csv(entries: &[LeaderboardRow], first_rank: usize) -> Vec<u8> {
    write_csv(COLUMNS, entries, first_rank)
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

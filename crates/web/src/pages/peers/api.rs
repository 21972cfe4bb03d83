//! The peers' JSON and CSV answers: the releases imported, one release's
//! table a page at a time, and its every configuration as CSV.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::request;
use crate::error::ApiError;
use crate::extract::query::{Params, PeerParams};
use crate::AppState;
use wattcounts_rules::peer::{PeerConfig, PeerReleaseRecord, PeerSort, SourceInfo};
use wattcounts_rules::spreadsheet::{write_csv, Cell, Column};
use wattcounts_service::peers::PeerView;

/// The source, as every peer page and answer states it.
#[derive(Serialize, ToSchema)]
pub struct PeerSourceJson {
    pub origin: &'static str,
    pub name: &'static str,
    pub repository: &'static str,
    pub path: &'static str,
    pub homepage: &'static str,
    pub licence: &'static str,
    pub licence_statement: &'static str,
    pub citation: &'static str,
    pub protocol: &'static str,
    pub load_variable: &'static str,
    pub comparable_with_watt_counts: bool,
}

impl From<&'static SourceInfo> for PeerSourceJson {
    fn from(i: &'static SourceInfo) -> Self {
        PeerSourceJson {
            origin: i.origin,
            name: i.name,
            repository: i.repository,
            path: i.path,
            homepage: i.homepage,
            licence: i.licence,
            licence_statement: i.licence_statement,
            citation: i.citation,
            protocol: i.protocol,
            load_variable: i.load_variable,
            comparable_with_watt_counts: false,
        }
    }
}

/// A stored release and where its files came from.
#[derive(Serialize, ToSchema)]
pub struct PeerReleaseJson {
    pub id: i64,
    pub origin: &'static str,
    /// The release's own date or version, as its files state it.
    pub label: String,
    /// SHA-256 over `path\tsha256\n` of every file read, sorted by path.
    pub files_sha256: String,
    pub source_repository: String,
    pub source_path: String,
    /// The commit or date the importing operator stated.
    pub source_ref: String,
    pub licence: String,
    pub retrieved_at: String,
    pub imported_at: String,
    pub configurations: u64,
    /// Its leaf in the transparency log.
    pub log_index: Option<u64>,
    /// What the files hold that the importer does not read, and why.
    pub skipped: Vec<String>,
}

impl From<&PeerReleaseRecord> for PeerReleaseJson {
    fn from(r: &PeerReleaseRecord) -> Self {
        PeerReleaseJson {
            id: r.id,
            origin: r.source.origin(),
            label: r.label.clone(),
            files_sha256: r.files_sha256.clone(),
            source_repository: r.source_repository.clone(),
            source_path: r.source_path.clone(),
            source_ref: r.source_ref.clone(),
            licence: r.licence.clone(),
            retrieved_at: wattcounts_rules::timestamp::ts(&r.retrieved_at),
            imported_at: wattcounts_rules::timestamp::ts(&r.imported_at),
            configurations: r.configurations,
            log_index: r.log_index,
            skipped: r.skipped.clone(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PeerList {
    pub releases: Vec<PeerReleaseWithSource>,
}

#[derive(Serialize, ToSchema)]
pub struct PeerReleaseWithSource {
    pub source: PeerSourceJson,
    pub release: PeerReleaseJson,
}

#[derive(Serialize, ToSchema)]
pub struct PeerTable {
    pub source: PeerSourceJson,
    pub release: PeerReleaseJson,
    pub newest_release: bool,
    pub task: String,
    pub task_name: String,
    pub gpu: Option<String>,
    pub model: Option<String>,
    pub sort: PeerSort,
    pub page: u64,
    pub per_page: u32,
    /// Configurations matching the filters, on every page.
    pub total: u64,
    /// The publisher's figures, as published (units in the names).
    pub configurations: Vec<PeerConfig>,
}

fn table_json(v: PeerView) -> PeerTable {
    PeerTable {
        source: v.info.into(),
        release: (&v.release).into(),
        newest_release: v.newest,
        task: v.task.value,
        task_name: v.task.label,
        gpu: v.gpu,
        model: v.model,
        sort: v.sort,
        page: v.page,
        per_page: v.per_page,
        total: v.total,
        configurations: v.rows,
    }
}

#[utoipa::path(get, path = "/api/v1/peers", tag = "peers",
    summary = "Imported peer releases (published measurements of other benchmarks), with provenance",
    responses((status = 200, body = PeerList)))]
pub async fn peers_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    let releases = s.service.peer_releases().await?;
    Ok(Json(PeerList {
        releases: releases
            .iter()
            .map(|r| PeerReleaseWithSource {
                source: r.source.info().into(),
                release: r.into(),
            })
            .collect(),
    })
    .into_response())
}

#[utoipa::path(get, path = "/api/v1/peers/{slug}", tag = "peers",
    summary = "One peer release's configurations, one task at a time, as published",
    params(("slug" = String, Path, description = "The peer dataset, e.g. mlenergy-v3"), PeerParams),
    responses((status = 200, body = PeerTable),
        (status = 400, description = "A filter names what the release does not hold", body = crate::error::ErrorBody),
        (status = 404, description = "Unknown, or not imported here", body = crate::error::ErrorBody)))]
pub async fn peer_json(
    State(s): State<AppState>,
    Path(slug): Path<String>,
    Params(p): Params<PeerParams>,
) -> Result<Response, ApiError> {
    let v = s.service.peer_view(&slug, &request(&p, 100)?).await?;
    Ok(Json(table_json(v)).into_response())
}

/// One row of the peers' CSV: a published configuration with its release.
struct PeerCsvRow {
    origin: &'static str,
    release: i64,
    files_sha256: String,
    c: PeerConfig,
}

/// The CSV's columns, in order (what each row of the JSON holds), each
/// with how a row fills it. Every text cell is a third party's words (a
/// nickname, a file name): as `Cell::Text` it passes the guard every CSV we
/// publish uses, so `=HYPERLINK(…)` is shown, never run. A figure is
/// written as f64's Display, the shortest text that reads back as the same
/// number: each is the file's own, and stays a number; empty where the
/// publisher gives none.
const CSV_COLUMNS: &[Column<PeerCsvRow>] = &[
    Column {
        name: "origin",
        cell: |_, r| Cell::Text(r.origin.into()),
    },
    Column {
        name: "release",
        cell: |_, r| Cell::Own(r.release.to_string()),
    },
    Column {
        name: "task",
        cell: |_, r| Cell::Text(r.c.task.clone()),
    },
    Column {
        name: "model_id",
        cell: |_, r| Cell::Text(r.c.model_id.clone()),
    },
    Column {
        name: "nickname",
        cell: |_, r| Cell::Text(r.c.nickname.clone()),
    },
    Column {
        name: "architecture",
        cell: |_, r| Cell::Text(r.c.architecture.clone()),
    },
    Column {
        name: "total_params_billions",
        cell: |_, r| Cell::Figure(r.c.total_params_billions),
    },
    Column {
        name: "activated_params_billions",
        cell: |_, r| Cell::Figure(r.c.activated_params_billions),
    },
    Column {
        name: "weight_precision",
        cell: |_, r| Cell::Text(r.c.weight_precision.clone()),
    },
    Column {
        name: "gpu_model",
        cell: |_, r| Cell::Text(r.c.gpu_model.clone()),
    },
    Column {
        name: "gpu_name",
        cell: |_, r| Cell::Text(r.c.gpu_name.clone()),
    },
    Column {
        name: "num_gpus",
        cell: |_, r| Cell::Count(u64::from(r.c.num_gpus)),
    },
    Column {
        name: "max_num_seqs",
        cell: |_, r| Cell::Count(u64::from(r.c.max_num_seqs)),
    },
    Column {
        name: "tensor_parallel",
        cell: |_, r| Cell::Count(u64::from(r.c.tensor_parallel)),
    },
    Column {
        name: "pipeline_parallel",
        cell: |_, r| Cell::Count(u64::from(r.c.pipeline_parallel)),
    },
    Column {
        name: "expert_parallel",
        cell: |_, r| Cell::Count(u64::from(r.c.expert_parallel)),
    },
    Column {
        name: "data_parallel",
        cell: |_, r| Cell::Count(u64::from(r.c.data_parallel)),
    },
    Column {
        name: "avg_batch_size",
        cell: |_, r| Cell::Figure(r.c.avg_batch_size),
    },
    Column {
        name: "avg_power_watts",
        cell: |_, r| Cell::Figure(r.c.avg_power_watts),
    },
    Column {
        name: "energy_per_token_joules",
        cell: |_, r| Cell::Figure(Some(r.c.energy_per_token_joules)),
    },
    Column {
        name: "energy_per_request_joules",
        cell: |_, r| Cell::Figure(Some(r.c.energy_per_request_joules)),
    },
    Column {
        name: "output_throughput_tokens_per_sec",
        cell: |_, r| Cell::Figure(Some(r.c.output_throughput_tokens_per_sec)),
    },
    Column {
        name: "avg_output_len",
        cell: |_, r| Cell::Figure(Some(r.c.avg_output_len)),
    },
    Column {
        name: "mean_itl_ms",
        cell: |_, r| Cell::Figure(r.c.mean_itl_ms),
    },
    Column {
        name: "median_itl_ms",
        cell: |_, r| Cell::Figure(r.c.median_itl_ms),
    },
    Column {
        name: "p90_itl_ms",
        cell: |_, r| Cell::Figure(r.c.p90_itl_ms),
    },
    Column {
        name: "p95_itl_ms",
        cell: |_, r| Cell::Figure(r.c.p95_itl_ms),
    },
    Column {
        name: "p99_itl_ms",
        cell: |_, r| Cell::Figure(r.c.p99_itl_ms),
    },
    Column {
        name: "file",
        cell: |_, r| Cell::Text(r.c.file.clone()),
    },
    Column {
        name: "pointer",
        cell: |_, r| Cell::Text(r.c.pointer.clone()),
    },
    Column {
        name: "files_sha256",
        cell: |_, r| Cell::Text(r.files_sha256.clone()),
    },
];

#[utoipa::path(get, path = "/api/v1/peers/{slug}/configurations.csv", tag = "peers",
    summary = "The same page as CSV, each figure as published",
    params(("slug" = String, Path, description = "The peer dataset, e.g. mlenergy-v3"), PeerParams),
    responses((status = 200, content_type = "text/csv", body = String),
        (status = 404, description = "Unknown, or not imported here", body = crate::error::ErrorBody)))]
pub async fn peer_csv(
    State(s): State<AppState>,
    Path(slug): Path<String>,
    Params(p): Params<PeerParams>,
) -> Result<Response, ApiError> {
    let v = s.service.peer_view(&slug, &request(&p, 1000)?).await?;
    let rows: Vec<PeerCsvRow> = v
        .rows
        .iter()
        .map(|c| PeerCsvRow {
            origin: v.info.origin,
            release: v.release.id,
            files_sha256: v.release.files_sha256.clone(),
            c: c.clone(),
        })
        .collect();
    let body = write_csv(CSV_COLUMNS, &rows, 1);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"{}-{}-{}.csv\"",
                    v.info.slug, v.release.label, v.task.value
                ),
            ),
        ],
        body,
    )
        .into_response())
}

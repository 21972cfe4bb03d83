//! Published measurements of other benchmarks (issue #39): `/peers` (every
//! imported release with its provenance), `/peers/{slug}` (one release's
//! table, one task at a time, with its own columns: batch-size setting,
//! GPU count, parallelism, the publisher's ITL percentiles) and their JSON
//! and CSV twins. Every page names the source, its protocol and licence;
//! nothing here is ever shown in a table or chart with Watt Counts rows.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, PageParams, Params, PeerParams};
use crate::view::{model_path, url_encode};
use crate::AppState;
use crate::VERSION;
use wattcounts_rules::peer::{PeerConfig, PeerReleaseRecord, PeerSort, SourceInfo};
use wattcounts_rules::spreadsheet::text_cell;
use wattcounts_service::peers::{PeerView, PeerViewRequest};

pub mod estimate;
pub mod insights;
pub(crate) mod model_notes;

fn bad(k: &str, v: &str, want: &str) -> ApiError {
    ApiError::bad_request(
        "bad_parameter",
        format!("{k}='{v}' is not allowed; expected {want}"),
    )
}

fn request(p: &PeerParams, per_page: u32) -> Result<PeerViewRequest, ApiError> {
    let number = |k: &str, v: &Option<String>, max: u64| -> Result<Option<u64>, ApiError> {
        given(v)
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| bad(k, v, &format!("a number from 1 to {max}")))
            })
            .transpose()
    };
    Ok(PeerViewRequest {
        release: number("release", &p.release, i64::MAX as u64)?.map(|n| n as i64),
        task: given(&p.task).map(str::to_string),
        gpu: given(&p.gpu).map(str::to_string),
        model: given(&p.model).map(str::to_string),
        sort: given(&p.sort).map(str::to_string),
        page: number("page", &p.page, 1_000_000)?.unwrap_or(1),
        per_page: number("per_page", &p.per_page, 1000)?.map_or(per_page, |n| n as u32),
    })
}

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

/// The CSV's columns, in order: what each row of the JSON holds.
const CSV_COLUMNS: [&str; 31] = [
    "origin",
    "release",
    "task",
    "model_id",
    "nickname",
    "architecture",
    "total_params_billions",
    "activated_params_billions",
    "weight_precision",
    "gpu_model",
    "gpu_name",
    "num_gpus",
    "max_num_seqs",
    "tensor_parallel",
    "pipeline_parallel",
    "expert_parallel",
    "data_parallel",
    "avg_batch_size",
    "avg_power_watts",
    "energy_per_token_joules",
    "energy_per_request_joules",
    "output_throughput_tokens_per_sec",
    "avg_output_len",
    "mean_itl_ms",
    "median_itl_ms",
    "p90_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "file",
    "pointer",
    "files_sha256",
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
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| {
        tracing::error!(error = %e, "peer csv");
        ApiError::internal()
    };
    w.write_record(CSV_COLUMNS).map_err(fail)?;
    let release = v.release.id.to_string();
    // Empty where the publisher gives no figure.
    let opt = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    for c in &v.rows {
        // Every text cell is a third party's words (a nickname, a file
        // name): it passes the guard every CSV we publish uses, so
        // `=HYPERLINK(…)` is shown, never run. f64's Display is the
        // shortest text that reads back as the same number: each figure
        // is the file's own, and stays a number.
        w.write_record([
            text_cell(v.info.origin),
            release.clone(),
            text_cell(&c.task),
            text_cell(&c.model_id),
            text_cell(&c.nickname),
            text_cell(&c.architecture),
            opt(c.total_params_billions),
            opt(c.activated_params_billions),
            text_cell(&c.weight_precision),
            text_cell(&c.gpu_model),
            text_cell(&c.gpu_name),
            c.num_gpus.to_string(),
            c.max_num_seqs.to_string(),
            c.tensor_parallel.to_string(),
            c.pipeline_parallel.to_string(),
            c.expert_parallel.to_string(),
            c.data_parallel.to_string(),
            opt(c.avg_batch_size),
            opt(c.avg_power_watts),
            c.energy_per_token_joules.to_string(),
            c.energy_per_request_joules.to_string(),
            c.output_throughput_tokens_per_sec.to_string(),
            c.avg_output_len.to_string(),
            opt(c.mean_itl_ms),
            opt(c.median_itl_ms),
            opt(c.p90_itl_ms),
            opt(c.p95_itl_ms),
            opt(c.p99_itl_ms),
            text_cell(&c.file),
            text_cell(&c.pointer),
            text_cell(&v.release.files_sha256),
        ])
        .map_err(fail)?;
    }
    let body = w.into_inner().map_err(|e| {
        tracing::error!(error = %e, "peer csv");
        ApiError::internal()
    })?;
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

struct ReleaseRow {
    link: String,
    name: &'static str,
    release: PeerReleaseJson,
    files: Vec<(String, u64, String)>,
}

#[derive(Template)]
#[template(path = "peers.html")]
struct PeersPage {
    releases: Vec<ReleaseRow>,
    demo: bool,
    version: &'static str,
}

pub async fn peers_page(State(s): State<AppState>) -> Result<Response, PageError> {
    let mut releases = Vec::new();
    // A handful of releases, each with a few files.
    for r in s.service.peer_releases().await? {
        let files = s
            .service
            .peer_files(r.id)
            .await?
            .into_iter()
            .map(|f| (f.path, f.bytes, f.sha256))
            .collect();
        releases.push(ReleaseRow {
            link: format!("/peers/{}?release={}", r.source.info().slug, r.id),
            name: r.source.info().name,
            release: (&r).into(),
            files,
        });
    }
    Ok(render(
        StatusCode::OK,
        &PeersPage {
            releases,
            demo: false,
            version: VERSION,
        },
    ))
}

struct Row {
    model: String,
    model_link: Option<String>,
    nickname: String,
    architecture: String,
    params: String,
    precision: String,
    gpu: String,
    gpus: u32,
    parallel: String,
    batch_cap: u32,
    avg_batch: String,
    ept: String,
    epr: String,
    power: String,
    throughput: String,
    itl: String,
    itl_tail: String,
    source: String,
}

struct Link {
    label: String,
    href: String,
    selected: bool,
}

struct Choice {
    value: String,
    label: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "peer.html")]
struct PeerPage {
    info: &'static SourceInfo,
    release: PeerReleaseJson,
    newest: bool,
    newest_link: String,
    task_name: String,
    task: String,
    tasks: Vec<Link>,
    gpus: Vec<Choice>,
    models: Vec<Choice>,
    sorts: Vec<Choice>,
    release_id: i64,
    rows: Vec<Row>,
    total: u64,
    first: u64,
    last: u64,
    prev: Option<String>,
    next: Option<String>,
    json_link: String,
    csv_link: String,
    /// The estimate form, for the peer the estimator is fitted on.
    estimate_form: Option<estimate::PeerEstimateForm>,
    demo: bool,
    version: &'static str,
}

fn fmt(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

/// The median ITL, or the mean where only that is published (v2).
fn itl_text(c: &PeerConfig) -> String {
    match (c.median_itl_ms, c.mean_itl_ms) {
        (Some(m), _) => fmt(m, 1),
        (None, Some(mean)) => format!("mean {}", fmt(mean, 1)),
        (None, None) => "–".into(),
    }
}

fn unstated(s: &str) -> String {
    if s.is_empty() {
        "unstated".into()
    } else {
        s.to_string()
    }
}

/// A figure the publisher may not give: "–" then.
fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| fmt(v, digits))
}

pub async fn peer_page(
    State(s): State<AppState>,
    Path(slug): Path<String>,
    PageParams(p): PageParams<PeerParams>,
) -> Result<Response, PageError> {
    let req = request(&p, 50)?;
    let v = s.service.peer_view(&slug, &req).await?;
    let slug = v.info.slug;
    // The page's query, with one parameter changed (empty values dropped).
    let query = |changes: &[(&str, Option<String>)]| -> String {
        let mut pairs: Vec<(&str, String)> = vec![
            (
                "release",
                if v.newest {
                    String::new()
                } else {
                    v.release.id.to_string()
                },
            ),
            ("task", v.task.value.clone()),
            ("gpu", v.gpu.clone().unwrap_or_default()),
            ("model", v.model.clone().unwrap_or_default()),
            (
                "sort",
                if v.sort == PeerSort::default() {
                    String::new()
                } else {
                    v.sort.as_str().into()
                },
            ),
        ];
        for (k, val) in changes {
            pairs.retain(|(name, _)| name != k);
            pairs.push((k, val.clone().unwrap_or_default()));
        }
        pairs
            .iter()
            .filter(|(_, val)| !val.is_empty())
            .map(|(k, val)| format!("{k}={}", url_encode(val)))
            .collect::<Vec<_>>()
            .join("&")
    };
    let facets = &v.release.facets;
    let tasks = facets
        .tasks
        .iter()
        .map(|t| Link {
            label: format!("{} ({})", t.label, t.n),
            href: format!(
                "/peers/{slug}?{}",
                query(&[
                    ("task", Some(t.value.clone())),
                    ("model", None),
                    ("gpu", None)
                ])
            ),
            selected: t.value == v.task.value,
        })
        .collect();
    let choices =
        |list: &[wattcounts_rules::peer::Facet], chosen: &Option<String>| -> Vec<Choice> {
            list.iter()
                .map(|f| Choice {
                    label: if f.label == f.value {
                        format!("{} ({})", f.value, f.n)
                    } else {
                        format!("{} · {} ({})", f.value, f.label, f.n)
                    },
                    value: f.value.clone(),
                    selected: chosen.as_deref() == Some(f.value.as_str()),
                })
                .collect()
        };
    let gpus = choices(&facets.gpus, &v.gpu);
    let models = choices(&facets.models, &v.model);
    let sorts = PeerSort::ALL
        .iter()
        .map(|k| Choice {
            label: match k {
                PeerSort::EnergyPerToken => "energy per token, least first",
                PeerSort::EnergyPerRequest => "energy per request, least first",
                PeerSort::Throughput => "throughput, most first",
                PeerSort::MedianItl => "median ITL, least first",
                PeerSort::Power => "power, least first",
                PeerSort::BatchSize => "batch-size setting, least first",
            }
            .into(),
            value: k.as_str().into(),
            selected: *k == v.sort,
        })
        .collect();
    let rows = v
        .rows
        .iter()
        .map(|c| Row {
            model: c.model_id.clone(),
            model_link: wattcounts_rules::catalog::model_by_id(&c.model_id)
                .map(|_| model_path(&c.model_id)),
            nickname: c.nickname.clone(),
            architecture: if c.architecture.is_empty() {
                "architecture unstated".into()
            } else {
                c.architecture.clone()
            },
            params: match (c.total_params_billions, c.activated_params_billions) {
                (Some(t), Some(a)) if a < t => format!("{t} B ({a} B active)"),
                (Some(t), _) => format!("{t} B"),
                (None, _) => "–".into(),
            },
            precision: unstated(&c.weight_precision),
            gpu: c.gpu_model.clone(),
            gpus: c.num_gpus,
            parallel: if c.pipeline_parallel > 1 {
                format!("TP {} · PP {}", c.tensor_parallel, c.pipeline_parallel)
            } else {
                format!(
                    "TP {} · EP {} · DP {}",
                    c.tensor_parallel, c.expert_parallel, c.data_parallel
                )
            },
            batch_cap: c.max_num_seqs,
            avg_batch: fmt_opt(c.avg_batch_size, 1),
            ept: fmt(c.energy_per_token_joules, 4),
            epr: fmt(c.energy_per_request_joules, 1),
            power: fmt_opt(c.avg_power_watts, 0),
            throughput: fmt(c.output_throughput_tokens_per_sec, 0),
            itl: itl_text(c),
            itl_tail: match (c.p90_itl_ms, c.p95_itl_ms, c.p99_itl_ms) {
                (None, None, None) => "–".into(),
                (a, b, d) => format!("{} / {} / {}", fmt_opt(a, 1), fmt_opt(b, 1), fmt_opt(d, 1)),
            },
            source: format!("{}#{}", c.file, c.pointer),
        })
        .collect();
    let first = (v.page - 1) * u64::from(v.per_page);
    let last = (first + v.rows.len() as u64).min(v.total);
    let page_link = |n: u64| format!("/peers/{slug}?{}", query(&[("page", Some(n.to_string()))]));
    let json_link = format!("/api/v1/peers/{slug}?{}", query(&[]));
    let page = PeerPage {
        info: v.info,
        newest: v.newest,
        newest_link: format!("/peers/{slug}"),
        task_name: v.task.label.clone(),
        task: v.task.value.clone(),
        tasks,
        gpus,
        models,
        sorts,
        release_id: v.release.id,
        rows,
        total: v.total,
        first: if v.rows.is_empty() { 0 } else { first + 1 },
        last,
        prev: (v.page > 1).then(|| page_link(v.page - 1)),
        next: (last < v.total).then(|| page_link(v.page + 1)),
        csv_link: format!("/api/v1/peers/{slug}/configurations.csv?{}", query(&[])),
        json_link,
        release: (&v.release).into(),
        estimate_form: estimate::form_for(&s, slug).await,
        demo: false,
        version: VERSION,
    };
    Ok(render(StatusCode::OK, &page))
}

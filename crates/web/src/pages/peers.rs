//! Published measurements of other benchmarks (issue #39): `/peers` (every
//! imported release with its provenance), `/peers/{slug}` (one release's
//! table, one task at a time, with its own columns: batch-size setting,
//! GPU count, parallelism, the publisher's ITL percentiles) and their JSON
//! and CSV twins. Every page names the source, its protocol and licence;
//! nothing here is ever shown in a table or chart with Watt Counts rows.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, PageParams, PeerParams};
use crate::view::{model_path, url_encode};
use crate::AppState;
use wattcounts_rules::peer::{PeerConfig, PeerSort, SourceInfo};
use wattcounts_service::peers::PeerViewRequest;

pub mod api;
pub mod estimate;
pub mod insights;
pub(crate) mod model_notes;

use api::{PeerReleaseJson, PeerSourceJson};

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
    layout: crate::layout::Layout,
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
            layout: crate::layout::Layout::of(false),
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
    layout: crate::layout::Layout,
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
        layout: crate::layout::Layout::of(false),
    };
    Ok(render(StatusCode::OK, &page))
}

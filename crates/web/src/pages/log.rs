//! The transparency log over HTTP: the `/log` page, the published
//! checkpoint and verifier key, the C2SP tlog-tiles paths (static and
//! cacheable, so anyone can mirror the log), and the proof API.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Maintainer;
use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, ConsistencyParams, EntriesParams, InclusionParams, Params};
use crate::AppState;
use wattcounts_rules::tlog::tiles::TilePath;
use wattcounts_service::tlog::MAX_ENTRIES;

/// A number from the query, or a 400 naming the parameter.
fn number(value: &Option<String>, name: &str) -> Result<Option<u64>, ApiError> {
    given(value)
        .map(|v| {
            v.trim().parse::<u64>().map_err(|_| {
                ApiError::bad_request(
                    "bad_parameter",
                    format!("{name}: '{v}' is not a whole number of at least 0"),
                )
            })
        })
        .transpose()
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

fn key_of(s: &AppState) -> Result<(String, String), ApiError> {
    let l = s.service.tlog();
    match (l.origin(), l.verifier_key()) {
        (Some(o), Some(k)) => Ok((o.to_string(), k.to_string())),
        _ => Err(ApiError::internal()),
    }
}

/// `/log/checkpoint`: the newest published checkpoint, a signed note.
pub async fn checkpoint(State(s): State<AppState>) -> Result<Response, ApiError> {
    let (_, signed) = s.service.tlog().latest().await?;
    Ok(text(signed))
}

/// `/log/key`: the verifier key every checkpoint is signed with.
pub async fn verifier_key(State(s): State<AppState>) -> Result<Response, ApiError> {
    let (_, key) = key_of(&s)?;
    Ok(text(format!("{key}\n")))
}

/// `/.well-known/wattcounts-log`: where the log is and how to check it.
/// `/.well-known/wattcounts-log`: where the log and its key are.
#[derive(Serialize, ToSchema)]
pub struct LogDiscovery {
    /// The checkpoints' origin line (the log's name).
    pub origin: String,
    /// The signed-note verifier key.
    pub verifier_key: String,
    pub checkpoint: String,
    /// The C2SP tlog-tiles prefix.
    pub tiles: String,
    pub api: String,
    pub formats: [&'static str; 4],
}

#[utoipa::path(get, path = "/.well-known/wattcounts-log", tag = "log",
    summary = "Where the log, its checkpoint, tiles and key are",
    responses((status = 200, body = LogDiscovery)))]
pub async fn well_known(State(s): State<AppState>) -> Result<Response, ApiError> {
    let (origin, key) = key_of(&s)?;
    let base = s
        .service
        .config()
        .public_url
        .trim_end_matches('/')
        .to_string();
    Ok(Json(LogDiscovery {
        origin,
        verifier_key: key,
        checkpoint: format!("{base}/log/checkpoint"),
        tiles: format!("{base}/log/"),
        api: format!("{base}/api/v1/log"),
        formats: [
            "c2sp.org/tlog-checkpoint",
            "c2sp.org/signed-note",
            "c2sp.org/tlog-tiles",
            "c2sp.org/tlog-proof",
        ],
    })
    .into_response())
}

/// `/log/tile/…`: hash tiles and entry bundles. A full tile never
/// changes, and a partial one never changes for its width.
pub async fn tile(
    State(s): State<AppState>,
    Path(rest): Path<String>,
) -> Result<Response, ApiError> {
    let path = format!("tile/{rest}");
    let t = TilePath::parse(&path).ok_or_else(|| {
        ApiError::not_found(format!(
            "'{path}' is not a tlog-tiles path (tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])"
        ))
    })?;
    let bytes = s
        .service
        .tlog()
        .tile(&t)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("the log does not hold {path} yet")))?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

/// `/api/v1/log`.
#[derive(Serialize, ToSchema)]
pub struct LogState {
    pub origin: String,
    pub verifier_key: String,
    /// Leaves in the log now.
    pub size: u64,
    /// Leaves appended for rows stored before the log existed.
    pub backfilled: u64,
    pub backfilled_first: Option<u64>,
    pub backfilled_last: Option<u64>,
    /// The size the published checkpoint covers.
    pub checkpoint_size: u64,
    /// The published checkpoint, a signed note.
    pub checkpoint: String,
}

/// `/api/v1/log`: the log's name, key, size and published checkpoint.
#[utoipa::path(get, path = "/api/v1/log", tag = "log",
    summary = "The log's name, key, size and published checkpoint",
    responses((status = 200, body = LogState)))]
pub async fn log_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    let (origin, key) = key_of(&s)?;
    let tlog = s.service.tlog();
    let stats = tlog.stats().await?;
    let (published, signed) = tlog.latest().await?;
    Ok(Json(LogState {
        origin,
        verifier_key: key,
        size: stats.size,
        backfilled: stats.backfilled,
        backfilled_first: stats.backfilled_first,
        backfilled_last: stats.backfilled_last,
        checkpoint_size: published,
        checkpoint: signed,
    })
    .into_response())
}

/// `/api/v1/log/inclusion?submission_id=ID|index=N[&size=N]`: an
/// inclusion proof against the checkpoint of `size` (default: the newest
/// published one that holds the leaf, else the log as it stands).
#[utoipa::path(get, path = "/api/v1/log/inclusion", tag = "log",
    summary = "An inclusion proof for one leaf",
    description = "Give one of `submission_id` or `index`; `size` defaults to the newest published checkpoint that holds the leaf, else the log as it stands.",
    params(InclusionParams),
    responses((status = 200, body = wattcounts_service::tlog::InclusionProof),
        (status = 404, description = "No such submission or leaf", body = crate::error::ErrorBody)))]
pub async fn inclusion(
    State(s): State<AppState>,
    Params(q): Params<InclusionParams>,
) -> Result<Response, ApiError> {
    let index = match (given(&q.submission_id), number(&q.index, "index")?) {
        (Some(id), None) => {
            let id = crate::pages::admin::api::parse_id(id)?;
            s.service
                .submission(id)
                .await?
                .ok_or_else(|| ApiError::not_found(format!("no submission {id}")))?
                .log_index
                .ok_or_else(|| {
                    ApiError::not_found(format!("submission {id} is not in the log yet"))
                })?
        }
        (None, Some(i)) => i,
        _ => {
            return Err(ApiError::bad_request(
                "bad_parameter",
                "give one of submission_id=UUID or index=N",
            ))
        }
    };
    let tlog = s.service.tlog();
    let size = match number(&q.size, "size")? {
        Some(n) => n,
        None => {
            let (published, _) = tlog.latest().await?;
            if published > index {
                published
            } else {
                tlog.size().await?
            }
        }
    };
    Ok(Json(tlog.inclusion(index, size).await?).into_response())
}

/// `/api/v1/log/consistency?from=M&to=N` (`to` defaults to the newest
/// published checkpoint's size).
#[utoipa::path(get, path = "/api/v1/log/consistency", tag = "log",
    summary = "A consistency proof between two tree sizes",
    params(ConsistencyParams),
    responses((status = 200, body = wattcounts_service::tlog::ConsistencyProof),
        (status = 404, description = "The log is not that large yet", body = crate::error::ErrorBody)))]
pub async fn consistency(
    State(s): State<AppState>,
    Params(q): Params<ConsistencyParams>,
) -> Result<Response, ApiError> {
    let tlog = s.service.tlog();
    let from = number(&q.from, "from")?
        .ok_or_else(|| ApiError::bad_request("bad_parameter", "from=M is required"))?;
    let to = match number(&q.to, "to")? {
        Some(n) => n,
        None => tlog.latest().await?.0,
    };
    Ok(Json(tlog.consistency(from, to).await?).into_response())
}

/// `/api/v1/log/entries`.
#[derive(Serialize, ToSchema)]
pub struct LogEntries {
    pub start: u64,
    pub end: u64,
    /// The most leaves one answer holds.
    pub max: u64,
    pub entries: Vec<LogEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct LogEntry {
    pub index: u64,
    /// The leaf's bytes (RFC 8785 canonical JSON).
    pub leaf: String,
    /// RFC 6962 leaf hash, base64.
    pub leaf_hash: String,
    pub backfilled: bool,
}

/// `/api/v1/log/entries?start=M&end=N`: leaves, at most 1,000 at once.
#[utoipa::path(get, path = "/api/v1/log/entries", tag = "log",
    summary = "Leaves of the log, at most 1,000 at once",
    params(EntriesParams),
    responses((status = 200, body = LogEntries)))]
pub async fn entries(
    State(s): State<AppState>,
    Params(q): Params<EntriesParams>,
) -> Result<Response, ApiError> {
    let start = number(&q.start, "start")?.unwrap_or(0);
    let end = number(&q.end, "end")?.unwrap_or(start.saturating_add(100));
    let leaves = s.service.tlog().entries(start, end).await?;
    let entries = leaves
        .iter()
        .map(|e| LogEntry {
            index: e.index,
            leaf: e.leaf.clone(),
            leaf_hash: wattcounts_service::tlog::b64(&wattcounts_rules::tlog::leaf_hash(
                e.leaf.as_bytes(),
            )),
            backfilled: e.backfilled,
        })
        .collect();
    Ok(Json(LogEntries {
        start,
        end,
        max: MAX_ENTRIES,
        entries,
    })
    .into_response())
}

/// What `POST /api/v1/admin/log/checkpoint` published.
#[derive(Serialize, ToSchema)]
pub struct Published {
    pub size: u64,
    /// The signed note.
    pub checkpoint: String,
}

/// `POST /api/v1/admin/log/checkpoint`: publish a checkpoint now.
#[utoipa::path(post, path = "/api/v1/admin/log/checkpoint", tag = "maintainers",
    summary = "Sign and publish a checkpoint of the log as it stands",
    security(("maintainer" = [])),
    responses((status = 200, body = Published),
        (status = 401, description = "No or a wrong maintainer token", body = crate::error::ErrorBody)))]
pub async fn publish(State(s): State<AppState>, m: Maintainer) -> Result<Response, ApiError> {
    let (size, signed) = s.service.tlog().publish().await?;
    tracing::info!(maintainer = %m.name, size, "published a log checkpoint on demand");
    Ok((
        StatusCode::OK,
        Json(Published {
            size,
            checkpoint: signed,
        }),
    )
        .into_response())
}

struct LeafRow {
    index: u64,
    leaf: String,
    backfilled: bool,
    link: Option<String>,
}

#[derive(Template)]
#[template(path = "log.html")]
struct LogPage {
    origin: String,
    verifier_key: String,
    size: u64,
    published: u64,
    checkpoint: String,
    backfilled: u64,
    backfilled_range: Option<(u64, u64)>,
    recent: Vec<LeafRow>,
    public_url: String,
    layout: crate::layout::Layout,
}

/// `/log`: what the log is, how to check it, its latest checkpoint and
/// newest leaves.
pub async fn log_page(State(s): State<AppState>) -> Result<Response, PageError> {
    let (origin, verifier_key) = key_of(&s)?;
    let tlog = s.service.tlog();
    let stats = tlog.stats().await?;
    let (published, checkpoint) = tlog.latest().await?;
    let recent = tlog
        .entries(stats.size.saturating_sub(20), stats.size)
        .await?
        .into_iter()
        .rev()
        .map(|e| {
            let link = match wattcounts_rules::tlog::Leaf::parse(e.leaf.as_bytes()) {
                Ok(wattcounts_rules::tlog::Leaf::Submission { submission_id, .. }) => {
                    Some(format!("/submissions/{submission_id}"))
                }
                Ok(wattcounts_rules::tlog::Leaf::Decision { subject, .. })
                    if uuid::Uuid::parse_str(&subject).is_ok() =>
                {
                    Some(format!("/submissions/{subject}"))
                }
                _ => None,
            };
            LeafRow {
                index: e.index,
                leaf: e.leaf,
                backfilled: e.backfilled,
                link,
            }
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &LogPage {
            origin,
            verifier_key,
            size: stats.size,
            published,
            checkpoint,
            backfilled: stats.backfilled,
            backfilled_range: stats.backfilled_first.zip(stats.backfilled_last),
            recent,
            public_url: s.service.config().public_url.clone(),
            layout: crate::layout::Layout::of(false),
        },
    ))
}

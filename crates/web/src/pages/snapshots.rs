//! Snapshots over HTTP: the list (page and JSON), one snapshot's page and
//! JSON, file downloads (Range, ETag = the file's SHA-256, immutable
//! caching), `latest` redirects, and creation by a maintainer.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Maintainer;
use crate::error::{render, ApiError, PageError};
use crate::AppState;
use wattcounts_rules::snapshot_manifest::{self as manifest, Coverage};
use wattcounts_service::read::Published;
use wattcounts_service::snapshots::SnapshotRequest;

fn io_error(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "snapshot folder unreadable");
    ApiError::internal()
}

/// One file as the list and page show it.
#[derive(Serialize, ToSchema)]
pub struct FileView {
    pub path: String,
    pub url: String,
    pub media_type: String,
    pub bytes: u64,
    pub size: String,
    pub sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

#[derive(Serialize, ToSchema)]
pub struct SnapshotView {
    pub snapshot_id: String,
    pub url: String,
    pub created_at: String,
    /// `created_at` as the pages show it ("1 Dec 2026, 23:11 UTC").
    #[serde(skip)]
    pub created: String,
    pub created_by: String,
    pub includes_power_traces: bool,
    pub coverage: Coverage,
    /// SHA-256 of manifest.json: cite it, verify against it.
    pub manifest_sha256: String,
    pub total_bytes: u64,
    pub total_size: String,
    pub files: Vec<FileView>,
}

/// Decimal units, as the command line and the README print sizes.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        n if n >= 1_000_000_000 => format!("{:.2} GB", b / 1e9),
        n if n >= 1_000_000 => format!("{:.1} MB", b / 1e6),
        n if n >= 1_000 => format!("{:.1} kB", b / 1e3),
        n => format!("{n} B"),
    }
}

impl From<&Published> for SnapshotView {
    fn from(p: &Published) -> Self {
        let m = &p.manifest;
        let url = format!("/snapshots/{}", m.snapshot_id);
        let mut files: Vec<FileView> = m
            .files
            .iter()
            .map(|f| FileView {
                path: f.path.clone(),
                url: format!("{url}/{}", f.path),
                media_type: f.media_type.clone(),
                bytes: f.bytes,
                size: human(f.bytes),
                sha256: f.sha256.clone(),
                rows: f.rows,
            })
            .collect();
        files.push(FileView {
            path: manifest::FILE_NAME.into(),
            url: format!("{url}/{}", manifest::FILE_NAME),
            media_type: "application/json".into(),
            bytes: p.manifest_bytes,
            size: human(p.manifest_bytes),
            sha256: p.manifest_sha256.clone(),
            rows: None,
        });
        let total = m.total_bytes() + p.manifest_bytes;
        SnapshotView {
            snapshot_id: m.snapshot_id.clone(),
            created: crate::view::format::date_text(&m.created_at),
            created_at: m.created_at.clone(),
            created_by: m.created_by.clone(),
            includes_power_traces: m.includes_power_traces,
            coverage: m.coverage,
            manifest_sha256: p.manifest_sha256.clone(),
            total_bytes: total,
            total_size: human(total),
            files,
            url,
        }
    }
}

/// Every published snapshot, newest first (from the database).
async fn list(s: &AppState) -> Result<Vec<Published>, ApiError> {
    s.service.snapshots().await.map_err(io_error)
}

/// Every published snapshot as the pages show it, newest first (the feed's).
pub(crate) async fn published_views(s: &AppState) -> Result<Vec<SnapshotView>, ApiError> {
    Ok(list(s).await?.iter().map(SnapshotView::from).collect())
}

/// A snapshot by id, or the newest for `latest`.
async fn find(s: &AppState, id: &str) -> Result<Published, ApiError> {
    s.service
        .snapshot(id)
        .await
        .map_err(io_error)?
        .ok_or_else(|| ApiError::not_found("no such snapshot; /api/v1/snapshots lists them"))
}

/// Answers that name `latest` must not be kept: it moves.
fn no_store(r: Response) -> Response {
    crate::layers::cache_policy::with(r, crate::layers::cache_policy::CachePolicy::Revalidate)
}

#[derive(Template)]
#[template(path = "snapshots.html")]
struct ListPage {
    snapshots: Vec<SnapshotView>,
    layout: crate::layout::Layout,
}

pub async fn list_page(State(s): State<AppState>) -> Result<Response, PageError> {
    let snapshots: Vec<SnapshotView> = list(&s).await?.iter().map(SnapshotView::from).collect();
    Ok(no_store(render(
        StatusCode::OK,
        &ListPage {
            layout: crate::layout::Layout::of(
                snapshots.iter().any(|v| v.coverage.demo_submissions > 0),
            ),
            snapshots,
        },
    )))
}

/// `/api/v1/snapshots`.
#[derive(Serialize, ToSchema)]
pub struct SnapshotList {
    /// The newest snapshot's id (what `/snapshots/latest` redirects to).
    pub latest: Option<String>,
    /// Newest first.
    pub snapshots: Vec<SnapshotView>,
}

#[utoipa::path(get, path = "/api/v1/snapshots", tag = "snapshots",
    summary = "Every published snapshot, newest first",
    responses((status = 200, body = SnapshotList)))]
pub async fn list_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    let snapshots: Vec<SnapshotView> = list(&s).await?.iter().map(SnapshotView::from).collect();
    let latest = snapshots.first().map(|v| v.snapshot_id.clone());
    Ok(no_store(
        Json(SnapshotList { latest, snapshots }).into_response(),
    ))
}

#[derive(Template)]
#[template(path = "snapshot.html")]
struct DetailPage {
    s: SnapshotView,
    /// The card's text, shown as it is in the file.
    card: String,
    public_url: String,
    layout: crate::layout::Layout,
}

pub async fn snapshot_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let p = find(&s, &id).await?;
    if id == "latest" {
        return Ok(no_store(
            Redirect::to(&format!("/snapshots/{}", p.manifest.snapshot_id)).into_response(),
        ));
    }
    let card = s.service.snapshot_card(&p).await;
    let view = SnapshotView::from(&p);
    Ok(render(
        StatusCode::OK,
        &DetailPage {
            layout: crate::layout::Layout::of(view.coverage.demo_submissions > 0),
            s: view,
            card,
            public_url: s.service.config().public_url.clone(),
        },
    ))
}

#[utoipa::path(get, path = "/api/v1/snapshots/{id}", tag = "snapshots",
    summary = "One snapshot: its files, digests and coverage",
    params(("id" = String, Path, description = "A snapshot id, or `latest`")),
    responses((status = 200, body = SnapshotView),
        (status = 404, description = "No such snapshot", body = crate::error::ErrorBody)))]
pub async fn snapshot_json(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let p = find(&s, &id).await?;
    let r = Json(SnapshotView::from(&p)).into_response();
    Ok(if id == "latest" { no_store(r) } else { r })
}

/// A file of a snapshot. Files never change, so the ETag is the SHA-256
/// from the manifest and the answer may be cached for a year; Range
/// requests resume or split downloads.
pub async fn download(
    State(s): State<AppState>,
    Path((id, name)): Path<(String, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    // The path segment arrives decoded: `..%2f` is `../` here, and must
    // never reach a Location header or a file lookup.
    if !is_file_name(&name) {
        return Err(ApiError::bad_request(
            "bad_file_name",
            format!("'{}' is not a snapshot file name (one path segment, no '/', '\\', '..' or control characters); the snapshot's manifest.json lists its files", name.escape_default()),
        ));
    }
    let p = find(&s, &id).await?;
    let file = s.service.snapshot_file(&p, &name).ok_or_else(|| {
        ApiError::not_found(format!(
            "snapshot {id} has no file '{name}'; its manifest.json lists the files"
        ))
    })?;
    if id == "latest" {
        return Ok(no_store(
            Redirect::to(&format!("/snapshots/{}/{name}", p.manifest.snapshot_id)).into_response(),
        ));
    }
    let sha256 = if name == manifest::FILE_NAME {
        p.manifest_sha256.clone()
    } else {
        p.manifest
            .file(&name)
            .map(|f| f.sha256.clone())
            .unwrap_or_default()
    };
    let mut extra = Vec::new();
    // Data files download; the card and manifest open in the browser.
    if name.ends_with(".parquet") || name.ends_with(".csv") {
        extra.push((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ));
    }
    crate::download::Download {
        file: &file,
        sha256: &sha256,
        media_type: manifest::media_type(&name),
    }
    .answer(req, &extra)
    .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// Also export every power trace (a larger snapshot).
    #[serde(default)]
    pub traces: bool,
}

async fn create_as(s: &AppState, who: &str, traces: bool) -> Result<Published, ApiError> {
    let request = SnapshotRequest {
        traces,
        created_by: who.to_string(),
    };
    let created = s
        .service
        .publish_snapshot(request, |line| tracing::info!("snapshot: {line}"))
        .await?;
    tracing::info!(
        snapshot = %created.published.manifest.snapshot_id,
        by = who,
        seconds = created.took.as_secs_f64(),
        "snapshot published"
    );
    Ok(created.published)
}

/// `POST /api/v1/admin/snapshots` with `{"traces": true}` or no body.
#[utoipa::path(post, path = "/api/v1/admin/snapshots", tag = "maintainers",
    summary = "Publish a snapshot of the accepted data now",
    description = "The body is optional (`{}` or none: no power traces). One creation runs at a time on an instance.",
    request_body(content = Option<CreateRequest>, content_type = "application/json"),
    security(("maintainer" = [])),
    responses((status = 201, description = "Published; Location names its page", body = SnapshotView,
            headers(("Location" = String, description = "The snapshot's page"))),
        (status = 401, description = "No or a wrong maintainer token", body = crate::error::ErrorBody)))]
pub async fn create_api(
    State(s): State<AppState>,
    who: Maintainer,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let req: CreateRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CreateRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::bad_request(
                "bad_json",
                format!("expected {{\"traces\": true|false}}: {e}"),
            )
        })?
    };
    let p = create_as(&s, &who.name, req.traces).await?;
    let view = SnapshotView::from(&p);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, view.url.clone())],
        Json(view),
    )
        .into_response())
}

/// The admin page's "Publish a snapshot" form.
pub async fn create_form(
    State(s): State<AppState>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let session = crate::pages::admin::form_session(&headers, &s, &f).await?;
    let traces = f.get("traces").is_some_and(|v| v == "on" || v == "true");
    let p = create_as(&s, &session.name, traces).await?;
    Ok(Redirect::to(&format!("/snapshots/{}", p.manifest.snapshot_id)).into_response())
}

/// One plain file name: what a snapshot's manifest lists.
fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && !name.contains("..")
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

#[cfg(test)]
mod file_name_tests {
    use super::is_file_name;

    #[test]
    fn only_one_plain_segment_is_a_file_name() {
        for ok in [
            "runs.parquet",
            "manifest.json",
            "README.md",
            "power_traces.csv",
        ] {
            assert!(is_file_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "..\\x",
            "a/b",
            "a\\b",
            "x\r\nLocation: y",
            "a..b",
        ] {
            assert!(!is_file_name(bad), "{bad:?}");
        }
    }
}

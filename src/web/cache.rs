//! Response cache for the public read pages and their JSON twins, with
//! ETags. Keyed by path and query; an entry is good while the ingestor's
//! data version (bumped by every stored submission and every moderation
//! decision of this instance, demo loading included) is the one it was
//! computed at. Entries also expire after a short TTL, so instances sharing
//! one PostgreSQL database see each other's new data within that time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::AppState;

/// Largest body kept, bytes; bigger answers are served uncached.
const MAX_CACHED: usize = 4 << 20;
/// Largest body this layer reads at all (far above any page's size).
const MAX_READ: usize = 256 << 20;
/// Most entries; the cache is emptied when it would grow past this.
const MAX_ENTRIES: usize = 2048;

#[derive(Clone)]
struct Entry {
    generation: u64,
    stored: Instant,
    content_type: HeaderValue,
    etag: HeaderValue,
    body: Bytes,
}

pub struct ResponseCache {
    /// Zero turns caching off (ETags are still sent).
    ttl: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

impl ResponseCache {
    pub fn new(ttl: Duration) -> Self {
        ResponseCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &str, generation: u64) -> Option<Entry> {
        let entries = self.entries.lock().expect("cache lock");
        entries
            .get(key)
            .filter(|e| e.generation == generation && e.stored.elapsed() < self.ttl)
            .cloned()
    }

    fn put(&self, key: String, entry: Entry, current: u64) {
        // Only answers computed against current data are kept.
        if self.ttl.is_zero() || entry.generation != current {
            return;
        }
        let mut entries = self.entries.lock().expect("cache lock");
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, entry);
    }
}

/// Paths whose GET answers depend only on stored data and the query.
fn cacheable(path: &str) -> bool {
    matches!(
        path,
        "/" | "/leaderboard"
            | "/api/v1/leaderboard"
            | "/api/v1/leaderboard.csv"
            | "/gpus"
            | "/api/v1/gpus"
            | "/compare"
            | "/api/v1/compare"
    ) || [
        "/submissions/",
        "/api/v1/submissions/",
        "/gpus/",
        "/api/v1/gpus/",
        "/models/",
        "/api/v1/models/",
    ]
    .iter()
    .any(|p| path.starts_with(p))
}

fn etag_of(body: &[u8]) -> HeaderValue {
    let digest = hex::encode(&Sha256::digest(body)[..12]);
    HeaderValue::from_str(&format!("\"{digest}\"")).expect("hex is a valid header value")
}

fn matches_etag(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/").as_bytes() == etag.as_bytes()
        })
}

fn answer(entry: &Entry, request: &HeaderMap, hit: bool) -> Response {
    let cache_state = HeaderValue::from_static(if hit { "hit" } else { "miss" });
    if matches_etag(request, &entry.etag) {
        return (
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, entry.etag.clone()),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
        )
            .into_response();
    }
    let mut resp = Response::new(Body::from(entry.body.clone()));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, entry.content_type.clone());
    h.insert(header::ETAG, entry.etag.clone());
    // Browsers may keep a copy but must revalidate (cheap: a 304).
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-cache", cache_state);
    resp
}

/// The middleware: serve from the cache, or compute, store and serve.
pub async fn layer(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::GET || !cacheable(req.uri().path()) {
        return next.run(req).await;
    }
    let key = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let request_headers = req.headers().clone();
    let generation = s.ingestor.data_version();
    if let Some(entry) = s.cache.get(&key, generation) {
        return answer(&entry, &request_headers, true);
    }
    let resp = next.run(req).await;
    if resp.status() != StatusCode::OK {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_READ).await else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "response too large to serve",
        )
            .into_response();
    };
    let entry = Entry {
        generation,
        stored: Instant::now(),
        content_type: parts
            .headers
            .get(header::CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
        etag: etag_of(&body),
        body,
    };
    if entry.body.len() <= MAX_CACHED {
        s.cache.put(key, entry.clone(), s.ingestor.data_version());
    }
    answer(&entry, &request_headers, false)
}

//! Response cache for the routes declared `CachePolicy::DataVersioned`
//! (the public read pages and their JSON twins), with ETags. Keyed by path and query; an answer is good while the service's
//! data version (`Service::data_version`) is the one it was computed at.
//! The version moves with every submission stored and every moderation
//! decision made by this instance (demo loading included) and, through
//! `Service::watch_other_writers`, within two seconds of another
//! instance's; a peer release imported by another process (`wattcounts
//! peer import` beside `serve`) moves it within a second, through
//! `Service::watch_peer_imports`. One request computes a missing
//! answer while the others for the same key wait for it, so a change does
//! not set every connection computing the same page.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::AppState;

/// Largest body kept, bytes; bigger answers are served uncached.
const MAX_CACHED: usize = 4 << 20;
/// Largest body this layer reads at all (far above any page's size).
const MAX_READ: usize = 256 << 20;
/// Most entries; the cache is emptied when it would grow past this.
const MAX_ENTRIES: usize = 2048;

#[derive(Clone)]
struct CachedAnswer {
    generation: u64,
    content_type: HeaderValue,
    /// A download's file name (CSV exports), kept with the body.
    content_disposition: Option<HeaderValue>,
    etag: HeaderValue,
    body: Bytes,
    /// The body gzipped once, with its own ETag, for clients that take it
    /// (compressing per request would cost more than rendering).
    gzip: Option<(HeaderValue, Bytes)>,
}

/// Bodies smaller than this are not worth compressing.
const GZIP_FROM: usize = 1024;

fn gzipped(body: &[u8], etag: &HeaderValue) -> Option<(HeaderValue, Bytes)> {
    use std::io::Write;
    if body.len() < GZIP_FROM {
        return None;
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    enc.write_all(body).ok()?;
    let bytes = enc.finish().ok()?;
    let tag = etag.to_str().ok()?.trim_end_matches('"').to_string() + "-gzip\"";
    Some((HeaderValue::from_str(&tag).ok()?, Bytes::from(bytes)))
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let mut parts = t.trim().split(';');
            parts
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("gzip"))
                && !parts.any(|p| p.trim().replace(' ', "") == "q=0")
        })
}

pub struct ResponseCache {
    /// Off: every answer is computed (ETags and 304s still work).
    enabled: bool,
    entries: Mutex<HashMap<String, CachedAnswer>>,
    /// One lock per key being computed (single flight).
    flights: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl ResponseCache {
    pub fn new(enabled: bool) -> Self {
        ResponseCache {
            enabled,
            entries: Mutex::new(HashMap::new()),
            flights: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &str, generation: u64) -> Option<CachedAnswer> {
        let entries = self.entries.lock().expect("cache lock");
        entries
            .get(key)
            .filter(|e| e.generation == generation)
            .cloned()
    }

    fn flight(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut flights = self.flights.lock().expect("cache lock");
        if flights.len() > MAX_ENTRIES {
            flights.retain(|_, m| Arc::strong_count(m) > 1);
        }
        flights.entry(key.to_string()).or_default().clone()
    }

    fn put(&self, key: String, entry: CachedAnswer, current: u64) {
        // Only answers computed against current data are kept.
        if !self.enabled || entry.generation != current {
            return;
        }
        let mut entries = self.entries.lock().expect("cache lock");
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, entry);
    }
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

/// The kept answer (the route layer outside marks the route for the
/// metrics, hit or miss).
fn answer(entry: &CachedAnswer, request: &HeaderMap, hit: bool) -> Response {
    let cache_state = HeaderValue::from_static(if hit { "hit" } else { "miss" });
    let (etag, body, gzip) = match &entry.gzip {
        Some((tag, bytes)) if accepts_gzip(request) => (tag, bytes, true),
        _ => (&entry.etag, &entry.body, false),
    };
    if matches_etag(request, etag) {
        return (
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag.clone()),
                (header::VARY, HeaderValue::from_static("accept-encoding")),
            ],
        )
            .into_response();
    }
    let mut resp = Response::new(Body::from(body.clone()));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, entry.content_type.clone());
    if let Some(d) = &entry.content_disposition {
        h.insert(header::CONTENT_DISPOSITION, d.clone());
    }
    h.insert(header::ETAG, etag.clone());
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if gzip {
        // Already compressed: the compression layer leaves it alone.
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    h.insert("x-cache", cache_state);
    resp
}

/// The middleware of every `CachePolicy::DataVersioned` route (see
/// cache_policy.rs, which also writes the Cache-Control its answers carry):
/// serve from the cache, or compute, store and serve.
pub async fn layer(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::GET {
        return next.run(req).await;
    }
    let key = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let request_headers = req.headers().clone();
    let generation = s.service.data_version();
    if let Some(entry) = s.cache.get(&key, generation) {
        wattcounts_service::telemetry::cache(true);
        return answer(&entry, &request_headers, true);
    }
    let flight = s.cache.enabled.then(|| s.cache.flight(&key));
    let _computing = if let Some(flight) = &flight {
        let guard = flight.lock().await;
        // Whoever held the lock before may have just stored it.
        if let Some(entry) = s.cache.get(&key, s.service.data_version()) {
            wattcounts_service::telemetry::cache(true);
            return answer(&entry, &request_headers, true);
        }
        Some(guard)
    } else {
        None
    };
    wattcounts_service::telemetry::cache(false);
    let generation = s.service.data_version();
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
    let etag = etag_of(&body);
    let gzip = if s.cache.enabled && body.len() <= MAX_CACHED {
        gzipped(&body, &etag)
    } else {
        None
    };
    let entry = CachedAnswer {
        generation,
        content_type: parts
            .headers
            .get(header::CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
        content_disposition: parts.headers.get(header::CONTENT_DISPOSITION).cloned(),
        etag,
        body,
        gzip,
    };
    if entry.body.len() <= MAX_CACHED {
        s.cache.put(key, entry.clone(), s.service.data_version());
    }
    answer(&entry, &request_headers, false)
}

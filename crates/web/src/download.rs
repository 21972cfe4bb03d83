//! Downloads of stored files (bundles, snapshot files), wherever they are:
//! from the data dir through the file server, or from the bucket proxied
//! through this instance. Either way the answer carries the file's SHA-256
//! as its ETag, honours If-None-Match, and serves one byte range (If-Range
//! with another validator sends the whole file), so a download resumes
//! whichever instance answers it.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;
use tower_http::services::ServeFile;

use crate::error::ApiError;
use wattcounts_service::files::StoredFile;

/// A stored file and how to present it.
pub struct Download<'a> {
    pub file: &'a StoredFile,
    /// The file's SHA-256, hex.
    pub sha256: &'a str,
    pub media_type: &'a str,
}

fn failed(e: impl std::fmt::Display, name: &str) -> ApiError {
    tracing::error!(error = %e, file = name, "stored file unreadable");
    ApiError::internal()
}

impl Download<'_> {
    /// The answer to `req`, with `extra` headers on every success, 304 and 416.
    pub async fn answer(
        self,
        mut req: Request,
        extra: &[(header::HeaderName, String)],
    ) -> Result<Response, ApiError> {
        let etag = format!("\"{}\"", self.sha256);
        let (unchanged, stale_range) = {
            let h = req.headers();
            let matches = |key| {
                h.get(key)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
            };
            (
                matches(header::IF_NONE_MATCH),
                // If-Range with another validator: the whole file, not a
                // range of something the client no longer has.
                h.contains_key(header::IF_RANGE) && !matches(header::IF_RANGE),
            )
        };
        let mut resp = if unchanged {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            if stale_range {
                req.headers_mut().remove(header::RANGE);
            }
            req.headers_mut().remove(header::IF_RANGE);
            match self.file.local_path() {
                Some(path) => self.serve_disk(path, req).await?,
                None => self.serve_bucket(req.headers()).await?,
            }
        };
        let s = resp.status();
        if s.is_success() || s == StatusCode::NOT_MODIFIED || s == StatusCode::RANGE_NOT_SATISFIABLE
        {
            let h = resp.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&etag) {
                h.insert(header::ETAG, v);
            }
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            for (k, v) in extra {
                if let Ok(v) = HeaderValue::from_str(v) {
                    h.insert(k, v);
                }
            }
        }
        Ok(resp)
    }

    async fn serve_disk(
        &self,
        path: std::path::PathBuf,
        req: Request,
    ) -> Result<Response, ApiError> {
        let mime: mime::Mime = self
            .media_type
            .parse()
            .unwrap_or(mime::APPLICATION_OCTET_STREAM);
        let served = ServeFile::new_with_mime(path, &mime)
            .oneshot(req)
            .await
            .map_err(|e| failed(e, self.file.name()))?;
        Ok(served.map(Body::new))
    }

    async fn serve_bucket(&self, headers: &HeaderMap) -> Result<Response, ApiError> {
        let wanted = headers
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_range);
        let fetched = match self
            .file
            .fetch(|total| wanted.map(|r| r.bounds(total)))
            .await
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Ok(unsatisfiable());
            }
            Err(e) => return Err(failed(e, self.file.name())),
        };
        let len = fetched.range.end - fetched.range.start;
        let mut resp = Response::new(Body::from_stream(fetched.body));
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(self.media_type)
                .unwrap_or(HeaderValue::from_static("application/octet-stream")),
        );
        h.insert(header::CONTENT_LENGTH, len.into());
        if wanted.is_some() {
            *resp.status_mut() = StatusCode::PARTIAL_CONTENT;
            if let Ok(v) = HeaderValue::from_str(&format!(
                "bytes {}-{}/{}",
                fetched.range.start,
                fetched.range.end.saturating_sub(1),
                fetched.total
            )) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
        }
        Ok(resp)
    }
}

fn unsatisfiable() -> Response {
    StatusCode::RANGE_NOT_SATISFIABLE.into_response()
}

/// One range of a `Range: bytes=…` header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ByteRange {
    /// `a-b` (inclusive) or `a-` (to the end: `b` = None).
    From(u64, Option<u64>),
    /// `-n`: the last n bytes.
    Suffix(u64),
}

impl ByteRange {
    /// The half-open byte range within a file of `total` bytes.
    pub fn bounds(self, total: u64) -> std::ops::Range<u64> {
        match self {
            ByteRange::From(a, Some(b)) => a..b.saturating_add(1),
            ByteRange::From(a, None) => a..total,
            ByteRange::Suffix(n) => total.saturating_sub(n)..total,
        }
    }
}

/// A single range; several ranges, or a header that does not parse, are
/// answered with the whole file (RFC 9110 lets a server ignore Range).
pub fn parse_range(v: &str) -> Option<ByteRange> {
    let spec = v.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.trim().split_once('-')?;
    match (a.trim(), b.trim()) {
        ("", n) => n.parse().ok().filter(|n| *n > 0).map(ByteRange::Suffix),
        (a, "") => a.parse().ok().map(|a| ByteRange::From(a, None)),
        (a, b) => {
            let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
            (a <= b).then_some(ByteRange::From(a, Some(b)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_rfc_9110_reads_them() {
        assert_eq!(
            parse_range("bytes=0-99"),
            Some(ByteRange::From(0, Some(99)))
        );
        assert_eq!(parse_range("bytes=100-"), Some(ByteRange::From(100, None)));
        assert_eq!(parse_range("bytes=-5"), Some(ByteRange::Suffix(5)));
        assert_eq!(
            parse_range("bytes=5-1"),
            None,
            "a backwards range is ignored"
        );
        assert_eq!(
            parse_range("bytes=0-1,5-9"),
            None,
            "several: the whole file"
        );
        assert_eq!(parse_range("items=0-1"), None);
        assert_eq!(parse_range("bytes=-0"), None);
        assert_eq!(ByteRange::From(0, Some(99)).bounds(1000), 0..100);
        assert_eq!(ByteRange::From(990, None).bounds(1000), 990..1000);
        assert_eq!(ByteRange::Suffix(10).bounds(1000), 990..1000);
        assert_eq!(ByteRange::Suffix(5000).bounds(1000), 0..1000);
    }
}

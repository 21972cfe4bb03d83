//! A multipart upload's part headers, bounded before anything buffers
//! them. The multipart parser (multer) holds a part's headers in memory
//! until it sees their blank line, with no limit of its own: a 64 MiB
//! header line was read whole, and the upload went on. This layer watches
//! the body as it streams past, and a part whose headers run past
//! [`MAX_PART_HEADER_BYTES`] ends the body with [`PartHeaderTooLarge`],
//! which the upload handlers answer 431 (nothing is stored: the bundle
//! part has not begun, or was cut before it finished).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use http_body::{Frame, SizeHint};

/// A browser's part headers (Content-Disposition with a file name, and a
/// Content-Type) take a few hundred bytes; 8 KiB leaves room for long
/// file names and stays far below what could hurt.
pub const MAX_PART_HEADER_BYTES: usize = 8 * 1024;

/// The error the guarded body ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartHeaderTooLarge;

impl std::fmt::Display for PartHeaderTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a part's headers run past {MAX_PART_HEADER_BYTES} bytes without their blank line"
        )
    }
}

impl std::error::Error for PartHeaderTooLarge {}

/// Whether `e`, or anything it wraps, is [`PartHeaderTooLarge`].
pub fn caused_by_long_header(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<PartHeaderTooLarge>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Wraps a `multipart/form-data` request's body in the guard; any other
/// request passes as it came.
pub async fn guard(req: Request) -> Request {
    let boundary = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(boundary_of);
    let Some(boundary) = boundary else {
        return req;
    };
    let (parts, body) = req.into_parts();
    let guarded = Guarded {
        inner: body,
        scanner: Scanner::new(&boundary),
    };
    Request::from_parts(parts, Body::new(guarded))
}

/// The boundary parameter of a multipart/form-data content type.
fn boundary_of(content_type: &str) -> Option<String> {
    let mut params = content_type.split(';');
    let essence = params.next()?.trim();
    if !essence.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.find_map(|p| {
        let (name, value) = p.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| value.trim().trim_matches('"').to_string())
            .filter(|b| !b.is_empty())
    })
}

struct Guarded {
    inner: Body,
    scanner: Scanner,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Err(e) = this.scanner.feed(data) {
                        return Poll::Ready(Some(Err(axum::Error::new(e))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Where the scan is: in a part's content (looking for the next
/// delimiter, `CRLF--boundary`), in a part's headers (counting to their
/// blank line), or past the closing delimiter.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Content,
    Headers { len: usize, last4: [u8; 4] },
    Closed,
}

struct Scanner {
    /// `CRLF--boundary`: the boundary's characters exclude CR, so a
    /// mismatch restarts the match at 0, or at 1 on a CR.
    delimiter: Vec<u8>,
    matched: usize,
    state: State,
}

impl Scanner {
    fn new(boundary: &str) -> Self {
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary.as_bytes());
        Scanner {
            delimiter,
            // The body's first delimiter has no CRLF before it.
            matched: 2,
            state: State::Content,
        }
    }

    fn feed(&mut self, data: &[u8]) -> Result<(), PartHeaderTooLarge> {
        for &b in data {
            match &mut self.state {
                State::Closed => return Ok(()),
                State::Content => {
                    if b == self.delimiter[self.matched] {
                        self.matched += 1;
                        if self.matched == self.delimiter.len() {
                            self.matched = 0;
                            self.state = State::Headers {
                                len: 0,
                                last4: [0; 4],
                            };
                        }
                    } else {
                        self.matched = usize::from(b == b'\r');
                    }
                }
                State::Headers { len, last4 } => {
                    *len += 1;
                    last4.rotate_left(1);
                    last4[3] = b;
                    if *len > MAX_PART_HEADER_BYTES {
                        return Err(PartHeaderTooLarge);
                    } else if *len == 2 && last4[2..] == *b"--" {
                        self.state = State::Closed;
                    } else if *last4 == *b"\r\n\r\n" {
                        self.state = State::Content;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> Result<State, PartHeaderTooLarge> {
        let mut s = Scanner::new("XyZ");
        for c in chunks {
            s.feed(c)?;
        }
        Ok(s.state)
    }

    #[test]
    fn boundaries_from_content_types() {
        assert_eq!(
            boundary_of("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            boundary_of("Multipart/Form-Data;charset=utf-8; Boundary=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(boundary_of("multipart/form-data"), None);
        assert_eq!(boundary_of("application/json; boundary=abc"), None);
    }

    #[test]
    fn a_whole_body_scans_to_its_close() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"bundle\"\r\n\r\n\x1f\x8b\r\n--X\r\n\r\n--XyZ\r\nContent-Disposition: form-data; name=\"signature\"\r\n\r\nsig\r\n--XyZ--\r\n";
        assert_eq!(scan(&[body]), Ok(State::Closed));
        // The same body a byte at a time.
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(scan(&bytes), Ok(State::Closed));
    }

    #[test]
    fn headers_up_to_the_limit_pass_and_past_it_fail() {
        // After the delimiter come CRLF, the header lines and a blank line:
        // the count runs from the CRLF to the blank line's end.
        let header = |n: usize| {
            let mut v = b"--XyZ\r\n".to_vec();
            let line = format!("X-Long: {}\r\n\r\n", "a".repeat(n));
            v.extend_from_slice(line.as_bytes());
            v
        };
        // 2 + 8 + n + 4 bytes of headers: n = 8178 gives 8192, the limit.
        assert_eq!(scan(&[&header(8178)]), Ok(State::Content));
        assert_eq!(scan(&[&header(8179)]), Err(PartHeaderTooLarge));
        // A header line of 1 MiB fails long before its end.
        let mut s = Scanner::new("XyZ");
        s.feed(b"--XyZ\r\nX-Long: ").unwrap();
        assert_eq!(s.feed(&vec![b'a'; 1 << 20]), Err(PartHeaderTooLarge));
    }

    #[test]
    fn content_never_counts_as_headers() {
        // Megabytes of content, CRs and near-delimiters included.
        let mut body = b"--XyZ\r\n\r\n".to_vec();
        for _ in 0..100_000 {
            body.extend_from_slice(b"\r\n--Xy\r\r\n-");
        }
        body.extend_from_slice(b"\r\n--XyZ--");
        assert_eq!(scan(&[&body]), Ok(State::Closed));
    }

    #[test]
    fn the_error_is_found_through_its_wrappers() {
        let wrapped = axum::Error::new(PartHeaderTooLarge);
        assert!(caused_by_long_header(&wrapped));
        let other = std::io::Error::other("x");
        assert!(!caused_by_long_header(&other));
    }
}

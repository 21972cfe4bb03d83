//! Headers every answer carries, error pages and cached answers included:
//! a Content-Security-Policy that allows no inline script or style, no
//! sniffing, no framing, no referrer, and HSTS behind an https origin.

use axum::http::header;

use crate::AppState;

/// No inline script or style exists on any page, so the policy allows
/// none: a name that slipped through escaping could not run.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Headers every answer carries, error pages and cached answers included.
pub async fn security_headers(
    axum::extract::State(s): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::HeaderValue;
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        // Our own pages' posts name their origin (the forms' origin
        // check reads it); other sites learn nothing of our URLs.
        HeaderValue::from_static("same-origin"),
    );
    if s.service.config().public_url.starts_with("https://") {
        h.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    resp
}

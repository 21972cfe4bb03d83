//! Maintainer authentication. Tokens are random secrets; the service only
//! ever holds their sha256 (configured as NAME:HEX). The API takes
//! `Authorization: Bearer <token>`. The admin pages trade the token for a
//! session (`service::admin_sessions`): the HttpOnly, SameSite=Strict
//! cookie carries the session id, never the token, and every form carries
//! a CSRF token derived from the id, so another site can neither read nor
//! forge a form post, and signing out or rotating the token ends it.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use rand_core::RngCore;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::AppState;

pub const COOKIE: &str = "wattcounts_admin";
const TOKEN_PREFIX: &str = "wct_";

#[derive(Debug, Clone, Default)]
pub struct Maintainers {
    /// (name, sha256 of the token)
    tokens: Vec<(String, [u8; 32])>,
}

impl Maintainers {
    /// Reads `NAME:SHA256HEX` entries.
    pub fn parse(specs: &[String]) -> anyhow::Result<Self> {
        let mut tokens = Vec::new();
        for spec in specs.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let (name, hash) = spec.split_once(':').ok_or_else(|| {
                anyhow::anyhow!(
                    "admin token '{spec}' must be NAME:SHA256 (as printed by `wattcounts admin token`)"
                )
            })?;
            let bytes = hex::decode(hash.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "admin token for '{name}': '{hash}' is not a sha256 in hex (64 characters)"
                    )
                })?;
            if name.trim().is_empty() {
                anyhow::bail!("admin token '{spec}' has an empty name");
            }
            tokens.push((name.trim().to_string(), bytes));
        }
        Ok(Maintainers { tokens })
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The maintainer a token belongs to.
    pub fn who(&self, token: &str) -> Option<&str> {
        let h: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.tokens
            .iter()
            .find(|(_, known)| *known == h)
            .map(|(n, _)| n.as_str())
    }

    /// Whether `name`'s token with this SHA-256 (hex) is still configured:
    /// a session opened with a token that was rotated out has ended.
    pub fn holds(&self, name: &str, token_sha256: &str) -> bool {
        self.tokens
            .iter()
            .any(|(n, h)| n == name && hex::encode(h) == token_sha256)
    }
}

/// A fresh token and the sha256 to configure for it.
pub fn new_token() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand_core::OsRng.fill_bytes(&mut bytes);
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
    let hash = hex::encode(Sha256::digest(token.as_bytes()));
    (token, hash)
}

/// The CSRF token of an admin session: a keyed digest of its secret, so it
/// is stable for the session and unguessable without the cookie.
pub fn csrf_token(token: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"wattcounts-csrf\0");
    h.update(token.as_bytes());
    hex::encode(h.finalize())
}

pub fn csrf_ok(token: &str, presented: &str) -> bool {
    let want = csrf_token(token);
    // Constant time: compare every byte.
    want.len() == presented.len()
        && want
            .bytes()
            .zip(presented.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

pub fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A maintainer proven by a bearer token (API).
pub struct Maintainer {
    pub name: String,
}

impl FromRequestParts<AppState> for Maintainer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let unauthorized = |code, msg: &str| ApiError::new(StatusCode::UNAUTHORIZED, code, msg);
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized(
                "auth_required",
                "this endpoint needs a maintainer token: Authorization: Bearer <token>",
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                unauthorized("bad_auth_header", "expected Authorization: Bearer <token>")
            })?;
        match s.maintainers.who(token) {
            Some(name) => Ok(Maintainer {
                name: name.to_string(),
            }),
            None => Err(unauthorized(
                "bad_token",
                "the token is not a maintainer token of this service",
            )),
        }
    }
}

/// A maintainer proven by the admin session cookie (HTML), with the
/// session's CSRF token for forms. Absent when not signed in.
pub struct AdminSession {
    pub name: String,
    pub csrf: String,
    /// The session id the cookie carries (to end it on sign-out).
    pub id: String,
}

impl AdminSession {
    /// The live session the cookie names; None when there is no cookie or
    /// its session has ended (expired, idle, signed out, token rotated).
    pub async fn from_headers(headers: &HeaderMap, s: &AppState) -> Result<Option<Self>, ApiError> {
        let Some(id) = cookie_value(headers, COOKIE) else {
            return Ok(None);
        };
        let Some(open) = s.service.admin_session(id).await? else {
            return Ok(None);
        };
        if !s.maintainers.holds(&open.maintainer, &open.token_sha256) {
            s.service.close_admin_session(id).await?;
            return Ok(None);
        }
        Ok(Some(AdminSession {
            name: open.maintainer,
            csrf: csrf_token(id),
            id: id.to_string(),
        }))
    }
    pub fn csrf_ok(&self, presented: &str) -> bool {
        csrf_ok(&self.id, presented)
    }
}

/// Set-Cookie for a session id; `Secure` when the service is served over https.
pub fn session_cookie(session_id: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={session_id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        wattcounts_service::admin_sessions::SESSION_LIFETIME.num_seconds(),
        if secure { "; Secure" } else { "" }
    )
}

pub fn clear_cookie(secure: bool) -> String {
    format!(
        "{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The SHA-256 (hex) of a token, as the configuration names it.
pub fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_through_their_hash() {
        let (token, hash) = new_token();
        let m = Maintainers::parse(&[format!("alice:{hash}")]).unwrap();
        assert_eq!(m.who(&token), Some("alice"));
        assert_eq!(m.who("wct_other"), None);
        let e = Maintainers::parse(&["alice".into()]).unwrap_err();
        assert!(e.to_string().contains("must be NAME:SHA256"), "{e}");
        let e = Maintainers::parse(&["alice:abcd".into()]).unwrap_err();
        assert!(e.to_string().contains("is not a sha256 in hex"), "{e}");
        assert!(m.holds("alice", &token_sha256(&token)));
        assert!(!m.holds("bob", &token_sha256(&token)), "another name");
        assert!(
            !m.holds("alice", &token_sha256("wct_old")),
            "a rotated token"
        );
    }

    #[test]
    fn csrf_is_bound_to_the_session() {
        let t = csrf_token("wct_a");
        assert!(csrf_ok("wct_a", &t));
        assert!(!csrf_ok("wct_b", &t));
        assert!(!csrf_ok("wct_a", ""));
    }
}

/// `scheme://host[:port]` of a URL (its origin, as browsers send it).
fn origin_of(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => &url[..after + i],
        None => url,
    }
}

/// A state-changing form must come from this service's own pages. A
/// browser says so with `Sec-Fetch-Site: same-origin` (a header no page
/// can set or forge, sent by every current browser); otherwise its
/// `Origin` (or, where a browser sends none, its `Referer`) must name the
/// public URL. A foreign or `null` origin, or none of these, is refused,
/// so another site cannot post a maintainer's or a submitter's form.
/// (Pages are served with `Referrer-Policy: same-origin`, under which a
/// browser names its origin on a same-origin post; under `no-referrer` it
/// sent `Origin: null`, and every form of the site answered 403.)
pub fn same_origin(headers: &HeaderMap, public_url: &str) -> Result<(), ApiError> {
    let ours = origin_of(public_url.trim_end_matches('/'));
    let refuse = |what: String| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "foreign_origin",
            format!("{what}; this form must be sent from a page of {ours}"),
        )
    };
    let text =
        |name: header::HeaderName| headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"));
    match headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or(""))
    {
        Some("same-origin") => return Ok(()),
        Some(site @ ("cross-site" | "same-site")) => {
            return Err(refuse(format!(
                "the browser says the request came from a {site} page"
            )))
        }
        _ => {}
    }
    if let Some(origin) = text(header::ORIGIN) {
        return if origin == ours {
            Ok(())
        } else {
            Err(refuse(format!("the request came from origin '{origin}'")))
        };
    }
    match text(header::REFERER) {
        Some(r) if origin_of(r) == ours => Ok(()),
        Some(r) => Err(refuse(format!(
            "the request came from page '{}'",
            origin_of(r)
        ))),
        None => Err(refuse("the request names no origin".into())),
    }
}

#[cfg(test)]
mod origin_tests {
    use super::*;

    fn with(name: &'static str, v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, v.parse().unwrap());
        h
    }

    #[test]
    fn origins() {
        let ours = "https://wattcounts.example";
        assert!(same_origin(&with("origin", ours), ours).is_ok());
        assert!(same_origin(&with("origin", ours), "https://wattcounts.example/").is_ok());
        assert!(same_origin(&with("referer", "https://wattcounts.example/admin"), ours).is_ok());
        for (h, v) in [
            ("origin", "https://evil.example"),
            ("origin", "null"),
            ("origin", "https://wattcounts.example.evil.example"),
            ("origin", "http://wattcounts.example"),
            ("referer", "https://evil.example/wattcounts.example"),
        ] {
            let e = same_origin(&with(h, v), ours).unwrap_err();
            assert_eq!(e.code, "foreign_origin", "{h}: {v}");
        }
        let e = same_origin(&HeaderMap::new(), ours).unwrap_err();
        assert_eq!(e.code, "foreign_origin");
        assert!(e.message.contains("names no origin"), "{}", e.message);
    }

    #[test]
    fn what_browsers_send_on_a_same_origin_post() {
        let ours = "https://wattcounts.example";
        // Chromium's form post from our own page: Sec-Fetch-Site
        // same-origin, with Origin null where the page said no-referrer.
        let mut h = with("sec-fetch-site", "same-origin");
        h.insert("origin", "null".parse().unwrap());
        assert!(same_origin(&h, ours).is_ok());
        // Another site's page posting to us: the browser says so, whatever
        // Origin or Referer claim.
        for site in ["cross-site", "same-site"] {
            let mut h = with("sec-fetch-site", site);
            h.insert("origin", ours.parse().unwrap());
            let e = same_origin(&h, ours).unwrap_err();
            assert_eq!(e.code, "foreign_origin");
            assert!(e.message.contains(site), "{}", e.message);
        }
        // `none` (typed into the address bar) proves nothing: the Origin
        // rule decides.
        let mut h = with("sec-fetch-site", "none");
        h.insert("origin", "null".parse().unwrap());
        assert!(same_origin(&h, ours).is_err());
        h.insert("origin", ours.parse().unwrap());
        assert!(same_origin(&h, ours).is_ok());
    }
}

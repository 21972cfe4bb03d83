//! The bytes of a request line that no handler should ever see: a
//! percent-decoded control character or invalid UTF-8, in the path or in
//! any query parameter. One layer refuses them with 400 before routing, so
//! no filter reaches a database that cannot hold them (PostgreSQL refuses
//! a NUL in text with an error, which would otherwise surface as a 500),
//! and every route, documented or not, is covered by the same rule.

use axum::response::{IntoResponse, Response};
use percent_encoding::percent_decode;

use crate::error::ApiError;
use wattcounts_rules::rejection::Detail;

/// What is wrong with a decoded piece of the request line, if anything.
fn fault(decoded: &[u8]) -> Option<String> {
    match std::str::from_utf8(decoded) {
        Ok(text) => text
            .chars()
            .find(|c| c.is_control())
            .map(|c| format!("the control character U+{:04X}", c as u32)),
        Err(e) => Some(format!(
            "bytes that are not UTF-8 (from byte {} of its decoded value)",
            e.valid_up_to()
        )),
    }
}

/// A query parameter's value as a form decodes it (`+` is a space).
fn decode_form(raw: &str) -> Vec<u8> {
    let spaced = raw.replace('+', " ");
    percent_decode(spaced.as_bytes()).collect()
}

/// The first query parameter (name, fault) that holds a forbidden byte.
fn query_fault(query: &str) -> Option<(String, String)> {
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name_bytes = decode_form(name);
        let shown = String::from_utf8_lossy(&name_bytes)
            .escape_debug()
            .to_string();
        if let Some(what) = fault(&name_bytes) {
            return Some((shown, format!("its name holds {what}")));
        }
        if let Some(what) = fault(&decode_form(value)) {
            return Some((shown, format!("its value holds {what}")));
        }
    }
    None
}

pub async fn request_guard(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let path: Vec<u8> = percent_decode(req.uri().path().as_bytes()).collect();
    if let Some(what) = fault(&path) {
        return ApiError::bad_request(
            "bad_path",
            format!("the path holds {what}; no page has such a name"),
        )
        .into_response();
    }
    if let Some((name, what)) = req.uri().query().and_then(query_fault) {
        let mut err = ApiError::bad_request(
            "bad_query",
            format!(
                "the query parameter '{name}' is refused: {what}; no filter or option takes such bytes"
            ),
        );
        err.details.push(Detail::new(what).parameter(name));
        return err.into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_faults_name_the_parameter() {
        assert_eq!(query_fault("model=llama&gpu=h100"), None);
        assert_eq!(query_fault("q=a+b%20c&&x"), None);
        assert_eq!(query_fault("q=%C3%A9t%C3%A9"), None, "é is text");
        let (name, what) = query_fault("page=2&model=a%00").unwrap();
        assert_eq!(name, "model");
        assert!(what.contains("U+0000"), "{what}");
        let (name, what) = query_fault("gpu=%FF").unwrap();
        assert_eq!(name, "gpu");
        assert!(what.contains("not UTF-8"), "{what}");
        let (name, what) = query_fault("a%0Ab=1").unwrap();
        assert_eq!(name, "a\\nb");
        assert!(what.starts_with("its name"), "{what}");
        // DEL and C1 controls are control characters too.
        assert!(query_fault("x=%7F").is_some());
        assert!(query_fault("x=%C2%85").is_some());
        // A lone % is not an escape: it stays the character itself.
        assert_eq!(query_fault("x=100%"), None);
    }
}

//! Maintainer sessions (issue #29): the admin cookie carries a random
//! session id, not the token. Each case runs on SQLite and, with
//! WATTCOUNTS_TEST_PG_URL, on PostgreSQL.

use crate::common::*;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};

/// Sign in through the form; returns the Set-Cookie header.
async fn sign_in(app: &TestApp) -> String {
    let req = Request::post("/admin/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ORIGIN, AUDIENCE)
        .body(Body::from(format!("token={ADMIN_TOKEN}")))
        .unwrap();
    let (status, headers, _) = app.raw(req).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    headers[header::SET_COOKIE].to_str().unwrap().to_string()
}

async fn admin_page(router: &axum::Router, cookie: &str) -> String {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = Request::get("/admin")
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let resp = router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

fn signed_in(page: &str) -> bool {
    page.contains("action=\"/admin/logout\"")
}

/// The cookie carries a random session id, not the token; the database
/// keeps only its hash; signing out ends the session for every copy of
/// the cookie; a session of a token no longer configured has ended.
#[tokio::test]
async fn admin_sessions_are_not_the_token() {
    for app in both_backends().await {
        let set = sign_in(&app).await;
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/"),
            "{set}"
        );
        assert!(set.contains("; Secure"), "the public URL is https: {set}");
        let cookie = set.split(';').next().unwrap().to_string();
        let id = cookie.split_once('=').unwrap().1.to_string();
        assert!(!id.contains(ADMIN_TOKEN) && id != ADMIN_TOKEN, "{cookie}");
        assert!(id.starts_with("wcs_") && id.len() == 68, "{id}");
        // The token itself as a cookie signs no one in.
        assert!(!signed_in(
            &admin_page(&app.router, &format!("wattcounts_admin={ADMIN_TOKEN}")).await
        ));
        let page = admin_page(&app.router, &cookie).await;
        assert!(signed_in(&page), "{page}");

        // Stored as its hash only, with an expiry and the last use.
        let row = session_row(&app).await;
        assert_eq!(
            row.0,
            wattcounts::service::admin_sessions::session_hash(&id)
        );
        assert_ne!(row.0, id);
        let created = chrono::DateTime::parse_from_rfc3339(&row.1).unwrap();
        let expires = chrono::DateTime::parse_from_rfc3339(&row.2).unwrap();
        assert_eq!((expires - created).num_hours(), 12);
        assert!(chrono::DateTime::parse_from_rfc3339(&row.3).unwrap() >= created);

        // Signing out ends it: the same cookie, replayed, is signed out.
        let csrf = page
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_string();
        let req = Request::post("/admin/logout")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ORIGIN, AUDIENCE)
            .header(header::COOKIE, &cookie)
            .body(Body::from(format!("csrf={csrf}")))
            .unwrap();
        let (status, headers, _) = app.raw(req).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        assert!(headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0"));
        assert!(
            !signed_in(&admin_page(&app.router, &cookie).await),
            "a copied cookie after sign-out"
        );

        // Token rotation: another instance on the same database whose
        // configuration no longer has the token ends the session.
        let cookie = sign_in(&app).await.split(';').next().unwrap().to_string();
        assert!(signed_in(&admin_page(&app.router, &cookie).await));
        let rotated = app.rotated_instance();
        assert!(
            !signed_in(&admin_page(&rotated, &cookie).await),
            "rotated token"
        );
        assert!(
            !signed_in(&admin_page(&app.router, &cookie).await),
            "the session was ended"
        );
    }
}

async fn session_row(app: &TestApp) -> (String, String, String, String) {
    let sql = "SELECT id_sha256, created_at, expires_at, last_used_at FROM admin_sessions";
    match app.raw.as_ref().unwrap() {
        RawDb::Sqlite(p) => sqlx::query_as(sql).fetch_one(p).await.unwrap(),
        RawDb::Pg(p) => sqlx::query_as(sql).fetch_one(p).await.unwrap(),
    }
}

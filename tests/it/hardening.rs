//! Hardening (issue #13): what a second writer, an attacker or a crash
//! must not be able to do.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::json;

use crate::common::*;

/// Two writers on one SQLite file (two stores, each with its own pool and
/// in-process lock, as two processes would be): decisions in one while the
/// other takes submissions. Write transactions take the lock up front
/// (BEGIN IMMEDIATE) and wait their turn: no "database is locked", no 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writers_on_one_sqlite_file_take_turns() {
    let a = Arc::new(TestApp::new().await);
    let key = a.register("alice").await;
    let url = format!("sqlite:{}", a.dir.path().join("test.db").display());
    let b = Arc::new(TestApp::with_store(
        Arc::new(
            wattcounts::store::sqlite::SqliteStore::open(&url)
                .await
                .unwrap(),
        ),
        tempfile::tempdir().unwrap(),
        256 << 20,
    ));
    let review = a
        .insert_copies(
            &bundle("alice", &key),
            &key,
            40,
            wattcounts::domain::Status::NeedsReview,
        )
        .await;
    let mut jobs = tokio::task::JoinSet::new();
    for n in 0..8 {
        let (a, gz) = (a.clone(), distinct_bundle("alice", &key, n));
        let sig = sign(&key, &gz);
        jobs.spawn(async move { a.submit(&gz, &sig).await });
    }
    for (i, id) in review.iter().enumerate() {
        let b = b.clone();
        let decision = if i % 2 == 0 { "approve" } else { "reject" };
        let path = format!("/api/v1/admin/submissions/{id}/decision");
        jobs.spawn(async move {
            b.admin_post(
                &path,
                json!({"decision": decision, "reason": "two writers"}),
            )
            .await
        });
    }
    let mut ok = 0;
    while let Some(r) = jobs.join_next().await {
        let (status, body) = r.unwrap();
        assert!(
            status == StatusCode::OK || status == StatusCode::CREATED,
            "{status}: {body}"
        );
        ok += 1;
    }
    assert_eq!(ok, 48);
    let c = a.counts().await;
    assert_eq!(c.submissions, 48);
    let counts = a.store.dataset_counts().await.unwrap();
    assert_eq!(counts.submissions, 8 + 20, "8 new, 20 approved");
}

/// Every answer, HTML pages and error pages included, carries a policy
/// that allows no inline script or style, and refuses framing and sniffing.
#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = TestApp::new().await;
    for path in [
        "/",
        "/leaderboard",
        "/no/such/page",
        "/api/v1/leaderboard",
        "/static/style.css",
    ] {
        let (_, h, _) = app
            .raw(
                axum::http::Request::get(path)
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await;
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        // The test service's public URL is https: HSTS too.
        assert_eq!(h["strict-transport-security"], "max-age=31536000", "{path}");
    }
}

/// The sign-in form from another site would plant a session cookie: it is
/// refused, with no cookie set.
#[tokio::test]
async fn sign_in_from_another_site_sets_no_cookie() {
    let app = TestApp::new().await;
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("origin", "null"),
        ("referer", "https://evil.example/x"),
    ] {
        let req = axum::http::Request::post("/admin/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header(name, value)
            .body(axum::body::Body::from(format!("token={ADMIN_TOKEN}")))
            .unwrap();
        let (status, h, body) = app.raw(req).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}: {value}");
        assert!(h.get("set-cookie").is_none());
        assert!(String::from_utf8_lossy(&body)
            .contains("must be sent from a page of https://wattcounts.test"));
    }
    let req = axum::http::Request::post("/admin/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", AUDIENCE)
        .body(axum::body::Body::from(format!("token={ADMIN_TOKEN}")))
        .unwrap();
    let (status, h, _) = app.raw(req).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(h.get("set-cookie").is_some());
}

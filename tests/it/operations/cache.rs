//! Response cache, ETags and compression (issue #5 groundwork): cached
//! answers carry an ETag and revalidate as 304; a new submission or a
//! moderation decision makes them stale at once; every route declares its
//! cache policy.

use crate::common::*;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;
use wattcounts::synth::Fault;

fn etag(r: &axum::response::Response) -> String {
    r.headers()[header::ETAG].to_str().unwrap().to_string()
}

#[tokio::test]
async fn cached_answers_revalidate_and_go_stale_on_new_data() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    app.submit(&gz, &sign(&key, &gz)).await;

    let path = "/api/v1/leaderboard?scenario=batch";
    let first = get_with_headers(&app, path, &[]).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["x-cache"], "miss");
    let tag = etag(&first);
    let second = get_with_headers(&app, path, &[]).await;
    assert_eq!(second.headers()["x-cache"], "hit");
    assert_eq!(etag(&second), tag);

    let not_modified = get_with_headers(&app, path, &[("if-none-match", &tag)]).await;
    assert_eq!(not_modified.status(), StatusCode::NOT_MODIFIED);
    assert!(not_modified
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .is_empty());

    // A flagged submission, then its approval: each makes the answer stale.
    let flagged = BundleBuilder::faulty(Fault::WarmStart, 5)
        .by("alice", &key)
        .build();
    let (_, r) = app.submit(&flagged, &sign(&key, &flagged)).await;
    let after_submit = get_with_headers(&app, path, &[]).await;
    assert_eq!(
        after_submit.headers()["x-cache"],
        "miss",
        "recomputed after a submission"
    );
    // needs_review rows are not shown, so the body, and its ETag, stay.
    assert_eq!(etag(&after_submit), tag);
    let still = get_with_headers(&app, path, &[("if-none-match", &tag)]).await;
    assert_eq!(still.status(), StatusCode::NOT_MODIFIED);
    let id = r["submission_id"].as_str().unwrap();
    app.admin_post(
        &format!("/api/v1/admin/submissions/{id}/decision"),
        json!({"decision": "approve", "reason": "ok"}),
    )
    .await;
    let after_decision = get_with_headers(&app, path, &[("if-none-match", &tag)]).await;
    assert_eq!(after_decision.status(), StatusCode::OK);
    assert_ne!(etag(&after_decision), tag, "the approved rows now count");
}

#[tokio::test]
async fn pages_are_gzip_compressed_when_asked() {
    let app = TestApp::new().await;
    let r = get_with_headers(&app, "/leaderboard", &[("accept-encoding", "gzip")]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[header::CONTENT_ENCODING], "gzip");
}

/// Another instance's writes reach this instance's cache through the data
/// stamp watcher (two apps on one database file here; PostgreSQL the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_instances_writes_make_answers_stale() {
    let a = TestApp::new().await;
    let url = format!("sqlite:{}", a.dir.path().join("test.db").display());
    let b = TestApp::with_store(
        wattcounts::store::open(&url).await.unwrap(),
        tempfile::tempdir().unwrap(),
        256 << 20,
    );
    tokio::spawn(
        a.service
            .clone()
            .watch_other_writers(std::time::Duration::from_millis(50)),
    );
    let path = "/api/v1/leaderboard";
    let before = get_with_headers(&a, path, &[]).await;
    assert_eq!(
        get_with_headers(&a, path, &[]).await.headers()["x-cache"],
        "hit",
        "cached on a"
    );
    let key = b.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    assert_eq!(b.submit(&gz, &sign(&key, &gz)).await.0, StatusCode::CREATED);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = get_with_headers(&a, path, &[]).await;
        if etag(&now) != etag(&before) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a never saw b's submission"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Every GET route the router registers answers with a Cache-Control its
/// route declared (an undeclared one would carry none, and trip the debug
/// check), and the pages readers load are kept like the others.
#[tokio::test]
async fn every_route_declares_its_cache_policy() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (_, receipt) = app.submit(&gz, &sign(&key, &gz)).await;
    let id = receipt["submission_id"].as_str().unwrap();
    let routes: Vec<String> = router_routes()
        .await
        .into_iter()
        .filter(|(m, _)| m == "get")
        .map(|(_, p)| p)
        .collect();
    assert!(routes.len() >= 40, "{routes:?}");
    for path in &routes {
        let url = path
            .replace(
                "{id}",
                if path.starts_with("/gpus") || path.starts_with("/api/v1/gpus") {
                    "l4"
                } else {
                    id
                },
            )
            .replace("{file}", "manifest.json")
            .replace("{rest}", "0/000")
            .replace("{handle}", "alice");
        let url = if path.contains("/models/") {
            path.replace("{id}", "Qwen/Qwen2.5-0.5B-Instruct")
        } else {
            url
        };
        let r = get_with_headers(&app, &url, &[]).await;
        let cc = r
            .headers()
            .get(header::CACHE_CONTROL)
            .unwrap_or_else(|| panic!("{url} answered {} without Cache-Control", r.status()));
        if r.status().is_client_error() || r.status().is_server_error() {
            assert_eq!(cc, "no-store", "{url}: an error is never kept");
        }
    }
    // Each was loaded once above: now it is answered from the cache.
    for path in [
        "/models",
        "/methodology",
        "/api/v1/models",
        "/checks",
        "/submit",
    ] {
        let again = get_with_headers(&app, path, &[]).await;
        assert_eq!(again.headers()["x-cache"], "hit", "{path} is not kept");
        assert_eq!(again.headers()[header::CACHE_CONTROL], "no-cache", "{path}");
    }
    for (path, want) in [
        ("/static/style.css", "public, max-age=3600"),
        ("/healthz", "no-store"),
        ("/admin", "no-store"),
        (
            &format!("/submissions/{id}/bundle.tar.gz")[..],
            "public, max-age=31536000, immutable",
        ),
    ] {
        assert_eq!(
            get_with_headers(&app, path, &[]).await.headers()[header::CACHE_CONTROL],
            want,
            "{path}"
        );
    }
}

#[tokio::test]
#[should_panic(expected = "without a declared CachePolicy")]
async fn a_route_without_a_cache_policy_fails_the_debug_check() {
    use wattcounts::web::layers::cache_policy;
    let router: axum::Router = axum::Router::new()
        .route("/undeclared", axum::routing::get(|| async { "hello" }))
        .layer(axum::middleware::from_fn(cache_policy::require_declared));
    let _ = router
        .oneshot(Request::get("/undeclared").body(Body::empty()).unwrap())
        .await;
}

#[tokio::test]
#[should_panic(expected = "set Cache-Control itself")]
async fn a_handler_writing_cache_control_fails_the_debug_check() {
    use wattcounts::web::layers::cache_policy::{self, CachePolicy};
    let handler = || async { ([(header::CACHE_CONTROL, "max-age=60")], "hello") };
    let router: axum::Router = axum::Router::new()
        .route(
            "/own-header",
            cache_policy::with_policy(CachePolicy::Revalidate, axum::routing::get(handler)),
        )
        .layer(axum::middleware::from_fn(cache_policy::require_declared));
    let _ = router
        .oneshot(Request::get("/own-header").body(Body::empty()).unwrap())
        .await;
}

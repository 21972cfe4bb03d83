//! Bytes that used to get through (issue #29): data after the tar, control
//! bytes in query strings, lookalike handles and replays that queued for a
//! check slot. Each case runs on SQLite and, with WATTCOUNTS_TEST_PG_URL, on
//! PostgreSQL.

use crate::common::*;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

/// A tar holding one file, with its end-of-archive marker.
fn tar_with(name: &str, data: &[u8]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o755);
    h.set_cksum();
    tar.append_data(&mut h, name, data).unwrap();
    tar.into_inner().unwrap()
}

/// The packed tar without its trailing zero blocks (marker and padding).
fn without_marker(tar: &[u8]) -> Vec<u8> {
    let mut end = tar.len();
    while end >= 512 && tar[end - 512..end].iter().all(|b| *b == 0) {
        end -= 512;
    }
    tar[..end].to_vec()
}

/// alice registered, with one bundle stored: (her key, the bundle).
async fn alice_with_a_bundle(app: &TestApp) -> (ssh_key::PrivateKey, Vec<u8>) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    (key, gz)
}

/// Submits signed bytes that must be refused for trailing data at `offset`.
async fn refused_at(app: &TestApp, key: &ssh_key::PrivateKey, gz: &[u8], offset: u64) -> Value {
    let before = app.stored().await;
    let (status, body) = app.submit(gz, &sign(key, gz)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "bundle_trailing_data");
    let d = first_detail(&body);
    assert_eq!(d["file"], "bundle.tar.gz", "{body}");
    assert_eq!(d["offset"], offset, "{body}");
    app.assert_nothing_stored_since(&before).await;
    body
}

/// (a) a second gzip member with a file no manifest lists, (b) 4 KiB of
/// random bytes after the gzip stream, (c) a file after the tar's
/// end-of-archive marker inside the one member: each a 422 that names the
/// byte offset and what is there, with nothing stored.
#[tokio::test]
async fn bytes_after_the_archive_are_refused_and_nothing_is_stored() {
    for app in both_backends().await {
        let key = app.register("alice").await;
        let good = BundleBuilder::fixture().by("alice", &key).build();
        let tar = gunzip(&good);
        let hidden = tar_with("system_info.txt.sh", b"#!/bin/sh\necho unseen\n");

        let first = gzip(&without_marker(&tar));
        let mut two_members = first.clone();
        two_members.extend_from_slice(&gzip(&hidden));
        let body = refused_at(&app, &key, &two_members, first.len() as u64).await;
        let message = first_detail(&body)["message"].as_str().unwrap();
        assert!(message.contains("a second gzip member"), "{message}");

        let mut random = good.clone();
        let mut x = 0x9e37_79b9_u32;
        random.extend((0..4096).map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        }));
        let body = refused_at(&app, &key, &random, good.len() as u64).await;
        let message = first_detail(&body)["message"].as_str().unwrap();
        assert!(
            message.contains("after the end of its gzip stream"),
            "{message}"
        );

        // One member: the tar's first zero block, then a hidden entry.
        let mut inner = without_marker(&tar);
        let marker_end = inner.len() as u64 + 512;
        inner.extend_from_slice(&[0u8; 512]);
        inner.extend_from_slice(&hidden);
        let body = refused_at(&app, &key, &gzip(&inner), marker_end).await;
        let message = first_detail(&body)["message"].as_str().unwrap();
        assert!(message.contains("end-of-archive marker"), "{message}");

        // The bundle as packed is still stored.
        let (status, body) = app.submit(&good, &sign(&key, &good)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
}

/// A maintainer's command on this SQLite app's data, which must find
/// something (exit 1); its output.
fn maintenance_command(app: &TestApp, args: &[&str]) -> String {
    let dir = app.dir.path();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .arg("--database-url")
        .arg(format!("sqlite:{}", dir.join("test.db").display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stdout}{stderr}");
    stdout
}

/// A bundle an older deployment stored with bytes after its tar is listed
/// by the audit (the service's and `db audit-bundles`), which changes
/// nothing; the clean one beside it is not listed.
#[tokio::test]
async fn the_audit_lists_stored_bundles_that_break_the_rule() {
    for app in both_backends().await {
        let (key, _) = alice_with_a_bundle(&app).await;
        let other = BundleBuilder::fixture().marked(1).by("alice", &key).build();
        let mut tailed = other.clone();
        tailed.extend_from_slice(b"appended after the gzip stream");
        let id = app.insert_stored_as_of_old(&other, &tailed, &key).await;
        let before = app.counts().await;

        let audit = app.service.audit_bundles(|_| {}).await.unwrap();
        assert_eq!(audit.checked, 2);
        assert_eq!(audit.findings.len(), 1, "{:?}", audit.findings);
        let f = &audit.findings[0];
        assert_eq!(f.submission, Some(id));
        assert_eq!(f.code, "bundle_trailing_data");
        assert!(
            f.message.contains(&format!("byte {}", other.len())),
            "{}",
            f.message
        );
        assert_eq!(app.counts().await, before, "the audit changes nothing");

        if matches!(app.raw, Some(RawDb::Sqlite(_))) {
            let stdout = maintenance_command(&app, &["db", "audit-bundles"]);
            assert!(stdout.contains(&format!("submission {id}")), "{stdout}");
            assert!(stdout.contains("bundle_trailing_data"), "{stdout}");
            assert!(stdout.contains("audited 2 stored bundles"), "{stdout}");
            assert!(stdout.contains("1 break a rule"), "{stdout}");
            let blob = wattcounts::store::blobs::BlobStore::relative_path(
                &wattcounts::digest::sha256_hex(&tailed),
            );
            let stored = std::fs::read(app.dir.path().join("blobs").join(blob)).unwrap();
            assert_eq!(stored, tailed, "the audit changes no bundle");
        }
    }
}

/// The percent-encoded forms no filter takes: NUL, other C0 bytes, DEL, a
/// C1 control, and byte sequences that are not UTF-8.
const BAD_VALUES: &[&str] = &[
    "%00",
    "a%00",
    "%01",
    "%09",
    "%0A",
    "%0D",
    "%1B",
    "%1F",
    "%7F",
    "%C2%85",
    "%FF",
    "%80",
    "%C3%28",
    "%ED%A0%80",
    "x%F0%28%8C%BC",
];

/// Query parameters the pages read beside the documented ones.
const PAGE_PARAMETERS: &[&str] = &["q", "ref", "done", "submission_id", "scenario", "origin"];

/// Every GET route the router registers, with its path parameters filled in.
async fn get_routes() -> Vec<String> {
    router_routes()
        .await
        .into_iter()
        .filter(|(method, _)| method == "get")
        .map(|(_, path)| {
            let filled: String = path
                .split('/')
                .skip(1)
                .map(|seg| {
                    if seg.starts_with('{') {
                        "/x".to_string()
                    } else {
                        format!("/{seg}")
                    }
                })
                .collect();
            if filled.is_empty() {
                "/".into()
            } else {
                filled
            }
        })
        .collect()
}

/// Every query parameter name the OpenAPI document lists for a GET.
fn documented_parameters(doc: &Value) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for p in item["get"]["parameters"].as_array().into_iter().flatten() {
            if p["in"] == "query" {
                names.insert(p["name"].as_str().unwrap().to_string());
            }
        }
    }
    names
}

/// Every documented query parameter (and those the pages read) on every
/// GET route, with each forbidden byte form: 400 `bad_query` naming the
/// parameter, never a 5xx, on both backends. Clean values still pass.
#[tokio::test]
async fn no_query_byte_reaches_a_handler() {
    for app in both_backends().await {
        alice_with_a_bundle(&app).await;
        let (_, doc) = app.get("/api/openapi.json").await;
        let mut names = documented_parameters(&doc);
        assert!(names.len() >= 10, "{names:?}");
        names.extend(PAGE_PARAMETERS.iter().map(|s| s.to_string()));
        let routes = get_routes().await;
        assert!(routes.len() >= 40, "{routes:?}");
        let mut cases = 0;
        for route in &routes {
            for name in &names {
                for bad in BAD_VALUES {
                    let uri = format!("{route}?page=1&{name}={bad}");
                    let (status, _, body) = app
                        .raw(Request::get(uri.as_str()).body(Body::empty()).unwrap())
                        .await;
                    assert_eq!(
                        status,
                        StatusCode::BAD_REQUEST,
                        "{uri}: {}",
                        String::from_utf8_lossy(&body)
                    );
                    let body: Value = serde_json::from_slice(&body).unwrap();
                    assert_eq!(body["error"]["code"], "bad_query", "{uri}");
                    assert_eq!(
                        body["error"]["details"][0]["parameter"],
                        name.as_str(),
                        "{uri}"
                    );
                    cases += 1;
                }
            }
            // In a parameter's name, too.
            let uri = format!("{route}?mo%00del=a");
            let (status, _, _) = app
                .raw(Request::get(uri.as_str()).body(Body::empty()).unwrap())
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        }
        eprintln!("{} cases on {}: all 400", cases, app.service.backend());
        // The guard refuses bytes, not filters: these are served.
        for uri in [
            "/api/v1/leaderboard?model=%C3%A9t%C3%A9",
            "/leaderboard?model=a+b&gpu=x",
            "/api/v1/leaderboard.csv?model=100%25",
        ] {
            let (status, _, body) = app
                .raw(Request::get(uri).body(Body::empty()).unwrap())
                .await;
            assert_eq!(
                status,
                StatusCode::OK,
                "{uri}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
}

/// Lookalikes of a registered handle are a 409 naming it; separators at
/// the ends or doubled are refused with the rule.
#[tokio::test]
async fn lookalike_handles_are_refused() {
    for app in both_backends().await {
        app.register("alice").await;
        for twin in ["aIice", "a1ice", "ALICE", "al1ce"] {
            let (status, body) = app.try_register(twin).await;
            assert_eq!(status, StatusCode::CONFLICT, "{twin}: {body}");
            assert_error(&body, "handle_taken");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains("'alice'"), "{twin}: {message}");
        }
        for bad in ["-alice", "alice-", "al--ice"] {
            let (status, body) = app.try_register(bad).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
            assert_error(&body, "bad_handle");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains("may not start or end"), "{bad}: {message}");
        }
        // Reserved names have lookalikes too.
        let (status, _) = app.try_register("admln").await;
        assert_eq!(status, StatusCode::CONFLICT);
        // A different handle is fine.
        let (status, body) = app.try_register("alicia").await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
}

/// Handles registered before the rule that collide under it are listed by
/// `admin handle-collisions`, oldest first; nothing is renamed.
#[tokio::test]
async fn existing_lookalikes_are_listed_for_maintainers() {
    let app = TestApp::new().await;
    add_submitter(&*app.store, "alice", &new_key()).await;
    add_submitter(&*app.store, "bob", &new_key()).await;
    // As an older deployment stored them: the store fills skeletons for
    // rows without one when it opens, and this one's is alice's.
    add_submitter_without_skeleton(&app, "a1ice").await;
    let stdout = maintenance_command(&app, &["admin", "handle-collisions"]);
    assert!(
        stdout.contains("lookalikes: alice, a1ice (registered first: alice)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 group(s) of lookalike handles among 3 registered"),
        "{stdout}"
    );
    assert!(app
        .store
        .handles()
        .await
        .unwrap()
        .contains(&"a1ice".to_string()));
}

async fn add_submitter_without_skeleton(app: &TestApp, handle: &str) {
    let key = new_key();
    add_submitter(&*app.store, &format!("tmp{handle}"), &key).await;
    let sql = format!(
        "UPDATE submitters SET handle = '{handle}', handle_lower = '{}', handle_skeleton = NULL WHERE handle = 'tmp{handle}'",
        handle.to_lowercase()
    );
    app.raw.as_ref().unwrap().exec(&sql).await;
}

/// 50 uploads at once of a bundle already stored: each answered with the
/// stored receipt, none waiting for a check slot, one row. The service has
/// one slot and no queue, so a replay that queued would be a 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replays_of_stored_bytes_take_no_check_slot() {
    let mut apps = vec![
        TestApp::configured(|c| {
            c.max_concurrent_ingests = Some(1);
            c.ingest_queue = 0;
        })
        .await,
    ];
    apps.extend(
        TestApp::postgres_in(&pg_schema(), |c| {
            c.max_concurrent_ingests = Some(1);
            c.ingest_queue = 0;
        })
        .await,
    );
    for app in apps {
        let (key, gz) = alice_with_a_bundle(&app).await;
        let sig = sign(&key, &gz);
        // The same bytes again, one at a time: the stored receipt.
        let (status, stored) = app.submit(&gz, &sig).await;
        assert_eq!(status, StatusCode::OK, "{stored}");
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let router = app.router.clone();
                let req = multipart(&[("bundle", gz.as_slice()), ("signature", sig.as_slice())]);
                tokio::spawn(async move {
                    use http_body_util::BodyExt;
                    use tower::ServiceExt;
                    let resp = router.oneshot(req).await.unwrap();
                    let status = resp.status();
                    let body = resp.into_body().collect().await.unwrap().to_bytes();
                    (status, serde_json::from_slice::<Value>(&body).unwrap())
                })
            })
            .collect();
        let mut ok = 0;
        for t in tasks {
            let (status, body) = t.await.unwrap();
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["submission_id"], stored["submission_id"]);
            ok += 1;
        }
        assert_eq!(ok, 50);
        assert_eq!(app.counts().await.submissions, 1);
    }
}

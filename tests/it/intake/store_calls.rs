//! An upload's budget of store calls, counted at the door every store call
//! passes (`store::calls::Calls`, bounded as `serve` bounds a networked
//! store), on both backends, with the rate limits on: a new bundle at most 9 calls (the
//! insert hands back the receipt it wrote, nothing is read back), the same
//! bytes again at most 9 (the address's rate-limit hit, the digest lookup,
//! the stored signature, whose key the replay's signature is checked
//! against, the stored receipt's four reads, and the log's leaf and hashes
//! for its proof).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::StatusCode;
use wattcounts::store::calls::CallCounts;
use wattcounts::store::Store;

use crate::common::*;

const NEW_UPLOAD_BUDGET: u64 = 9;
const REPLAY_BUDGET: u64 = 9;

fn total(calls: &BTreeMap<&'static str, u64>) -> u64 {
    calls.values().sum()
}

/// The upload as a socket delivers it: with the client's address, so the
/// per-address limit counts too.
async fn submit_from_a_client(
    app: &TestApp,
    bundle: &[u8],
    signature: &[u8],
) -> (StatusCode, serde_json::Value) {
    let mut req = multipart(&[("bundle", bundle), ("signature", signature)]);
    let peer: std::net::SocketAddr = "192.0.2.7:40000".parse().unwrap();
    req.extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    app.send(req).await
}

async fn upload_within_budget(
    store: Arc<dyn Store>,
    calls: Arc<CallCounts>,
    dir: tempfile::TempDir,
    backend: &str,
) {
    // Rate limits on, as `serve` runs by default: each counts one hit.
    let app = TestApp::with_store_config(store, dir, |c| {
        c.submit_limit_per_ip = 1000;
        c.submit_limit_per_key = 1000;
    });
    let key = app.register("alice").await;
    // `serve` claims the log's key at start (`Service::start_log`); this
    // app does it with its first upload, which is not the one measured.
    let warm_up = BundleBuilder::fixture().marked(1).by("alice", &key).build();
    let (status, body) = app.submit(&warm_up, &sign(&key, &warm_up)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let bundle = BundleBuilder::fixture().by("alice", &key).build();
    let signature = sign(&key, &bundle);
    calls.take();

    let (status, body) = submit_from_a_client(&app, &bundle, &signature).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let first = calls.take();
    assert!(
        total(&first) <= NEW_UPLOAD_BUDGET,
        "{backend}: a new upload made {} store calls (budget {NEW_UPLOAD_BUDGET}): {first:?}",
        total(&first)
    );
    assert_eq!(
        first.get("insert_submission"),
        Some(&1),
        "{backend}: {first:?}"
    );

    // The receipt built from what was written is the one read back later.
    let (status, stored) = app
        .get(&format!(
            "/api/v1/submissions/{}",
            body["submission_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        stored, body,
        "{backend}: the first answer and the stored receipt differ"
    );

    calls.take();
    let (status, again) = submit_from_a_client(&app, &bundle, &signature).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, body);
    let replay = calls.take();
    assert!(
        total(&replay) <= REPLAY_BUDGET,
        "{backend}: a replay made {} store calls (budget {REPLAY_BUDGET}): {replay:?}",
        total(&replay)
    );
    assert!(
        !replay.contains_key("insert_submission"),
        "{backend}: {replay:?}"
    );
    eprintln!(
        "{backend}: new upload {} store calls {first:?}; replay {} {replay:?}",
        total(&first),
        total(&replay)
    );
}

#[tokio::test]
async fn an_upload_stays_within_its_store_calls_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("test.db").display());
    let calls = Arc::new(CallCounts::default());
    let store = wattcounts::store::sqlite::SqliteStore::open(&url)
        .await
        .unwrap()
        .bounded(Default::default())
        .counting(calls.clone());
    upload_within_budget(Arc::new(store), calls, dir, "sqlite").await;
}

#[tokio::test]
async fn an_upload_stays_within_its_store_calls_on_postgres() {
    let Some(url) = pg_url() else { return };
    let calls = Arc::new(CallCounts::default());
    let store = wattcounts::store::postgres::PgStore::open(&url, Some(&pg_schema()))
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {url}: {e:#}"))
        .bounded(Default::default())
        .counting(calls.clone());
    let dir = tempfile::tempdir().unwrap();
    upload_within_budget(Arc::new(store), calls, dir, "postgres").await;
}

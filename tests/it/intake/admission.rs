//! Bounded memory and disk per upload and in total (issue #13, item 3):
//! the body goes to a staging file, the signature is checked against the
//! digests taken on the way before anything is unpacked, one file is held
//! at most `max_entry_bytes`, the staging disk has a cap, and ingests wait
//! in a bounded queue (503 with Retry-After beyond it).

use axum::http::StatusCode;

use crate::common::*;

/// Files in the staging folder, which an upload has made: a test that
/// looked elsewhere would find nothing and pass.
fn staging_files(app: &TestApp) -> usize {
    walk_files(&app.dir.path().join("blobs/tmp")).len()
}

/// The largest file of the fixture is over the per-file cap: 413 naming
/// it, from a bundle that is otherwise valid and signed.
#[tokio::test]
async fn a_file_over_the_entry_cap_is_refused_by_name() {
    let (largest, size) = fixture()
        .files
        .iter()
        .map(|(p, d)| (p.clone(), d.len() as u64))
        .max_by_key(|(_, n)| *n)
        .unwrap();
    let app = TestApp::configured(|c| c.max_entry_bytes = size - 1).await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_error(&body, "entry_too_large");
    assert!(
        first_detail(&body)["file"]
            .as_str()
            .unwrap()
            .ends_with(&largest),
        "{body}"
    );
    app.assert_nothing_stored_since(&before).await;
    assert_eq!(staging_files(&app), 0, "the staging file is gone");

    // At the cap exactly, the same bundle is stored.
    let app = TestApp::configured(|c| c.max_entry_bytes = size).await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A bomb with a bad signature is refused for its signature (403), not
/// inflated first (413).
#[tokio::test]
async fn the_signature_is_checked_before_anything_is_unpacked() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let zeros = vec![0u8; 64 << 20];
    let bomb = archive(b"{}", &[("zeros.bin".to_string(), zeros)]);
    assert!(bomb.len() < (1 << 20), "{} bytes", bomb.len());
    let (status, body) = app.submit(&bomb, &sign(&key, b"other bytes")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "bad_signature");
    // Signed properly, the same bomb is refused while inflating.
    let before = app.stored().await;
    let (status, body) = app.submit(&bomb, &sign(&key, &bomb)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    app.assert_nothing_stored_since(&before).await;
    assert_eq!(staging_files(&app), 0);
}

/// Uploads beyond the staging cap: 503 with Retry-After, nothing stored,
/// no staging file left.
#[tokio::test]
async fn a_full_staging_disk_answers_503_with_retry_after() {
    let app = TestApp::configured(|c| c.max_staging_bytes = 4096).await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    assert!(gz.len() > 4096);
    let before = app.stored().await;
    let (status, headers, body) = app
        .raw(multipart(&[
            ("bundle", gz.as_slice()),
            ("signature", &sign(&key, &gz)),
        ]))
        .await;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_error(&body, "staging_full");
    assert_eq!(headers["retry-after"], "10");
    app.assert_nothing_stored_since(&before).await;
    assert_eq!(staging_files(&app), 0);
}

/// One ingest at a time and no queue: of eight uploads at once, those
/// that found the gate taken get 503 with Retry-After and store nothing;
/// sent again, they are stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ingests_beyond_the_queue_get_503_and_succeed_later() {
    let app = std::sync::Arc::new(
        TestApp::configured(|c| {
            c.max_concurrent_ingests = Some(1);
            c.ingest_queue = 0;
        })
        .await,
    );
    let key = app.register("alice").await;
    let bundles: Vec<(Vec<u8>, Vec<u8>)> = (0..8)
        .map(|n| {
            let gz = BundleBuilder::fixture().marked(n).by("alice", &key).build();
            let sig = sign(&key, &gz);
            (gz, sig)
        })
        .collect();
    let mut jobs = tokio::task::JoinSet::new();
    for (i, (gz, sig)) in bundles.iter().cloned().enumerate() {
        let app = app.clone();
        jobs.spawn(async move {
            let (status, headers, body) = app
                .raw(multipart(&[("bundle", gz.as_slice()), ("signature", &sig)]))
                .await;
            (i, status, headers.get("retry-after").cloned(), body)
        });
    }
    let mut refused = Vec::new();
    let mut stored = 0;
    while let Some(r) = jobs.join_next().await {
        let (i, status, retry, body) = r.unwrap();
        match status {
            StatusCode::CREATED => stored += 1,
            StatusCode::SERVICE_UNAVAILABLE => {
                let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_error(&body, "ingest_queue_full");
                assert_eq!(retry.unwrap(), "10");
                refused.push(i);
            }
            other => panic!("{other}: {}", String::from_utf8_lossy(&body)),
        }
    }
    assert!(stored >= 1, "the first one in is stored");
    assert!(
        !refused.is_empty(),
        "eight at once cannot all pass one gate"
    );
    assert_eq!(app.counts().await.submissions, stored);
    for i in refused {
        let (gz, sig) = &bundles[i];
        let (status, body) = app.submit(gz, sig).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    assert_eq!(app.counts().await.submissions, 8);
}

/// Fifty first-time copies of one bundle at once, with one ingest slot and
/// no queue: one is ingested (201), the other 49 wait for it outside the
/// queue and get its receipt (200); none is refused, one row is stored.
#[tokio::test]
async fn fifty_copies_of_one_new_bundle_share_one_ingest() {
    let app = std::sync::Arc::new(
        TestApp::configured(|c| {
            c.max_concurrent_ingests = Some(1);
            c.ingest_queue = 0;
        })
        .await,
    );
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let mut jobs = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let (app, gz, sig) = (app.clone(), gz.clone(), sig.clone());
        jobs.spawn(async move { app.submit(&gz, &sig).await });
    }
    let (mut created, mut replayed) = (0, 0);
    let mut ids = std::collections::BTreeSet::new();
    while let Some(r) = jobs.join_next().await {
        let (status, body) = r.unwrap();
        match status {
            StatusCode::CREATED => created += 1,
            StatusCode::OK => replayed += 1,
            other => panic!("{other}: {body}"),
        }
        ids.insert(body["submission_id"].as_str().unwrap().to_string());
    }
    assert_eq!((created, replayed), (1, 49));
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(app.counts().await.submissions, 1);
}

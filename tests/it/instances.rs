//! Several `serve` processes on one PostgreSQL database and one data dir
//! (issue #7): the same bundle sent to two instances at once is stored once
//! and both answer with the same receipt; 64 distinct bundles spread over
//! both instances all land. Real processes, real PostgreSQL; skipped without
//! WATTCOUNTS_TEST_PG_URL.

use crate::common::*;
use wattcounts::store::{postgres::PgStore, Store};

fn start(database_url: &str, data: &std::path::Path) -> Server {
    spawn_server(&[
        "--public-url",
        AUDIENCE,
        "--database-url",
        database_url,
        "--data-dir",
        data.to_str().unwrap(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_one_database() {
    let Some(base) = pg_url() else { return };
    let schema = pg_schema();
    let store = PgStore::open(&base, Some(&schema)).await.unwrap();
    let key = new_key();
    add_submitter(&store, "alice", &key).await;
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    let data = tempfile::tempdir().unwrap();
    let a = start(&url, data.path());
    let b = start(&url, data.path());
    let client = reqwest::Client::new();

    // One bundle, both instances, at the same moment.
    let gz = bundle("alice", &key);
    let sig = sign(&key, &gz);
    let (ra, rb) = tokio::join!(
        submit_over_http(&client, &a.url, gz.clone(), sig.clone()),
        submit_over_http(&client, &b.url, gz.clone(), sig.clone())
    );
    let mut statuses = [ra.0, rb.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 201], "{} / {}", ra.1, rb.1);
    assert_eq!(ra.1, rb.1, "both answer with the same receipt");
    assert_eq!(store.counts().await.unwrap().submissions, 1);

    // 64 distinct bundles spread over both, 16 in flight at a time.
    let mut pending: Vec<(String, Vec<u8>, Vec<u8>)> = (0..64)
        .map(|i| {
            let gz = distinct_bundle("alice", &key, i + 1);
            let sig = sign(&key, &gz);
            let server = if i % 2 == 0 { &a.url } else { &b.url };
            (server.clone(), gz, sig)
        })
        .collect();
    let mut created = 0;
    while !pending.is_empty() {
        let batch: Vec<_> = pending.drain(..pending.len().min(16)).collect();
        let mut set = tokio::task::JoinSet::new();
        for (server, gz, sig) in batch {
            let client = client.clone();
            set.spawn(async move { submit_over_http(&client, &server, gz, sig).await });
        }
        while let Some(r) = set.join_next().await {
            let (status, body) = r.unwrap();
            assert_eq!(status, 201, "{body}");
            created += 1;
        }
    }
    assert_eq!(created, 64);
    let counts = store.counts().await.unwrap();
    assert_eq!((counts.submissions, counts.runs), (65, 65 * 18));
    // Both instances wrote to the same groups at once, each holding the
    // group's row lock: no submission is lost from any group, and the
    // counters agree.
    let board: serde_json::Value = client
        .get(format!("{}/api/v1/leaderboard?per_page=1000", a.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entries = board["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 6, "2 models × 3 scenarios: {board}");
    assert!(
        entries
            .iter()
            .all(|e| e["submissions"] == 65 && e["iterations"] == 65 * 3),
        "{board}"
    );
    let stats: serde_json::Value = client
        .get(format!("{}/api/v1/stats", b.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["counts"]["submissions"], 65);
    assert_eq!(stats["counts"]["iterations"], 65 * 18);
    // Every receipt is readable from either instance.
    let (_, r) = submit_over_http(&client, &b.url, gz, sig).await;
    assert_eq!(r, ra.1);
}

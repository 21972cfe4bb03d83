//! The transparency log (issue #15) through the service, on both backends:
//! receipts whose proofs verify offline, decisions as leaves, proofs and
//! tiles read from the database against a tree rebuilt in memory, the
//! start-up backfill, restart / rebuild / copy keeping the log byte for
//! byte, one linear log from two PostgreSQL instances, a foreign key
//! refused, snapshots that prove their rows are in the log, and a monitor
//! that catches a rewritten leaf.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{json, Value};
use wattcounts::receipt::Receipt;
use wattcounts::snapshot::log_check;
use wattcounts::tlog::audit;
use wattcounts::tlog::checkpoint::{open_checkpoint, LogKey};
use wattcounts::tlog::{leaf_hash, verify_consistency, verify_inclusion, Hash, Leaf, StoredHashes};

fn h64(s: &str) -> Hash {
    use base64::prelude::{Engine, BASE64_STANDARD};
    Hash(BASE64_STANDARD.decode(s).unwrap().try_into().unwrap())
}

/// Submits `n` distinct accepted bundles signed by `key`; their ids.
async fn submit_many(
    app: &TestApp,
    handle: &str,
    key: &ssh_key::PrivateKey,
    from: usize,
    n: usize,
) -> Vec<String> {
    let mut ids = Vec::new();
    for i in from..from + n {
        let gz = BundleBuilder::fixture().marked(i).by(handle, key).build();
        let (status, body) = app.submit(&gz, &sign(key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        ids.push(body["submission_id"].as_str().unwrap().to_string());
    }
    ids
}

/// Every leaf, through the API (pages of at most 1,000).
async fn all_entries(app: &TestApp) -> Vec<String> {
    let (_, log) = app.get("/api/v1/log").await;
    let size = log["size"].as_u64().unwrap();
    let mut out = Vec::new();
    let mut start = 0;
    while start < size {
        let end = (start + 1000).min(size);
        let (status, body) = app
            .get(&format!("/api/v1/log/entries?start={start}&end={end}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for e in body["entries"].as_array().unwrap() {
            assert_eq!(e["index"].as_u64().unwrap(), out.len() as u64);
            out.push(e["leaf"].as_str().unwrap().to_string());
        }
        start = end;
    }
    out
}

#[tokio::test]
async fn receipts_carry_a_proof_that_verifies_offline() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let (status, first) = app.submit(&gz, &sig).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let log = &first["log"];
    assert_eq!(
        (log["index"].as_u64(), log["tree_size"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(log["proof"]
        .as_str()
        .unwrap()
        .starts_with("c2sp.org/tlog-proof@v1\nindex 0\n"));
    let leaf: Value = serde_json::from_str(log["leaf"].as_str().unwrap()).unwrap();
    assert_eq!(leaf["kind"], "submission");
    assert_eq!(leaf["submission_id"], first["submission_id"]);
    assert_eq!(leaf["bundle_sha256"], first["bundle_sha256"]);
    assert_eq!(leaf["status"], "accepted");
    assert_eq!(
        leaf["key_fingerprint"],
        wattcounts::signing::fingerprint(key.public_key())
    );

    let receipt: Receipt = serde_json::from_value(first.clone()).unwrap();
    let verifier = test_log_verifier();
    let facts = audit::verify_receipt(&receipt, &verifier, Some(&receipt.bundle_sha256)).unwrap();
    assert_eq!((facts.index, facts.tree_size), (0, 1));
    // Another key, another bundle, an edited leaf or proof: refused.
    let (_, other) = LogKey::generate("wattcounts.test/log").unwrap();
    assert!(audit::verify_receipt(&receipt, other.verifier_key(), None)
        .unwrap_err()
        .contains("not signed by the log key"));
    assert!(
        audit::verify_receipt(&receipt, &verifier, Some(&"0".repeat(64)))
            .unwrap_err()
            .contains("the bundle file's sha256")
    );
    let mut edited = receipt.clone();
    let l = edited.log.as_mut().unwrap();
    l.leaf = l.leaf.replace("\"accepted\"", "\"rejected\"");
    assert!(audit::verify_receipt(&edited, &verifier, None)
        .unwrap_err()
        .contains("does not put this leaf"));
    let mut moved = receipt.clone();
    moved.received_at = "2020-01-01T00:00:00.000Z".into();
    assert!(audit::verify_receipt(&moved, &verifier, None)
        .unwrap_err()
        .contains("received_at"));

    // More leaves later; the same bytes again: the very same receipt.
    submit_many(&app, "alice", &key, 1, 2).await;
    let (status, again) = app.submit(&gz, &sig).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, first);
    let (_, fetched) = app
        .get(&format!(
            "/api/v1/submissions/{}",
            first["submission_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(fetched["log"], first["log"]);

    // The command line, offline: exit 0, and 1 with another key.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipt.json");
    std::fs::write(&path, serde_json::to_vec(&first).unwrap()).unwrap();
    let bundle_path = dir.path().join("run.tar.gz");
    std::fs::write(&bundle_path, &gz).unwrap();
    let key_path = dir.path().join("log.pub");
    std::fs::write(&key_path, format!("{verifier}\n")).unwrap();
    let cli = |k: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
            .args(["verify", "receipt"])
            .arg(&path)
            .args(["--log-key", k, "--bundle"])
            .arg(&bundle_path)
            .output()
            .unwrap()
    };
    let ok = cli(key_path.to_str().unwrap());
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        out.contains("is leaf 0 of the log 'wattcounts.test/log'"),
        "{out}"
    );
    let bad = cli(other.verifier_key());
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stdout).contains("NOT VERIFIED"));
    // Bytes after the gzip stream: refused by the unpacker's rule before
    // any digest is compared, with the offset.
    let mut tailed = gz.clone();
    tailed.extend_from_slice(b"hidden");
    std::fs::write(&bundle_path, &tailed).unwrap();
    let tail = cli(key_path.to_str().unwrap());
    let out = String::from_utf8_lossy(&tail.stdout);
    assert_eq!(tail.status.code(), Some(1), "{out}");
    assert!(
        out.contains("NOT VERIFIED") && out.contains("bundle_trailing_data"),
        "{out}"
    );
    assert!(out.contains(&format!("@{}", gz.len())), "{out}");

    // The submission page shows its leaf and a proof link that answers.
    let (status, page) = html_page(
        &app,
        &format!("/submissions/{}", first["submission_id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let log_text = texts(&page, "#log + p").join(" ");
    assert!(log_text.contains("leaf 0 of the public log"), "{log_text}");
    let link = page
        .select(&scraper::Selector::parse("#log + p a[href^='/api/v1/log/inclusion']").unwrap())
        .next()
        .unwrap()
        .value()
        .attr("href")
        .unwrap()
        .to_string();
    let (status, proof) = app.get(&link).await;
    assert_eq!(status, StatusCode::OK, "{proof}");
    assert_eq!(proof["index"], 0);
}

#[tokio::test]
async fn decisions_and_revocations_are_leaves() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let ids = submit_many(&app, "alice", &key, 0, 3).await;
    let (status, body) = app
        .admin_post(
            &format!("/api/v1/admin/submissions/{}/decision", ids[0]),
            json!({"decision": "reject", "reason": "duplicate hardware"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["moderation"][0]["log_index"], 3);
    let fp = wattcounts::signing::fingerprint(key.public_key());
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/keys/revoke",
            json!({"fingerprint": fp, "effective_at": "2000-01-01T00:00:00Z", "reason": "key leaked"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let leaves: Vec<Leaf> = all_entries(&app)
        .await
        .iter()
        .map(|l| Leaf::parse(l.as_bytes()).unwrap())
        .collect();
    // 3 submissions, the rejection, the revocation, and the two remaining
    // submissions it turned down.
    assert_eq!(leaves.len(), 7, "{leaves:?}");
    let kinds: Vec<String> = leaves
        .iter()
        .map(|l| match l {
            Leaf::Submission { .. } => "submission".to_string(),
            Leaf::Decision {
                action,
                subject,
                to_status,
                ..
            } => format!("{action} {subject} {to_status}"),
            Leaf::PeerImport { origin, .. } => format!("peer_import {origin}"),
        })
        .collect();
    assert_eq!(kinds[..3], ["submission", "submission", "submission"]);
    assert_eq!(kinds[3], format!("reject {} rejected", ids[0]));
    assert_eq!(kinds[4], format!("revoke_key {fp} "));
    let mut tail = kinds[5..].to_vec();
    tail.sort();
    let mut want = vec![
        format!("reject {} rejected", ids[1]),
        format!("reject {} rejected", ids[2]),
    ];
    want.sort();
    assert_eq!(tail, want);
    if let Leaf::Decision { reason, actor, .. } = &leaves[3] {
        assert_eq!(
            (reason.as_str(), actor.as_str()),
            ("duplicate hardware", "maintainer")
        );
    }
    // The /log page lists them newest first, linked to their submissions.
    let (status, page) = html_page(&app, "/log").await;
    assert_eq!(status, StatusCode::OK);
    let first_row = texts(&page, "tbody tr td.num");
    assert_eq!(first_row[0], "6");
    assert!(texts(&page, "dd code")
        .iter()
        .any(|t| t == &test_log_verifier()));
}

/// Proofs, roots and tiles served from the stored hashes equal those of a
/// tree built in memory from the same leaves; bad requests name the fault.
async fn proofs_match_the_tree_in_memory(app: TestApp) {
    let key = app.register("alice").await;
    submit_many(&app, "alice", &key, 0, 3).await;
    // Many leaves quickly: rows inserted through the store's own insert
    // (each appends its leaf in its transaction).
    app.insert_copies(
        &BundleBuilder::fixture().by("alice", &key).build(),
        &key,
        297,
        wattcounts::domain::Status::Accepted,
    )
    .await;
    let leaves = all_entries(&app).await;
    assert_eq!(leaves.len(), 300);
    let mem = memory_tree(&leaves);
    let verifier = test_log_verifier();
    let sample = [
        (0u64, 1u64),
        (0, 300),
        (1, 2),
        (5, 8),
        (99, 100),
        (100, 257),
        (255, 256),
        (256, 300),
        (299, 300),
        (7, 129),
    ];
    for (index, size) in sample {
        let (status, p) = app
            .get(&format!("/api/v1/log/inclusion?index={index}&size={size}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{p}");
        let hashes: Vec<Hash> = p["hashes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h64(h.as_str().unwrap()))
            .collect();
        assert_eq!(
            hashes,
            mem.inclusion(index, size).unwrap(),
            "inclusion of {index} in {size}"
        );
        let cp = open_checkpoint(p["checkpoint"].as_str().unwrap().as_bytes(), &verifier).unwrap();
        assert_eq!((cp.size(), *cp.hash()), (size, mem.root(size).unwrap()));
        verify_inclusion(
            &hashes,
            size,
            *cp.hash(),
            index,
            leaf_hash(leaves[index as usize].as_bytes()),
        )
        .unwrap();
        if index > 0 {
            let (status, c) = app
                .get(&format!("/api/v1/log/consistency?from={index}&to={size}"))
                .await;
            assert_eq!(status, StatusCode::OK, "{c}");
            let hashes: Vec<Hash> = c["hashes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h64(h.as_str().unwrap()))
                .collect();
            assert_eq!(hashes, mem.consistency(index, size).unwrap());
            verify_consistency(
                &hashes,
                size,
                mem.root(size).unwrap(),
                index,
                mem.root(index).unwrap(),
            )
            .unwrap();
        }
    }
    // Tiles: the first full hash tile, a partial one, an entry bundle.
    let tile = |path: String| {
        let app = &app;
        async move {
            app.raw(
                axum::http::Request::get(path)
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
        }
    };
    let (status, headers, data) = tile("/log/tile/0/000".into()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(data.len(), 256 * 32);
    assert_eq!(
        tlog_tiles::Tile::subtree_hash(&data),
        mem.root(256).unwrap()
    );
    let (status, _, part) = tile("/log/tile/0/001.p/44".into()).await;
    assert_eq!(status, StatusCode::OK);
    let want: Vec<u8> = (256..300)
        .flat_map(|i| leaf_hash(leaves[i].as_bytes()).0)
        .collect();
    assert_eq!(part.to_vec(), want);
    let (status, _, bundle) = tile("/log/tile/entries/001.p/44".into()).await;
    assert_eq!(status, StatusCode::OK);
    let got = wattcounts::tlog::tiles::read_bundle(&bundle).unwrap();
    assert_eq!(got.len(), 44);
    assert_eq!(got[0], leaves[256].as_bytes());
    let (status, _, level1) = tile("/log/tile/1/000.p/1".into()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(level1.to_vec(), mem.root(256).unwrap().0.to_vec());
    for (path, want) in [
        ("/log/tile/0/001", StatusCode::NOT_FOUND),
        ("/log/tile/0/001.p/45", StatusCode::NOT_FOUND),
        ("/log/tile/0/001.p/0", StatusCode::NOT_FOUND),
        ("/log/tile/0/1", StatusCode::NOT_FOUND),
        ("/log/tile/entries/x001/000", StatusCode::NOT_FOUND),
    ] {
        assert_eq!(tile(path.into()).await.0, want, "{path}");
    }
    for (query, code) in [
        ("/api/v1/log/inclusion?index=5&size=301", "bad_log_request"),
        ("/api/v1/log/inclusion?index=5&size=5", "bad_log_request"),
        ("/api/v1/log/inclusion?index=x", "bad_parameter"),
        ("/api/v1/log/inclusion", "bad_parameter"),
        ("/api/v1/log/consistency?from=10&to=5", "bad_log_request"),
        ("/api/v1/log/entries?start=0&end=1001", "bad_log_request"),
    ] {
        let (status, body) = app.get(query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_error(&body, code);
    }
    // The published checkpoint advances on demand.
    let (status, published) = app
        .admin_post("/api/v1/admin/log/checkpoint", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    assert_eq!(published["size"], 300);
    let (_, _, cp) = tile("/log/checkpoint".into()).await;
    let cp = open_checkpoint(&cp, &verifier).unwrap();
    assert_eq!((cp.size(), *cp.hash()), (300, mem.root(300).unwrap()));
}

#[tokio::test]
async fn proofs_and_tiles_from_sqlite_match_the_tree_in_memory() {
    proofs_match_the_tree_in_memory(TestApp::new().await).await;
}

#[tokio::test]
async fn proofs_and_tiles_from_postgres_match_the_tree_in_memory() {
    let Some(app) = TestApp::postgres().await else {
        return;
    };
    proofs_match_the_tree_in_memory(app).await;
}

#[tokio::test]
async fn backfill_restart_rebuild_and_copy_keep_the_log() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let ids = submit_many(&app, "alice", &key, 0, 3).await;
    let (status, _) = app
        .admin_post(
            &format!("/api/v1/admin/submissions/{}/decision", ids[1]),
            json!({"decision": "reject", "reason": "bad cooling"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.service.start_log().await.unwrap();

    // A deployment from before the log: no leaves, no log indexes.
    let raw = app.raw.as_ref().unwrap();
    for sql in [
        "DELETE FROM log_entries",
        "DELETE FROM log_hashes",
        "DELETE FROM log_checkpoints",
        "UPDATE submissions SET log_index = NULL",
        "UPDATE moderation_events SET log_index = NULL",
    ] {
        raw.exec(sql).await;
    }
    assert_eq!(app.service.start_log().await.unwrap(), 4);
    assert_eq!(app.service.start_log().await.unwrap(), 0, "appended once");
    let leaves = all_entries(&app).await;
    let parsed: Vec<Leaf> = leaves
        .iter()
        .map(|l| Leaf::parse(l.as_bytes()).unwrap())
        .collect();
    // Received order; the rejected one was stored as accepted, then rejected.
    for (i, id) in ids.iter().enumerate() {
        match &parsed[i] {
            Leaf::Submission {
                submission_id,
                status,
                ..
            } => {
                assert_eq!((submission_id, status.as_str()), (id, "accepted"));
            }
            other => panic!("leaf {i}: {other:?}"),
        }
    }
    assert!(matches!(&parsed[3], Leaf::Decision { subject, .. } if subject == &ids[1]));
    let (_, log) = app.get("/api/v1/log").await;
    assert_eq!(
        (
            log["backfilled"].as_u64(),
            log["backfilled_first"].as_u64(),
            log["backfilled_last"].as_u64()
        ),
        (Some(4), Some(0), Some(3))
    );
    let (_, page) = html_page(&app, "/log").await;
    assert!(texts(&page, "dd")
        .iter()
        .any(|t| t.contains("4 of them (indexes 0–3) were backfilled")));
    // New leaves after the backfill are not marked.
    submit_many(&app, "alice", &key, 10, 1).await;
    let (_, log) = app.get("/api/v1/log").await;
    assert_eq!(
        (log["size"].as_u64(), log["backfilled"].as_u64()),
        (Some(5), Some(4))
    );

    let before = log_tables(app.store.as_ref()).await;
    // db rebuild recomputes the read model and leaves the log alone.
    app.service.rebuild(|_| {}).await.unwrap();
    assert_eq!(log_tables(app.store.as_ref()).await, before);
    // A restart (the same file opened again) has the same tree.
    let url = format!("sqlite:{}", app.dir.path().join("test.db").display());
    let reopened = wattcounts::store::sqlite::SqliteStore::open(&url)
        .await
        .unwrap();
    assert_eq!(log_tables(&reopened).await, before);
    let mem = memory_tree(&leaves_of(&before));
    assert_eq!(before.1.len() as u64, tlog_tiles::stored_hash_count(5));
    assert_eq!(
        tlog_tiles::HashReader::read_hashes(&mem, &(0..before.1.len() as u64).collect::<Vec<_>>())
            .unwrap(),
        before.1
    );

    // db copy to PostgreSQL carries the log byte for byte, key included.
    let Some(pg) = pg_url() else { return };
    let schema = pg_schema();
    let target = wattcounts::store::postgres::PgStore::open(&pg, Some(&schema))
        .await
        .unwrap();
    wattcounts::store::copy::sqlite_to_postgres(reopened.pool(), target.pool(), |_, _| {})
        .await
        .unwrap();
    assert_eq!(log_tables(&target).await, before);
}

#[tokio::test]
async fn an_instance_with_another_key_is_refused() {
    let app = TestApp::new().await;
    app.service.start_log().await.unwrap();
    let other = tempfile::tempdir().unwrap();
    let key_file = other.path().join("other.key");
    std::fs::write(
        &key_file,
        LogKey::generate("wattcounts.test/log").unwrap().0,
    )
    .unwrap();
    let second = TestApp::with_store_config(app.store.clone(), other, |c| {
        c.log_key_file = Some(key_file)
    });
    let err = second.service.start_log().await.unwrap_err().to_string();
    assert!(err.contains("is not the key the database records"), "{err}");
    // And `serve` itself will not start with it.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"));
    let out = cmd
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--public-url",
            AUDIENCE,
            "--data-dir",
        ])
        .arg(app.dir.path())
        .arg("--database-url")
        .arg(format!(
            "sqlite:{}",
            app.dir.path().join("test.db").display()
        ))
        .arg("--log-key-file")
        .arg(second.dir.path().join("other.key"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("every instance on one database must sign with the same key"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_postgres_instances_keep_one_linear_log() {
    let schema = pg_schema();
    let Some(a) = TestApp::postgres_in(&schema, |_| {}).await else {
        return;
    };
    let b = TestApp::postgres_in(&schema, |_| {}).await.unwrap();
    let key = a.register("alice").await;
    let bundles: Vec<Vec<u8>> = (0..24)
        .map(|i| BundleBuilder::fixture().marked(i).by("alice", &key).build())
        .collect();
    let mut tasks = Vec::new();
    for (i, gz) in bundles.into_iter().enumerate() {
        let sig = sign(&key, &gz);
        let router = if i % 2 == 0 {
            a.router.clone()
        } else {
            b.router.clone()
        };
        tasks.push(tokio::spawn(async move {
            use tower::ServiceExt;
            let req = multipart(&[("bundle", &gz), ("signature", &sig)]);
            router.oneshot(req).await.unwrap().status()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), StatusCode::CREATED);
    }
    let leaves = all_entries(&b).await;
    assert_eq!(leaves.len(), 24, "one leaf per submission, no gap, no fork");
    let mut ids: Vec<String> = leaves
        .iter()
        .map(|l| match Leaf::parse(l.as_bytes()).unwrap() {
            Leaf::Submission { submission_id, .. } => submission_id,
            other => panic!("{other:?}"),
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 24);
    // Both instances serve the same root, which the leaves hash to.
    let mem = memory_tree(&leaves);
    for app in [&a, &b] {
        let (_, p) = app.get("/api/v1/log/inclusion?index=23&size=24").await;
        let cp = open_checkpoint(
            p["checkpoint"].as_str().unwrap().as_bytes(),
            &test_log_verifier(),
        )
        .unwrap();
        assert_eq!(*cp.hash(), mem.root(24).unwrap());
    }
}

#[tokio::test]
async fn snapshots_prove_their_rows_are_in_the_log() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let ids = submit_many(&app, "alice", &key, 0, 3).await;
    let create = || async {
        let (status, body) = app.admin_post("/api/v1/admin/snapshots", json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        app.dir
            .path()
            .join("snapshots")
            .join(body["snapshot_id"].as_str().unwrap())
    };
    let first = create().await;
    submit_many(&app, "alice", &key, 3, 2).await;
    let (status, _) = app
        .admin_post(
            &format!("/api/v1/admin/submissions/{}/decision", ids[0]),
            json!({"decision": "reject", "reason": "bad cooling"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // Two snapshots in one second get distinct ids.
    let second = create().await;
    let read = |dir: &std::path::Path, name: &str| std::fs::read(dir.join(name)).unwrap();
    let manifest = |dir: &std::path::Path| -> wattcounts::snapshot::manifest::Manifest {
        serde_json::from_slice(&read(dir, "manifest.json")).unwrap()
    };
    let (m1, m2) = (manifest(&first), manifest(&second));
    let verifier = test_log_verifier();
    let check = |m: &wattcounts::snapshot::manifest::Manifest,
                 dir: &std::path::Path,
                 entries: &[u8],
                 prev: Option<&wattcounts::snapshot::manifest::Manifest>| {
        log_check::check_snapshot_log(m, entries, &read(dir, "submissions.csv"), &verifier, prev)
    };
    let c1 = check(&m1, &first, &read(&first, "log.jsonl"), None);
    assert_eq!(
        (c1.problems.clone(), c1.size, c1.submissions),
        (vec![], 3, 3)
    );
    let c2 = check(&m2, &second, &read(&second, "log.jsonl"), Some(&m1));
    assert!(c2.problems.is_empty(), "{:?}", c2.problems);
    // 5 submissions and a rejection in the log; 4 accepted in the snapshot.
    assert_eq!((c2.size, c2.submissions, c2.previous_size), (6, 4, Some(3)));

    // A changed leaf, a row pointing at another leaf, another key, the
    // wrong predecessor: each named.
    let entries = String::from_utf8(read(&second, "log.jsonl")).unwrap();
    let edited = entries.replacen("\"accepted\"", "\"needs_review\"", 1);
    let c = check(&m2, &second, edited.as_bytes(), Some(&m1));
    assert!(
        c.problems
            .iter()
            .any(|p| p.contains("do not hash to the checkpoint's root")),
        "{:?}",
        c.problems
    );
    let csv = String::from_utf8(read(&second, "submissions.csv")).unwrap();
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let last = lines.len() - 1;
    lines[last] = lines[last]
        .rsplit_once(',')
        .map(|(a, _)| format!("{a},1"))
        .unwrap();
    let c = log_check::check_snapshot_log(
        &m2,
        entries.as_bytes(),
        lines.join("\n").as_bytes(),
        &verifier,
        Some(&m1),
    );
    assert!(
        c.problems
            .iter()
            .any(|p| p.contains("row") && p.contains("leaf 1 is not submission")),
        "{:?}",
        c.problems
    );
    let (_, other) = LogKey::generate("wattcounts.test/log").unwrap();
    let c = log_check::check_snapshot_log(
        &m2,
        entries.as_bytes(),
        &read(&second, "submissions.csv"),
        other.verifier_key(),
        None,
    );
    assert!(
        c.problems[0].contains("not signed by the log key"),
        "{:?}",
        c.problems
    );
    let c = check(&m1, &first, &read(&first, "log.jsonl"), Some(&m2));
    assert!(
        c.problems
            .iter()
            .any(|p| p.contains("records no previous checkpoint")),
        "{:?}",
        c.problems
    );
    // A log rewritten under the second snapshot: its previous checkpoint
    // (of the honest log) does not extend into the forged one.
    let mut forged = m2.clone();
    let prev = forged.log.as_mut().unwrap().previous.as_mut().unwrap();
    let mut fork = StoredHashes::default();
    for i in 0..3 {
        fork.append(format!("forged {i}").as_bytes()).unwrap();
    }
    let secret = test_log_secret();
    let signer = LogKey::from_secret(secret).unwrap();
    prev.checkpoint =
        String::from_utf8(signer.sign_checkpoint(3, fork.root(3).unwrap()).unwrap()).unwrap();
    let c = check(&forged, &second, entries.as_bytes(), None);
    assert!(
        c.problems
            .iter()
            .any(|p| p.contains("does not extend the previous snapshot")),
        "{:?}",
        c.problems
    );

    // The command line over both folders.
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
        .args(["verify", "snapshot"])
        .arg(&second)
        .args(["--log-key", &verifier, "--previous"])
        .arg(&first)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "{out}");
    assert!(out.contains("4 submissions are leaves of the signed checkpoint of 6 leaves; the log extends the previous snapshot's 3 leaves"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_catches_a_rewritten_leaf() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    submit_many(&app, "alice", &key, 0, 3).await;
    let server = app.spawn_serve(&["--log-publish-secs", "1"]);
    let state = app.dir.path().join("monitor.json");
    let verifier = test_log_verifier();
    let monitor = |with_key: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"));
        cmd.args(["verify", "log", "--server", &server.url, "--state"])
            .arg(&state);
        if with_key {
            cmd.args(["--log-key", &verifier]);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = monitor(false);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("the first run needs --log-key"), "{out}");
    let (code, out) = monitor(true);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("first checkpoint kept (3 leaves)"), "{out}");
    let (code, out) = monitor(false);
    assert_eq!(
        (code, out.contains("unchanged at 3 leaves")),
        (Some(0), true),
        "{out}"
    );

    let wait_for = |size: u64| {
        let url = format!("{}/log/checkpoint", server.url);
        async move {
            for _ in 0..100 {
                let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
                if text.lines().nth(1) == Some(size.to_string().as_str()) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            panic!("no checkpoint of {size} published");
        }
    };
    submit_many(&app, "alice", &key, 3, 1).await;
    wait_for(4).await;
    let (code, out) = monitor(false);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("grew from 3 to 4 leaves"), "{out}");

    // The server rewrites leaf 1 (say, to hide a rejection), rebuilds its
    // tree and signs new checkpoints with its real key.
    let leaves = all_entries(&app).await;
    let mut rewritten = leaves.clone();
    rewritten[1] = rewritten[1].replace("\"accepted\"", "\"needs_review\"");
    assert_ne!(rewritten[1], leaves[1]);
    let raw = app.raw.as_ref().unwrap();
    raw.exec("DELETE FROM log_hashes").await;
    raw.exec("DELETE FROM log_checkpoints").await;
    raw.exec(&format!(
        "UPDATE log_entries SET leaf = '{}' WHERE idx = 1",
        rewritten[1]
    ))
    .await;
    let mem = memory_tree(&rewritten);
    let n = tlog_tiles::stored_hash_count(4);
    let hashes = tlog_tiles::HashReader::read_hashes(&mem, &(0..n).collect::<Vec<_>>()).unwrap();
    for (i, h) in hashes.iter().enumerate() {
        raw.exec(&format!(
            "INSERT INTO log_hashes (idx, hash) VALUES ({i}, '{}')",
            hex::encode(h.0)
        ))
        .await;
    }
    let kept = std::fs::read(&state).unwrap();
    // Same size, another root.
    wait_for(4).await;
    let (code, out) = monitor(false);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("the log forked: two checkpoints of 4 leaves with different roots"),
        "{out}"
    );
    // Grown past it: the consistency proof from the kept root fails.
    submit_many(&app, "alice", &key, 4, 1).await;
    wait_for(5).await;
    let (code, out) = monitor(false);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("does not extend the 4 leaves seen before"),
        "{out}"
    );
    assert_eq!(std::fs::read(&state).unwrap(), kept, "the evidence is kept");
}

//! Snapshots that cannot be partial or disagree (issue #6): a crash
//! mid-creation leaves nothing, both backends publish the same files, and a
//! snapshot taken during ingest is consistent.

use super::*;
use axum::http::StatusCode;
use serde_json::json;
use std::collections::BTreeSet;
use tower::ServiceExt;
use wattcounts::snapshot::verify::{self, Location};
use wattcounts::snapshot::Library;

#[tokio::test]
async fn a_crash_mid_creation_leaves_no_partial_snapshot() {
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let root = app.dir.path().join("snapshots");
    for point in ["snapshot-after-runs", "snapshot-before-rename"] {
        let out = create_cli(&app, Some(point));
        assert!(!out.status.success(), "the process was to die at {point}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(point));
        // Nothing is published: not on disk under an id, not listed, not served.
        let library = Library::new(&root).unwrap();
        assert!(library.list(app.store.as_ref()).await.unwrap().is_empty());
        let (_, list) = app.get("/api/v1/snapshots").await;
        assert_eq!(list["snapshots"], json!([]), "after a crash at {point}");
        let (status, _) = app.get("/api/v1/snapshots/latest").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let names: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| n.starts_with(".tmp-")),
            "only unfinished folders remain: {names:?}"
        );
    }
    // The next creation works and publishes one whole snapshot.
    let out = create_cli(&app, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = Library::new(&root)
        .unwrap()
        .list(app.store.as_ref())
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    let report = verify::verify(
        &Location::Dir(root.join(&list[0].manifest.snapshot_id)),
        Some(&list[0].manifest_sha256),
        &Default::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(report.ok(), "{report:?}");
    assert!(list[0].manifest.includes_power_traces);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(cite this)") && stdout.contains("power_traces-l4.parquet"));
}

#[tokio::test]
async fn postgres_and_sqlite_publish_the_same_files() {
    let Some(pg) = TestApp::postgres().await else {
        return;
    };
    let lite = TestApp::new().await;
    let b = bundles();
    populate(&lite, &b).await;
    populate(&pg, &b).await;
    let a = create_snapshot(&lite, false).await;
    let p = create_snapshot(&pg, false).await;
    // Same bundles, same data files byte for byte (submissions.csv differs
    // only by received_at).
    for f in [
        "runs.parquet",
        "runs.csv",
        "configurations.parquet",
        "configurations.csv",
    ] {
        assert_eq!(file(&a, f)["sha256"], file(&p, f)["sha256"], "{f}");
    }
    assert_eq!(rows(&a, "submissions.csv"), rows(&p, "submissions.csv"));
}

/// Snapshots taken while bundles arrive each hold one state of the data:
/// the submissions they list are exactly those their runs come from.
async fn snapshots_during_ingest_are_consistent(app: TestApp) {
    let key = app.register("alice").await;
    let mut jobs = tokio::task::JoinSet::new();
    // Six distinct runs of the same data: the consistency check cannot
    // flag one, whichever order they land in.
    for n in 1..=6 {
        let gz = BundleBuilder::fixture().marked(n).by("alice", &key).build();
        let sig = sign(&key, &gz);
        let router = app.router.clone();
        jobs.spawn(async move {
            let resp = router
                .oneshot(multipart(&[("bundle", &gz), ("signature", &sig)]))
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::CREATED);
        });
    }
    let mut views = Vec::new();
    for _ in 0..4 {
        views.push(create_snapshot(&app, true).await);
    }
    while let Some(done) = jobs.join_next().await {
        done.unwrap();
    }
    views.push(create_snapshot(&app, true).await);
    let ids: BTreeSet<&str> = views
        .iter()
        .map(|v| v["snapshot_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), views.len(), "every snapshot has its own id");
    for view in &views {
        let dir = snapshot_dir(&app, view);
        let runs = read_parquet(&dir.join("runs.parquet"));
        let in_runs: BTreeSet<String> = text_column(&runs, "submission_id").into_iter().collect();
        let csv = std::fs::read_to_string(dir.join("submissions.csv")).unwrap();
        let listed: BTreeSet<String> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect();
        assert_eq!(in_runs, listed, "{}", view["snapshot_id"]);
        let iterations: u64 = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(10).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(runs.height() as u64, iterations);
        assert_eq!(view["coverage"]["submissions"], listed.len());
    }
    assert_eq!(views.last().unwrap()["coverage"]["submissions"], 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_during_ingest_are_consistent_on_sqlite() {
    snapshots_during_ingest_are_consistent(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_during_ingest_are_consistent_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        snapshots_during_ingest_are_consistent(app).await;
    }
}

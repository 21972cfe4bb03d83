//! What a snapshot publishes (issue #6): exactly the accepted data, created
//! only by a maintainer on a clear request.

use super::*;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use wattcounts::snapshot::Library;

#[tokio::test]
async fn snapshot_holds_exactly_the_accepted_data() {
    let app = TestApp::new().await;
    let stored = populate(&app, &bundles()).await;
    let view = create_snapshot(&app, true).await;
    let dir = snapshot_dir(&app, &view);

    let mut iterations = 0;
    let mut samples = 0;
    for id in &stored.accepted {
        let r = receipt(&app, id).await;
        iterations += r["counts"]["iterations"].as_u64().unwrap();
        samples += r["counts"]["power_samples"].as_u64().unwrap();
    }
    assert_eq!(view["coverage"]["submissions"], 3, "{view}");
    assert_eq!(rows(&view, "runs.parquet"), iterations);
    assert_eq!(rows(&view, "runs.csv"), iterations);
    assert_eq!(rows(&view, "submissions.csv"), 3);
    // One trace file per GPU.
    let trace_files: Vec<String> = view["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .filter(|p| p.starts_with("power_traces-"))
        .collect();
    assert_eq!(
        trace_files,
        ["power_traces-h100-pcie.parquet", "power_traces-l4.parquet"]
    );
    let trace_rows: u64 = trace_files.iter().map(|f| rows(&view, f)).sum();
    assert_eq!(trace_rows, samples);
    let board = leaderboard(&app).await;
    assert_eq!(rows(&view, "configurations.parquet"), board.len() as u64);
    assert_eq!(rows(&view, "configurations.csv"), board.len() as u64);

    // The files hold those submissions and no other.
    let runs = read_parquet(&dir.join("runs.parquet"));
    assert_eq!(runs.height() as u64, iterations);
    let ids: BTreeSet<String> = text_column(&runs, "submission_id").into_iter().collect();
    let want: BTreeSet<String> = stored.accepted.iter().cloned().collect();
    assert_eq!(ids, want);
    let trace_ids: BTreeSet<String> = trace_files
        .iter()
        .flat_map(|f| text_column(&read_parquet(&dir.join(f)), "submission_id"))
        .collect();
    assert_eq!(trace_ids, want);
    // The catalogue rows of the GPUs in it, as shipped, with their source.
    let gpus = std::fs::read_to_string(dir.join("gpus.csv")).unwrap();
    let mut lines = gpus.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..3], ["gpu_id", "nvml_name", "added"], "{gpus}");
    let rows: Vec<&str> = lines.collect();
    assert!(
        rows.iter()
            .any(|r| r.starts_with("l4,NVIDIA L4,false,Ada Lovelace,PCIe,")
                && r.contains(",72.0,24.0,wattgpu,")),
        "{gpus}"
    );
    for f in [
        "runs.csv",
        "configurations.csv",
        "submissions.csv",
        "README.md",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(
            !text.contains(&stored.pending),
            "{f} holds the pending submission"
        );
        assert!(
            !text.contains(&stored.rejected),
            "{f} holds the rejected submission"
        );
        assert!(!text.contains(PENDING_MODEL), "{f} holds the pending model");
    }

    // The formula-like model is guarded in CSV, as submitted in Parquet.
    let models = text_column(&runs, "model");
    assert!(models.iter().any(|m| m == FORMULA_MODEL));
    let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert!(csv.contains(&format!(",'{FORMULA_MODEL},")), "guarded cell");
    assert!(
        !csv.contains(&format!(",{FORMULA_MODEL},")),
        "unguarded cell"
    );
    // Numbers stay numbers: no quotes, no apostrophes in numeric cells.
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "duration_s").unwrap();
    let line = csv.lines().nth(1).unwrap();
    let cells: Vec<&str> = line.split(',').collect();
    let duration: f64 = cells[at].parse().expect("duration_s is a plain number");
    assert_eq!(
        duration,
        runs.column("duration_s")
            .unwrap()
            .f64()
            .unwrap()
            .get(0)
            .unwrap(),
        "the CSV number reads back to the Parquet value"
    );

    // The card documents every column of every data file, with its type.
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let manifest = Library::new(app.dir.path().join("snapshots"))
        .unwrap()
        .get(app.store.as_ref(), view["snapshot_id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap()
        .manifest;
    // The tables, that is: log.jsonl holds the log's leaves (JSON lines,
    // documented in the card's method section), not columns.
    for entry in manifest
        .files
        .iter()
        .filter(|f| f.rows.is_some() && !f.path.ends_with(".jsonl"))
    {
        assert!(!entry.columns.is_empty(), "{} lists no columns", entry.path);
        for c in &entry.columns {
            assert!(
                card.contains(&format!("| `{}` | {} |", c.name, c.kind)),
                "card lacks column {} of {}",
                c.name,
                entry.path
            );
        }
    }
    assert!(card.contains("3 accepted submissions"), "{card}");
    let cff = std::fs::read_to_string(dir.join("CITATION.cff")).unwrap();
    assert!(cff.contains("cff-version: 1.2.0") && cff.contains("license: CC-BY-4.0"));

    // Published files are read-only.
    for f in ["runs.parquet", "manifest.json", "README.md"] {
        let perms = std::fs::metadata(dir.join(f)).unwrap().permissions();
        assert!(perms.readonly(), "{f} is writable");
    }
}

#[tokio::test]
async fn creating_needs_a_maintainer_and_a_clear_request() {
    let app = TestApp::new().await;
    let (status, body) = app
        .send(
            Request::post("/api/v1/admin/snapshots")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["code"], "auth_required");
    let (status, body) = app
        .admin_post("/api/v1/admin/snapshots", json!({"trace": true}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("trace"),
        "{body}"
    );
    // Nothing was published by the refused calls.
    let (_, list) = app.get("/api/v1/snapshots").await;
    assert_eq!(list["snapshots"], json!([]));
    assert_eq!(list["latest"], Value::Null);
    // An empty database still makes a valid (empty) snapshot.
    let view = create_snapshot(&app, false).await;
    assert_eq!(rows(&view, "runs.parquet"), 0);
    assert!(!view["files"].as_array().unwrap().is_empty(), "{view}");
    assert!(view["files"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| !f["path"].as_str().unwrap().starts_with("power_traces")));
}

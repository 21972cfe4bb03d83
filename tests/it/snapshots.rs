//! Dataset snapshots (issue #6): what they publish, how they are served,
//! verified and read back, and that a crash leaves nothing partial.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use polars::prelude::*;
use serde_json::{json, Value};
use sha2::Digest;
use ssh_key::PrivateKey;
use tower::ServiceExt;

use crate::common::*;
use wattcounts::snapshot::verify::{self, Location};
use wattcounts::snapshot::Library;
use wattcounts::synth::Fault;

/// The model name of an approved submission: a spreadsheet would run it.
const FORMULA_MODEL: &str = "=2+5*HYPERLINK";
const PENDING_MODEL: &str = "+pending/model";

/// Bundles made once, so two databases can receive the same bytes.
struct Bundles {
    key: PrivateKey,
    /// accepted, accepted, approved after review (formula model name)
    accepted: Vec<Vec<u8>>,
    formula: Vec<u8>,
    pending: Vec<u8>,
    rejected: Vec<u8>,
}

fn bundles() -> Bundles {
    let key = new_key();
    Bundles {
        accepted: vec![
            BundleBuilder::fixture().by("alice", &key).build(),
            BundleBuilder::on("h100-pcie", &[QWEN])
                .by("alice", &key)
                .build(),
        ],
        formula: BundleBuilder::fixture()
            .model_named(FORMULA_MODEL)
            .by("alice", &key)
            .build(),
        pending: BundleBuilder::fixture()
            .model_named(PENDING_MODEL)
            .by("alice", &key)
            .build(),
        rejected: BundleBuilder::faulty(Fault::GpuEnergyMismatch, 7)
            .by("alice", &key)
            .build(),
        key,
    }
}

/// What `populate` stored, by fate.
struct Stored {
    accepted: Vec<String>,
    pending: String,
    rejected: String,
}

async fn populate(app: &TestApp, b: &Bundles) -> Stored {
    let (status, body) = app.register_with("alice", &b.key, AUDIENCE).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let submit = |gz: Vec<u8>, want: &'static str| {
        let sig = sign(&b.key, &gz);
        async move {
            let (status, body) = app.submit(&gz, &sig).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            assert_eq!(body["status"], want, "{body}");
            body["submission_id"].as_str().unwrap().to_string()
        }
    };
    let mut accepted = Vec::new();
    for gz in &b.accepted {
        accepted.push(submit(gz.clone(), "accepted").await);
    }
    let formula = submit(b.formula.clone(), "needs_review").await;
    let pending = submit(b.pending.clone(), "needs_review").await;
    let rejected = submit(b.rejected.clone(), "rejected").await;
    let (status, body) = app
        .admin_post(
            &format!("/api/v1/admin/submissions/{formula}/decision"),
            json!({"decision": "approve", "reason": "model name checked by hand"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    accepted.push(formula);
    Stored {
        accepted,
        pending,
        rejected,
    }
}

async fn create_snapshot(app: &TestApp, traces: bool) -> Value {
    let (status, body) = app
        .admin_post("/api/v1/admin/snapshots", json!({ "traces": traces }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

fn snapshot_dir(app: &TestApp, view: &Value) -> PathBuf {
    app.dir
        .path()
        .join("snapshots")
        .join(view["snapshot_id"].as_str().unwrap())
}

fn file<'a>(view: &'a Value, name: &str) -> &'a Value {
    view["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == name)
        .unwrap_or_else(|| panic!("{name} not in {view}"))
}

fn rows(view: &Value, name: &str) -> u64 {
    file(view, name)["rows"].as_u64().unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Every row of every view of the API's leaderboard (accepted data only,
/// as published): each origin × protocol the read model holds.
async fn leaderboard(app: &TestApp) -> Vec<Value> {
    let (_, first) = app.get("/api/v1/leaderboard").await;
    let mut views: Vec<(String, String)> = first["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["origin"].as_str().unwrap().to_string(),
                v["protocol_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    views.sort();
    views.dedup();
    let mut out = Vec::new();
    for (origin, protocol) in views {
        let (status, body) = app
            .get(&format!(
                "/api/v1/leaderboard?per_page=1000&origin={origin}&protocol={protocol}"
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body["total"].as_u64().unwrap() <= 1000);
        out.extend(body["entries"].as_array().unwrap().iter().cloned());
    }
    out
}

async fn receipt(app: &TestApp, id: &str) -> Value {
    let (status, body) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn text_column(df: &DataFrame, name: &str) -> Vec<String> {
    df.column(name)
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|v| v.unwrap().to_string())
        .collect()
}

fn read_parquet(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

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

#[tokio::test]
async fn downloads_carry_etag_and_ranges_and_latest_moves() {
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let first = create_snapshot(&app, false).await;
    let id = first["snapshot_id"].as_str().unwrap();
    let dir = snapshot_dir(&app, &first);
    let on_disk = std::fs::read(dir.join("runs.csv")).unwrap();
    let url = format!("/snapshots/{id}/runs.csv");

    let get = |range: Option<&str>, extra: &[(&str, &str)]| {
        let mut b = Request::get(&url).header("accept-encoding", "gzip");
        if let Some(r) = range {
            b = b.header(header::RANGE, r);
        }
        for (k, v) in extra {
            b = b.header(*k, *v);
        }
        b.body(Body::empty()).unwrap()
    };
    let (status, h, body) = app.raw(get(None, &[])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body.as_ref(),
        on_disk.as_slice(),
        "sent as stored, not re-encoded"
    );
    assert!(h.get(header::CONTENT_ENCODING).is_none());
    let etag = format!(
        "\"{}\"",
        file(&first, "runs.csv")["sha256"].as_str().unwrap()
    );
    assert_eq!(h[header::ETAG], etag.as_str());
    assert_eq!(sha256_hex(&body), file(&first, "runs.csv")["sha256"]);
    assert!(h[header::CACHE_CONTROL]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(h[header::ACCEPT_RANGES], "bytes");
    assert!(h[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));

    let (status, _, body) = app.raw(get(None, &[("if-none-match", &etag)])).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());

    let (status, h, body) = app.raw(get(Some("bytes=10-19"), &[])).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body.as_ref(), &on_disk[10..20]);
    assert_eq!(
        h[header::CONTENT_RANGE],
        format!("bytes 10-19/{}", on_disk.len()).as_str()
    );
    let (status, _, body) = app.raw(get(Some("bytes=-5"), &[])).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body.as_ref(), &on_disk[on_disk.len() - 5..]);
    // A range of another version of the file: the whole file instead.
    let (status, _, body) = app
        .raw(get(
            Some("bytes=0-9"),
            &[("if-range", "\"someotherdigest\"")],
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.len(), on_disk.len());
    let (status, _, _) = app
        .raw(get(Some(&format!("bytes={}-", on_disk.len() + 10)), &[]))
        .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);

    // A name that decodes to a path is refused as such (400).
    let (status, _, _) = app
        .raw(
            Request::get(format!("/snapshots/{id}/..%2F..%2Ftest.db"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Only the listed files, only snapshot ids.
    for bad in [
        format!("/snapshots/{id}/wattcounts.db"),
        "/snapshots/..%2Fblobs/x".to_string(),
        "/snapshots/wc-nothere/runs.csv".to_string(),
        "/api/v1/snapshots/wc-nothere".to_string(),
    ] {
        let (status, _, _) = app
            .raw(Request::get(&bad).body(Body::empty()).unwrap())
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{bad}");
    }

    // The list and `latest`, before and after a second snapshot.
    let (_, list) = app.get("/api/v1/snapshots").await;
    assert_eq!(list["latest"], id);
    let second = create_snapshot(&app, false).await;
    let second_id = second["snapshot_id"].as_str().unwrap();
    assert_ne!(second_id, id);
    let (_, list) = app.get("/api/v1/snapshots").await;
    assert_eq!(list["latest"], second_id);
    assert_eq!(list["snapshots"].as_array().unwrap().len(), 2);
    let (status, h, _) = app
        .raw(
            Request::get("/snapshots/latest/runs.parquet")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(status.is_redirection(), "{status}");
    assert_eq!(
        h[header::LOCATION],
        format!("/snapshots/{second_id}/runs.parquet").as_str()
    );
    assert_eq!(h[header::CACHE_CONTROL], "no-cache");
    let (status, latest) = app.get("/api/v1/snapshots/latest").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(latest["snapshot_id"], second_id);
    // Same data, same files: the digests of the data files repeat.
    for f in [
        "runs.parquet",
        "runs.csv",
        "configurations.parquet",
        "submissions.csv",
    ] {
        assert_eq!(file(&first, f)["sha256"], file(&second, f)["sha256"], "{f}");
    }

    // The page lists both, newest first, with the manifest digest.
    let (status, doc) = html_page(&app, "/snapshots").await;
    assert_eq!(status, StatusCode::OK);
    let links = texts(&doc, "tbody td:first-child a");
    assert_eq!(links, vec![second_id.to_string(), id.to_string()]);
    let digests = texts(&doc, "code.digest");
    assert_eq!(digests[0], second["manifest_sha256"].as_str().unwrap());
    let (status, doc) = html_page(&app, &format!("/snapshots/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!texts(&doc, "td a")
        .iter()
        .any(|t| t.starts_with("power_traces")));
    assert!(texts(&doc, "pre.card")[0].contains("## Columns"));
}

#[tokio::test]
async fn verify_names_the_file_that_differs() {
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let view = create_snapshot(&app, false).await;
    let dir = snapshot_dir(&app, &view);
    let manifest_sha = view["manifest_sha256"].as_str().unwrap();

    let report = verify::verify(
        &Location::Dir(dir.clone()),
        Some(manifest_sha),
        &Default::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(report.ok(), "{report:?}");
    // runs ×2, configurations ×2, submissions.csv, gpus.csv, log.jsonl,
    // the card, the citation, croissant.json.
    assert_eq!(report.files.len(), 10);

    // A copy with one changed byte, a missing file and a cut Parquet file.
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
        let mut p = std::fs::metadata(copy.path().join(e.file_name()))
            .unwrap()
            .permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        p.set_readonly(false);
        std::fs::set_permissions(copy.path().join(e.file_name()), p).unwrap();
    }
    let csv = copy.path().join("configurations.csv");
    let mut bytes = std::fs::read(&csv).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&csv, bytes).unwrap();
    std::fs::remove_file(copy.path().join("submissions.csv")).unwrap();
    let parquet = copy.path().join("runs.parquet");
    let len = std::fs::metadata(&parquet).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&parquet)
        .unwrap()
        .set_len(len - 100)
        .unwrap();

    let report = verify::verify(
        &Location::Dir(copy.path().to_path_buf()),
        Some("0".repeat(64).as_str()),
        &Default::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(!report.ok());
    let bad: Vec<&str> = report
        .files
        .iter()
        .filter(|f| !f.problems.is_empty())
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        bad,
        vec!["runs.parquet", "configurations.csv", "submissions.csv"]
    );
    let problems = |name: &str| {
        report
            .files
            .iter()
            .find(|f| f.path == name)
            .unwrap()
            .problems
            .join("; ")
    };
    assert!(
        problems("configurations.csv").contains("sha256 is"),
        "{}",
        problems("configurations.csv")
    );
    assert!(problems("runs.parquet").contains(&format!("size is {} bytes", len - 100)));
    assert!(problems("runs.parquet").contains("not readable as Parquet"));
    assert!(problems("submissions.csv").contains("cannot read"));
    assert!(report.manifest_problems[0].contains("expected 0000"));

    // Over HTTP from a real server, by its root URL (its latest snapshot).
    let server = app.spawn_serve(&[]);
    // With the log key, the log part is checked over HTTP too.
    let log = verify::LogOptions {
        verifier_key: Some(test_log_verifier()),
        previous: None,
    };
    let report = verify::verify(
        &Location::parse(&server.url),
        Some(manifest_sha),
        &log,
        |_| {},
    )
    .await
    .unwrap();
    assert!(report.ok(), "{report:?}");
    assert!(report.log.as_ref().unwrap().submissions > 0, "{report:?}");
    assert_eq!(report.snapshot_id, view["snapshot_id"].as_str().unwrap());
    // The command line says the same, with exit codes.
    let cli = |target: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
            .args(["verify", "snapshot", target])
            .output()
            .unwrap()
    };
    let ok = cli(&format!("{}/snapshots/latest", server.url));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let bad = cli(copy.path().to_str().unwrap());
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(out.contains("DIFFERS  configurations.csv"), "{out}");
    assert!(out.contains("3 file(s) differ"), "{out}");
}

/// `wattcounts snapshot create` on the test app's data, with a crash point.
fn create_cli(app: &TestApp, crash_at: Option<&str>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"));
    cmd.args(["snapshot", "create", "--traces", "--data-dir"])
        .arg(app.dir.path())
        .arg("--database-url")
        .arg(format!(
            "sqlite:{}",
            app.dir.path().join("test.db").display()
        ))
        .env_remove("WATTCOUNTS_CRASH_AT");
    if let Some(point) = crash_at {
        cmd.env("WATTCOUNTS_CRASH_AT", point);
    }
    cmd.output().unwrap()
}

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

/// The Python interpreter with pyarrow, pandas and polars: WATTCOUNTS_PYTHON,
/// or the venv `.ci/run` makes (target/pyenv), or python3.
pub(crate) fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python");
    let candidates = [
        std::env::var_os("WATTCOUNTS_PYTHON").map(PathBuf::from),
        Some(venv),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import pyarrow, pandas, polars"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[tokio::test]
async fn researchers_read_it_back_in_python_as_documented() {
    let Some(python) = python() else {
        let msg = "pyarrow, pandas and polars are not installed (.ci/run installs them into target/pyenv: \
                   python3 -m venv target/pyenv && target/pyenv/bin/pip install -r scripts/snapshot/requirements.txt)";
        skip(Need::Python, msg);
        return;
    };
    let app = TestApp::new().await;
    let stored = populate(&app, &bundles()).await;
    let view = create_snapshot(&app, true).await;
    let dir = snapshot_dir(&app, &view);
    let mut receipts = serde_json::Map::new();
    for id in &stored.accepted {
        receipts.insert(id.clone(), receipt(&app, id).await);
    }
    let mut dump = json!({ "leaderboard": leaderboard(&app).await, "receipts": receipts });
    let dump_path = app.dir.path().join("api.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/snapshot/readback.py");
    let run = |dump: &Value| {
        std::fs::write(&dump_path, dump.to_string()).unwrap();
        std::process::Command::new(&python)
            .arg(&script)
            .arg(&dir)
            .arg(&dump_path)
            .output()
            .unwrap()
    };
    let out = run(&dump);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("ok: "), "{stdout}");
    eprintln!("{stdout}");
    // The script is a real check: an API answer that differs by 1 % fails it.
    let e = &mut dump["leaderboard"][0];
    let v = e["energy_per_token_j"].as_f64().unwrap();
    e["energy_per_token_j"] = json!(v * 1.01);
    let out = run(&dump);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("MISMATCH: configurations") && stdout.contains("energy_per_token_j"),
        "{stdout}"
    );
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

/// The `mlcroissant` command of the read-back venv (or the one
/// WATTCOUNTS_MLCROISSANT names), if its package imports.
fn mlcroissant() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WATTCOUNTS_MLCROISSANT") {
        return Some(PathBuf::from(p));
    }
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin");
    let imports = std::process::Command::new(bin.join("python"))
        .args(["-c", "import mlcroissant"])
        .output()
        .is_ok_and(|o| o.status.success());
    imports.then(|| bin.join("mlcroissant"))
}

/// croissant.json is in the manifest, names every other file with the
/// manifest's digest, and each data table's record set has the manifest's
/// columns, in order, with the type each column's Arrow type maps to.
#[tokio::test]
async fn every_snapshot_describes_itself_in_croissant_as_its_manifest_does() {
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let view = create_snapshot(&app, true).await;
    let dir = snapshot_dir(&app, &view);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let listed = files
        .iter()
        .find(|f| f["path"] == "croissant.json")
        .expect("croissant.json is listed in the manifest");
    let bytes = std::fs::read(dir.join("croissant.json")).unwrap();
    assert_eq!(listed["sha256"], hex::encode(sha2::Sha256::digest(&bytes)));
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["conformsTo"], "http://mlcommons.org/croissant/1.1");
    assert_eq!(doc["license"], "https://spdx.org/licenses/CC-BY-4.0.html");
    let distribution = doc["distribution"].as_array().unwrap();
    for f in files.iter().filter(|f| f["path"] != "croissant.json") {
        let d = distribution
            .iter()
            .find(|d| d["@id"] == f["path"])
            .unwrap_or_else(|| panic!("{} is not in the distribution", f["path"]));
        assert_eq!(d["sha256"], f["sha256"], "{}", f["path"]);
        assert_eq!(d["contentUrl"], f["path"]);
    }
    // Arrow type → schema.org type, by hand from the Croissant spec.
    let want_type = |arrow: &str| match arrow {
        "large_string" => "sc:Text",
        "int64" => "sc:Integer",
        "double" => "sc:Float",
        "bool" => "sc:Boolean",
        "timestamp[ms]" => "sc:DateTime",
        other => panic!("unmapped type {other}"),
    };
    let record_sets = doc["recordSet"].as_array().unwrap();
    let mut tables = 0;
    for f in files.iter().filter(|f| f.get("columns").is_some()) {
        let path = f["path"].as_str().unwrap();
        let id = path.replace('.', "_");
        let rs = record_sets
            .iter()
            .find(|r| r["@id"] == id)
            .unwrap_or_else(|| panic!("no record set for {path}"));
        let fields = rs["field"].as_array().unwrap();
        let columns = f["columns"].as_array().unwrap();
        assert_eq!(fields.len(), columns.len(), "{path}");
        for (field, col) in fields.iter().zip(columns) {
            assert_eq!(field["name"], col["name"], "{path}");
            assert_eq!(
                field["dataType"],
                want_type(col["type"].as_str().unwrap()),
                "{path}"
            );
            assert_eq!(field["source"]["fileObject"]["@id"], path);
            assert_eq!(field["source"]["extract"]["column"], col["name"]);
        }
        tables += 1;
    }
    assert!(
        tables >= 6,
        "runs, configurations (Parquet and CSV), submissions, gpus, traces: {tables}"
    );
    // It is served beside the snapshot.
    let id = view["snapshot_id"].as_str().unwrap();
    let (status, _, served) = app
        .raw(
            Request::get(format!("/snapshots/{id}/croissant.json"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(served.as_ref(), bytes.as_slice());
}

/// `mlcroissant validate` accepts the file, and `mlcroissant load` reads
/// records of a CSV and a Parquet table through it; a field naming a
/// column the file lacks is caught (the check can fail).
#[tokio::test]
async fn mlcroissant_validates_and_loads_the_snapshot() {
    let Some(cli) = mlcroissant() else {
        skip(
            Need::Python,
            "mlcroissant is not installed (.ci/run installs it into target/pyenv: python3 -m venv target/pyenv && target/pyenv/bin/pip install -r scripts/snapshot/requirements.txt)",
        );
        return;
    };
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let view = create_snapshot(&app, false).await;
    let dir = snapshot_dir(&app, &view);
    let run = |args: &[&str], cwd: &Path| {
        let out = std::process::Command::new(&cli)
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (ok, log) = run(&["validate", "--jsonld", "croissant.json"], &dir);
    assert!(ok, "{log}");
    for table in ["configurations_csv", "runs_parquet"] {
        let (ok, log) = run(
            &[
                "load",
                "--jsonld",
                "croissant.json",
                "--record_set",
                table,
                "--num_records",
                "3",
            ],
            &dir,
        );
        assert!(ok, "{table}: {log}");
        assert!(log.contains(&format!("'{table}/gpu_id'")), "{table}: {log}");
    }
    // A copy whose configurations field names a column the CSV lacks.
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
    }
    let path = copy.path().join("croissant.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    for rs in doc["recordSet"].as_array_mut().unwrap() {
        if rs["@id"] == "configurations_csv" {
            rs["field"][0]["source"]["extract"]["column"] = json!("no_such_column");
        }
    }
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, doc.to_string()).unwrap();
    let (ok, log) = run(
        &[
            "load",
            "--jsonld",
            "croissant.json",
            "--record_set",
            "configurations_csv",
            "--num_records",
            "3",
        ],
        copy.path(),
    );
    assert!(!ok, "a missing column was read: {log}");
}

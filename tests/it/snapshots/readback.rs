//! Snapshots read back as researchers read them (issue #6): in Python
//! (pyarrow, pandas, polars), and described in Croissant as the manifest
//! describes them, validated and loaded by mlcroissant.

use super::*;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use sha2::Digest;
use std::path::{Path, PathBuf};

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

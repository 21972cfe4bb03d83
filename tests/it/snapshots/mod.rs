//! Dataset snapshots (issue #6): what they publish, how they are served,
//! verified and read back, and that a crash leaves nothing partial.

use crate::common::*;
use axum::http::StatusCode;
use polars::prelude::*;
use serde_json::{json, Value};
use sha2::Digest;
use ssh_key::PrivateKey;
use std::path::{Path, PathBuf};
use wattcounts::synth::Fault;

/// The model name of an approved submission: a spreadsheet would run it.
pub(crate) const FORMULA_MODEL: &str = "=2+5*HYPERLINK";

pub(crate) const PENDING_MODEL: &str = "+pending/model";

/// Bundles made once, so two databases can receive the same bytes.
pub(crate) struct Bundles {
    pub(crate) key: PrivateKey,
    /// accepted, accepted, approved after review (formula model name)
    pub(crate) accepted: Vec<Vec<u8>>,
    pub(crate) formula: Vec<u8>,
    pub(crate) pending: Vec<u8>,
    pub(crate) rejected: Vec<u8>,
}

pub(crate) fn bundles() -> Bundles {
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
pub(crate) struct Stored {
    pub(crate) accepted: Vec<String>,
    pub(crate) pending: String,
    pub(crate) rejected: String,
}

pub(crate) async fn populate(app: &TestApp, b: &Bundles) -> Stored {
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

pub(crate) async fn create_snapshot(app: &TestApp, traces: bool) -> Value {
    let (status, body) = app
        .admin_post("/api/v1/admin/snapshots", json!({ "traces": traces }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

pub(crate) fn snapshot_dir(app: &TestApp, view: &Value) -> PathBuf {
    app.dir
        .path()
        .join("snapshots")
        .join(view["snapshot_id"].as_str().unwrap())
}

pub(crate) fn file<'a>(view: &'a Value, name: &str) -> &'a Value {
    view["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == name)
        .unwrap_or_else(|| panic!("{name} not in {view}"))
}

pub(crate) fn rows(view: &Value, name: &str) -> u64 {
    file(view, name)["rows"].as_u64().unwrap()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Every row of every view of the API's leaderboard (accepted data only,
/// as published): each origin × protocol the read model holds.
pub(crate) async fn leaderboard(app: &TestApp) -> Vec<Value> {
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

pub(crate) async fn receipt(app: &TestApp, id: &str) -> Value {
    let (status, body) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

pub(crate) fn text_column(df: &DataFrame, name: &str) -> Vec<String> {
    df.column(name)
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|v| v.unwrap().to_string())
        .collect()
}

pub(crate) fn read_parquet(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

/// `wattcounts snapshot create` on the test app's data, with a crash point.
pub(crate) fn create_cli(app: &TestApp, crash_at: Option<&str>) -> std::process::Output {
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

mod consistency;
mod contents;
mod downloads;
mod readback;

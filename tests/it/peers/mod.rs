//! Peer datasets (issue #39): the ML.ENERGY v3 files shipped in
//! `crates/service/peers/mlenergy-v3/` imported through the real command,
//! every figure read back (JSON, CSV, HTML) against the files themselves
//! (read here with serde_json alone, not by the importer), bad folders
//! refused by file and field with nothing stored, a re-import a no-op, a
//! newer release stored beside the old one, and no peer figure in any
//! Watt Counts view. Then the operator's side (issue #53, section 4): a
//! publisher's text that reads as a spreadsheet formula is defused in
//! every peer CSV export, an import is a deployment's possible first
//! command, a running server shows an import at once, and the command's
//! exit statuses, help and pipes behave as the rest of the CLI's.

use crate::common::TestApp;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_wattcounts");

pub(crate) const COMMIT: &str = "0cd52dab897c5d91a45f4d413038f3b8b4251b0f";

pub(crate) fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/service/peers/mlenergy-v3")
}

/// Every configuration of the shipped files, as (file, pointer, object).
pub(crate) fn published(dir: &Path) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for task in ["gpqa", "lm-arena-chat", "sourcegraph-fim"] {
        let file = format!("tasks/{task}.json");
        let doc: Value = serde_json::from_slice(&std::fs::read(dir.join(&file)).unwrap()).unwrap();
        for (i, c) in doc["configurations"].as_array().unwrap().iter().enumerate() {
            out.push((file.clone(), format!("/configurations/{i}"), c.clone()));
        }
    }
    out
}

pub(crate) fn import(app: &TestApp, folder: &Path) -> (i32, String, String) {
    import_as(app, "mlenergy-v3", folder, COMMIT)
}

/// `wattcounts peer import SOURCE FOLDER` into the app's database, as an
/// operator runs it: (exit status, stdout, stderr).
pub(crate) fn import_as(
    app: &TestApp,
    source: &str,
    folder: &Path,
    source_ref: &str,
) -> (i32, String, String) {
    import_with(app, source, folder, source_ref, &[])
}

/// [`import_as`] with further flags.
pub(crate) fn import_with(
    app: &TestApp,
    source: &str,
    folder: &Path,
    source_ref: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["peer", "import", source])
        .arg(folder)
        .args(extra)
        .args([
            "--source-ref",
            source_ref,
            "--retrieved",
            "2026-12-06",
            "--data-dir",
        ])
        .arg(app.dir.path())
        .arg("--database-url")
        .arg(format!(
            "sqlite:{}",
            app.dir.path().join("test.db").display()
        ))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) async fn text(app: &TestApp, path: &str) -> (StatusCode, String) {
    let (status, _, body) = app
        .raw(Request::get(path).body(Body::empty()).unwrap())
        .await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

pub(crate) const FIGURES: [&str; 10] = [
    "avg_batch_size",
    "avg_power_watts",
    "energy_per_token_joules",
    "energy_per_request_joules",
    "output_throughput_tokens_per_sec",
    "avg_output_len",
    "median_itl_ms",
    "p90_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
];

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("tasks")).unwrap();
    for f in [
        "index.json",
        "tasks/gpqa.json",
        "tasks/lm-arena-chat.json",
        "tasks/sourcegraph-fim.json",
    ] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

/// `tasks/gpqa.json` with its first configuration changed by `edit`.
pub(crate) fn with_edit(dir: &Path, edit: impl Fn(&mut serde_json::Map<String, Value>)) {
    with_edit_at(dir, 0, edit);
}

/// `tasks/gpqa.json` with its configuration `i` changed by `edit`.
pub(crate) fn with_edit_at(
    dir: &Path,
    i: usize,
    edit: impl Fn(&mut serde_json::Map<String, Value>),
) {
    let path = dir.join("tasks/gpqa.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(doc["configurations"][i].as_object_mut().unwrap());
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// A JSON file below `dir` changed by `edit`.
pub(crate) fn edit_json(dir: &Path, file: &str, edit: impl Fn(&mut Value)) {
    let path = dir.join(file);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// What a case does to a copy of the shipped folder.
pub(crate) type Damage = Box<dyn Fn(&Path)>;

/// Fewer, shallower trees: the same code, a test's time.
pub(crate) fn quick_settings() -> wattcounts::estimator::Settings {
    use wattcounts::estimator::{BoosterSettings, Settings};
    let b = |trees| BoosterSettings {
        max_depth: 4,
        l2: 50.0,
        trees,
        learning_rate: 0.3,
    };
    Settings {
        power: b(40),
        itl: b(40),
        ..Settings::default()
    }
}

pub(crate) fn shipped_rows() -> Vec<wattcounts::estimator::peer::PeerRow> {
    let dir = shipped();
    let release = wattcounts::peer::PeerSource::MlEnergyV3
        .read(&mut wattcounts::service::peers::FolderOnDisk(&dir))
        .unwrap();
    wattcounts::estimator::peer::peer_rows(&release.configs)
}

pub(crate) fn v2_excerpt() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers/mlenergy-v2")
}

pub(crate) fn v1_excerpt() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers/mlenergy-v1")
}

pub(crate) const V1_REF: &str = "c3af7f31e231a2a7021c5f8e2a54dd712d02e6e2";

pub(crate) const V1_BOARDS: [&str; 4] = [
    "--gpu",
    "A100=NVIDIA A100-SXM4-40GB",
    "--gpu",
    "V100=Tesla V100-SXM2-32GB",
];

/// The rows of one v1 benchmark file, read here with split(','): (model,
/// throughput, response_length, latency, energy).
pub(crate) fn v1_rows(file: &str) -> Vec<(String, [f64; 4])> {
    let text = std::fs::read_to_string(v1_excerpt().join(file)).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("model,throughput,response_length,latency,energy")
    );
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let n = |i: usize| cells[i].parse::<f64>().unwrap();
            (cells[0].to_string(), [n(1), n(2), n(3), n(4)])
        })
        .collect()
}

/// Text a publisher's file may hold that a spreadsheet would run: one of
/// each start the guard defuses (`=`, `+`, `-`, `@`, tab, CR), the first
/// as issue #53 met it, in a model's nickname.
pub(crate) const FORMULAS: [&str; 6] = [
    "=HYPERLINK(\"http://example.com/x\",\"click\")",
    "+1+1",
    "-1+2",
    "@SUM(A1)",
    "\tTAB",
    "\rCR",
];

/// The CSV export at `path`: its header and rows, as a spreadsheet's CSV
/// reader splits them (quotes undone, nothing trimmed).
pub(crate) async fn csv_export(app: &TestApp, path: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let (status, headers, body) = app
        .raw(Request::get(path).body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let mut rdr = csv::Reader::from_reader(&body[..]);
    let head = rdr
        .headers()
        .unwrap()
        .iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let rows = rdr
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect::<Vec<_>>())
        .collect();
    (head, rows)
}

/// The rule every CSV we publish follows (`spreadsheet::text_cell`),
/// worked out here by hand: each planted text comes back as `'` followed
/// by the text, never as the text itself; no cell of the export starts
/// as a formula would; and the figures still read as numbers.
pub(crate) fn assert_defused(head: &[String], rows: &[Vec<String>], planted: &[&str]) {
    let cells: Vec<&String> = rows.iter().flatten().collect();
    for p in planted {
        let shown = format!("'{p}");
        assert!(
            cells.iter().any(|c| **c == shown),
            "{shown:?} not in the export: {rows:?}"
        );
        assert!(
            !cells.iter().any(|c| c.as_str() == *p),
            "{p:?} left live: {rows:?}"
        );
    }
    for c in &cells {
        assert!(
            !c.starts_with(['=', '+', '-', '@', '\t', '\r']),
            "a live formula cell {c:?}"
        );
    }
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    for r in rows {
        for f in ["energy_per_token_joules", "avg_output_len"] {
            r[col(f)]
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("{f} {:?} is no number", r[col(f)]));
        }
    }
}

/// The write end of a pipe whose reader has gone, as `head` leaves it once
/// it has its lines. (A process forked by a test running beside this one
/// at that instant could hold the read end a moment longer: then the
/// writes succeed and the test proves less, but never fails wrongly.)
pub(crate) fn closed_pipe() -> Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds: [libc::c_int; 2] = [0; 2];
    // SAFETY: pipe(2) fills `fds` with two new descriptors, each owned
    // exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the two descriptors pipe(2) made, nobody else's.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// A copy of the shipped files as a later release: `last_updated`
/// 2026-03-01, and the first gpqa configuration's power and energies
/// halved together (so every rule still holds).
pub(crate) fn later_release(dir: &Path) {
    copy_dir(&shipped(), dir);
    edit_json(dir, "index.json", |index| {
        index["last_updated"] = "2026-03-01".into();
    });
    with_edit(dir, |c| {
        for f in [
            "avg_power_watts",
            "energy_per_token_joules",
            "energy_per_request_joules",
        ] {
            let v = c[f].as_f64().unwrap() * 0.5;
            c.insert(f.into(), v.into());
        }
    });
}

/// The answer at `url` once `done` holds for it, and how long that took;
/// a failure after `limit`.
pub(crate) async fn once(
    client: &reqwest::Client,
    url: &str,
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> (Value, Duration) {
    let start = Instant::now();
    loop {
        let r = client.get(url).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{url}");
        let body: Value = r.json().await.unwrap();
        if done(&body) {
            return (body, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "{url} still answers, after {limit:?}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The estimator's table on real hardware with few, shallow trees (as
/// `quick_settings` above) and a short settle time, for a real server.
pub(crate) const QUICK_ESTIMATOR: &str = "[estimator]
settle_secs = 0.2

[estimator.power]
max_depth = 4
l2 = 50.0
trees = 40
learning_rate = 0.3

[estimator.itl]
max_depth = 4
l2 = 50.0
trees = 40
learning_rate = 0.3
";

mod command;
mod csv_export;
mod estimator;
mod v1;
mod v2;
mod v3;

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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

use crate::common::bundles::BundleBuilder;
use crate::common::{sign, spawn_server_with_env, TestApp, AUDIENCE};

const BIN: &str = env!("CARGO_BIN_EXE_wattcounts");
const COMMIT: &str = "0cd52dab897c5d91a45f4d413038f3b8b4251b0f";

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/service/peers/mlenergy-v3")
}

/// Every configuration of the shipped files, as (file, pointer, object).
fn published(dir: &Path) -> Vec<(String, String, Value)> {
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

fn import(app: &TestApp, folder: &Path) -> (i32, String, String) {
    import_as(app, "mlenergy-v3", folder, COMMIT)
}

/// `wattcounts peer import SOURCE FOLDER` into the app's database, as an
/// operator runs it: (exit status, stdout, stderr).
fn import_as(
    app: &TestApp,
    source: &str,
    folder: &Path,
    source_ref: &str,
) -> (i32, String, String) {
    import_with(app, source, folder, source_ref, &[])
}

/// [`import_as`] with further flags.
fn import_with(
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

async fn text(app: &TestApp, path: &str) -> (StatusCode, String) {
    let (status, _, body) = app
        .raw(Request::get(path).body(Body::empty()).unwrap())
        .await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

const FIGURES: [&str; 10] = [
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

#[tokio::test]
async fn the_shipped_v3_files_import_through_the_command_and_read_back_as_published() {
    let app = TestApp::new().await;
    let (code, out, err) = import(&app, &shipped());
    assert_eq!(code, 0, "{out}\n{err}");
    let files = published(&shipped());
    assert_eq!(
        files.len(),
        565,
        "the shipped copy holds 187 + 328 + 50 configurations"
    );
    assert!(
        out.contains("imported ML.ENERGY Leaderboard v3 release 2026-02-16 as peer:mlenergy-v3"),
        "{out}"
    );
    assert!(out.contains("565 configurations"), "{out}");
    // The digest of each file read is the file's own.
    let index = std::fs::read(shipped().join("index.json")).unwrap();
    assert!(
        out.contains(&wattcounts::digest::sha256_hex(&index)),
        "{out}"
    );

    // JSON: every configuration of every task, figure for figure.
    let mut seen = 0;
    for task in ["gpqa", "lm-arena-chat", "sourcegraph-fim"] {
        let (status, body) = app
            .get(&format!(
                "/api/v1/peers/mlenergy-v3?task={task}&per_page=1000"
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["source"]["licence"], "Apache-2.0");
        assert_eq!(body["source"]["comparable_with_watt_counts"], false);
        assert_eq!(body["release"]["source_ref"], COMMIT);
        let rows = body["configurations"].as_array().unwrap();
        let want: Vec<&(String, String, Value)> = files
            .iter()
            .filter(|(f, _, _)| f == &format!("tasks/{task}.json"))
            .collect();
        assert_eq!(rows.len(), want.len(), "{task}");
        assert_eq!(body["total"], want.len());
        for (file, pointer, c) in want {
            let row = rows
                .iter()
                .find(|r| r["file"] == file.as_str() && r["pointer"] == pointer.as_str())
                .unwrap_or_else(|| panic!("{file}{pointer} not served"));
            for f in FIGURES {
                assert_eq!(row[f].as_f64(), c[f].as_f64(), "{file}{pointer}/{f}");
            }
            for f in ["model_id", "gpu_model", "weight_precision", "architecture"] {
                assert_eq!(row[f], c[f], "{file}{pointer}/{f}");
            }
            for f in [
                "num_gpus",
                "max_num_seqs",
                "tensor_parallel",
                "expert_parallel",
                "data_parallel",
            ] {
                assert_eq!(row[f].as_u64(), c[f].as_u64(), "{file}{pointer}/{f}");
            }
            seen += 1;
        }
        // Sorted by energy per token, least first (the default).
        let ept: Vec<f64> = rows
            .iter()
            .map(|r| r["energy_per_token_joules"].as_f64().unwrap())
            .collect();
        assert!(ept.windows(2).all(|w| w[0] <= w[1]), "{task} not sorted");
    }
    assert_eq!(seen, 565);

    // CSV: the same numbers, parsed back from text.
    let (status, csv) = text(
        &app,
        "/api/v1/peers/mlenergy-v3/configurations.csv?task=gpqa&gpu=H100",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{csv}");
    let mut rdr = csv::Reader::from_reader(csv.as_bytes());
    let head = rdr.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let mut n = 0;
    for rec in rdr.records() {
        let rec = rec.unwrap();
        let (_, _, c) = files
            .iter()
            .find(|(f, p, _)| f == &rec[col("file")] && p == &rec[col("pointer")])
            .unwrap();
        assert_eq!(c["gpu_model"], "H100");
        for f in FIGURES {
            assert_eq!(
                rec[col(f)].parse::<f64>().unwrap(),
                c[f].as_f64().unwrap(),
                "{f}"
            );
        }
        n += 1;
    }
    let h100_gpqa = files
        .iter()
        .filter(|(f, _, c)| f == "tasks/gpqa.json" && c["gpu_model"] == "H100")
        .count();
    assert_eq!(n, h100_gpqa);

    // HTML: the banner names the source, protocol and licence; the first
    // row is the least energy per token of the task, from the file.
    let (status, html) = text(&app, "/peers/mlenergy-v3?task=sourcegraph-fim").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(
        html.contains("Published by others, under another protocol"),
        "{html}"
    );
    assert!(
        html.contains("https://github.com/ml-energy/leaderboard")
            && html.contains("licence Apache-2.0")
    );
    let least = files
        .iter()
        .filter(|(f, _, _)| f == "tasks/sourcegraph-fim.json")
        .map(|(_, _, c)| c["energy_per_token_joules"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let first_row = html
        .split("<tbody>")
        .nth(1)
        .unwrap()
        .split("</tr>")
        .next()
        .unwrap();
    assert!(
        first_row.contains(&format!("{least:.4}")),
        "{least:.4} not in {first_row}"
    );

    // One click from the first page, and on /peers with every file's digest.
    let (_, front) = text(&app, "/").await;
    assert!(front.contains("href=\"/peers/mlenergy-v3\""), "{front}");
    let (_, list) = text(&app, "/peers").await;
    assert!(list.contains(&wattcounts::digest::sha256_hex(&index)));

    // Re-importing the same files changes nothing.
    let before = app.stored().await;
    let (code, out, err) = import(&app, &shipped());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("unchanged: these files"), "{out}");
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn peer_rows_never_enter_a_watt_counts_view() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    // A model both measure: Watt Counts on an L4, ML.ENERGY on H100/B200.
    let model = "meta-llama/Llama-3.1-8B-Instruct";
    let gz = BundleBuilder::on("l4", &[model]).by("alice", &key).build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, board_before) = app.get("/api/v1/leaderboard?per_page=1000").await;
    let (code, out, err) = import(&app, &shipped());
    assert_eq!(code, 0, "{out}\n{err}");

    // The Watt Counts views hold what they held, nothing more.
    let (_, board_after) = app.get("/api/v1/leaderboard?per_page=1000").await;
    assert_eq!(board_after["total"], board_before["total"]);
    assert_eq!(board_after["entries"], board_before["entries"]);
    let (_, gpus) = app.get("/api/v1/gpus").await;
    let with_data: Vec<&Value> = gpus["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["configurations"].as_u64().unwrap_or(0) > 0)
        .collect();
    assert_eq!(
        with_data.len(),
        1,
        "only the L4 has Watt Counts configurations: {with_data:?}"
    );
    let (_, stats) = app.get("/api/v1/stats").await;
    assert_eq!(stats["counts"]["submissions"], 1);
    // A peer origin is no view of the leaderboard: the 400 says where it is.
    let (status, body) = app.get("/api/v1/leaderboard?origin=peer:mlenergy-v3").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/api/v1/peers/mlenergy-v3"),
        "{body}"
    );

    // The model page: the Watt Counts tables as before, and ML.ENERGY's
    // rows in a section of their own.
    let (status, answer) = app.get(&format!("/api/v1/models/{model}")).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    for s in answer["scenarios"].as_array().unwrap() {
        for p in s["points"].as_array().unwrap() {
            assert_eq!(p["gpu_id"], "l4", "{p}");
        }
    }
    let also = answer["also_measured_by"].as_array().unwrap();
    assert_eq!(also.len(), 1);
    assert_eq!(also[0]["source"]["origin"], "peer:mlenergy-v3");
    let theirs = published(&shipped())
        .into_iter()
        .filter(|(_, _, c)| c["model_id"] == model)
        .count();
    assert!(theirs > 0);
    assert_eq!(also[0]["configurations"].as_array().unwrap().len(), theirs);
    let (status, html) = text(&app, &format!("/models/{model}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Also measured by ML.ENERGY Leaderboard v3 on B200 and H100 (another protocol, not comparable figure by figure)"), "{html}");
    // Their section is its own: no table holds both an L4 row and theirs.
    for table in html.split("<table").skip(1) {
        let table = table.split("</table>").next().unwrap();
        assert!(
            !(table.contains("batch-size setting") && table.contains("/gpus/l4")),
            "mixed table: {table}"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
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
fn with_edit(dir: &Path, edit: impl Fn(&mut serde_json::Map<String, Value>)) {
    with_edit_at(dir, 0, edit);
}

/// `tasks/gpqa.json` with its configuration `i` changed by `edit`.
fn with_edit_at(dir: &Path, i: usize, edit: impl Fn(&mut serde_json::Map<String, Value>)) {
    let path = dir.join("tasks/gpqa.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(doc["configurations"][i].as_object_mut().unwrap());
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// A JSON file below `dir` changed by `edit`.
fn edit_json(dir: &Path, file: &str, edit: impl Fn(&mut Value)) {
    let path = dir.join(file);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// What a case does to a copy of the shipped folder.
type Damage = Box<dyn Fn(&Path)>;

#[tokio::test]
async fn a_bad_folder_is_refused_by_file_and_field_and_nothing_is_stored() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "malformed",
            Box::new(|d: &Path| {
                std::fs::write(d.join("tasks/gpqa.json"), b"{\"task\": \"gpqa\", ").unwrap()
            }),
            "tasks/gpqa.json: not JSON",
        ),
        (
            "missing field",
            Box::new(|d: &Path| {
                with_edit(d, |c| {
                    c.remove("energy_per_token_joules");
                })
            }),
            "tasks/gpqa.json /configurations/0/energy_per_token_joules: missing",
        ),
        (
            "unknown GPU",
            Box::new(|d: &Path| {
                with_edit(d, |c| {
                    c.insert("gpu_model".into(), "MI300X".into());
                })
            }),
            "tasks/gpqa.json /configurations/0/gpu_model: unknown GPU \"MI300X\"",
        ),
        (
            "unit out of range",
            // Seconds written as milliseconds: 1,000 x the median ITL.
            Box::new(|d: &Path| {
                with_edit(d, |c| {
                    let v = c["p99_itl_ms"].as_f64().unwrap() * 1000.0;
                    c.insert("p99_itl_ms".into(), v.into());
                })
            }),
            "tasks/gpqa.json /configurations/0/p99_itl_ms: out of range",
        ),
        (
            "missing file",
            Box::new(|d: &Path| std::fs::remove_file(d.join("tasks/lm-arena-chat.json")).unwrap()),
            "tasks/lm-arena-chat.json: cannot be read",
        ),
    ];
    for (name, damage, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&shipped(), dir.path());
        damage(dir.path());
        let (code, out, err) = import(&app, dir.path());
        assert_eq!(
            code,
            i32::from(wattcounts::cli::EXIT_REJECTED),
            "{name}: {out}\n{err}"
        );
        assert!(err.contains(want), "{name}: wanted '{want}' in:\n{err}");
        assert!(err.contains("nothing was imported"), "{name}: {err}");
        app.assert_nothing_stored_since(&before).await;
    }
    // A file that breaks a rule is refused (1, above, as `submit` exits on
    // a rejected bundle); a folder that is not there is the command asked
    // wrongly, a usage error (2), as everywhere in the CLI.
    let (code, out, err) = import(&app, &app.dir.path().join("no-such-folder"));
    assert_eq!(code, i32::from(wattcounts::cli::EXIT_USAGE), "{out}\n{err}");
    assert!(err.contains("no-such-folder is not a folder"), "{err}");
    app.assert_nothing_stored_since(&before).await;
    let (status, body) = app.get("/api/v1/peers/mlenergy-v3").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("wattcounts peer import mlenergy-v3"),
        "{body}"
    );
}

#[tokio::test]
async fn a_newer_release_is_stored_beside_the_old_one_which_stays_readable() {
    let app = TestApp::new().await;
    assert_eq!(import(&app, &shipped()).0, 0);
    let (_, first) = app
        .get("/api/v1/peers/mlenergy-v3?task=gpqa&per_page=1")
        .await;
    let old_id = first["release"]["id"].as_i64().unwrap();
    let log_before = app.service.tlog().size().await.unwrap();

    // A later release: a new date and one figure changed consistently
    // (power and energy together, so every rule still holds).
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&shipped(), dir.path());
    let index = dir.path().join("index.json");
    let text_index = std::fs::read_to_string(&index).unwrap();
    std::fs::write(
        &index,
        text_index.replace(
            "\"last_updated\": \"2026-02-16\"",
            "\"last_updated\": \"2026-03-01\"",
        ),
    )
    .unwrap();
    with_edit(dir.path(), |c| {
        for f in [
            "avg_power_watts",
            "energy_per_token_joules",
            "energy_per_request_joules",
        ] {
            let v = c[f].as_f64().unwrap() * 0.5;
            c.insert(f.into(), v.into());
        }
    });
    let (code, out, err) = import(&app, dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("release 2026-03-01"), "{out}");
    assert_eq!(
        app.service.tlog().size().await.unwrap(),
        log_before + 1,
        "one leaf per import"
    );

    let (_, newest) = app.get("/api/v1/peers/mlenergy-v3").await;
    assert_eq!(newest["release"]["label"], "2026-03-01");
    assert_eq!(newest["newest_release"], true);
    let (status, old) = app
        .get(&format!("/api/v1/peers/mlenergy-v3?release={old_id}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{old}");
    assert_eq!(old["release"]["label"], "2026-02-16");
    assert_eq!(old["newest_release"], false);
    let (_, list) = app.get("/api/v1/peers").await;
    assert_eq!(list["releases"].as_array().unwrap().len(), 2);
    let (status, body) = app.get("/api/v1/peers/mlenergy-v3?task=mmlu").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gpqa, lm-arena-chat, sourcegraph-fim"),
        "{body}"
    );
}

#[tokio::test]
async fn postgres_stores_and_reads_a_peer_release_alike() {
    let Some(app) = TestApp::postgres().await else {
        return;
    };
    use wattcounts::peer::{PeerImportOutcome, PeerSource};
    use wattcounts::service::peers::PeerImportRequest;
    let r = app
        .service
        .import_peer(PeerImportRequest::bundled(PeerSource::MlEnergyV3, "test"))
        .await
        .unwrap();
    assert!(matches!(r.outcome, PeerImportOutcome::Stored { .. }));
    assert_eq!(r.configurations, 565);
    let again = app
        .service
        .import_peer(PeerImportRequest::bundled(PeerSource::MlEnergyV3, "test"))
        .await
        .unwrap();
    assert!(matches!(again.outcome, PeerImportOutcome::Unchanged { .. }));
    let files = published(&shipped());
    let (status, body) = app
        .get("/api/v1/peers/mlenergy-v3?task=lm-arena-chat&per_page=1000&sort=throughput")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let rows = body["configurations"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        files
            .iter()
            .filter(|(f, _, _)| f == "tasks/lm-arena-chat.json")
            .count()
    );
    for row in rows {
        let (_, _, c) = files
            .iter()
            .find(|(f, p, _)| row["file"] == f.as_str() && row["pointer"] == p.as_str())
            .unwrap();
        for f in FIGURES {
            assert_eq!(row[f].as_f64(), c[f].as_f64(), "{f}");
        }
    }
    let tput: Vec<f64> = rows
        .iter()
        .map(|r| r["output_throughput_tokens_per_sec"].as_f64().unwrap())
        .collect();
    assert!(tput.windows(2).all(|w| w[0] >= w[1]), "most first");
    // One model's rows (the `+column` order) answer alike on PostgreSQL.
    let (status, one) = app
        .get("/api/v1/peers/mlenergy-v3?task=lm-arena-chat&model=Qwen/Qwen3-8B&sort=throughput")
        .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    let want = files
        .iter()
        .filter(|(f, _, c)| f == "tasks/lm-arena-chat.json" && c["model_id"] == "Qwen/Qwen3-8B")
        .count();
    assert_eq!(one["total"], want);
    assert_eq!(one["configurations"].as_array().unwrap().len(), want);
}

/// Fewer, shallower trees: the same code, a test's time.
fn quick_settings() -> wattcounts::estimator::Settings {
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

fn shipped_rows() -> Vec<wattcounts::estimator::peer::PeerRow> {
    let dir = shipped();
    let release = wattcounts::peer::PeerSource::MlEnergyV3
        .read(&mut wattcounts::service::peers::FolderOnDisk(&dir))
        .unwrap();
    wattcounts::estimator::peer::peer_rows(&release.configs)
}

/// The real-physics validation on the committed v3 files (quick trees):
/// the folds are the task's LLMs and batch settings, the TDP baseline's
/// power error is the one worked out here from the files alone, and the
/// estimator beats both baselines on energy where the task has LLMs
/// enough to learn from (lm-arena-chat, 18).
#[test]
fn the_estimator_is_scored_on_real_v3_measurements_against_its_baselines() {
    use wattcounts::estimator::peer::{validate_task, PeerSplit};
    let rows = shipped_rows();
    assert_eq!(rows.len(), 565, "every shipped configuration is readable");
    let fim = validate_task(
        &rows,
        "sourcegraph-fim",
        PeerSplit::LeaveOneLlmOut,
        &quick_settings(),
    )
    .unwrap();
    let methods: Vec<&str> = fim.iter().map(|l| l.method.as_str()).collect();
    assert_eq!(methods, ["estimator", "tdp", "load_scaled_tdp"]);
    assert!(fim.iter().all(|l| l.folds == 3 && l.rows == 50), "{fim:?}");
    // The oracle: |GPUs x TDP - P| / P over the file's 50 rows, median,
    // with the boards' TDPs written here (H100 SXM 700 W, B200 1000 W).
    let doc: Value = serde_json::from_slice(
        &std::fs::read(shipped().join("tasks/sourcegraph-fim.json")).unwrap(),
    )
    .unwrap();
    let mut errors: Vec<f64> = doc["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let tdp = match c["gpu_model"].as_str().unwrap() {
                "H100" => 700.0,
                "B200" => 1000.0,
                other => panic!("{other}"),
            };
            let p = c["avg_power_watts"].as_f64().unwrap();
            (c["num_gpus"].as_f64().unwrap() * tdp - p).abs() / p * 100.0
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    let median = (errors[24] + errors[25]) / 2.0;
    let got = fim[1].power_mdape_pct.unwrap();
    assert!(
        (got - median).abs() < 1e-9,
        "TDP baseline power MdAPE {got} vs {median} by hand"
    );
    assert!(fim[0].coverage.is_some_and(|c| (0.0..=1.0).contains(&c)));
    assert!(fim[1].coverage.is_none(), "baselines have no interval");

    let lobo = validate_task(
        &rows,
        "sourcegraph-fim",
        PeerSplit::LeaveOneBatchSizeOut,
        &quick_settings(),
    )
    .unwrap();
    assert_eq!(lobo[0].folds, 14, "the task's 14 batch-size settings");

    let chat = validate_task(
        &rows,
        "lm-arena-chat",
        PeerSplit::LeaveOneLlmOut,
        &quick_settings(),
    )
    .unwrap();
    assert_eq!(chat[0].folds, 18);
    let energy = |i: usize| chat[i].energy_mdape_pct.unwrap();
    assert!(energy(0) < energy(1) && energy(0) < energy(2), "{chat:?}");
}

#[tokio::test]
async fn the_estimator_api_and_insights_publish_the_real_hardware_table() {
    let app = TestApp::new().await;
    let (_, before) = app.get("/api/v1/estimator").await;
    assert!(
        before["real_hardware"].is_null(),
        "nothing imported yet: {before}"
    );
    assert_eq!(import(&app, &shipped()).0, 0);
    app.service
        .refresh_real_hardware_validation(quick_settings())
        .await
        .unwrap();
    let (status, body) = app.get("/api/v1/estimator").await;
    assert_eq!(status, StatusCode::OK);
    let rh = &body["real_hardware"];
    assert!(
        rh["statement"].as_str().unwrap().starts_with(
            "Validated on real hardware (ML.ENERGY Leaderboard v3, release 2026-02-16)"
        ),
        "{rh}"
    );
    assert_eq!(rh["rows"], 565);
    // 3 tasks x 3 splits (LLM, family, batch size) x (estimator + 2
    // baselines).
    assert_eq!(rh["lines"].as_array().unwrap().len(), 27);
    let tasks: BTreeSet<&str> = rh["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["task"].as_str().unwrap())
        .collect();
    assert_eq!(
        tasks,
        BTreeSet::from(["gpqa", "lm-arena-chat", "sourcegraph-fim"])
    );
    let (_, html) = text(&app, "/insights").await;
    assert!(
        html.contains("The estimator on real hardware (ML.ENERGY v3)"),
        "{html}"
    );
    assert!(html.contains("baseline: load-scaled TDP power, roofline ITL"));
}

/// Issue #54: Llama-3.1-70B on 2 x B200 at a batch-size cap ML.ENERGY did
/// not publish (96) gets an estimate under ML.ENERGY v3's protocol,
/// labelled so, from the JSON API and from the form on /peers/mlenergy-v3;
/// it lies between the published figures at the caps either side (64 and
/// 128, read from the file here); a published cap carries the published
/// figure beside it; refusals name the input.
#[tokio::test]
async fn a_configuration_ml_energy_did_not_publish_is_estimated_under_its_protocol() {
    let app = TestApp::new().await;
    let q = "model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200&num_gpus=2&max_num_seqs=96&task=lm-arena-chat";
    let (status, body) = app
        .get(&format!("/api/v1/peers/mlenergy-v3/estimate?{q}"))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "estimator_not_ready");
    assert_eq!(import(&app, &shipped()).0, 0);
    app.service
        .refresh_real_hardware_validation(quick_settings())
        .await
        .unwrap();
    let (status, e) = app
        .get(&format!("/api/v1/peers/mlenergy-v3/estimate?{q}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{e}");
    assert_eq!(e["kind"], "estimate");
    assert_eq!(e["protocol"], "peer:mlenergy-v3");
    assert!(e["note"]
        .as_str()
        .unwrap()
        .contains("never comparable with a Watt Counts figure"));
    assert_eq!(
        (e["tensor_parallel"].as_u64(), e["expert_parallel"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(e["facts"]["source"], "peer data");
    assert_eq!(e["published"], Value::Null);
    let doc: Value =
        serde_json::from_slice(&std::fs::read(shipped().join("tasks/lm-arena-chat.json")).unwrap())
            .unwrap();
    let at = |cap: u64| {
        doc["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["model_id"] == "meta-llama/Llama-3.1-70B-Instruct"
                    && c["gpu_model"] == "B200"
                    && c["num_gpus"] == 2
                    && c["max_num_seqs"] == cap
            })
            .unwrap()["energy_per_token_joules"]
            .as_f64()
            .unwrap()
    };
    let (e64, e128) = (at(64), at(128));
    let got = e["energy_per_token_j"].as_f64().unwrap();
    assert!(e128 < e64, "more sequences a step, less energy a token");
    assert!(
        got > e128 * 0.8 && got < e64 * 1.25,
        "{got} vs {e128}..{e64}"
    );
    let (lo, hi) = (
        e["energy_per_token_lo"].as_f64().unwrap(),
        e["energy_per_token_hi"].as_f64().unwrap(),
    );
    assert!(lo < got && got < hi);

    // A published cap: the peer's own figure beside the estimate.
    let (_, p) = app
        .get("/api/v1/peers/mlenergy-v3/estimate?model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200&num_gpus=2&max_num_seqs=128")
        .await;
    assert!(
        (p["published"]["energy_per_token_j"].as_f64().unwrap() - e128).abs() < 1e-12,
        "{p}"
    );

    // Refusals, each naming its input.
    for (query, status, code, words) in [
        ("model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200&num_gpus=1&max_num_seqs=8&task=lm-arena-chat&weight_precision=bfloat16", StatusCode::OK, "", ""),
        ("model=meta-llama%2FLlama-3.1-405B-Instruct&gpu=b200&num_gpus=2&max_num_seqs=8", StatusCode::UNPROCESSABLE_ENTITY, "does_not_fit", "810 GB of weights"),
        ("model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200&num_gpus=2&max_num_seqs=9000", StatusCode::UNPROCESSABLE_ENTITY, "outside_domain", "max_num_seqs = 9000"),
        ("model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200&max_num_seqs=8&task=poetry", StatusCode::UNPROCESSABLE_ENTITY, "unknown_task", "task = poetry"),
        ("model=nobody%2FNothing-1B&gpu=b200&max_num_seqs=8", StatusCode::UNPROCESSABLE_ENTITY, "unknown_model", "nobody/Nothing-1B"),
        ("model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b201&max_num_seqs=8", StatusCode::UNPROCESSABLE_ENTITY, "unknown_gpu", "b201"),
        ("model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200", StatusCode::BAD_REQUEST, "missing_parameter", "max_num_seqs"),
        ("model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=b200&max_num_seqs=0", StatusCode::BAD_REQUEST, "bad_parameter", "max_num_seqs = '0'"),
    ] {
        let (got, body) = app.get(&format!("/api/v1/peers/mlenergy-v3/estimate?{query}")).await;
        assert_eq!(got, status, "{query}: {body}");
        if !code.is_empty() {
            assert_eq!(body["error"]["code"], code, "{query}: {body}");
            assert!(body["error"]["message"].as_str().unwrap().contains(words), "{query}: {body}");
        }
    }
    let (status, body) = app
        .get("/api/v1/peers/mlenergy-v2/estimate?model=x&gpu=b200&max_num_seqs=8")
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("no_peer_estimator")),
        "{body}"
    );
    let (status, body) = app
        .get("/api/v1/peers/nobody/estimate?model=x&gpu=b200&max_num_seqs=8")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "unknown_peer");

    // The form on the peer's page, and its answer as a page.
    let (_, html) = text(&app, "/peers/mlenergy-v3").await;
    assert!(
        html.contains("action=\"/peers/mlenergy-v3/estimate\""),
        "the form"
    );
    let (status, html) = text(&app, &format!("/peers/mlenergy-v3/estimate?{q}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("An estimate under another benchmark&#x27;s protocol")
            || html.contains("An estimate under another benchmark's protocol"),
        "{html}"
    );
    assert!(
        html.contains("on 2 × NVIDIA B200, batch-size cap 96"),
        "{html}"
    );
}

/// The v3 insights against the files read here: Qwen3-8B on lm-arena-chat,
/// B200 over H100 on every configuration both ran alike, median of the
/// ratios, worked out from the JSON alone.
#[tokio::test]
async fn peer_insights_are_the_files_own_ratios() {
    let app = TestApp::new().await;
    assert_eq!(import(&app, &shipped()).0, 0);
    let (status, body) = app.get("/api/v1/peers/mlenergy-v3/insights").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let model = "Qwen/Qwen3-8B";
    let got = body["savings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["task"] == "lm-arena-chat" && s["model"] == model)
        .expect("Qwen3-8B ran on both GPUs");
    assert_eq!(got["reference"], "H100");
    assert_eq!(got["other"], "B200");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(shipped().join("tasks/lm-arena-chat.json")).unwrap())
            .unwrap();
    let rows: Vec<&Value> = doc["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["model_id"] == model)
        .collect();
    let key = |c: &Value| {
        format!(
            "{} {} {} {} {} {}",
            c["weight_precision"],
            c["num_gpus"],
            c["tensor_parallel"],
            c["expert_parallel"],
            c["data_parallel"],
            c["max_num_seqs"]
        )
    };
    let mut ratios = Vec::new();
    for h in rows.iter().filter(|c| c["gpu_model"] == "H100") {
        let twins: Vec<&&Value> = rows
            .iter()
            .filter(|b| b["gpu_model"] == "B200" && key(b) == key(h))
            .collect();
        assert!(twins.len() <= 1, "Qwen3-8B has no key published twice");
        if let Some(b) = twins.first() {
            ratios.push(
                b["energy_per_token_joules"].as_f64().unwrap()
                    / h["energy_per_token_joules"].as_f64().unwrap(),
            );
        }
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    assert!(n >= 3, "{n} pairs");
    let median = if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    };
    assert_eq!(got["pairs"], n);
    assert!(
        (got["median_ratio"].as_f64().unwrap() - median).abs() < 1e-12,
        "{got} vs {median}"
    );
    assert_eq!(
        got["other_less"],
        ratios.iter().filter(|r| **r < 1.0).count()
    );
    // A size exponent for the chat task on each GPU, from 3+ dense models.
    let exps = body["exponents"].as_array().unwrap();
    assert!(
        exps.iter().any(|e| e["task"] == "lm-arena-chat"
            && e["gpu"] == "H100"
            && e["models"].as_u64().unwrap() >= 3),
        "{exps:?}"
    );
    // /insights reads it per origin, on a page of its own.
    let (status, html) = text(&app, "/insights?origin=peer:mlenergy-v3").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("B200 against H100, per model")
            && html.contains("Published by others, under another protocol"),
        "{html}"
    );
}

fn v2_excerpt() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers/mlenergy-v2")
}

/// ML.ENERGY v2 (its own origin, `peer:mlenergy-v2`): the committed excerpt
/// imported through the command, every published figure read back, the
/// derived energy per token worked out here, power and percentiles empty
/// (v2 publishes none), both licence statements carried, and apart from v3.
#[tokio::test]
async fn the_v2_excerpt_imports_as_its_own_origin_with_both_licence_statements() {
    let app = TestApp::new().await;
    let (code, stdout, stderr) = import_as(
        &app,
        "mlenergy-v2",
        &v2_excerpt(),
        "c3af7f31e231a2a7021c5f8e2a54dd712d02e6e2",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("as peer:mlenergy-v2") && stdout.contains("5 configurations"),
        "{stdout}"
    );
    assert_eq!(import(&app, &shipped()).0, 0);

    let (status, body) = app
        .get("/api/v1/peers/mlenergy-v2?task=chat&per_page=100")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["source"]["licence_statement"]
        .as_str()
        .unwrap()
        .contains("non-commercial use only"));
    assert!(body["source"]["licence"]
        .as_str()
        .unwrap()
        .contains("Apache-2.0"));
    let rows = body["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    for row in rows {
        let file: Value = serde_json::from_slice(
            &std::fs::read(v2_excerpt().join(row["file"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        assert_eq!(
            row["energy_per_request_joules"].as_f64(),
            file["Energy/req (J)"].as_f64()
        );
        assert_eq!(
            row["output_throughput_tokens_per_sec"].as_f64(),
            file["Token tput (tok/s)"].as_f64()
        );
        assert_eq!(
            row["avg_output_len"].as_f64(),
            file["Avg Output Tokens"].as_f64()
        );
        assert_eq!(
            row["avg_batch_size"].as_f64(),
            file["Avg BS (reqs)"].as_f64()
        );
        assert_eq!(row["max_num_seqs"].as_u64(), file["Max BS (reqs)"].as_u64());
        assert_eq!(row["tensor_parallel"].as_u64(), file["TP"].as_u64());
        assert_eq!(
            row["num_gpus"].as_u64().unwrap(),
            file["TP"].as_u64().unwrap() * file["PP"].as_u64().unwrap()
        );
        // Derived, as the page says: J/request ÷ output tokens; TPOT in ms.
        let ept =
            file["Energy/req (J)"].as_f64().unwrap() / file["Avg Output Tokens"].as_f64().unwrap();
        assert_eq!(row["energy_per_token_joules"].as_f64(), Some(ept));
        assert_eq!(
            row["mean_itl_ms"].as_f64(),
            Some(file["Avg TPOT (s)"].as_f64().unwrap() * 1000.0)
        );
        assert!(
            row["avg_power_watts"].is_null() && row["p99_itl_ms"].is_null(),
            "{row}"
        );
    }
    // Two origins, never one table: v3's table holds no v2 file.
    let (_, v3) = app
        .get("/api/v1/peers/mlenergy-v3?task=lm-arena-chat&per_page=1000")
        .await;
    assert!(v3["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["file"].as_str().unwrap().starts_with("tasks/")));
    let (_, html) = text(&app, "/peers/mlenergy-v2").await;
    assert!(
        html.contains("mean ") && html.contains("non-commercial use only"),
        "{html}"
    );
    // Power sorts put the rows without power last, and answer.
    let (status, _) = app
        .get("/api/v1/peers/mlenergy-v2?task=chat&sort=power")
        .await;
    assert_eq!(status, StatusCode::OK);
}

fn v1_excerpt() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers/mlenergy-v1")
}

const V1_REF: &str = "c3af7f31e231a2a7021c5f8e2a54dd712d02e6e2";
const V1_BOARDS: [&str; 4] = [
    "--gpu",
    "A100=NVIDIA A100-SXM4-40GB",
    "--gpu",
    "V100=Tesla V100-SXM2-32GB",
];

/// The rows of one v1 benchmark file, read here with split(','): (model,
/// throughput, response_length, latency, energy).
fn v1_rows(file: &str) -> Vec<(String, [f64; 4])> {
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

/// ML.ENERGY v1 (2023): its files name the A100 and V100 only by family,
/// so the import asks which board each was and refuses a guess; with the
/// operator's statements every figure reads back as the CSV has it, energy
/// per token is derived (J per response ÷ response length), the statements
/// are in the release's label and identity, and another statement is
/// another release, not a relabelling.
#[tokio::test]
async fn the_v1_excerpt_needs_the_operators_gpu_boards_and_reads_back_as_published() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    let rejected = i32::from(wattcounts::cli::EXIT_REJECTED);
    for (extra, want) in [
        (
            vec![],
            "A100_chat_benchmark.csv: the files name the GPU only as \"A100\", which the catalogue holds as 4 boards with different TDPs; state which one was measured: --gpu A100=<one of: NVIDIA A100-SXM4-40GB, NVIDIA A100-SXM4-80GB, NVIDIA A100-PCIE-40GB, NVIDIA A100 80GB PCIe>",
        ),
        (
            vec!["--gpu", "A100=NVIDIA A100-SXM4-40GB"],
            "V100_instruct_benchmark.csv: the files name the GPU only as \"V100\"",
        ),
        (
            vec!["--gpu", "A100=NVIDIA H100 80GB HBM3", "--gpu", "V100=Tesla V100-SXM2-32GB"],
            "A100_chat_benchmark.csv: --gpu A100=NVIDIA H100 80GB HBM3: not a catalogue A100",
        ),
        (
            vec!["--gpu", "H100=NVIDIA H100 80GB HBM3"],
            "schema.yaml /gpu: --gpu H100=…: the files name no GPU \"H100\" (they name A100, A40, V100)",
        ),
        // A board too small for the files' models: v1 ran each on one GPU
        // in FP16, and row 2 of the V100 file is CAMEL-13B (models.json:
        // 13 B parameters), 13e9 x 2 bytes = 26e9 bytes, above the 16 GB
        // (16e9 bytes) of a V100 PCIe 16GB. The A100 (40 GB) and A40
        // (48 GB) rows before it fit.
        (
            vec!["--gpu", "A100=NVIDIA A100-SXM4-40GB", "--gpu", "V100=Tesla V100-PCIE-16GB"],
            "V100_instruct_benchmark.csv row 2 column model: camel-ai/CAMEL-13B-Combined-Data (13 B parameters) needs 26000000000 bytes (26.0 GB) of FP16 weights (13 B x 2 bytes), more than the 16 GB of the Tesla V100-PCIE-16GB (--gpu V100=Tesla V100-PCIE-16GB, the operator's statement)",
        ),
    ] {
        let (code, out, err) = import_with(&app, "mlenergy-v1", &v1_excerpt(), V1_REF, &extra);
        assert_eq!(code, rejected, "{extra:?}: {out}{err}");
        assert!(err.contains(want), "{extra:?}: wanted '{want}' in:\n{err}");
        app.assert_nothing_stored_since(&before).await;
    }
    // --gpu means nothing to a release that names its boards.
    let (code, _, err) = import_with(&app, "mlenergy-v3", &shipped(), COMMIT, &V1_BOARDS[..2]);
    assert_eq!(code, rejected, "{err}");
    assert!(err.contains("--gpu is for mlenergy-v1"), "{err}");

    let (code, out, err) = import_with(&app, "mlenergy-v1", &v1_excerpt(), V1_REF, &V1_BOARDS);
    assert_eq!(code, 0, "{out}{err}");
    // 21 A100 rows, 23 A40 rows, 21 V100 rows.
    assert!(
        out.contains("as peer:mlenergy-v1") && out.contains("65 configurations"),
        "{out}"
    );
    assert!(out.contains("skipped: score.csv: NLP accuracy"), "{out}");
    for (file, task, family, board) in [
        (
            "A100_chat_benchmark.csv",
            "chat",
            "A100",
            "NVIDIA A100-SXM4-40GB",
        ),
        (
            "A40_chat-concise_benchmark.csv",
            "chat-concise",
            "A40",
            "NVIDIA A40",
        ),
        (
            "V100_instruct_benchmark.csv",
            "instruct",
            "V100",
            "Tesla V100-SXM2-32GB",
        ),
    ] {
        let (status, body) = app
            .get(&format!(
                "/api/v1/peers/mlenergy-v1?task={task}&gpu={family}&per_page=100"
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let rows = body["configurations"].as_array().unwrap();
        let published = v1_rows(file);
        assert_eq!(rows.len(), published.len(), "{file}");
        for (model, [throughput, length, _latency, energy]) in &published {
            let row = rows
                .iter()
                .find(|r| r["model_id"] == model.as_str())
                .unwrap_or_else(|| panic!("{file}: {model} not served"));
            assert_eq!(row["file"], file);
            assert_eq!(row["gpu_model"], family);
            assert_eq!(row["gpu_name"], board);
            assert_eq!(row["energy_per_request_joules"].as_f64(), Some(*energy));
            assert_eq!(
                row["output_throughput_tokens_per_sec"].as_f64(),
                Some(*throughput)
            );
            assert_eq!(row["avg_output_len"].as_f64(), Some(*length));
            assert_eq!(
                row["energy_per_token_joules"].as_f64(),
                Some(energy / length)
            );
            // The protocol's, not the file's: one GPU, batch size 1, FP16.
            assert_eq!(
                (row["num_gpus"].as_u64(), row["max_num_seqs"].as_u64()),
                (Some(1), Some(1))
            );
            assert_eq!(row["weight_precision"], "fp16");
            assert!(
                row["avg_power_watts"].is_null() && row["median_itl_ms"].is_null(),
                "{row}"
            );
        }
        let label = body["release"]["label"].as_str().unwrap();
        assert!(
            label.contains("A100 read as NVIDIA A100-SXM4-40GB (operator's statement)")
                && label.contains("A40 read as NVIDIA A40,")
                && label.contains("V100 read as Tesla V100-SXM2-32GB (operator's statement)"),
            "{label}"
        );
        assert!(body["source"]["licence_statement"]
            .as_str()
            .unwrap()
            .contains("non-commercial use only"));
    }
    let (_, html) = text(&app, "/peers/mlenergy-v1").await;
    // The page names the protocol and how each GPU was read.
    assert!(html.contains("batch size 1, FP16"), "{html}");
    assert!(
        html.contains("A100 read as NVIDIA A100-SXM4-40GB"),
        "{html}"
    );

    // The same files and statements again: nothing changes.
    let (code, out, _) = import_with(&app, "mlenergy-v1", &v1_excerpt(), V1_REF, &V1_BOARDS);
    assert_eq!(code, 0);
    assert!(out.contains("unchanged:"), "{out}");
    // Another V100 board: another release beside the first.
    let (code, out, err) = import_with(
        &app,
        "mlenergy-v1",
        &v1_excerpt(),
        V1_REF,
        &[
            "--gpu",
            "A100=NVIDIA A100-SXM4-40GB",
            "--gpu",
            "V100=Tesla V100-PCIE-32GB",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("imported"), "{out}");
    let (_, list) = app.get("/api/v1/peers").await;
    let v1: Vec<_> = list["releases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["release"]["origin"] == "peer:mlenergy-v1")
        .collect();
    assert_eq!(v1.len(), 2, "{list}");
    let (_, newest) = app.get("/api/v1/peers/mlenergy-v1?task=instruct").await;
    assert_eq!(newest["newest_release"], true);
    assert_eq!(
        newest["configurations"][0]["gpu_name"],
        "Tesla V100-PCIE-32GB"
    );
}

/// A v1 file whose cell is not a number, or whose energy is in kJ, is
/// refused by file, row and column, and nothing is stored.
#[tokio::test]
async fn a_bad_v1_file_is_refused_by_row_and_column() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    for (name, edit, want) in [
        (
            "not a number",
            Box::new(|t: &str| t.replacen("21.207721076321384", "fast", 1))
                as Box<dyn Fn(&str) -> String>,
            "A100_chat_benchmark.csv row 2 column throughput: a number is wanted, found \"fast\"",
        ),
        (
            // Row 2's 2144.83 J in 12.14 s is 176.6 W; × 1000 is 176,627 W.
            "energy in mJ",
            Box::new(|t: &str| t.replacen("2144.8338435191445", "2144833.8435191445", 1)),
            "A100_chat_benchmark.csv row 2 column energy: out of range",
        ),
        (
            "unknown model",
            Box::new(|t: &str| t.replacen("BAIR/koala-13b", "BAIR/koala-14b", 1)),
            "A100_chat_benchmark.csv row 2 column model: \"BAIR/koala-14b\" is not in models.json",
        ),
        (
            "short row",
            Box::new(|t: &str| t.replacen(",12.1433556952537,2144.8338435191445", "", 1)),
            "A100_chat_benchmark.csv row 2: not CSV",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        for f in crate::common::walk_files(&v1_excerpt()) {
            std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
        }
        let path = dir.path().join("A100_chat_benchmark.csv");
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = edit(&text);
        assert_ne!(edited, text, "{name}: the edit found nothing");
        std::fs::write(&path, edited).unwrap();
        let (code, out, err) = import_with(&app, "mlenergy-v1", dir.path(), V1_REF, &V1_BOARDS);
        assert_eq!(
            code,
            i32::from(wattcounts::cli::EXIT_REJECTED),
            "{name}: {out}{err}"
        );
        assert!(err.contains(want), "{name}: wanted '{want}' in:\n{err}");
        app.assert_nothing_stored_since(&before).await;
    }
}

/// Text a publisher's file may hold that a spreadsheet would run: one of
/// each start the guard defuses (`=`, `+`, `-`, `@`, tab, CR), the first
/// as issue #53 met it, in a model's nickname.
const FORMULAS: [&str; 6] = [
    "=HYPERLINK(\"http://example.com/x\",\"click\")",
    "+1+1",
    "-1+2",
    "@SUM(A1)",
    "\tTAB",
    "\rCR",
];

/// The CSV export at `path`: its header and rows, as a spreadsheet's CSV
/// reader splits them (quotes undone, nothing trimmed).
async fn csv_export(app: &TestApp, path: &str) -> (Vec<String>, Vec<Vec<String>>) {
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
fn assert_defused(head: &[String], rows: &[Vec<String>], planted: &[&str]) {
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

/// ML.ENERGY v3's CSV export: a nickname, an architecture, a precision
/// and a model id (listed in index.json, as the importer wants) of the
/// publisher's gpqa file, each starting as a formula would. Every one is
/// shown behind an apostrophe in the CSV; the JSON keeps the text as
/// published.
#[tokio::test]
async fn the_v3_csv_export_defuses_formulas_in_the_publishers_text() {
    let app = TestApp::new().await;
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&shipped(), dir.path());
    let set = |i: usize, key: &'static str, text: &'static str| {
        with_edit_at(dir.path(), i, |c| {
            c.insert(key.into(), text.into());
        });
    };
    set(0, "nickname", FORMULAS[0]);
    set(0, "architecture", FORMULAS[1]);
    set(1, "nickname", FORMULAS[2]);
    set(1, "weight_precision", FORMULAS[4]);
    set(2, "model_id", FORMULAS[3]);
    set(2, "weight_precision", FORMULAS[5]);
    edit_json(dir.path(), "index.json", |index| {
        index["models"][FORMULAS[3]] = serde_json::json!({"nickname": "planted"});
    });
    let (code, out, err) = import(&app, dir.path());
    assert_eq!(code, 0, "{out}\n{err}");

    let (head, rows) = csv_export(
        &app,
        "/api/v1/peers/mlenergy-v3/configurations.csv?task=gpqa&per_page=1000",
    )
    .await;
    // The gpqa file's 187 configurations, all on the one page.
    assert_eq!(rows.len(), 187);
    assert_defused(&head, &rows, &FORMULAS);
    let (_, json) = app
        .get("/api/v1/peers/mlenergy-v3?task=gpqa&per_page=1000")
        .await;
    assert!(
        json["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nickname"] == FORMULAS[0]),
        "the JSON holds the nickname as published"
    );
}

/// ML.ENERGY v2's CSV export: its text comes from folder names as well as
/// files. The task folder `=chat` (the task and every file path), two
/// organisations' folders and `Model`s (`@google`, `+meta-llama`) and
/// three nicknames in models.json (`-`, tab, CR) start as formulas would.
#[tokio::test]
async fn the_v2_csv_export_defuses_formulas_in_folder_names_and_files() {
    let app = TestApp::new().await;
    let dir = tempfile::tempdir().unwrap();
    let from = v2_excerpt();
    for f in crate::common::walk_files(&from) {
        let rel = f.strip_prefix(&from).unwrap().to_str().unwrap();
        let rel = rel
            .strip_prefix("chat/")
            .map_or(rel.to_string(), |r| format!("=chat/{r}"));
        let to = dir.path().join(&rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
    // One configuration file moved under another organisation, whose
    // `Model` names it (the importer checks the two agree).
    let moved = |gpu: &str, org: &str, model: &str, file: &str, new_org: &str| {
        let old = dir.path().join(format!("=chat/{gpu}/{org}/{model}/{file}"));
        let new_dir = dir.path().join(format!("=chat/{gpu}/{new_org}/{model}"));
        std::fs::create_dir_all(&new_dir).unwrap();
        let mut doc: Value = serde_json::from_slice(&std::fs::read(&old).unwrap()).unwrap();
        doc["Model"] = format!("{new_org}/{model}").into();
        std::fs::write(new_dir.join(file), serde_json::to_vec(&doc).unwrap()).unwrap();
        std::fs::remove_file(&old).unwrap();
    };
    let llama = "Meta-Llama-3.1-8B-Instruct";
    moved(
        "A100-SXM4-40GB",
        "google",
        "gemma-2-27b-it",
        "bs128+tp4+pp1.json",
        "@google",
    );
    for file in ["bs128+tp1+pp1.json", "bs64+tp1+pp1.json"] {
        moved("H100 80GB HBM3", "meta-llama", llama, file, "+meta-llama");
    }
    edit_json(dir.path(), "=chat/models.json", |models| {
        models["@google/gemma-2-27b-it"] = serde_json::json!({"nickname": "\tTAB", "params": 27});
        models[format!("+meta-llama/{llama}").as_str()] =
            serde_json::json!({"nickname": "\rCR", "params": 8});
        models[format!("meta-llama/{llama}").as_str()]["nickname"] = "-1+2".into();
    });
    let (code, out, err) = import_as(
        &app,
        "mlenergy-v2",
        dir.path(),
        "c3af7f31e231a2a7021c5f8e2a54dd712d02e6e2",
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("5 configurations"), "{out}");

    // The one task, `=chat`, is the page's.
    let (head, rows) = csv_export(&app, "/api/v1/peers/mlenergy-v2/configurations.csv").await;
    assert_eq!(rows.len(), 5);
    let planted = [
        "=chat",
        "=chat/A100-SXM4-40GB/@google/gemma-2-27b-it/bs128+tp4+pp1.json",
        "@google/gemma-2-27b-it",
        "+meta-llama/Meta-Llama-3.1-8B-Instruct",
        "-1+2",
        "\tTAB",
        "\rCR",
    ];
    assert_defused(&head, &rows, &planted);
}

/// The 2023 leaderboard's (v1) CSV export: the task `=chat` (schema.yaml,
/// and the file named for it), a model id in the benchmark CSV
/// (`@BAIR/koala-13b`, in models.json with nickname `+1+1`) and three
/// nicknames in models.json (`-`, tab, CR) start as formulas would.
#[tokio::test]
async fn the_v1_csv_export_defuses_formulas_in_the_publishers_text() {
    let app = TestApp::new().await;
    let dir = tempfile::tempdir().unwrap();
    for f in crate::common::walk_files(&v1_excerpt()) {
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    let schema = std::fs::read_to_string(dir.path().join("schema.yaml")).unwrap();
    let edited = schema.replacen("\"chat\",", "\"=chat\",", 1);
    assert_ne!(edited, schema, "schema.yaml lists the chat task");
    std::fs::write(dir.path().join("schema.yaml"), edited).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("A100_chat_benchmark.csv")).unwrap();
    let edited = csv.replacen("\nBAIR/koala-13b,", "\n@BAIR/koala-13b,", 1);
    assert_ne!(edited, csv, "row 2 is koala-13b");
    std::fs::remove_file(dir.path().join("A100_chat_benchmark.csv")).unwrap();
    std::fs::write(dir.path().join("A100_=chat_benchmark.csv"), edited).unwrap();
    edit_json(dir.path(), "models.json", |models| {
        models["@BAIR/koala-13b"] = serde_json::json!({"nickname": "+1+1", "params": 13});
        models["lmsys/vicuna-13B"]["nickname"] = "-1+2".into();
        models["metaai/llama-7B"]["nickname"] = "\tTAB".into();
        models["tatsu-lab/alpaca-7B"]["nickname"] = "\rCR".into();
    });
    let (code, out, err) = import_with(&app, "mlenergy-v1", dir.path(), V1_REF, &V1_BOARDS);
    assert_eq!(code, 0, "{out}\n{err}");

    // `=` is %3D in a query.
    let (head, rows) = csv_export(
        &app,
        "/api/v1/peers/mlenergy-v1/configurations.csv?task=%3Dchat",
    )
    .await;
    // The A100 file's 21 rows.
    assert_eq!(rows.len(), 21);
    let planted = ["=chat", "@BAIR/koala-13b", "+1+1", "-1+2", "\tTAB", "\rCR"];
    assert_defused(&head, &rows, &planted);
}

/// `peer import` as a deployment's first command: into a data dir that
/// does not exist yet, without --database-url, it makes the folder and
/// its database (created and migrated, as `serve` makes them) and stores
/// the release, which `peer list` then reads from that data dir.
#[test]
fn an_import_into_a_fresh_data_dir_creates_its_database() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env_remove("WATTCOUNTS_DATABASE_URL")
            .env_remove("WATTCOUNTS_DATA_DIR")
            .output()
            .unwrap()
    };
    let shipped = shipped();
    let imported = run(&[
        "peer",
        "import",
        "mlenergy-v3",
        shipped.to_str().unwrap(),
        "--source-ref",
        COMMIT,
        "--retrieved",
        "2026-12-06",
    ]);
    assert_eq!(
        imported.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    assert!(data.join("wattcounts.db").is_file());
    let listed = run(&["peer", "list"]);
    assert_eq!(
        listed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("peer:mlenergy-v3 2026-02-16 · 565 configurations"),
        "{text}"
    );
}

/// The write end of a pipe whose reader has gone, as `head` leaves it once
/// it has its lines. (A process forked by a test running beside this one
/// at that instant could hold the read end a moment longer: then the
/// writes succeed and the test proves less, but never fails wrongly.)
fn closed_pipe() -> Stdio {
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

/// `peer list | head`: the reader is gone before the list is written, so
/// every write meets a closed pipe. The command stops quietly, exit 0 and
/// no panic (a `println!` panicked there, printing a stack trace).
#[tokio::test]
async fn peer_list_into_a_closed_pipe_exits_quietly() {
    let app = TestApp::new().await;
    assert_eq!(import(&app, &shipped()).0, 0);
    let out = Command::new(BIN)
        .args(["peer", "list", "--data-dir"])
        .arg(app.dir.path())
        .arg("--database-url")
        .arg(format!(
            "sqlite:{}",
            app.dir.path().join("test.db").display()
        ))
        .stdout(closed_pipe())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// `peer --help` names each dataset `peer import` reads.
#[test]
fn peer_help_names_all_three_formats() {
    let out = Command::new(BIN).args(["peer", "--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for slug in ["mlenergy-v3", "mlenergy-v2", "mlenergy-v1"] {
        assert!(text.contains(slug), "{slug} not in:\n{text}");
    }
}

/// A copy of the shipped files as a later release: `last_updated`
/// 2026-03-01, and the first gpqa configuration's power and energies
/// halved together (so every rule still holds).
fn later_release(dir: &Path) {
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
async fn once(
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

/// The watcher a `serve` runs: a release another process imports into
/// the database this instance serves makes its cached answers and the
/// data control's origins stale within the watcher's period (here 50 ms,
/// in-process; the next test runs the real server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peer_watcher_sees_an_import_by_another_process() {
    let app = TestApp::new().await;
    tokio::spawn(
        app.service
            .clone()
            .watch_peer_imports(Duration::from_millis(50)),
    );
    // Answered and kept in the cache: nothing is imported yet.
    let start = Instant::now();
    loop {
        let (_, headers, body) = app
            .raw(Request::get("/api/v1/peers").body(Body::empty()).unwrap())
            .await;
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["releases"].as_array().unwrap().len(), 0);
        if headers.get("x-cache").is_some_and(|h| h == "hit") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "never cached");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, front) = text(&app, "/").await;
    assert!(!front.contains("href=\"/peers/mlenergy-v3\""));

    // Another process (the command) stores a release.
    assert_eq!(import(&app, &shipped()).0, 0);
    let start = Instant::now();
    loop {
        let (_, list) = app.get("/api/v1/peers").await;
        if list["releases"].as_array().unwrap().len() == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the import stayed behind the cache: {list}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, front) = text(&app, "/").await;
    assert!(front.contains("href=\"/peers/mlenergy-v3\""), "{front}");
}

/// The estimator's table on real hardware with few, shallow trees (as
/// `quick_settings` above) and a short settle time, for a real server.
const QUICK_ESTIMATOR: &str = "[estimator]
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

/// Issue #53's case, end to end: `serve` runs; an operator imports a
/// release with the command beside it, then a newer one. Each is served
/// without a restart within seconds (JSON, the page, the data control),
/// and the estimator's table on real hardware appears for the first.
/// Before, the second release stayed behind the response cache for over
/// 36 s, and the table came only with a restart. The server looks for
/// imports every second: 10 s is the bound, not the expectation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_imported_beside_a_running_server_is_served_at_once() {
    let app = TestApp::new().await;
    let config = app.dir.path().join("quick-estimator.toml");
    std::fs::write(&config, QUICK_ESTIMATOR).unwrap();
    let db = format!("sqlite:{}", app.dir.path().join("test.db").display());
    let server = spawn_server_with_env(
        &[
            "--data-dir",
            app.dir.path().to_str().unwrap(),
            "--database-url",
            db.as_str(),
            "--public-url",
            AUDIENCE,
        ],
        &[("WATTCOUNTS_CONFIG", config.display().to_string())],
    );
    let client = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.url);
    let prompt = Duration::from_secs(10);
    let (before, _) = once(&client, &url("/api/v1/peers"), prompt, |_| true).await;
    assert_eq!(before["releases"].as_array().unwrap().len(), 0);

    assert_eq!(import(&app, &shipped()).0, 0);
    let (_, took) = once(&client, &url("/api/v1/peers"), prompt, |b| {
        b["releases"].as_array().unwrap().len() == 1
    })
    .await;
    eprintln!("first release served {took:?} after the import");
    let page = client
        .get(url("/peers/mlenergy-v3"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("2026-02-16"), "{page}");
    let front = client
        .get(url("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(front.contains("href=\"/peers/mlenergy-v3\""), "{front}");
    // The table on real hardware, computed by the server's own job (a
    // debug build's quick trees: a minute, not seconds).
    let (estimator, took) = once(
        &client,
        &url("/api/v1/estimator"),
        Duration::from_secs(300),
        |b| !b["real_hardware"].is_null(),
    )
    .await;
    assert!(
        estimator["real_hardware"]["statement"]
            .as_str()
            .unwrap()
            .contains("release 2026-02-16"),
        "{estimator}"
    );
    eprintln!("its real-hardware table {took:?} later");

    // The newest release's table, cached; then a newer release.
    let newest = url("/api/v1/peers/mlenergy-v3?task=gpqa&per_page=1");
    let (first, _) = once(&client, &newest, prompt, |_| true).await;
    assert_eq!(first["release"]["label"], "2026-02-16");
    let dir = tempfile::tempdir().unwrap();
    later_release(dir.path());
    let (code, out, err) = import(&app, dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    let (_, took) = once(&client, &newest, prompt, |b| {
        b["release"]["label"] == "2026-03-01"
    })
    .await;
    eprintln!("second release served {took:?} after the import");
}

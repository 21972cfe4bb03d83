//! ML.ENERGY v3 (issue #39): the shipped files imported through the real
//! command and every figure read back (JSON, CSV, HTML) against the files
//! themselves; bad folders refused by file and field with nothing stored; a
//! newer release stored beside the old; the same on PostgreSQL; no peer
//! figure in any Watt Counts view.

use super::*;
use crate::common::bundles::BundleBuilder;
use crate::common::{sign, TestApp};
use axum::http::StatusCode;
use serde_json::Value;
use std::path::Path;

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

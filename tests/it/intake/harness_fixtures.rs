//! The harness's own output (tests/fixtures/harness, written by its
//! unmodified programs on stand-ins for the GPU and vLLM, see the README
//! there): packed, signed and submitted as a submitter would, on both
//! backends, and every published figure held to this file's own reading
//! of the CSVs. The reader below shares no code with the service's parser:
//! it takes the columns by name with the csv crate and the list cells by
//! splitting the Python literal, then applies /methodology's rules.

use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use serde_json::Value;

use crate::common::*;
use wattcounts::synth::RunFolder;

const REL: f64 = 1e-9;

fn close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= REL * want.abs().max(1e-300),
        "{what}: published {got}, read from the CSVs {want}"
    );
}

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/harness")
        .join(case)
}

/// The case's run folder as the harness left it, with its config.
fn run_folder(case: &str) -> RunFolder {
    let dir = case_dir(case);
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("run_"))
        .unwrap_or_else(|| panic!("{dir:?} holds no run_* folder"));
    let mut files: Vec<(String, Vec<u8>)> = walk_files(&run)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&run).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    RunFolder {
        name: run.file_name().unwrap().to_string_lossy().into_owned(),
        config_yaml: std::fs::read_to_string(dir.join("config-v2.yaml")).unwrap(),
        files,
        skipped_models: Vec::new(),
    }
}

/// One iteration as this test reads it.
#[derive(Debug)]
struct Iteration {
    model: String,
    server: bool,
    lambda: Option<f64>,
    duration_s: f64,
    /// The meter's own `gpu_energy`.
    meter_j: f64,
    /// The samples' real spacing, duration ÷ samples.
    spacing_s: f64,
    /// spacing × (Σ samples − (first + last) / 2).
    trapezoid_j: f64,
    tokens: f64,
    ttft_sum_s: f64,
    e2e_sum_s: f64,
}

fn list(cell: &str) -> Vec<f64> {
    let inner = cell.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{s:?} in {cell:?}")))
        .collect()
}

fn read_iterations(run: &RunFolder) -> Vec<Iteration> {
    let mut out = Vec::new();
    for (path, data) in &run.files {
        let server = path.ends_with("llm_server_optimized_results.csv");
        if !server && !path.ends_with("llm_batch_optimized_results.csv") {
            continue;
        }
        let mut reader = csv::Reader::from_reader(&data[..]);
        let header = reader.headers().unwrap().clone();
        for record in reader.records() {
            let record = record.unwrap();
            let get = |name: &str| {
                let i = header
                    .iter()
                    .position(|h| h == name)
                    .unwrap_or_else(|| panic!("{path} has no column {name}"));
                record[i].to_string()
            };
            let num = |name: &str| get(name).parse::<f64>().unwrap();
            let power = list(&get("gpu_0_power_draw_watts"));
            let (first, last) = (power[0], power[power.len() - 1]);
            let spacing_s = num("measurement_duration") / power.len() as f64;
            out.push(Iteration {
                model: get("model"),
                server,
                lambda: server.then(|| num("lambda_qps")),
                duration_s: num("measurement_duration"),
                meter_j: num("gpu_energy"),
                spacing_s,
                trapezoid_j: spacing_s * (power.iter().sum::<f64>() - (first + last) / 2.0),
                tokens: num("generation_tokens_total"),
                ttft_sum_s: list(&get("time_to_first_token_seconds_events"))
                    .iter()
                    .sum(),
                e2e_sum_s: list(&get("e2e_request_latency_seconds_events"))
                    .iter()
                    .sum(),
            });
        }
    }
    out
}

/// The median as /methodology states it: the middle value, or the mean of
/// the two middle ones.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    assert!(n > 0);
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Submits `case` and checks every configuration on the receipt, the JSON
/// leaderboard's group and its figures against the CSVs; returns the
/// receipt and the iterations as this file read them.
async fn submit_case(app: &TestApp, case: &str, handle: &str) -> (Value, Vec<Iteration>) {
    let run = run_folder(case);
    let iterations = read_iterations(&run);
    let key = app.register(handle).await;
    let gz = BundleBuilder::of(&run).by(handle, &key).build();
    let (status, receipt) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{case}: {receipt}");
    // A sampler more than 10 % late is named, and the run waits for a
    // person; every other rule passes (or does not apply).
    let late = iterations.iter().any(|i| i.spacing_s > 0.11);
    let want = if late { "needs_review" } else { "accepted" };
    assert_eq!(receipt["status"], want, "{case}: {receipt}");
    for c in receipt["checks"].as_array().unwrap() {
        if c["id"] == "sampling.sampler_late" && late {
            assert_eq!(c["outcome"], "warn", "{case}: {c:#}");
            let worst = iterations.iter().map(|i| i.spacing_s).fold(0.0, f64::max);
            let msg = c["message"].as_str().unwrap();
            assert!(
                msg.contains(&format!("{:.1} ms apart", worst * 1000.0)),
                "{case}: {msg}"
            );
            assert!(msg.contains("_results.csv row "), "{case}: {msg}");
            continue;
        }
        assert!(
            c["outcome"] == "pass" || c["outcome"] == "skip",
            "{case}: {c:#}"
        );
    }
    for id in ["arrivals.schedule", "arithmetic.gpu_energy"] {
        let c = receipt["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{case}: no {id}"));
        assert_eq!(c["outcome"], "pass", "{case}: {c:#}");
    }

    for c in receipt["configurations"].as_array().unwrap() {
        let model = c["model"].as_str().unwrap();
        let server = c["scenario"] == "server";
        let lambda = c["lambda_qps"].as_f64();
        let mine: Vec<&Iteration> = iterations
            .iter()
            .filter(|i| {
                i.model == model && i.server == server && i.lambda == lambda && i.tokens > 0.0
            })
            .collect();
        let at = |f: &str| format!("{case} {model} {} {lambda:?} {f}", c["scenario"]);
        assert_eq!(
            c["iterations"].as_u64().unwrap(),
            mine.len() as u64,
            "{}",
            at("iterations")
        );
        close(
            &at("energy_per_token_j"),
            c["energy_per_token_j"]["median"].as_f64().unwrap(),
            median(mine.iter().map(|i| i.trapezoid_j / i.tokens).collect()),
        );
        close(
            &at("throughput_tok_s"),
            c["throughput_tok_s"]["median"].as_f64().unwrap(),
            median(mine.iter().map(|i| i.tokens / i.duration_s).collect()),
        );
        if server {
            close(
                &at("mean_concurrency"),
                c["mean_concurrency"]["median"].as_f64().unwrap(),
                median(mine.iter().map(|i| i.e2e_sum_s / i.duration_s).collect()),
            );
            close(
                &at("prefill_energy_share"),
                c["prefill_energy_share"]["median"].as_f64().unwrap(),
                median(mine.iter().map(|i| i.ttft_sum_s / i.e2e_sum_s).collect()),
            );
        } else {
            assert_eq!(c["mean_concurrency"], Value::Null, "{}", at("batch"));
        }
        // The meter's own gpu_energy is the trapezoid at the samples' real
        // timestamps; ours, at their mean spacing, is within 0.5 % of it
        // whatever the sampler's pace, and so is the published J/token.
        for i in &mine {
            let gap = i.trapezoid_j / i.meter_j - 1.0;
            assert!(gap.abs() < 0.005, "{} {i:?}: {gap}", at("meter"));
        }
        let meter = median(mine.iter().map(|i| i.meter_j / i.tokens).collect());
        let published = c["energy_per_token_j"]["median"].as_f64().unwrap();
        assert!(
            (published / meter - 1.0).abs() < 0.005,
            "{}: published {published} J/token, the meter's {meter}",
            at("against the meter")
        );
    }
    (receipt, iterations)
}

async fn both_cases(app: TestApp) {
    // The L4 case: a complete 0.5B model beside a 1.5B one whose batch
    // stopped after 2 of 3 iterations.
    let (receipt, iterations) = submit_case(&app, "l4", "alice").await;
    let configs: Vec<(String, String)> = receipt["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["model"].as_str().unwrap().to_string(),
                c["scenario"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(configs.len(), 5, "{configs:?}");
    assert!(!configs.contains(&("Qwen/Qwen2.5-1.5B-Instruct".into(), "batch".into())));
    let rejected = receipt["rejected_configurations"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{rejected:#?}");
    assert_eq!(rejected[0]["model"], "Qwen/Qwen2.5-1.5B-Instruct");
    assert_eq!(rejected[0]["scenario"], "batch");
    let reasons: Vec<&str> = rejected[0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(
        reasons.contains(&"method.iterations_minimum"),
        "{reasons:?}"
    );
    // Its batch iterations are short and fast (3.5 s, where mean × duration
    // would overstate by about 3 %), and accepted.
    let short: Vec<f64> = iterations
        .iter()
        .filter(|i| !i.server && i.model == "Qwen/Qwen2.5-0.5B-Instruct")
        .map(|i| i.duration_s)
        .collect();
    assert!(
        short.len() == 3 && short.iter().all(|d| *d < 4.0),
        "{short:?}"
    );

    // The A100 case: a GPU outside the paper's eleven, with the catalogue
    // checks evaluated against its entry rather than skipped.
    let (receipt, _) = submit_case(&app, "a100-sxm4-80gb", "bob").await;
    assert_eq!(receipt["gpu"]["name"], "NVIDIA A100-SXM4-80GB");
    assert_eq!(receipt["gpu"]["id"], "a100-sxm4-80gb");
    for id in [
        "identity.gpu_catalogue",
        "physics.mean_power",
        "physics.idle_floor",
    ] {
        let c = receipt["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id}"));
        assert_eq!(c["outcome"], "pass", "{c:#}");
    }

    // The meter's sampler late (issue #53): 108 ms apart, within the 10 %
    // the sampler check allows, accepted; 150 ms apart, named by that check
    // and in review. Either way the published J/token is the meter's
    // within 0.5 % (in submit_case), where energy rule 2 read 7.4 % and
    // 33 % low.
    let (receipt, iterations) = submit_case(&app, "l4-late-108ms", "carol").await;
    assert!(
        iterations
            .iter()
            .all(|i| (0.1079..0.1085).contains(&i.spacing_s)),
        "{iterations:?}"
    );
    assert_eq!(receipt["status"], "accepted");
    let (receipt, iterations) = submit_case(&app, "l4-late-150ms", "dave").await;
    assert!(
        iterations
            .iter()
            .all(|i| (0.1495..0.151).contains(&i.spacing_s)),
        "{iterations:?}"
    );
    assert_eq!(receipt["status"], "needs_review");

    // Published: the JSON leaderboard's groups of these runs (their own
    // protocol, one view per scenario) carry the server figures too.
    let protocol = &receipt["protocol"];
    let mut rows = Vec::new();
    for (id, want) in [(&protocol["batch_id"], 2), (&protocol["server_id"], 6)] {
        let url = format!(
            "/api/v1/leaderboard?origin=real&protocol={}&per_page=100",
            id.as_str().unwrap()
        );
        let (status, body) = app.get(&url).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let entries = body["entries"].as_array().unwrap().clone();
        // Batch: the 0.5B on both GPUs; server: the 0.5B on both and the
        // 1.5B on the L4, at two rates each.
        assert_eq!(entries.len(), want, "{url}: {body:#}");
        rows.extend(entries);
    }
    for r in rows {
        if r["scenario"] == "server" {
            assert!(r["mean_concurrency"].as_f64().unwrap() > 0.0, "{r:#}");
            let share = r["prefill_energy_share"].as_f64().unwrap();
            assert!(share > 0.0 && share < 1.0, "{r:#}");
        } else {
            assert_eq!(r["mean_concurrency"], Value::Null, "{r:#}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn harness_written_runs_on_sqlite() {
    both_cases(TestApp::new().await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn harness_written_runs_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        both_cases(app).await
    }
}

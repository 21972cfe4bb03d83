//! The oracle: a tiny harness run written by hand (tests/fixtures/oracle:
//! pandas CSVs with list cells, not made by the synth module) whose published
//! figures are worked out below as literals, each with its arithmetic.
//! The rules are the ones /methodology states (and it cites this file):
//!
//! - energy of an iteration = the trapezoid over its power samples at
//!   their real spacing, duration ÷ samples (0.1 s here: 5 samples in 0.5
//!   s, 10 in 1 s), idle samples included (the energy meter's rule, energy
//!   rule 3): 0.1 s × (sum − (first + last) / 2);
//! - per token = energy / generated tokens; per request = energy /
//!   answered requests; throughput = generated tokens / duration;
//! - batch time per output token = duration / generated tokens; server
//!   ITL = mean over requests with ≥ 2 tokens of (e2e − ttft)/(tokens − 1);
//! - percentiles at rank p·(n − 1) between the sorted values;
//! - a configuration's figure is the median over its iterations, CV the
//!   sample standard deviation over the mean, the interval the order
//!   statistics around the median (for 3 values: min–max at 0.75);
//! - a group's figure is the median of its members' medians, its interval
//!   the same rule over the members.
//!
//! Member k of the group (k = 0, 1, 2; submitted by alice, bob, carol) is
//! the same run with every power sample 2k W higher. Per iteration:
//! batch: 0.5 s, 5 samples, 4 requests of 10 + 20 + 30 + 40 = 100 tokens;
//! server (λ = 2/s, 1 s): 10 samples, 3 requests of 11, 21 and 8 tokens,
//! TTFT 0.1, 0.2, 0.15 s, E2E 0.6, 0.8, 0.5 s.
//!
//! The run goes through the real intake, and the figures are read back
//! from the JSON API, the CSV export, the HTML leaderboard (to the digits
//! it prints) and the Parquet snapshot through pyarrow; each agrees with
//! the literal to 1e-9 relative.

use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};

use crate::common::*;
use wattcounts::synth::RunFolder;

/// Agreement asked of every read-back of a figure.
const REL: f64 = 1e-9;

fn close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= REL * want.abs().max(1e-300),
        "{what}: read {got}, worked out {want}"
    );
}

fn num(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what}: {v} is not a number"))
}

/// The protocols the run's two scenarios follow (4 prompts per batch
/// iteration; 1 s server tests): off the reference, each its own view.
const BATCH_PROTOCOL: &str = "7e184f3c1306";
const SERVER_PROTOCOL: &str = "a6aa31fc5147";

/// Member `k` of the oracle group as the harness left it on disk.
fn member(k: usize) -> RunFolder {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle");
    let dir = root.join(format!("member-{k}"));
    let mut files: Vec<(String, Vec<u8>)> = walk_files(&dir)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    RunFolder {
        name: format!("run_2025060{}_000000", k + 1),
        config_yaml: std::fs::read_to_string(root.join("config-v2.yaml")).unwrap(),
        files,
        skipped_models: Vec::new(),
    }
}

/// The three members, each accepted with every check passing; receipts.
async fn submit_members(app: &TestApp) -> Vec<Value> {
    let mut receipts = Vec::new();
    for (k, handle) in ["alice", "bob", "carol"].into_iter().enumerate() {
        let key = app.register(handle).await;
        let gz = BundleBuilder::of(&member(k)).by(handle, &key).build();
        receipts.push(submit_all_passing(app, handle, &key, &gz).await);
    }
    receipts
}

/// A configuration figure of a receipt: median, min, max, CV, interval.
fn figure(config: &Value, name: &str, median: f64, min: f64, max: f64, cv: f64) {
    let f = &config[name];
    let at = |k: &str| format!("{} {name}.{k}", config["scenario"]);
    close(&at("median"), num(&f["median"], name), median);
    close(&at("min"), num(&f["min"], name), min);
    close(&at("max"), num(&f["max"], name), max);
    if cv == 0.0 {
        assert_eq!(num(&f["cv"], name), 0.0, "{}", at("cv"));
    } else {
        close(&at("cv"), num(&f["cv"], name), cv);
    }
    // Three iterations: the interval is min–max, covering the median
    // with 1 − 2 × (1/2)³ = 0.75.
    close(&at("interval.lo"), num(&f["interval"]["lo"], name), min);
    close(&at("interval.hi"), num(&f["interval"]["hi"], name), max);
    close(
        &at("confidence"),
        num(&f["interval"]["confidence"], name),
        0.75,
    );
}

fn config<'a>(receipt: &'a Value, scenario: &str) -> &'a Value {
    receipt["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == scenario)
        .unwrap_or_else(|| panic!("no {scenario} configuration"))
}

/// What one group row must say, whichever way it is read.
struct Group {
    protocol: &'static str,
    scenario: &'static str,
    ept: f64,
    ept_lo: f64,
    ept_hi: f64,
    ept_cv: f64,
    epr: f64,
    throughput: f64,
    power: f64,
    ttft_p50: Option<f64>,
    itl: Option<f64>,
    /// Server: mean concurrency and the prefill share of energy.
    concurrency: Option<f64>,
    prefill_share: Option<f64>,
}

fn groups() -> [Group; 2] {
    [
        // Member k's batch iterations, samples (30, 50, 50, 50, 30) + 2k W
        // (one 50 is 52, then 48, in iterations 1 and 2): 0.1 s × (180 +
        // 8k, 182 + 8k, 178 + 8k) W = (18, 18.2, 17.8) + 0.8k J; / 100
        // tokens → member medians 0.18, 0.188, 0.196. Median 0.188,
        // interval 0.18–0.196; CV the largest member's (member 0): sample
        // sd of 0.178, 0.18, 0.182 is 0.002, over 0.18. Per request
        // (18 + 0.8k)/4 → 4.5, 4.7, 4.9, median 4.7; 100 tokens / 0.5 s =
        // 200 tok/s; power median of 42, 44, 46.
        Group {
            protocol: BATCH_PROTOCOL,
            scenario: "batch",
            ept: 0.188,
            ept_lo: 0.18,
            ept_hi: 0.196,
            ept_cv: 0.002 / 0.18,
            epr: 4.7,
            throughput: 200.0,
            power: 44.0,
            ttft_p50: None,
            // Batch's ITL is the time per output token, 0.5 s / 100 (the
            // page shows it in its own column, not as ITL).
            itl: Some(0.005),
            concurrency: None,
            prefill_share: None,
        },
        // Member k's server iterations, samples (20, 20, 40 ×6, 20, 20) +
        // 2k W (one 40 or 20 is 30 in iterations 1 and 2): 0.1 s × (300,
        // 310, 290) W + 0.1 × 18k = (30, 31, 29) + 1.8k J; / 40 tokens →
        // member medians 0.75, 0.795, 0.84; CV of member 0: sd of 0.725,
        // 0.75, 0.775 is 0.025, over 0.75. Per request (30 + 1.8k)/3 →
        // 10, 10.6, 11.2, median 10.6; 40 tokens / 1 s; TTFT p50 of 0.1,
        // 0.15, 0.2 is 0.15; ITL mean of 0.5/10, 0.6/20, 0.35/7 = 0.13/3.
        Group {
            protocol: SERVER_PROTOCOL,
            scenario: "server",
            ept: 0.795,
            ept_lo: 0.75,
            ept_hi: 0.84,
            ept_cv: 0.025 / 0.75,
            epr: 10.6,
            throughput: 40.0,
            power: 34.0,
            ttft_p50: Some(0.15),
            itl: Some(0.13 / 3.0),
            // Every server iteration of every member: Σ E2E 0.6 + 0.8 +
            // 0.5 = 1.9 request-seconds in a 1 s window → 1.9 requests in
            // the system (Little's law); Σ TTFT 0.1 + 0.2 + 0.15 = 0.45 s,
            // so prefill's share by time is 0.45 / 1.9 = 9/38.
            concurrency: Some(1.9),
            prefill_share: Some(9.0 / 38.0),
        },
    ]
}

/// A group row read from JSON, CSV (as text) or Parquet: `get` gives a
/// column by the JSON field's name.
fn check_group(source: &str, g: &Group, get: impl Fn(&str) -> Option<f64>) {
    let at = |f: &str| format!("{source} {} {f}", g.scenario);
    let must = |f: &str| get(f).unwrap_or_else(|| panic!("{}: missing", at(f)));
    close(&at("energy_per_token_j"), must("energy_per_token_j"), g.ept);
    close(&at("lo"), must("energy_per_token_lo_j"), g.ept_lo);
    close(&at("hi"), must("energy_per_token_hi_j"), g.ept_hi);
    close(
        &at("confidence"),
        must("energy_per_token_interval_confidence"),
        0.75,
    );
    close(
        &at("energy_per_token_cv"),
        must("energy_per_token_cv"),
        g.ept_cv,
    );
    close(
        &at("energy_per_request_j"),
        must("energy_per_request_j"),
        g.epr,
    );
    close(
        &at("throughput_tok_s"),
        must("throughput_tok_s"),
        g.throughput,
    );
    close(&at("power_mean_w"), must("power_mean_w"), g.power);
    for (f, want) in [
        ("ttft_p50_s", g.ttft_p50),
        ("itl_s", g.itl),
        ("mean_concurrency", g.concurrency),
        ("prefill_energy_share", g.prefill_share),
    ] {
        match want {
            Some(w) => close(&at(f), must(f), w),
            None => assert_eq!(get(f), None, "{}", at(f)),
        }
    }
    // 3 members × 3 iterations, 3 submitters.
    close(&at("iterations"), must("iterations"), 9.0);
    close(&at("submissions"), must("submissions"), 3.0);
    close(&at("submitters"), must("submitters"), 3.0);
}

/// The JSON leaderboard's row under the CSV's column names.
fn json_column(row: &Value, name: &str) -> Option<f64> {
    let v = match name {
        "energy_per_token_lo_j" => &row["energy_per_token_interval"]["lo"],
        "energy_per_token_hi_j" => &row["energy_per_token_interval"]["hi"],
        "energy_per_token_interval_confidence" => &row["energy_per_token_interval"]["confidence"],
        other => &row[other],
    };
    v.as_f64()
}

#[tokio::test]
async fn every_published_figure_matches_the_hand_worked_oracle() {
    let app = TestApp::new().await;
    let receipts = submit_members(&app).await;

    // The receipt of member 0, per configuration.
    let r = &receipts[0];
    assert_eq!(
        r["counts"],
        // 3 batch iterations of 5 samples, 3 server ones of 10.
        json!({"configurations": 2, "iterations": 6, "models": 1, "power_samples": 45})
    );
    let batch = config(r, "batch");
    // Iterations: 0.1 s × (30/2 + 50 + 50 + 50 + 30/2) = 18 J, (…52…)
    // 18.2 J, (…48…) 17.8 J (mean × duration would say 21, 21.2, 20.8);
    // / 100 tokens = 0.18, 0.182, 0.178 J; sample sd 0.002 (deviations
    // ±0.002, 0; /2 = 4e-6).
    figure(
        batch,
        "energy_per_token_j",
        0.18,
        0.178,
        0.182,
        0.002 / 0.18,
    );
    // / 4 answered requests: 4.5, 4.55, 4.45 J; sd 0.05.
    figure(batch, "energy_per_request_j", 4.5, 4.45, 4.55, 0.05 / 4.5);
    figure(batch, "throughput_tok_s", 200.0, 200.0, 200.0, 0.0);
    figure(batch, "power_mean_w", 42.0, 41.6, 42.4, 0.4 / 42.0);
    // Batch "ITL" is the time per output token: 0.5 s / 100.
    figure(batch, "itl_s", 0.005, 0.005, 0.005, 0.0);
    assert_eq!(batch["ttft_p50_s"], Value::Null);
    assert_eq!(batch["e2e_p50_s"], Value::Null);
    let server = config(r, "server");
    // 0.1 s × (20/2 + 20 + 40·6 + 20 + 20/2) = 30 J (31 and 29 with one
    // inner sample 30 instead of 20 or 40); / 40 tokens = 0.75, 0.775,
    // 0.725; sd 0.025, over 0.75. Per request 10, 31/3, 29/3: sd 1/3, over 10.
    figure(
        server,
        "energy_per_token_j",
        0.75,
        0.725,
        0.775,
        0.025 / 0.75,
    );
    figure(
        server,
        "energy_per_request_j",
        10.0,
        29.0 / 3.0,
        31.0 / 3.0,
        1.0 / 30.0,
    );
    figure(server, "throughput_tok_s", 40.0, 40.0, 40.0, 0.0);
    figure(server, "power_mean_w", 32.0, 31.0, 33.0, 0.03125);
    // TTFT sorted 0.1, 0.15, 0.2: rank 0.5·2 = 1 → 0.15; E2E 0.5, 0.6,
    // 0.8 → 0.6; ITL (0.6−0.1)/10 = 0.05, (0.8−0.2)/20 = 0.03,
    // (0.5−0.15)/7 = 0.05 → mean 0.13/3.
    figure(server, "ttft_p50_s", 0.15, 0.15, 0.15, 0.0);
    figure(server, "e2e_p50_s", 0.6, 0.6, 0.6, 0.0);
    figure(server, "itl_s", 0.13 / 3.0, 0.13 / 3.0, 0.13 / 3.0, 0.0);
    // Members 1 and 2: 2 and 4 W more on every sample.
    for (k, ept_batch, ept_server) in [(1, 0.188, 0.795), (2, 0.196, 0.84)] {
        close(
            &format!("member {k} batch"),
            num(
                &config(&receipts[k], "batch")["energy_per_token_j"]["median"],
                "ept",
            ),
            ept_batch,
        );
        close(
            &format!("member {k} server"),
            num(
                &config(&receipts[k], "server")["energy_per_token_j"]["median"],
                "ept",
            ),
            ept_server,
        );
    }

    // The groups through the JSON API and the CSV export.
    for g in &groups() {
        let query = format!("origin=real&protocol={}", g.protocol);
        let (status, body) = app.get(&format!("/api/v1/leaderboard?{query}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let rows = body["entries"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{body}");
        assert_eq!(rows[0]["scenario"], g.scenario);
        check_group("JSON", g, |c| json_column(&rows[0], c));

        let (status, _, csv) = app
            .raw(
                Request::get(format!("/api/v1/leaderboard.csv?{query}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let mut reader = csv::Reader::from_reader(&csv[..]);
        let header = reader.headers().unwrap().clone();
        let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(records.len(), 1);
        check_group("CSV", g, |c| {
            let i = header.iter().position(|h| h == c)?;
            let cell = &records[0][i];
            (!cell.is_empty()).then(|| cell.parse::<f64>().unwrap())
        });
    }

    // The same rows as the HTML leaderboard prints them: three significant
    // digits for J, W and Wh (4.7 J × 1000 / 3600 = 1.31 Wh per 1,000
    // requests; 10.6 J → 2.94), CV in % (0.002/0.18 = 1.1 %, 0.025/0.75
    // = 3.3 %), TTFT and ITL in ms.
    for (protocol, want) in [
        (
            BATCH_PROTOCOL,
            [
                "0.1880.180–0.196",
                "0.180–0.196",
                "75 %",
                "4.704.50–4.90",
                "1.31",
                "1.1 %",
                "200200–200",
                "44",
                "–",
                "–",
                "5.00",
                "9",
                "3",
                "3",
            ],
        ),
        (
            SERVER_PROTOCOL,
            [
                "0.7950.750–0.840",
                "0.750–0.840",
                "75 %",
                "10.610.0–11.2",
                "2.94",
                "3.3 %",
                "4040.0–40.0",
                "34",
                "150150–150",
                "43.343.3–43.3",
                "–",
                "9",
                "3",
                "3",
            ],
        ),
    ] {
        let (status, doc) = html_page(
            &app,
            &format!("/leaderboard?origin=real&protocol={protocol}"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let cells = texts(&doc, "table tbody tr td");
        // rank, GPU, model, then the figures (scenario at 6 skipped), then
        // the protocol and the evidence link.
        let figures: Vec<&str> = cells[3..6]
            .iter()
            .chain(&cells[7..18])
            .map(String::as_str)
            .collect();
        assert_eq!(figures, want, "{protocol}: {cells:?}");
    }

    // Per 1,000 requests on the model page's JSON (server): 10.6 J ×
    // 1000 / 3600 J/Wh = 2.944… Wh (interval 10 and 11.2 J: 2.778–3.111);
    // gCO₂e = Wh / 1000 × 475 g/kWh × PUE 1.2.
    let (status, m) = app
        .get(&format!(
            "/api/v1/models/Qwen/Qwen2.5-0.5B-Instruct?origin=real&protocol={SERVER_PROTOCOL}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{m}");
    let point = &m["per_1000_requests"][0][0];
    assert_eq!(point["gpu_id"], "l4");
    let wh = |j: f64| j * 1000.0 / 3600.0;
    let g = |j: f64| wh(j) / 1000.0 * 475.0 * 1.2;
    for (field, f) in [
        ("wh_per_1000_requests", &wh as &dyn Fn(f64) -> f64),
        ("g_co2e_per_1000_requests", &g),
    ] {
        close(
            &format!("{field} median"),
            num(&point[field]["median"], field),
            f(10.6),
        );
        close(
            &format!("{field} lo"),
            num(&point[field]["lo"], field),
            f(10.0),
        );
        close(
            &format!("{field} hi"),
            num(&point[field]["hi"], field),
            f(11.2),
        );
    }

    // The model page prints them (server): 1.9 requests; 9/38 = 23.68 %
    // to prefill, 76.32 % to decode, at three significant digits.
    let (status, doc) = html_page(
        &app,
        &format!("/models/Qwen/Qwen2.5-0.5B-Instruct?origin=real&protocol={SERVER_PROTOCOL}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let cells = texts(&doc, "table.points tbody tr td");
    assert!(
        cells.iter().any(|c| c == "1.901.90–1.90"),
        "no concurrency cell: {cells:?}"
    );
    assert!(
        cells.iter().any(|c| c == "23.7 / 76.323.7–23.7"),
        "no prefill / decode cell: {cells:?}"
    );

    parquet_agrees(&app).await;
}

/// The snapshot's Parquet files, read by pyarrow: the group rows, and
/// member 0's iterations with the figures only the snapshot carries (p90s,
/// the energy recomputed from the trace beside the one reported).
async fn parquet_agrees(app: &TestApp) {
    let Some(python) = python() else {
        skip(
            Need::Python,
            "pyarrow is not installed (.ci/run installs it into target/pyenv: python3 -m venv \
             target/pyenv && target/pyenv/bin/pip install -r scripts/snapshot/requirements.txt)",
        );
        return;
    };
    let (status, view) = app
        .admin_post("/api/v1/admin/snapshots", json!({ "traces": false }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let dir = app
        .dir
        .path()
        .join("snapshots")
        .join(view["snapshot_id"].as_str().unwrap());
    let script = "import json, sys, pyarrow.parquet as pq\n\
        d = sys.argv[1]\n\
        print(json.dumps({t: pq.read_table(f'{d}/{t}.parquet').to_pylist() for t in ('configurations', 'runs')}, default=str))";
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tables: Value = serde_json::from_slice(&out.stdout).unwrap();
    for g in &groups() {
        let rows: Vec<&Value> = tables["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["protocol_id"] == g.protocol)
            .collect();
        assert_eq!(rows.len(), 1, "{g_scenario}", g_scenario = g.scenario);
        // The snapshot names the interval's confidence without "interval_".
        check_group("Parquet", g, |c| {
            let c = if c == "energy_per_token_interval_confidence" {
                "energy_per_token_confidence"
            } else {
                c
            };
            rows[0][c].as_f64()
        });
    }
    let runs: Vec<&Value> = tables["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["submitter"] == "alice" && r["iteration"] == 0)
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let run = |scenario: &str| *runs.iter().find(|r| r["scenario"] == scenario).unwrap();
    let b = run("batch");
    // Iteration 0: 5 samples in 0.5 s, 0.1 s apart: 0.1 s × 180 W = 18 J,
    // what the fixture's meter reports too (the trapezoid over its samples),
    // 100 tokens, 4 requests, samples 30–50 W.
    for (f, want) in [
        ("gpu_energy_j", 18.0),
        ("reported_gpu_energy_j", 18.0),
        ("energy_per_token_j", 0.18),
        ("energy_per_request_j", 4.5),
        ("throughput_tok_s", 200.0),
        ("power_mean_w", 42.0),
        ("power_max_w", 50.0),
        ("power_min_w", 30.0),
        ("power_samples", 5.0),
        ("duration_s", 0.5),
        ("generation_tokens", 100.0),
        ("requests_ok", 4.0),
        ("itl_s", 0.005),
    ] {
        close(&format!("Parquet runs batch {f}"), num(&b[f], f), want);
    }
    for f in [
        "timed_requests",
        "ttft_sum_s",
        "e2e_sum_s",
        "mean_concurrency",
        "prefill_energy_j",
    ] {
        assert_eq!(b[f], Value::Null, "Parquet runs batch {f}: server only");
    }
    let s = run("server");
    // TTFT p90 at rank 0.9·2 = 1.8: 0.15 + 0.8 × (0.2 − 0.15) = 0.19;
    // E2E p90: 0.6 + 0.8 × (0.8 − 0.6) = 0.76.
    for (f, want) in [
        ("gpu_energy_j", 30.0),
        ("energy_per_token_j", 0.75),
        ("energy_per_request_j", 10.0),
        ("ttft_p50_s", 0.15),
        ("ttft_p90_s", 0.19),
        ("e2e_p50_s", 0.6),
        ("e2e_p90_s", 0.76),
        ("itl_s", 0.13 / 3.0),
        ("power_samples", 10.0),
        ("requests_ok", 3.0),
        // Σ over the 3 timed requests: TTFT 0.45 s, E2E 1.9 s; 1.9 / 1 s;
        // prefill 30 J × 0.45 / 1.9 = 13.5 / 1.9 J.
        ("timed_requests", 3.0),
        ("ttft_sum_s", 0.45),
        ("e2e_sum_s", 1.9),
        ("mean_concurrency", 1.9),
        ("prefill_energy_j", 13.5 / 1.9),
    ] {
        close(&format!("Parquet runs server {f}"), num(&s[f], f), want);
    }
}

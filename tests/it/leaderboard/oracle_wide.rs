//! The wider oracle (issue #40, item 9): what `oracle.rs` cannot pin with
//! its one GPU and three members of three iterations — an even median (two
//! members; six iterations), failed requests, and two GPUs with one clear
//! winner and one tie, with the saving, its interval, the verdict and the
//! insights' savings worked out by hand below. The run folders are written
//! here from literal sample lists (not by the synth module), in the
//! harness's CSV layout.
//!
//! Every batch iteration lasts 0.5 s with 5 power samples [30, b, b, b,
//! 30] W, so its energy (the trapezoid at 0.1 s) is 0.1 × (30 + 3b) =
//! 3 + 0.3b J. Four prompts are sent; three are answered with 20 + 30 + 50
//! = 100 tokens and one fails. Energy per token = (3 + 0.3b) / 100; per
//! request = (3 + 0.3b) / 3 (answered requests only). A member's six
//! iterations have b = base, base + 1, …, base + 5.
//!
//! Medians of six values are the mean of the 3rd and 4th: b = base + 2.5,
//! so a member's energy per token is 0.03 + 0.003 × (base + 2.5). Six
//! values: the interval is min–max, coverage 1 − 2 × (1/2)^6 = 0.96875 (the
//! next pair in covers only 1 − 2 × 7/64 = 0.78125 < 0.95). A group of two
//! members: its figure is the mean of their medians, its interval their
//! min–max at 1 − 2 × (1/2)² = 0.5.
//!
//! | GPU | model | member bases | member medians (J/token) | group |
//! |---|---|---|---|---|
//! | L4 | Qwen 0.5B | 40, 44 | 0.1575, 0.1695 | 0.1635 [0.1575, 0.1695] |
//! | T4 | Qwen 0.5B | 60, 64 | 0.2175, 0.2295 | 0.2235 [0.2175, 0.2295] |
//! | L4 | GPT-2     | 50, 56 | 0.1875, 0.2055 | 0.1965 [0.1875, 0.2055] |
//! | T4 | GPT-2     | 51, 53 | 0.1905, 0.1965 | 0.1935 [0.1905, 0.1965] |
//!
//! Qwen: the L4's interval ends (0.1695) below the T4's start (0.2175): the
//! L4 uses less, saving (0.2235 − 0.1635) / 0.2235 = 26.846 %, between
//! (0.2175 − 0.1695) / 0.2175 = 22.069 % and (0.2295 − 0.1575) / 0.2295 =
//! 31.373 %. GPT-2: the T4 has the lower median but the intervals overlap:
//! a tie, saving (0.1965 − 0.1935) / 0.1965 = 1.527 %, between (0.1875 −
//! 0.1965) / 0.1875 = −4.8 % and (0.2055 − 0.1905) / 0.2055 = 7.299 %.

use axum::http::StatusCode;
use serde_json::Value;

use crate::common::*;
use wattcounts::synth::RunFolder;

const REL: f64 = 1e-9;

fn close(what: &str, got: &Value, want: f64) {
    let got = got
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {got} is not a number"));
    assert!(
        (got - want).abs() <= REL * want.abs().max(1e-12),
        "{what}: read {got}, worked out {want}"
    );
}

const QWEN: &str = "Qwen/Qwen2.5-0.5B-Instruct";
const GPT2: &str = "openai-community/gpt2";
const SAMPLING: &str = "\"SamplingParams(n=1, temperature=0.0, top_p=1.0, seed=123, stop=[])\"";

/// One model's batch results: six iterations at b = base … base + 5.
fn results(model: &str, base: u32) -> String {
    let mut out = String::from(
        "measurement_duration,measurement_timestamp,measurement_datetime,gpu_0_memory_used_mb,\
gpu_0_utilization_percent,gpu_0_power_draw_watts,gpu_0_temp,gpu_0_clock,cpu_memory_used_mb,\
cpu_utilization_percent,cpu_energy,dram_energy,gpu_energy,disk_energy,\
time_to_first_token_seconds_events,e2e_request_latency_seconds_events,tokens_per_second_events,\
request_success_total,request_failure_total,prompt_tokens_total,generation_tokens_total,\
request_prompt_tokens,request_generation_tokens,iteration,sampling_params,model,\
queries_submitted,processed_queries\n",
    );
    for i in 0..6u32 {
        let b = f64::from(base + i);
        // The meter's own figure: the trapezoid at 0.1 s.
        let joules = 3.0 + 0.3 * b;
        let t = 1_748_736_000 + 10 * i;
        out += &format!(
            "0.5,{t}.0,2025-06-01T00:00:{:02}.000000+00:00,\"[1500.0, 1500.0, 1500.0, 1500.0, 1500.0]\",\
\"[0.0, 90.0, 95.0, 95.0, 10.0]\",\"[30.0, {b:.1}, {b:.1}, {b:.1}, 30.0]\",\
\"[40.0, 41.0, 42.0, 42.0, 41.0]\",\"[345.0, 2040.0, 2040.0, 2040.0, 345.0]\",\
\"[9000.0, 9000.0, 9000.0, 9000.0, 9000.0]\",\"[1.0, 5.0, 5.0, 5.0, 1.0]\",1.5,0.25,{joules},0.0,\
\"[]\",\"[0.5]\",\"[200.0]\",3,1,18,100,\"[5, 6, 7]\",\"[20, 30, 50]\",{i},{SAMPLING},{model},4,4\n",
            10 * i
        );
    }
    out
}

/// Four prompts per iteration; the fourth one failed (no text).
fn details(model: &str) -> String {
    let mut out = String::from("iteration,model,query_id,response_text,timestamp\n");
    for i in 0..6 {
        for (q, text) in ["Normandy.", "Denver Broncos.", "Paris.", ""]
            .iter()
            .enumerate()
        {
            out += &format!("{i},{model},{q},\"{text}\",{}.5\n", 1_748_736_000 + 10 * i);
        }
    }
    out
}

/// A member's run folder on `gpu` ("NVIDIA L4" or "Tesla T4").
fn member(gpu: &str, k: usize, bases: &[(&str, u32)]) -> RunFolder {
    let oracle = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle");
    let mut info = std::fs::read_to_string(oracle.join("member-0/system_info.txt")).unwrap();
    if gpu == "Tesla T4" {
        info = info
            .replace("NVIDIA L4", "Tesla T4")
            .replace("72.00 W", "70.00 W");
    }
    let mut files = vec![("system_info.txt".to_string(), info.into_bytes())];
    for (model, base) in bases {
        let folder = model.replace('/', "_");
        files.push((
            format!("{folder}/llm_batch_optimized_results.csv"),
            results(model, *base).into_bytes(),
        ));
        files.push((
            format!("{folder}/llm_batch_optimized_details.csv"),
            details(model).into_bytes(),
        ));
    }
    files.sort();
    RunFolder {
        name: format!("run_2025060{}_00000{k}", k + 1),
        config_yaml: format!(
            "ITERATIONS: 6\nMAX_TEST_DURATION: 1\nCONTEXT_LENGTH: 1024\nWARMUP_DURATION: 9\n\
             LAMBDA_QPS_ARRAY: [2.0]\nCUDA_VISIBLE_DEVICES: \"0\"\nLLM_MODELS:\n  - {QWEN}\n  - {GPT2}\n"
        ),
        files,
        skipped_models: Vec::new(),
    }
}

/// The four members (two per GPU, each by its own submitter), all
/// accepted with every check passing; their receipts.
async fn submit_all(app: &TestApp) -> Vec<Value> {
    let members = [
        ("alice", member("NVIDIA L4", 0, &[(QWEN, 40), (GPT2, 50)])),
        ("bob", member("NVIDIA L4", 1, &[(QWEN, 44), (GPT2, 56)])),
        ("carol", member("Tesla T4", 2, &[(QWEN, 60), (GPT2, 51)])),
        ("dave", member("Tesla T4", 3, &[(QWEN, 64), (GPT2, 53)])),
    ];
    let mut receipts = Vec::new();
    for (handle, run) in &members {
        let key = app.register(handle).await;
        let gz = BundleBuilder::of(run).by(handle, &key).build();
        receipts.push(submit_all_passing(app, handle, &key, &gz).await);
    }
    receipts
}

fn configuration<'a>(receipt: &'a Value, model: &str) -> &'a Value {
    receipt["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == model)
        .unwrap_or_else(|| panic!("no {model} in {receipt}"))
}

#[tokio::test]
async fn two_gpus_two_members_six_iterations_by_hand() {
    let app = TestApp::new().await;
    let receipts = submit_all(&app).await;

    // alice's Qwen on the L4, b = 40 … 45: energies 15.0, 15.3, 15.6, 15.9,
    // 16.2, 16.5 J; per token 0.150 … 0.165 (step 0.003), median (0.156 +
    // 0.159) / 2 = 0.1575; min–max at 0.96875; sample sd of an even step d
    // over six values is d × √(35/12 × 6/5) = d × √3.5, over the mean 0.1575.
    let c = configuration(&receipts[0], QWEN);
    let f = &c["energy_per_token_j"];
    close("ept median", &f["median"], 0.1575);
    close("ept min", &f["min"], 0.15);
    close("ept max", &f["max"], 0.165);
    close("ept lo", &f["interval"]["lo"], 0.15);
    close("ept hi", &f["interval"]["hi"], 0.165);
    close("ept confidence", &f["interval"]["confidence"], 0.96875);
    close("ept cv", &f["cv"], 0.003 * 3.5f64.sqrt() / 0.1575);
    // Per answered request (3, not the 4 sent): 5.0 … 5.5, median 5.25.
    // Had the failed request counted, it would be 3.9375.
    let f = &c["energy_per_request_j"];
    close("epr median", &f["median"], 5.25);
    close("epr min", &f["min"], 5.0);
    close("epr max", &f["max"], 5.5);
    // Mean power (60 + 3b) / 5 = 36.0 … 39.0 W, median 37.5.
    close("power median", &c["power_mean_w"]["median"], 37.5);
    // 100 tokens in 0.5 s.
    close("throughput", &c["throughput_tok_s"]["median"], 200.0);

    // The view both GPUs share (one protocol: the same config).
    let (_, board) = app.get("/api/v1/leaderboard?origin=real").await;
    let protocol = board["views"][0]["protocol_id"]
        .as_str()
        .unwrap()
        .to_string();
    let view = format!("origin=real&protocol={protocol}");
    let (status, board) = app
        .get(&format!("/api/v1/leaderboard?{view}&per_page=100"))
        .await;
    assert_eq!(status, StatusCode::OK, "{board}");
    let entries = board["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 4, "{board}");
    // (gpu, model, median, lo, hi, per request)
    // Per request, members' medians: (3 + 0.3 × (base + 2.5)) / 3, i.e.
    // 5.25 and 5.65 (Qwen, L4); 7.25, 7.65 (Qwen, T4); 6.25, 6.85 (GPT-2,
    // L4); 6.35, 6.55 (GPT-2, T4); the group's is their mean.
    for (gpu, model, median, lo, hi, epr) in [
        ("l4", QWEN, 0.1635, 0.1575, 0.1695, 5.45),
        ("t4", QWEN, 0.2235, 0.2175, 0.2295, 7.45),
        ("l4", GPT2, 0.1965, 0.1875, 0.2055, 6.55),
        ("t4", GPT2, 0.1935, 0.1905, 0.1965, 6.45),
    ] {
        let at = format!("{gpu} {model}");
        let e = entries
            .iter()
            .find(|e| e["gpu_id"] == gpu && e["model"] == model)
            .unwrap_or_else(|| panic!("{at}: no group in {board}"));
        close(&at, &e["energy_per_token_j"], median);
        close(&at, &e["energy_per_token_interval"]["lo"], lo);
        close(&at, &e["energy_per_token_interval"]["hi"], hi);
        close(&at, &e["energy_per_token_interval"]["confidence"], 0.5);
        close(&at, &e["energy_per_request_j"], epr);
        // Two members of six iterations, two submitters.
        close(&at, &e["iterations"], 12.0);
        close(&at, &e["submissions"], 2.0);
        close(&at, &e["submitters"], 2.0);
    }

    // The comparison, L4 then T4.
    let (status, body) = app
        .get(&format!("/api/v1/compare?gpus=l4,t4&scenario=batch&{view}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let c = &body["comparison"];
    let row = |model: &str| -> &Value {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == model)
            .unwrap_or_else(|| panic!("{model}: {c}"))
    };
    let qwen = row(QWEN);
    assert_eq!(
        (&qwen["best"], &qwen["winner"]),
        (&Value::from(0), &Value::from(0))
    );
    assert_eq!(qwen["verdict"]["kind"], "less", "{qwen}");
    let s = &qwen["saving"][1];
    close("qwen saving", &s["median_pct"], 0.06 / 0.2235 * 100.0);
    close("qwen saving lo", &s["lo_pct"], 0.048 / 0.2175 * 100.0);
    close("qwen saving hi", &s["hi_pct"], 0.072 / 0.2295 * 100.0);
    assert!(qwen["saving"][0].is_null());
    let gpt2 = row(GPT2);
    assert_eq!(
        (&gpt2["best"], &gpt2["winner"]),
        (&Value::from(1), &Value::Null)
    );
    assert_eq!(gpt2["verdict"]["kind"], "tie", "{gpt2}");
    assert!(
        gpt2["verdict"]["why"].as_str().unwrap().contains("overlap"),
        "{gpt2}"
    );
    let s = &gpt2["saving"][0];
    close("gpt2 saving", &s["median_pct"], 0.003 / 0.1965 * 100.0);
    close("gpt2 saving lo", &s["lo_pct"], -0.009 / 0.1875 * 100.0);
    close("gpt2 saving hi", &s["hi_pct"], 0.015 / 0.2055 * 100.0);
    // Each GPU is lowest for one model; the L4's is a verdict and the T4's
    // a tie, so the L4 is best (fewer ties). Against each model's worst:
    // Qwen 26.846 %, GPT-2 0 % (the L4 is GPT-2's worst): median 13.423 %.
    let h = &c["headline"];
    assert_eq!(h["best_gpu"][0], "l4", "{h}");
    assert_eq!(
        (&h["best_for"], &h["best_ties"]),
        (&Value::from(1), &Value::from(0))
    );
    assert_eq!(h["models"], 2);
    close(
        "headline max",
        &h["best_vs_worst_max_pct"],
        0.06 / 0.2235 * 100.0,
    );
    close(
        "headline median",
        &h["best_vs_worst_median_pct"],
        0.06 / 0.2235 * 100.0 / 2.0,
    );

    // The insights of the same view.
    let (status, body) = app.get(&format!("/api/v1/insights?{view}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let finding = |id: &str| -> Value {
        body["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {body}"))
            .clone()
    };
    // Best against worst per model: Qwen 26.846 % (L4 vs T4), GPT-2
    // 1.527 % (T4 vs L4); median of the two = their mean, 14.186 %.
    let f = finding("gpu_choice.best_vs_worst.batch");
    let (qwen_pct, gpt2_pct) = (0.06 / 0.2235 * 100.0, 0.003 / 0.1965 * 100.0);
    close(
        "bvw median",
        &f["median_saving_pct"],
        (qwen_pct + gpt2_pct) / 2.0,
    );
    close("bvw max", &f["max_saving_pct"], qwen_pct);
    close(
        "bvw max lo",
        &f["max_saving_interval_pct"]["lo"],
        0.048 / 0.2175 * 100.0,
    );
    close(
        "bvw max hi",
        &f["max_saving_interval_pct"]["hi"],
        0.072 / 0.2295 * 100.0,
    );
    assert_eq!(
        (&f["model"], &f["best_gpu"], &f["worst_gpu"]),
        (
            &Value::from(QWEN),
            &Value::from("NVIDIA L4"),
            &Value::from("Tesla T4")
        )
    );
    let second = &f["savings"][1];
    assert_eq!(
        (&second["model"], &second["best_gpu"]),
        (&Value::from(GPT2), &Value::from("Tesla T4"))
    );
    close("gpt2 lo", &second["interval_pct"]["lo"], -4.8);
    close(
        "gpt2 hi",
        &second["interval_pct"]["hi"],
        0.015 / 0.2055 * 100.0,
    );
    // Against the single best GPU (the L4) for every model it ran: Qwen 0
    // (it is the L4's), GPT-2 1.527 %; mean 0.763 %.
    let f = finding("gpu_choice.vs_single_best.batch");
    assert_eq!(f["single_gpu"], "NVIDIA L4");
    close("single mean", &f["mean_saving_pct"], gpt2_pct / 2.0);
    close("single max", &f["max_saving_pct"], gpt2_pct);
    assert_eq!(f["model"], GPT2);
    assert_eq!(f["models_not_run"], 0);
    // Wins: the L4 wins Qwen; the T4's GPT-2 is a tie, never a win.
    let f = finding("which_gpu_wins.batch");
    let wins = |gpu: &str| -> (Value, Value) {
        let w = f["wins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["size_class"] == "all" && w["gpu_id"] == gpu)
            .unwrap_or_else(|| panic!("{gpu}: {f}"));
        (w["best_for"].clone(), w["ties"].clone())
    };
    assert_eq!(wins("l4"), (Value::from(1), Value::from(0)), "{f}");
    assert_eq!(wins("t4"), (Value::from(0), Value::from(1)), "{f}");
}

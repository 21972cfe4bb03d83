//! The estimator on real peer measurements (issues #39 and #54): scored
//! against its baselines, published over the API and on /insights, and
//! estimating a configuration ML.ENERGY did not publish under its protocol;
//! peer insights are the files' own ratios.

use super::*;
use crate::common::TestApp;
use axum::http::StatusCode;
use serde_json::Value;
use std::collections::BTreeSet;

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

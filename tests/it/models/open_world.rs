//! Any model the community runs (issue #54), as a new user would try it:
//! runs of Qwen3-8B, gpt-oss-20b (a mixture of experts in MXFP4) and a
//! 4-bit AWQ checkpoint of Qwen2.5-7B-Instruct on an L4, an H100 PCIe and
//! an A100 40 GB, each bundle carrying the model's real config.json (as
//! `pack` ships it from the Hugging Face cache), are accepted, listed,
//! given their model page with their precision, never share a figure with
//! the 16-bit original, and each gets an estimate on a GPU nobody
//! measured it on.

use axum::http::StatusCode;
use serde_json::Value;

use crate::common::*;

/// Real config.json files (tests/fixtures/model-configs/SOURCES.md).
const QWEN3_8B: &str = include_str!("../../fixtures/model-configs/Qwen/Qwen3-8B/config.json");
const GPT_OSS_20B: &str =
    include_str!("../../fixtures/model-configs/openai/gpt-oss-20b/config.json");
const QWEN25_7B: &str =
    include_str!("../../fixtures/model-configs/Qwen/Qwen2.5-7B-Instruct/config.json");

/// The AWQ checkpoint's config could not be fetched here (no hub is
/// reachable); it is its base's real config with the quantization block
/// and dtype the AWQ model card states (4 bits, group 128, GEMM, zero
/// point, float16), made in the open so nobody mistakes it for the file.
fn awq_config() -> String {
    let mut c: Value = serde_json::from_str(QWEN25_7B).unwrap();
    c["torch_dtype"] = "float16".into();
    c["quantization_config"] = serde_json::json!({
        "bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm", "zero_point": true
    });
    c.to_string()
}

const GPUS: [&str; 3] = ["l4", "h100-pcie", "a100-sxm4-40gb"];
/// Measured by nobody here; inside the measured GPUs' range.
const UNMEASURED: &str = "l40s";

fn enc(s: &str) -> String {
    s.replace('/', "%2F")
}

/// `org`: the organisation the three models are filed under (the real
/// ones on SQLite; the catalogue is one per process, so the PostgreSQL
/// case files the same configs under another name to add them afresh).
async fn any_model_any_gpu(app: TestApp, org: [&str; 3]) {
    let key = app.register("alice").await;
    let ids = [
        format!("{}/Qwen3-8B", org[0]),
        format!("{}/gpt-oss-20b", org[1]),
        format!("{}/Qwen2.5-7B-Instruct-AWQ", org[2]),
    ];
    let awq = awq_config();
    let configs: [&[u8]; 3] = [QWEN3_8B.as_bytes(), GPT_OSS_20B.as_bytes(), awq.as_bytes()];
    let mut n = 0;
    for (id, config) in ids.iter().zip(configs) {
        for gpu in GPUS {
            n += 1;
            let gz = BundleBuilder::on(gpu, &[QWEN])
                .marked(format!("{id} {gpu}"))
                .model_named(id)
                .with_model_config(id, "0123456789abcdef0123456789abcdef01234567", config)
                .by("alice", &key)
                .build();
            let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
            assert_eq!(status, StatusCode::CREATED, "{id} on {gpu}: {r}");
            assert_eq!(r["status"], "accepted", "{id} on {gpu}: {:#}", r["summary"]);
        }
    }
    // The 16-bit original, on one GPU, with its own config.
    let base = "Qwen/Qwen2.5-7B-Instruct";
    let gz = BundleBuilder::on("l4", &[base])
        .marked("base")
        .with_model_config(
            base,
            "a09a35458c702b33eeacc393d103063234e8bc28",
            QWEN25_7B.as_bytes(),
        )
        .by("alice", &key)
        .build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(
        (status, r["status"].as_str()),
        (StatusCode::CREATED, Some("accepted")),
        "{r}"
    );
    assert_eq!(n, 9);

    // A checkpoint's byte total travels too (model.safetensors.index.json):
    // one far from the config's weights (16.38 GB for Qwen3-8B at BF16
    // against 8 GB stated: 16.38 ÷ 8 − 1 = 105 %) says the config is not
    // the checkpoint's, and the run waits.
    let index = br#"{"metadata": {"total_size": 8000000000}, "weight_map": {}}"#;
    let gz = BundleBuilder::on("l4", &[QWEN])
        .marked("far index")
        .model_named(&ids[0])
        .with_model_config(
            &ids[0],
            "0123456789abcdef0123456789abcdef01234567",
            QWEN3_8B.as_bytes(),
        )
        .with_weights_index(&ids[0], index)
        .by("alice", &key)
        .build();
    let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(r["status"], "needs_review", "{r}");
    assert!(
        r["summary"]
            .to_string()
            .contains("its model.safetensors.index.json 8.00 GB: 105 % apart"),
        "{:#}",
        r["summary"]
    );

    // Each joined the catalogue from its config, with figures worked out
    // by hand from the files (a layer of Qwen3-8B: q 4096×4096, k and v
    // 4096×1024 each, o 4096×4096, MLP 3×4096×12288, two norms of 4096
    // and the q/k norms of 128 each = 192,946,432; × 36 layers, plus two
    // untied 151,936 × 4,096 embeddings and the final norm =
    // 8,190,735,360). gpt-oss-20b: 20.9 B in all (OpenAI's model card:
    // 21 B).
    let by_id = |id: &str| wattcounts::catalog::model_by_id(id).unwrap_or_else(|| panic!("{id}"));
    let q3 = by_id(&ids[0]);
    assert!((q3.params_b / 8.190_735_36 - 1.0).abs() < 0.005, "{q3:?}");
    assert_eq!(
        (q3.layers, q3.kv_heads, q3.precision.as_str()),
        (36, 8, "bf16")
    );
    let oss = by_id(&ids[1]);
    if org[1] != "openai" {
        assert!((oss.params_b / 20.9 - 1.0).abs() < 0.02, "{oss:?}");
        // OpenAI's 3.6 B active leaves out the input embedding (a row
        // lookup, 201,088 × 2,880 = 0.579 B); the formula counts it, as
        // docs/model-figures.md says: 3.6 + 0.579 ≈ 4.18 B.
        assert!((oss.active_params_b / 4.18 - 1.0).abs() < 0.01, "{oss:?}");
        assert_eq!((oss.experts, oss.precision.as_str()), (32, "mxfp4"));
    }
    let awq_spec = by_id(&ids[2]);
    assert_eq!(awq_spec.precision, "awq-int4");
    assert_eq!(awq_spec.weight_bits, 4.0);

    // On the leaderboard and on their model pages, with their precision.
    for id in &ids {
        let (status, board) = app
            .get(&format!(
                "/api/v1/leaderboard?model={}&per_page=100",
                enc(id)
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{board}");
        let gpus: std::collections::BTreeSet<&str> = board["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["gpu_id"].as_str().unwrap())
            .collect();
        assert_eq!(gpus, GPUS.into_iter().collect(), "{id}");
        let (status, page) = app.get_text(&format!("/models/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{id}");
        assert!(page.contains("weights in"), "{id}");
    }
    let (_, awq_page) = app.get_text(&format!("/models/{}", ids[2])).await;
    assert!(
        awq_page.contains("weights in AWQ-INT4"),
        "the AWQ page names its precision"
    );
    let (_, base_page) = app.get_text(&format!("/models/{base}")).await;
    assert!(base_page.contains("weights in BF16"));

    // The AWQ checkpoint never shares a row or a figure with its original:
    // the original's board holds its own single L4 group, the AWQ's three.
    let (_, b) = app
        .get(&format!(
            "/api/v1/leaderboard?model={}&per_page=100",
            enc(base)
        ))
        .await;
    let rows = b["entries"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|e| e["model"] == base && e["gpu_id"] == "l4"),
        "{b}"
    );

    // Estimates on a GPU nobody measured, the mixture of experts included;
    // it was measured here, so its estimate carries no dense-only caveat.
    let r = app.service.refresh_estimator().await.unwrap();
    assert!(
        matches!(r, wattcounts::service::estimates::Refreshed::Fitted(_)),
        "{r:?}"
    );
    for id in &ids {
        let (status, e) = app
            .get(&format!(
                "/api/v1/estimate?model={}&gpu={UNMEASURED}&scenario=batch",
                enc(id)
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{id}: {e}");
        assert_eq!(e["kind"], "estimate");
        assert_eq!(e["gpu_measured"], false);
        assert!(
            e["energy_per_token_j"]["point"].as_f64().unwrap() > 0.0,
            "{e}"
        );
        assert_eq!(e["caveat"], Value::Null, "{id}: {e}");
    }
}

#[tokio::test]
async fn any_model_on_any_gpu_joins_and_is_estimated_on_sqlite() {
    any_model_any_gpu(TestApp::configured(quick).await, ["Qwen", "openai", "Qwen"]).await;
}

#[tokio::test]
async fn any_model_on_any_gpu_joins_and_is_estimated_on_postgres() {
    if let Some(app) = TestApp::postgres_in(&pg_schema(), quick).await {
        any_model_any_gpu(app, ["pg-mirror", "pg-mirror", "pg-mirror"]).await;
    }
}

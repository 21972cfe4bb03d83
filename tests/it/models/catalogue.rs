//! The GPU catalogue for the community (#41 items 1 and 2): a bundle from a
//! GPU the catalogue lacks waits in review; a maintainer adds the GPU with
//! its figures and source (a log leaf); the waiting bundle is judged again
//! by every check, now with the GPU's TDP and idle power, and moves by a
//! logged decision that says why. Bad additions are refused field by field.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::common::*;
use wattcounts::synth::Fault;

/// The name the `UnknownGpu` fault gives an L4 run.
const FAULT_NAME: &str = "NVIDIA B300 Ultra Prototype";

/// A plausible row for `name`: the L4's figures (the run's trace is an
/// L4's), so every check that needs a TDP can pass.
fn row(name: &str) -> Value {
    json!({
        "nvml_name": name,
        "architecture": "Ada Lovelace",
        "form_factor": "PCIe",
        "release_date": "2026-03-01",
        "release_year": 2026.0,
        "tdp_w": 72.0,
        "idle_w": 24.0,
        "idle_basis": "measured",
        "memory_gb": 24.0,
        "memory_type": "GDDR6",
        "memory_bus_bits": 192.0,
        "memory_bandwidth_gb_s": 300.0,
        "fp16_tflops": 30.29,
        "tensor_tflops": 121.0,
        "base_clock_mhz": 795.0,
        "boost_clock_mhz": 2040.0,
        "transistor_count_m": 35800.0,
        "source": "https://example.org/datasheets/test-gpu.pdf",
    })
}

async fn waiting_then_added(app: TestApp, name: &str) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::faulty(Fault::UnknownGpu, 42)
        .edit("system_info.txt", |s| {
            s.replace(&format!(": {FAULT_NAME}\n"), &format!(": {name}\n"))
        })
        .by("alice", &key)
        .build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["status"], "needs_review", "{r:#}");
    assert_eq!(r["gpu"]["id"], Value::Null);
    let id = r["submission_id"].as_str().unwrap().to_string();
    let checks = |r: &Value, id: &str| -> Value {
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(checks(&r, "physics.mean_power")["outcome"], "skip");

    // Refusals first: nothing is added by them.
    let path = "/api/v1/admin/catalogue/gpus";
    let mut implausible = row(name);
    implausible["tdp_w"] = json!(5000.0);
    implausible["memory_type"] = json!("HBM3");
    let (status, e) = app
        .admin_post(path, json!({"gpu": implausible, "reason": "issue 41"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
    assert_eq!(e["error"]["code"], "implausible_gpu");
    let pointers: Vec<&str> = e["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["pointer"].as_str().unwrap())
        .collect();
    // 300 GB/s on 192 bits is 12.5 Gbit/s a pin: GDDR6, not HBM3.
    // 24 W idle against 5,000 W is under 3 %.
    assert_eq!(
        pointers,
        ["/gpu/tdp_w", "/gpu/idle_w", "/gpu/memory_bandwidth_gb_s"],
        "{e:#}"
    );
    assert!(
        e["error"]["message"].as_str().unwrap().contains("5000"),
        "{e}"
    );
    let (status, e) = app
        .admin_post(path, json!({"gpu": row("NVIDIA L4"), "reason": "issue 41"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{e}");
    assert_eq!(e["error"]["code"], "gpu_exists");
    let (status, _) = app
        .admin_post(path, json!({"gpu": row(name), "reason": "  "}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = app
        .send(
            axum::http::Request::post(path)
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    json!({"gpu": row(name), "reason": "x"}).to_string(),
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, again) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(again["status"], "needs_review", "a refusal changes nothing");

    // The addition: stored, logged, and the waiting bundle judged again.
    let (status, added) = app
        .admin_post(
            path,
            json!({"gpu": row(name), "reason": "issue 41: datasheet attached"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let gpu_id = wattcounts::catalog::gpu_id(name);
    assert_eq!(added["addition"]["spec"]["id"], gpu_id.as_str());
    assert_eq!(added["addition"]["version"], 1);
    assert_eq!(
        added["rejudged"],
        json!([{"submission_id": id, "from": "needs_review", "to": "accepted"}])
    );
    let (_, r) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(r["status"], "accepted", "{r:#}");
    assert_eq!(r["gpu"]["id"], gpu_id.as_str());
    assert_eq!(checks(&r, "identity.gpu_catalogue")["outcome"], "pass");
    assert_eq!(checks(&r, "physics.mean_power")["outcome"], "pass");
    let events = r["moderation"].as_array().unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["action"], "rejudge", "{events:#?}");
    assert_eq!(last["actor"], "maintainer");
    let reason = last["reason"].as_str().unwrap();
    assert!(
        reason.contains(name)
            && reason.contains("version 1")
            && reason.contains("every check passes"),
        "{reason}"
    );
    // A second call adds nothing: the name is known now.
    let (status, _) = app
        .admin_post(path, json!({"gpu": row(name), "reason": "again"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);

    // The catalogue lists it, with who added it and why; the leaderboard
    // holds the bundle's groups on the new GPU.
    let (status, cat) = app.get("/api/v1/catalogue/gpus").await;
    assert_eq!(status, StatusCode::OK);
    let additions = cat["additions"].as_array().unwrap();
    assert_eq!(additions.len(), 1, "{additions:#?}");
    assert_eq!(additions[0]["spec"]["nvml_name"], name);
    assert_eq!(additions[0]["reason"], "issue 41: datasheet attached");
    assert!(cat["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["nvml_name"] == name && g["source"] == row(name)["source"]));
    let protocol = r["protocol"]["batch_id"].as_str().unwrap();
    let (_, lb) = app
        .get(&format!(
            "/api/v1/leaderboard?origin=real&protocol={protocol}"
        ))
        .await;
    assert!(
        lb["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["gpu_id"] == gpu_id.as_str()),
        "{lb:#}"
    );
    // The log holds the addition and the new judgement as decision leaves.
    let (status, log) = app.get("/api/v1/log/entries?start=0&end=100").await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let leaves: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["leaf"].as_str().unwrap())
        .collect();
    let add = leaves
        .iter()
        .find(|l| l.contains("\"action\":\"catalogue_add\""))
        .unwrap_or_else(|| panic!("no addition leaf in {leaves:#?}"));
    assert!(
        add.contains(name) && add.contains("figures sha256"),
        "{add}"
    );
    assert!(
        leaves
            .iter()
            .any(|l| l.contains("\"action\":\"rejudge\"") && l.contains(&id)),
        "{leaves:#?}"
    );
    // A snapshot carries the catalogue its submissions were judged by.
    let (status, snap) = app
        .admin_post("/api/v1/admin/snapshots", json!({"traces": false}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{snap}");
    let path = app
        .dir
        .path()
        .join("snapshots")
        .join(snap["snapshot_id"].as_str().unwrap())
        .join("gpus.csv");
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header = reader.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    // One submission, on the added GPU: its row, and no other.
    assert_eq!(rows.len(), 1, "{rows:?}");
    let ours = &rows[0];
    assert_eq!(&ours[col("nvml_name")], name);
    assert_eq!(&ours[col("added")], "true");
    assert_eq!(&ours[col("tdp_w")], "72.0");
    assert_eq!(&ours[col("source")], row(name)["source"].as_str().unwrap());
}

#[tokio::test]
async fn an_unknown_gpu_waits_and_is_judged_again_once_added_on_sqlite() {
    waiting_then_added(TestApp::new().await, "NVIDIA Test Accelerator SQLite 24GB").await;
}

#[tokio::test]
async fn an_unknown_gpu_waits_and_is_judged_again_once_added_on_postgres() {
    let Some(app) = TestApp::postgres().await else {
        return;
    };
    waiting_then_added(app, "NVIDIA Test Accelerator PostgreSQL 24GB").await;
}

/// Qwen2.5-0.5B-Instruct's config.json (its shape fields), which the
/// renamed fixture model below is: tied embeddings 151,936 × 896 =
/// 136,134,656; a layer's attention 896 × (14 + 2 × 2) × 64 + 896 × 896 =
/// 1,032,192 + 802,816 = 1,835,008 and MLP 3 × 896 × 4,864 = 13,074,432,
/// together 14,909,440, × 24 = 357,826,560. Total 493,961,216 (Qwen
/// states 0.49 B; biases and norms are the rest).
const QWEN_05B_CONFIG: &str = r#"{
  "architectures": ["Qwen2ForCausalLM"],
  "model_type": "qwen2",
  "hidden_size": 896,
  "intermediate_size": 4864,
  "num_hidden_layers": 24,
  "num_attention_heads": 14,
  "num_key_value_heads": 2,
  "vocab_size": 151936,
  "tie_word_embeddings": true,
  "max_position_embeddings": 32768,
  "torch_dtype": "bfloat16"
}"#;

/// A model the catalogue lacks (issue #54): the bundle waits in review; a
/// maintainer adds the model from its config.json (figures by the one
/// formula, a log leaf with the config's digest); the waiting bundle is
/// judged again and accepted, and the model has its page. Bad additions
/// are refused with the rule named, and add nothing.
async fn an_unknown_model_waits_then_is_added(app: TestApp, model: &str) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture()
        .marked(model)
        .model_named(model)
        .by("alice", &key)
        .build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["status"], "needs_review", "{:#}", r["summary"]);
    let id = r["submission_id"].as_str().unwrap().to_string();
    let (status, _) = app.get(&format!("/api/v1/models/{model}")).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "no page before it is catalogued"
    );

    let path = "/api/v1/admin/catalogue/models";
    let log_before = app.get("/api/v1/log").await.1["size"].as_u64();
    for (config, code) in [
        ("{not json", "implausible_model"),
        (
            r#"{"model_type": "llama", "num_hidden_layers": 2}"#,
            "implausible_model",
        ),
    ] {
        let (status, e) = app
            .admin_post(
                path,
                json!({"id": model, "config": config, "reason": "issue 54"}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
        assert_eq!(e["error"]["code"], code, "{e}");
    }
    let (status, e) = app
        .admin_post(
            path,
            json!({"id": model, "config": QWEN_05B_CONFIG, "reason": ""}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a reason is required: {e}"
    );
    assert_eq!(app.get("/api/v1/log").await.1["size"].as_u64(), log_before);

    let (status, added) = app
        .admin_post(
            path,
            json!({"id": model, "config": QWEN_05B_CONFIG, "revision": "7ae557604adf67be50417f59c2c2f167def9a775", "reason": "issue 54: a model from a bundle"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let spec = &added["addition"]["spec"];
    assert_eq!(spec["params_b"].as_f64().unwrap(), 0.493_961_216);
    assert_eq!(spec["active_params_b"], spec["params_b"]);
    assert_eq!(
        (spec["layers"].as_u64(), spec["kv_heads"].as_u64()),
        (Some(24), Some(2))
    );
    let provenance = &added["addition"]["provenance"];
    assert_eq!(provenance["precision"], "bf16");
    assert_eq!(
        provenance["config_sha256"],
        wattcounts::digest::sha256_hex(QWEN_05B_CONFIG.as_bytes())
    );
    assert_eq!(
        added["rejudged"],
        json!([{"submission_id": id, "from": "needs_review", "to": "accepted"}]),
        "{added:#}"
    );
    // One leaf for the addition, one for the decision that moved the bundle.
    assert_eq!(
        app.get("/api/v1/log").await.1["size"].as_u64(),
        log_before.map(|n| n + 2)
    );
    let (status, r) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(r["status"], "accepted", "{:#}", r["summary"]);
    let (status, page) = app.get(&format!("/api/v1/models/{model}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    // Once is enough: the same id again is a conflict.
    let (status, e) = app
        .admin_post(
            path,
            json!({"id": model, "config": QWEN_05B_CONFIG, "reason": "again"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{e}");
    assert_eq!(e["error"]["code"], "model_exists");
}

#[tokio::test]
async fn an_unknown_model_waits_and_is_judged_again_once_added_on_sqlite() {
    an_unknown_model_waits_then_is_added(
        TestApp::new().await,
        "example-org/Renamed-Qwen-0.5B-sqlite",
    )
    .await
}

#[tokio::test]
async fn an_unknown_model_waits_and_is_judged_again_once_added_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        an_unknown_model_waits_then_is_added(app, "example-org/Renamed-Qwen-0.5B-pg").await
    }
}

/// A model the catalogue lacks, its config.json in the bundle (issue #54,
/// as `pack` ships it from the Hugging Face cache): the run is accepted,
/// the model joins the catalogue from it (the submitter, the config's
/// revision and digest, a log leaf) and has its page. Without a config,
/// or with one that gives no figures, it waits for review, saying why.
async fn a_model_joins_from_its_bundle(app: TestApp, model: &str) {
    let key = app.register("alice").await;
    let log_before = app.get("/api/v1/log").await.1["size"].as_u64().unwrap();

    // A config that gives no figures (no hidden size): in review, named.
    let gz = BundleBuilder::fixture()
        .marked(format!("{model} broken"))
        .model_named(model)
        .with_model_config(
            model,
            "0123abc",
            br#"{"model_type": "qwen2", "num_hidden_layers": 24}"#,
        )
        .by("alice", &key)
        .build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["status"], "needs_review", "{:#}", r["summary"]);
    let summary = r["summary"].to_string();
    assert!(
        summary.contains("config.json has no hidden_size"),
        "{summary}"
    );

    let gz = BundleBuilder::fixture()
        .marked(model)
        .model_named(model)
        .with_model_config(
            model,
            "7ae557604adf67be50417f59c2c2f167def9a775",
            QWEN_05B_CONFIG.as_bytes(),
        )
        .by("alice", &key)
        .build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["status"], "accepted", "{:#}", r["summary"]);
    let c = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "identity.model_catalogue")
        .unwrap();
    assert!(
        c["message"].as_str().unwrap().contains(&format!(
            "{model} (0.49 B parameters, 0.49 B active, bf16, from its config.json)"
        )),
        "{c:#}"
    );
    // Joined: its page, and a leaf for the addition beside the two
    // submissions' (the broken one's included).
    let (status, page) = app.get(&format!("/api/v1/models/{model}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(
        app.get("/api/v1/log").await.1["size"].as_u64().unwrap(),
        log_before + 3
    );
    let added = app.service.catalogue_models().await.unwrap();
    let a = added
        .iter()
        .find(|a| a.spec.id == model)
        .expect("catalogued");
    assert_eq!(a.actor, "alice");
    assert_eq!(a.spec.params_b, 0.493_961_216);
    assert_eq!(
        a.provenance.revision.as_deref(),
        Some("7ae557604adf67be50417f59c2c2f167def9a775")
    );
    assert_eq!(
        a.provenance.config_sha256,
        wattcounts::digest::sha256_hex(QWEN_05B_CONFIG.as_bytes())
    );
    assert!(
        a.reason.contains(r["submission_id"].as_str().unwrap()),
        "{}",
        a.reason
    );
}

#[tokio::test]
async fn a_model_joins_the_catalogue_from_its_bundle_on_sqlite() {
    a_model_joins_from_its_bundle(TestApp::new().await, "example-org/Bundled-Qwen-0.5B-sqlite")
        .await
}

#[tokio::test]
async fn a_model_joins_the_catalogue_from_its_bundle_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        a_model_joins_from_its_bundle(app, "example-org/Bundled-Qwen-0.5B-pg").await
    }
}

/// A manifest naming a model config the bundle does not hold (issue #54)
/// is refused, naming the pointer, and nothing is stored.
#[tokio::test]
async fn a_manifest_naming_a_config_the_bundle_lacks_is_refused() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let builder = BundleBuilder::fixture().by("alice", &key);
    let mut m = builder.manifest_json();
    m["models"] = json!([{
        "id": "Qwen/Qwen2.5-0.5B-Instruct",
        "config": "model-configs/Qwen/Qwen2.5-0.5B-Instruct/config.json",
        "config_sha256": "0".repeat(64),
    }]);
    let gz = archive(&serde_json::to_vec(&m).unwrap(), &builder.bundle_files());
    let before = app.stored().await;
    let (status, e) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
    assert_error(&e, "model_config_missing");
    assert_eq!(
        e["error"]["details"][0]["pointer"], "/models/0/config",
        "{e}"
    );
    app.assert_nothing_stored_since(&before).await;
}

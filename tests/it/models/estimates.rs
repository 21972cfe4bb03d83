//! The estimator over HTTP and through its life cycle (issue #28): 503
//! before the first fit, 422 with too little data; on reference-protocol
//! runs of 4 GPUs × 4 models an unmeasured pair is an estimate (labelled,
//! interval, neighbours, version), a measured pair shows the measurement
//! beside it, every refusal has its status and code, and estimates stay
//! out of the leaderboard, compare, model rankings and their CSV; the
//! model page lists the GPUs nobody measured. Life cycle, on both
//! backends: refitting the same data changes nothing, a moderation
//! decision changes the version, a restart loads the stored fit (the fit
//! counter stays put), and a submission triggers the background refit.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use wattcounts::service::estimates::Refreshed;

const GPUS: [&str; 4] = ["l4", "a30", "l40s", "h100-pcie"];

/// Not among GPUS; inside their range of every feature.
const UNMEASURED_GPU: &str = "a100-sxm4-40gb";

const MODELS: [&str; 4] = [
    "Qwen/Qwen2.5-0.5B-Instruct",
    "Qwen/Qwen2.5-1.5B-Instruct",
    "Qwen/Qwen2.5-3B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
];

/// One reference-protocol bundle per GPU, all four models, submitted
/// through the API; the submission ids.
async fn submit_all(app: &TestApp, key: &ssh_key::PrivateKey, gpus: &[&str]) -> Vec<String> {
    let mut ids = Vec::new();
    for g in gpus {
        let gz = BundleBuilder::on(g, &MODELS).by("alice", key).build();
        let (status, body) = app.submit(&gz, &sign(key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{g}: {body}");
        ids.push(body["submission_id"].as_str().unwrap().to_string());
    }
    ids
}

fn enc(s: &str) -> String {
    s.replace('/', "%2F")
}

async fn estimate(app: &TestApp, model: &str, gpu: &str, scenario: &str) -> (StatusCode, Value) {
    app.get(&format!(
        "/api/v1/estimate?model={}&gpu={gpu}&scenario={scenario}",
        enc(model)
    ))
    .await
}

#[tokio::test]
async fn before_the_first_fit_503_and_with_too_little_data_422() {
    let app = TestApp::configured(quick).await;
    let (status, body) = estimate(&app, MODELS[0], "l4", "batch").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "estimator_not_ready");
    let (status, body) = app.get("/api/v1/estimator").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "fitting");
    // Nothing to fit on: unavailable, and why.
    let r = app.service.refresh_estimator().await.unwrap();
    assert!(matches!(r, Refreshed::Unavailable(_)), "{r:?}");
    let (status, body) = estimate(&app, MODELS[0], "l4", "batch").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "estimator_unavailable");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("0 catalogue GPU(s)") && msg.contains("at least 3"),
        "{msg}"
    );
    let (_, est) = app.get("/api/v1/estimator").await;
    assert_eq!(est["status"], "unavailable");
    // A missing parameter is a 400 whatever the estimator's state.
    let (status, body) = app.get("/api/v1/estimate?gpu=l4&scenario=batch").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "missing_parameter");
}

#[tokio::test]
async fn the_503_before_the_first_fit_says_when_to_retry() {
    let app = TestApp::configured(quick).await;
    let (status, headers, _) = app
        .raw(
            axum::http::Request::get(format!(
                "/api/v1/estimate?model={}&gpu=l4&scenario=batch",
                enc(MODELS[0])
            ))
            .body(axum::body::Body::empty())
            .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers.get("retry-after").unwrap(), "5");
}

/// The whole HTTP surface on one fitted service (fitting is the slow
/// part; one fixture serves every check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_over_http_labelled_refused_and_never_mixed() {
    let app = TestApp::configured(quick).await;
    let key = app.register("alice").await;
    submit_all(&app, &key, &GPUS).await;
    let r = app.service.refresh_estimator().await.unwrap();
    assert!(matches!(r, Refreshed::Fitted(_)), "{r:?}");

    // The estimator itself.
    let (status, est) = app.get("/api/v1/estimator").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(est["status"], "ready");
    assert_eq!(est["trained_on"]["gpus"], 4);
    assert_eq!(est["trained_on"]["models"], 4);
    // 4 GPUs × 4 models × (batch + two rates).
    assert_eq!(est["trained_on"]["groups"], 48);
    assert_eq!(est["trained_on"]["protocol"], "reference");
    assert_eq!(est["fits_made"], 1);
    let version = est["version"].as_str().unwrap().to_string();
    assert_eq!(version.len(), 64);
    let lines = est["validation"].as_array().unwrap();
    // 3 splits × 3 classes × (estimator + 2 baselines).
    assert_eq!(lines.len(), 27, "{est}");
    assert!(lines
        .iter()
        .any(|l| l["split"] == "logo" && l["method"] == "estimator"));

    // An unmeasured GPU: labelled, interval, neighbours, version.
    let (status, a) = estimate(&app, MODELS[3], UNMEASURED_GPU, "batch").await;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(a["kind"], "estimate");
    assert_eq!(a["interval_from"]["split"], "logo");
    assert_eq!(a["gpu_measured"], false);
    let e = &a["energy_per_token_j"];
    let (lo, point, hi) = (
        e["lo"].as_f64().unwrap(),
        e["point"].as_f64().unwrap(),
        e["hi"].as_f64().unwrap(),
    );
    assert!(lo < point && point < hi, "{e}");
    // Batch J/token = P̂ × ITL̂.
    let p = a["power_w"]["point"].as_f64().unwrap();
    let itl = a["itl_s"]["point"].as_f64().unwrap();
    assert!((point - p * itl).abs() <= 1e-9 * point);
    assert_eq!(a["measured"], Value::Null);
    assert_eq!(a["neighbours"].as_array().unwrap().len(), 3);
    assert!(a["neighbours"][0]["link"]
        .as_str()
        .unwrap()
        .starts_with("/leaderboard?"));
    assert_eq!(a["estimator"]["version"], version.as_str());
    assert_eq!(a["level"], 0.8);
    // The NVML name is accepted too, and server@RATE.
    let (status, s) = app
        .get(&format!(
            "/api/v1/estimate?model={}&gpu=NVIDIA%20A100-SXM4-40GB&scenario=server@0.33",
            enc(MODELS[3])
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{s}");
    let per_request = s["energy_per_request_j"]["point"].as_f64().unwrap();
    let power = s["power_w"]["point"].as_f64().unwrap();
    assert!((per_request - power / 0.33).abs() <= 1e-9 * per_request);
    assert!(s["tokens_per_request"].as_f64().unwrap() > 1.0);

    // A measured pair: the measurement beside, never replacing.
    let (status, m) = estimate(&app, MODELS[1], "l40s", "batch").await;
    assert_eq!(status, StatusCode::OK, "{m}");
    assert_eq!(m["interval_from"]["split"], "grouped_cv");
    let measured = &m["measured"];
    assert!(
        measured["energy_per_token_j"].as_f64().unwrap() > 0.0,
        "{m}"
    );
    assert!(measured["link"].as_str().unwrap().contains("gpu=l40s"));
    assert!(m["energy_per_token_j"]["point"].as_f64().is_some());

    // Refusals: status, code, message.
    let refusals: &[(&str, StatusCode, &str, &str)] = &[
        (
            "model=no%2Fsuch&gpu=l4&scenario=batch",
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_model",
            "model = 'no/such'",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=b300-ultra&scenario=batch",
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_gpu",
            "gpu = 'b300-ultra'",
        ),
        (
            // In the catalogue, but its 8 TB/s lie beyond the measured GPUs'.
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=b200&scenario=batch",
            StatusCode::UNPROCESSABLE_ENTITY,
            "outside_domain",
            "memory_bandwidth_gb_s = 8192",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=server&rate=-1",
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_rate",
            "rate = '-1'",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=server&rate=inf",
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_rate",
            "positive finite",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=server@5",
            StatusCode::UNPROCESSABLE_ENTITY,
            "rate_outside_domain",
            "0.0085 to 0.6600 req/s",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=server",
            StatusCode::BAD_REQUEST,
            "missing_parameter",
            "rate is required",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=offline",
            StatusCode::BAD_REQUEST,
            "bad_parameter",
            "scenario = 'offline'",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=batch&colour=red",
            StatusCode::BAD_REQUEST,
            "unknown_parameter",
            "colour",
        ),
        (
            "model=Qwen%2FQwen2.5-7B-Instruct&gpu=l4&scenario=batch&level=2",
            StatusCode::BAD_REQUEST,
            "bad_parameter",
            "level = '2'",
        ),
    ];
    for (query, want_status, code, words) in refusals {
        let (status, body) = app.get(&format!("/api/v1/estimate?{query}")).await;
        assert_eq!(status, *want_status, "{query}: {body}");
        assert_eq!(body["error"]["code"], *code, "{query}: {body}");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(msg.contains(words), "{query}: {msg}");
    }
    // A pair that does not fit, a model far outside the measured sizes.
    let big = wattcounts::catalog::models()
        .iter()
        .find(|m| m.params_b > 25.0 && m.params_b == m.active_params_b)
        .unwrap();
    let (status, body) = estimate(&app, &big.id, "l4", "batch").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "does_not_fit");
    let (status, body) = estimate(&app, &big.id, "h200", "batch").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "outside_domain", "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("params_b"));
    // A mixture of experts inside the measured sizes (7 B total, 1 B
    // active, 64 experts) is answered, saying that no model of its kind
    // was measured (issue #54).
    let (status, body) = estimate(&app, "allenai/OLMoE-1B-7B-0924", UNMEASURED_GPU, "batch").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let caveat = body["caveat"].as_str().unwrap();
    assert!(
        caveat.contains("64 experts") && caveat.contains("no mixture of experts was measured"),
        "{caveat}"
    );
    assert!(
        body["energy_per_token_j"]["lo"].as_f64().unwrap()
            < body["energy_per_token_j"]["point"].as_f64().unwrap()
    );

    // Estimates never join measured rows: the leaderboard, its CSV,
    // compare and the model's rankings know four GPUs only.
    let (_, board) = app.get("/api/v1/leaderboard?per_page=1000").await;
    let rows = board["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 48);
    assert!(rows.iter().all(|r| r["gpu_id"] != UNMEASURED_GPU));
    let (_, _, csv) = app
        .raw(
            axum::http::Request::get("/api/v1/leaderboard.csv")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    let csv = String::from_utf8(csv.to_vec()).unwrap();
    assert!(!csv.contains(UNMEASURED_GPU) && !csv.contains("estimate"));
    let (_, model) = app.get(&format!("/api/v1/models/{}", MODELS[3])).await;
    assert!(!model.to_string().contains(UNMEASURED_GPU), "{model}");
    let (_, cmp) = app
        .get(&format!(
            "/api/v1/compare?gpus=l4,{UNMEASURED_GPU}&scenario=batch"
        ))
        .await;
    assert!(!cmp.to_string().contains("\"kind\":\"estimate\""), "{cmp}");

    // The model's unmeasured GPUs: one row per catalogue GPU × scenario
    // without a group; "does not fit" is an answer too.
    // (The catalogue may grow meanwhile: another test adding a GPU.)
    let before = wattcounts::catalog::gpus().len();
    let (status, un) = app
        .get(&format!("/api/v1/models/{}/estimates", MODELS[3]))
        .await;
    let after = wattcounts::catalog::gpus().len();
    assert_eq!(status, StatusCode::OK, "{un}");
    let rows = un["rows"].as_array().unwrap();
    assert!(
        rows.len() == (before - 4) * 3 || rows.len() == (after - 4) * 3,
        "{un}"
    );
    assert!(rows.iter().all(|r| r["kind"] == "estimate"));
    assert!(rows
        .iter()
        .any(|r| r["gpu_id"] == UNMEASURED_GPU && r["energy_per_token_j"]["point"].is_number()));
    let (status, _, csv) = app
        .raw(
            axum::http::Request::get(format!("/api/v1/models/{}/estimates.csv", MODELS[3]))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let csv = String::from_utf8(csv.to_vec()).unwrap();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    assert!(csv.lines().nth(1).unwrap().starts_with("estimate,"));

    // A snapshot of these data names the fit and its validation table,
    // and holds no estimate: the unmeasured GPU is in none of its files.
    let library = wattcounts::snapshot::Library::new(app.dir.path().join("snapshots")).unwrap();
    let created = app
        .service
        .create_snapshot(&library, &Default::default(), |_| {})
        .await
        .unwrap();
    let folder = app
        .dir
        .path()
        .join("snapshots")
        .join(&created.published.manifest.snapshot_id);
    let card = std::fs::read_to_string(folder.join("README.md")).unwrap();
    assert!(card.contains(&format!("version `{version}`")), "{card}");
    assert!(card.contains("| logo | batch | estimator |"), "{card}");
    for f in ["runs.csv", "configurations.csv", "submissions.csv"] {
        let text = std::fs::read_to_string(folder.join(f)).unwrap();
        assert!(!text.contains(UNMEASURED_GPU), "{f} holds an estimate");
    }

    // Pages: the form answers without JavaScript; the model page and
    // /insights carry the section and the validation table.
    let (status, doc) = html_page(
        &app,
        &format!(
            "/estimate?model={}&gpu={UNMEASURED_GPU}&scenario=batch",
            enc(MODELS[3])
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!texts(&doc, "tr.estimate").is_empty());
    assert!(texts(&doc, "h2").iter().any(|t| t.starts_with("Estimate:")));
    let (status, doc) = html_page(&app, "/estimate?model=no%2Fsuch&gpu=l4&scenario=batch").await;
    assert_eq!(status, 422);
    assert!(texts(&doc, "p.refused")
        .iter()
        .any(|t| t.contains("not in the catalogue")));
    let (status, doc) = html_page(&app, &format!("/models/{}", MODELS[3])).await;
    assert_eq!(status, 200);
    assert!(texts(&doc, "#estimates h2")
        .iter()
        .any(|t| t.contains("GPUs nobody has measured")));
    assert!(!texts(&doc, "#estimates tr.estimate").is_empty());
    let (status, doc) = html_page(&app, "/insights").await;
    assert_eq!(status, 200);
    assert!(!texts(&doc, "#estimator-validation table.validation tbody tr").is_empty());
    // The validation as findings of /insights, one per scenario class,
    // each with its figure and the paper's (WattGPU's) beside.
    let (_, insights) = app.get("/api/v1/insights").await;
    let logo = lines
        .iter()
        .find(|l| l["split"] == "logo" && l["scenario"] == "batch" && l["method"] == "estimator")
        .unwrap();
    let finding = insights["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "estimator.validation.batch")
        .unwrap_or_else(|| panic!("{insights}"));
    assert_eq!(finding["basis"], "out_of_fold_leave_one_gpu_out");
    assert_eq!(
        finding["energy_mdape_pct"],
        logo["scores"]["energy_mdape_pct"]
    );
    assert!(finding["paper"].as_str().unwrap().contains("WattGPU"));
    assert_eq!(finding["gpus"], 4);
    // Another view (the demo, empty here) does not borrow this fit's.
    let (_, other) = app.get("/api/v1/insights?origin=demo").await;
    assert!(!other.to_string().contains("estimator.validation"));
}

/// Life cycle on one backend.
async fn life_cycle(app: TestApp, reopen: impl std::future::Future<Output = TestApp>) {
    let key = app.register("alice").await;
    let ids = submit_all(&app, &key, &GPUS).await;
    let first = match app.service.refresh_estimator().await.unwrap() {
        Refreshed::Fitted(v) => v,
        other => panic!("{other:?}"),
    };
    let ask = format!(
        "/api/v1/estimate?model={}&gpu={UNMEASURED_GPU}&scenario=batch",
        enc(MODELS[2])
    );
    let (_, before) = app.get(&ask).await;
    // The same data again: nothing refitted, the same answer.
    assert_eq!(
        app.service.refresh_estimator().await.unwrap(),
        Refreshed::Unchanged
    );
    assert_eq!(app.service.estimator().fits_made, 1);
    let (_, again) = app.get(&ask).await;
    assert_eq!(before, again);

    // A restart (a new instance on the same database): the stored fit
    // is loaded, not made again, and answers identically.
    let restarted = reopen.await;
    assert_eq!(
        restarted.service.refresh_estimator().await.unwrap(),
        Refreshed::Loaded(first.clone())
    );
    assert_eq!(restarted.service.estimator().fits_made, 0);
    assert_eq!(restarted.service.estimator().fits_loaded, 1);
    let (_, loaded) = restarted.get(&ask).await;
    assert_eq!(before, loaded);

    // A moderation decision that changes groups changes the version.
    let by = wattcounts::service::moderation::actor("maintainer", "test").unwrap();
    app.service
        .decide(
            ids[0].parse().unwrap(),
            wattcounts::service::Decision::Reject,
            &by,
        )
        .await
        .unwrap();
    let second = match app.service.refresh_estimator().await.unwrap() {
        Refreshed::Fitted(v) => v,
        other => panic!("{other:?}"),
    };
    assert_ne!(second, first);
    assert_eq!(app.service.estimator().current.unwrap().counts().0, 3);

    // A submission triggers the background refit by itself.
    let service = Arc::clone(&app.service);
    let job = tokio::spawn(service.run_estimator());
    submit_all(&app, &key, &["rtx-4090"]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let v = app.service.estimator();
        if let Some(t) = v.current.as_ref().filter(|t| t.version != second) {
            assert_ne!(t.version, first);
            assert_eq!(t.counts().0, 4);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no refit within 120 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(app.service.estimator().fits_made, 3);
    job.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_life_cycle_on_sqlite() {
    let app = TestApp::configured(quick).await;
    let dir = app.dir.path().to_path_buf();
    let url = format!("sqlite:{}", dir.join("test.db").display());
    let reopen = async move {
        let store = wattcounts::store::sqlite::SqliteStore::open(&url)
            .await
            .unwrap();
        TestApp::with_store_config(Arc::new(store), tempfile::tempdir().unwrap(), quick)
    };
    life_cycle(app, reopen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_life_cycle_on_postgres() {
    let schema = pg_schema();
    let Some(app) = TestApp::postgres_in(&schema, quick).await else {
        return;
    };
    let reopen = async move { TestApp::postgres_in(&schema, quick).await.unwrap() };
    life_cycle(app, reopen).await;
}

/// The done-when: reference-protocol runs of 7 catalogue GPUs × 5
/// models from a harness writer whose physics the estimator never saw
/// (`synth::Physics::Other`); the 8th, interior GPU is estimated within
/// 25 % median error of what its own runs then measure (batch J/token,
/// server J/request), most 80 % intervals cover the measurement, each
/// model's ranking places it within two ranks; once its runs are accepted
/// the job refits by itself and the measurement stands beside the
/// estimate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interior_gpu_of_unseen_physics_is_estimated_then_measured() {
    const OTHER_GPUS: [&str; 7] = [
        "l4",
        "a30",
        "rtx-3090",
        "rtx-4090",
        "l40s",
        "h100-pcie",
        "h200",
    ];
    const INTERIOR: &str = "a100-sxm4-40gb";
    const FIVE: [&str; 5] = [
        "Qwen/Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-3B-Instruct",
        "Qwen/Qwen2.5-7B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
    ];
    const SCENARIOS: [&str; 3] = ["batch", "server@0.017", "server@0.33"];
    let app = TestApp::configured(|c| c.estimator_toml = Some("settle_secs = 0.2\n".into())).await;
    let key = app.register("alice").await;
    // Generate the eight runs on both cores, then submit in order.
    let bundles: Vec<(String, Vec<u8>)> = std::thread::scope(|s| {
        let handles: Vec<_> = OTHER_GPUS
            .iter()
            .chain(std::iter::once(&INTERIOR))
            .map(|g| {
                let key = &key;
                s.spawn(move || {
                    let gz = BundleBuilder::on(g, &FIVE)
                        .physics(wattcounts::synth::Physics::Other)
                        .by("alice", key)
                        .build();
                    (g.to_string(), gz)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (g, gz) in bundles.iter().filter(|(g, _)| g != INTERIOR) {
        let (status, body) = app.submit(gz, &sign(&key, gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{g}: {body}");
    }
    let first = match app.service.refresh_estimator().await.unwrap() {
        Refreshed::Fitted(v) => v,
        other => panic!("{other:?}"),
    };

    // The estimates, before any run of the interior GPU exists.
    let mut estimates = Vec::new();
    for m in FIVE {
        for sc in SCENARIOS {
            let (status, a) = estimate(&app, m, INTERIOR, sc).await;
            assert_eq!(status, StatusCode::OK, "{m} {sc}: {a}");
            assert_eq!(a["measured"], Value::Null);
            assert_eq!(a["interval_from"]["split"], "logo");
            let band = if sc == "batch" {
                a["energy_per_token_j"].clone()
            } else {
                a["energy_per_request_j"].clone()
            };
            estimates.push((m, sc, band));
        }
    }

    // Its runs arrive; the job refits by itself.
    let job = tokio::spawn(Arc::clone(&app.service).run_estimator());
    let (_, gz) = bundles.iter().find(|(g, _)| g == INTERIOR).unwrap();
    let (status, body) = app.submit(gz, &sign(&key, gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while app
        .service
        .estimator()
        .current
        .as_ref()
        .is_none_or(|t| t.version == first)
    {
        assert!(std::time::Instant::now() < deadline, "no refit in 300 s");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    job.abort();

    // Measured beside the estimate now; score the earlier estimates.
    let mut errors = Vec::new();
    let mut covered = 0;
    for (m, sc, band) in &estimates {
        let (status, a) = estimate(&app, m, INTERIOR, sc).await;
        assert_eq!(status, StatusCode::OK, "{a}");
        let measured = &a["measured"];
        assert!(!measured.is_null(), "{m} {sc}: {a}");
        let actual = if *sc == "batch" {
            measured["energy_per_token_j"].as_f64().unwrap()
        } else {
            measured["energy_per_request_j"].as_f64().unwrap()
        };
        let point = band["point"].as_f64().unwrap();
        errors.push(((point - actual) / actual).abs() * 100.0);
        if band["lo"].as_f64().unwrap() <= actual && actual <= band["hi"].as_f64().unwrap() {
            covered += 1;
        }
    }
    errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    println!(
        "interior GPU: median error {median:.1} %, {covered} of {} inside their 80 % intervals, errors {errors:.1?}",
        estimates.len()
    );
    assert!(median < 25.0, "median error {median:.1} %: {errors:?}");
    assert!(
        covered * 2 > estimates.len(),
        "{covered} of {} covered",
        estimates.len()
    );

    // Each model's ranking (batch J/token, lowest first) places the
    // interior GPU within two ranks of where its measurement puts it.
    for m in FIVE {
        let (_, board) = app
            .get(&format!(
                "/api/v1/leaderboard?model={}&scenario=batch&per_page=100",
                enc(m)
            ))
            .await;
        let mut measured: Vec<(String, f64)> = board["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["gpu_id"].as_str().unwrap().to_string(),
                    r["energy_per_token_j"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(measured.len(), 8, "{board}");
        let rank_of = |rows: &[(String, f64)]| {
            let mut r = rows.to_vec();
            r.sort_by(|a, b| a.1.total_cmp(&b.1));
            r.iter().position(|(g, _)| g == INTERIOR).unwrap() as i64
        };
        let true_rank = rank_of(&measured);
        let estimated = estimates
            .iter()
            .find(|(em, sc, _)| *em == m && *sc == "batch")
            .unwrap()
            .2["point"]
            .as_f64()
            .unwrap();
        for row in &mut measured {
            if row.0 == INTERIOR {
                row.1 = estimated;
            }
        }
        let estimated_rank = rank_of(&measured);
        assert!(
            (true_rank - estimated_rank).abs() <= 2,
            "{m}: measured rank {true_rank}, estimated {estimated_rank}"
        );
    }
}

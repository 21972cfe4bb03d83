//! Asked for by users (issue #28, item 5): the `.csv` twins of the
//! compare, model and GPU tables carry exactly the rows their JSON shows,
//! under the leaderboard CSV's header; an energy budget beside a deadline
//! picks the lowest energy meeting both, and "none meets both" is an
//! answer.

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::common::*;

const MODELS: [&str; 2] = [
    "Qwen/Qwen2.5-0.5B-Instruct",
    "meta-llama/Llama-3.1-8B-Instruct",
];

async fn csv(app: &TestApp, path: &str) -> (StatusCode, Vec<Vec<String>>) {
    let (status, headers, body) = app
        .raw(Request::get(path).body(Body::empty()).unwrap())
        .await;
    if status == StatusCode::OK {
        assert!(headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv"));
        assert!(headers["content-disposition"]
            .to_str()
            .unwrap()
            .contains(".csv"));
    }
    let mut r = csv::Reader::from_reader(&body[..]);
    let mut rows = vec![r.headers().unwrap().iter().map(String::from).collect()];
    rows.extend(
        r.records()
            .map(|x| x.unwrap().iter().map(String::from).collect::<Vec<_>>()),
    );
    (status, rows)
}

/// The asked-for choice (a loose TTFT deadline, then `extra`) at 0.33 req/s.
async fn asked_server_choice(app: &TestApp, model: &str, extra: &str) -> serde_json::Value {
    let (status, m) = app
        .get(&format!("/api/v1/models/{model}?ttft_ms=100000{extra}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{m}");
    let server = m["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"]["lambda_qps"] == 0.33)
        .unwrap();
    server["choices"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_twins_and_the_energy_budget() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    for g in ["l4", "h100-pcie", "a30"] {
        let gz = BundleBuilder::on(g, &MODELS).by("alice", &key).build();
        let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let header: Vec<String> = wattcounts::web::view::csv::COLUMNS
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();

    // Compare: the chosen GPUs in the chosen scenario, per model.
    let (status, rows) = csv(
        &app,
        "/api/v1/compare.csv?gpu=l4&gpu=a30&scenario=server@0.33",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rows[0], header);
    assert_eq!(rows.len() - 1, 4, "{rows:?}");
    for r in &rows[1..] {
        assert!(
            r[col("gpu_id")] == "l4" || r[col("gpu_id")] == "a30",
            "{r:?}"
        );
        assert_eq!(r[col("scenario")], "server");
        assert_eq!(r[col("lambda_qps")], "0.33");
    }
    let (_, json) = app
        .get("/api/v1/compare?gpu=l4&gpu=a30&scenario=server@0.33")
        .await;
    let json_text = json.to_string();
    for r in &rows[1..] {
        let ept = r[col("energy_per_token_j")].parse::<f64>().unwrap();
        assert!(
            json_text.contains(&format!("{ept}")),
            "{ept} not in {json_text}"
        );
    }

    // GPU: one GPU across models in one scenario, as its JSON lists them.
    let (status, rows) = csv(&app, "/api/v1/gpus/l4.csv?scenario=batch").await;
    assert_eq!(status, StatusCode::OK);
    let (_, json) = app.get("/api/v1/gpus/l4?scenario=batch").await;
    let listed = json["entries"].as_array().unwrap();
    assert_eq!(rows.len() - 1, listed.len());
    for (r, j) in rows[1..].iter().zip(listed) {
        assert_eq!(r[col("model")], j["model"].as_str().unwrap());
        assert_eq!(
            r[col("energy_per_token_j")].parse::<f64>().unwrap(),
            j["energy_per_token_j"].as_f64().unwrap()
        );
    }
    let (status, _) = csv(&app, "/api/v1/gpus/no-such.csv").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Model: every scenario's GPUs for the model.
    let (status, rows) = csv(&app, &format!("/api/v1/models/{}.csv", MODELS[1])).await;
    assert_eq!(status, StatusCode::OK);
    // 3 GPUs × (batch + 2 rates).
    assert_eq!(rows.len() - 1, 9, "{rows:?}");
    assert!(rows[1..].iter().all(|r| r[col("model")] == MODELS[1]));

    // The budget: with a loose TTFT deadline, a budget just above the
    // least energy picks that GPU; one below it, none meets both.
    let asked = asked_server_choice(&app, MODELS[1], "").await;
    let best = asked["pick"]["energy"]["median"].as_f64().unwrap();
    let gpu = asked["pick"]["gpu_id"].as_str().unwrap().to_string();
    let within = asked_server_choice(
        &app,
        MODELS[1],
        &format!("&max_j_per_token={}", best * 1.0001),
    )
    .await;
    assert_eq!(within["pick"]["gpu_id"], gpu.as_str());
    assert!(within["label"].as_str().unwrap().contains("J/token"));
    let below =
        asked_server_choice(&app, MODELS[1], &format!("&max_j_per_token={}", best * 0.9)).await;
    assert!(below["pick"].is_null(), "{below}");
    let (status, doc) = html_page(
        &app,
        &format!(
            "/models/{}?ttft_ms=100000&max_j_per_token={}",
            MODELS[1],
            best * 0.9
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(texts(&doc, "tr.asked td")
        .iter()
        .any(|t| t.contains("none meets both")));
    let (status, body) = app
        .get(&format!("/api/v1/models/{}?max_j_per_token=-1", MODELS[1]))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_j_per_token='-1'"));
}

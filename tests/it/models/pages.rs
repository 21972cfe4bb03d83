//! Model pages with their JSON twins (issues #5 and #14): the best GPU with
//! its Pareto chart, and the saving against the worst GPU.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::Value;

#[tokio::test]
async fn model_page_names_the_best_gpu_with_its_pareto_chart() {
    let app = app_with_two_gpus().await;
    let (status, doc) = html_page(&app, &format!("/models/{QWEN}")).await;
    assert_eq!(status, StatusCode::OK);
    let (_, json) = app.get(&format!("/api/v1/models/{QWEN}")).await;
    let scenarios = json["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 3);
    let best_lines = texts(&doc, ".best strong");
    for (s, line) in scenarios.iter().zip(&best_lines) {
        let best: &Value = &s["points"][0];
        assert!(
            line.starts_with(best["gpu_name"].as_str().unwrap()),
            "{line}"
        );
        assert!(line.contains(&wattcounts::verdict::sig(
            best["energy_per_token"]["median"].as_f64().unwrap()
        )));
    }
    assert_eq!(texts(&doc, "svg.chart").len(), 3);
    assert!(texts(&doc, "svg.chart circle.front-dot").len() >= 3);
    assert_eq!(
        html_page(&app, "/models/nobody/nothing").await.0,
        StatusCode::NOT_FOUND
    );
}

/// The model page's answer gives the saving against the most
/// energy-hungry GPU measured (issue #55), named from the leaderboard's
/// own rows: the GPU with the highest batch J/token for the model.
#[tokio::test]
async fn the_model_page_names_the_saving_against_the_worst_gpu() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    for gpu in ["l4", "a30", "h100-pcie"] {
        let gz = BundleBuilder::on(gpu, &[QWEN]).by("alice", &key).build();
        let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{r}");
    }
    let (_, board) = app
        .get(&format!(
            "/api/v1/leaderboard?model={}&scenario=batch",
            QWEN.replace('/', "%2F")
        ))
        .await;
    // The rows least energy first: the worst is the last, the best the first.
    let mut by_energy: Vec<&serde_json::Value> =
        board["entries"].as_array().unwrap().iter().collect();
    by_energy.sort_by(|a, b| {
        a["energy_per_token_j"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["energy_per_token_j"].as_f64().unwrap())
    });
    let worst = by_energy.last().unwrap()["gpu_name"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, doc) = html_page(&app, &format!("/models/{QWEN}")).await;
    let said: String = doc
        .select(&scraper::Selector::parse("section#batch p.against-worst").unwrap())
        .flat_map(|p| p.text())
        .collect();
    assert!(
        said.starts_with(&format!(
            "Against the most energy-hungry GPU measured, the {worst}: "
        )),
        "{said}"
    );

    // A reference the reader picks: the A30, said against the least-energy
    // GPU (from the same rows), or that it is that GPU; an unmeasured one
    // is said to be unmeasured.
    let best = by_energy[0]["gpu_id"].as_str().unwrap().to_string();
    let picked = |doc: &scraper::Html| -> String {
        doc.select(&scraper::Selector::parse("section#batch p.against-reference").unwrap())
            .flat_map(|p| p.text())
            .collect()
    };
    let (_, doc) = html_page(&app, &format!("/models/{QWEN}?reference=a30")).await;
    let said = picked(&doc);
    if best == "a30" {
        assert_eq!(
            said,
            "The NVIDIA A30 you picked is the least-energy GPU here."
        );
    } else {
        assert!(
            said.starts_with("Against the NVIDIA A30 you picked: "),
            "{said}"
        );
    }
    let (_, doc) = html_page(&app, &format!("/models/{QWEN}?reference=h200")).await;
    assert_eq!(
        picked(&doc),
        "The GPU you picked (h200) was not measured with this model in this scenario."
    );
}

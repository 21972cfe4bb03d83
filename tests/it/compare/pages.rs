//! The comparison page and its JSON twin (issue #5), on two small
//! real-format runs: the winner marked and the saving named.

use crate::common::*;
use axum::http::StatusCode;
use scraper::Selector;

#[tokio::test]
async fn compare_marks_the_winner_and_the_saving() {
    let app = app_with_two_gpus().await;
    let (status, doc) = html_page(&app, "/compare?gpus=l4,h100-pcie&scenario=server@0.33").await;
    assert_eq!(status, StatusCode::OK);
    let (_, json) = app
        .get("/api/v1/compare?gpus=l4,h100-pcie&scenario=server@0.33")
        .await;
    let rows = json["comparison"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let qwen = rows.iter().find(|r| r["model"] == QWEN).unwrap();
    let winner = qwen["best"].as_u64().unwrap() as usize;
    let values: Vec<f64> = qwen["energy_per_token_j"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let loser = 1 - winner;
    let saving = (values[loser] - values[winner]) / values[loser] * 100.0;
    assert!((qwen["saving_pct"][loser].as_f64().unwrap() - saving).abs() < 1e-9);

    // The page shows the same: the winner cell starred, the saving in %.
    let row = doc
        .select(&Selector::parse("table.compare tbody tr").unwrap())
        .find(|r| r.text().collect::<String>().contains(QWEN))
        .unwrap();
    let cells: Vec<String> = row
        .select(&Selector::parse("td").unwrap())
        .map(|c| c.text().collect::<String>())
        .collect();
    // The best cell carries ★ only when its interval separates; the
    // saving column (after the verdict) reads "N % (lo–hi %)".
    assert_eq!(
        cells[1 + winner].starts_with('★'),
        !qwen["winner"].is_null(),
        "{cells:?}"
    );
    assert!(
        cells[4 + loser].starts_with(&format!("{saving:.0} % (")),
        "{cells:?}"
    );
    assert_eq!(cells[4 + winner], "best");
    let headline_scenarios = texts(&doc, "table.headlines tbody td:first-child");
    assert_eq!(
        headline_scenarios,
        vec!["batch", "server at 0.017 req/s", "server at 0.33 req/s"]
    );

    assert_eq!(
        html_page(&app, "/compare?gpus=l4").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        html_page(&app, "/compare?gpus=l4,a30").await.0,
        StatusCode::BAD_REQUEST
    );
}

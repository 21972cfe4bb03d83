//! The leaderboard CSV (issue #5): numbers stay numbers and a text that
//! reads as a spreadsheet formula is defused.

use crate::common::*;
use axum::http::{header, StatusCode};
use http_body_util::BodyExt;

#[tokio::test]
async fn leaderboard_csv_keeps_numbers_and_defuses_formulas() {
    let app = TestApp::new().await;
    let key = app.register("mallory").await;
    let evil = "=cmd|' /C calc'!A0";
    let gz = BundleBuilder::fixture()
        .model_named(evil)
        .by("mallory", &key)
        .build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let r = get_with_headers(
        &app,
        "/api/v1/leaderboard.csv?include_review=true&scenario=batch",
        &[],
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let text =
        String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    assert_eq!(
        headers.iter().collect::<Vec<_>>(),
        wattcounts::spreadsheet::header(wattcounts::web::view::csv::COLUMNS)
    );
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    let (_, json) = app
        .get("/api/v1/leaderboard?include_review=true&scenario=batch")
        .await;
    assert_eq!(rows.len() as u64, json["total"].as_u64().unwrap());
    let model_col = headers.iter().position(|h| h == "model").unwrap();
    let ept_col = headers
        .iter()
        .position(|h| h == "energy_per_token_j")
        .unwrap();
    assert!(
        rows.iter().any(|r| r[model_col] == format!("'{evil}")),
        "{text}"
    );
    assert!(rows.iter().all(|r| !r[model_col].starts_with('=')));
    for (row, entry) in rows.iter().zip(json["entries"].as_array().unwrap()) {
        let v: f64 = row[ept_col].parse().expect("numbers stay numbers");
        assert_eq!(v, entry["energy_per_token_j"].as_f64().unwrap());
    }
}

//! The checks page (issue #5): every rule the service applies is listed.

use crate::common::*;
use axum::http::StatusCode;

#[tokio::test]
async fn checks_page_lists_every_rule() {
    let app = TestApp::new().await;
    let (status, doc) = html_page(&app, "/checks").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        texts(&doc, "tbody tr").len(),
        wattcounts::checks::rules().len()
    );
    assert!(texts(&doc, "pre code")[0].contains("energy_tolerance_pct: 2.0"));
    let (_, json) = app.get("/api/v1/checks").await;
    assert_eq!(
        json["checks"].as_array().unwrap().len(),
        wattcounts::checks::rules().len()
    );
    assert_eq!(json["thresholds"]["energy_tolerance_pct"], 2.0);
}

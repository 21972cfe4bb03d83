//! GPU pages with their JSON twins (issue #5), on two small real-format runs:
//! the index, a GPU's page and its chart.

use crate::common::*;
use axum::http::StatusCode;
use wattcounts::catalog;

#[tokio::test]
async fn gpu_pages_list_and_chart() {
    let app = app_with_two_gpus().await;
    // The catalogue may grow while the page is read (another test adding
    // a GPU): the page lists it as it was before or after.
    let before = catalog::gpus().len();
    let (status, doc) = html_page(&app, "/gpus").await;
    let after = catalog::gpus().len();
    assert_eq!(status, StatusCode::OK);
    let (_, stats) = app.get("/api/v1/stats").await;
    assert_eq!(stats["counts"]["submissions"], 2);
    assert_eq!(stats["counts"]["gpus"], 2);
    assert_eq!(stats["latest"].as_array().unwrap().len(), 2);
    let names = texts(&doc, "tbody td:first-child");
    assert!(
        names.len() == before || names.len() == after,
        "{} of {before}–{after}",
        names.len()
    );
    assert!(names.contains(&"NVIDIA L4".to_string()));

    let (status, doc) = html_page(&app, "/gpus/l4?scenario=batch").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        texts(&doc, "svg.chart > title"),
        vec!["Energy per token on the NVIDIA L4, batch"]
    );
    assert_eq!(
        texts(&doc, "svg.chart rect.bar").len(),
        2,
        "one bar per model"
    );
    assert_eq!(
        texts(&doc, "table.submissions tbody tr").len(),
        1,
        "the L4's one submission is listed"
    );
    let (_, json) = app.get("/api/v1/gpus/l4").await;
    assert_eq!(json["submissions"].as_array().unwrap().len(), 1);
    let (_, json) = app.get("/api/v1/gpus/l4?scenario=batch").await;
    let first_model = texts(&doc, "tbody td:first-child")[0].clone();
    assert_eq!(json["entries"][0]["model"], first_model.as_str());

    assert_eq!(
        html_page(&app, "/gpus/no-such-gpu").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        html_page(&app, "/gpus/l4?scenario=server@9").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        html_page(&app, "/gpus/l4?colour=red").await.0,
        StatusCode::BAD_REQUEST
    );
}

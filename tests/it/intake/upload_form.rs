//! The browser's upload form (issue #5): a good bundle is stored and a bad
//! one explained, as the form posts it.

use crate::common::*;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use scraper::{Html, Selector};
use tower::ServiceExt;

#[tokio::test]
async fn browser_upload_form_stores_or_explains() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let (status, doc) = html_page(&app, "/submit").await;
    assert_eq!(status, StatusCode::OK);
    assert!(texts(&doc, "pre code")[0].contains("wattcounts submit run.tar.gz"));
    assert_eq!(
        doc.select(&Selector::parse("form[action='/submit'] input[type=file]").unwrap())
            .count(),
        2
    );

    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    // From another site (or naming none), the form is refused and nothing stored.
    for origin in [Some("https://evil.example"), Some("null"), None] {
        let mut req = multipart(&[("bundle", &gz), ("signature", &sig)]);
        *req.uri_mut() = "/submit".parse().unwrap();
        if let Some(o) = origin {
            req.headers_mut().insert(header::ORIGIN, o.parse().unwrap());
        }
        let resp = app.router.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{origin:?}");
        assert_eq!(app.counts().await.submissions, 0);
    }
    let mut req = multipart(&[("bundle", &gz), ("signature", &sig)]);
    *req.uri_mut() = "/submit".parse().unwrap();
    req.headers_mut()
        .insert(header::ORIGIN, AUDIENCE.parse().unwrap());
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let to = resp.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string();
    assert!(to.starts_with("/submissions/"));
    let (status, doc) = html_page(&app, &to).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(texts(&doc, ".status strong"), vec!["accepted"]);
    // The manifest summary: what was run, on what.
    let labels = texts(&doc, "dl.facts dt");
    let values = texts(&doc, "dl.facts dd");
    let fact = |l: &str| values[labels.iter().position(|x| x == l).unwrap()].clone();
    assert!(
        fact("GPU setup").starts_with("1 × NVIDIA L4, driver 550.54.15"),
        "{}",
        fact("GPU setup")
    );
    assert!(
        fact("Protocol").starts_with("3 iterations"),
        "{}",
        fact("Protocol")
    );
    assert!(fact("Harness").contains("abc1234"));

    // The original bytes and signature download as stored.
    let id = to.trim_start_matches("/submissions/");
    let resp = app
        .router
        .clone()
        .oneshot(
            Request::get(format!("/submissions/{id}/bundle.tar.gz"))
                .header(header::ACCEPT_ENCODING, "gzip")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers().get(header::CONTENT_ENCODING).is_none(),
        "a gzip bundle is not compressed again"
    );
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), gz);

    // A broken bundle: an error page naming file, row and column.
    let bad = BundleBuilder::fixture()
        .edit("llm_batch_optimized_results.csv", |t| {
            t.replacen("[", "[oops, ", 1)
        })
        .by("alice", &key)
        .build();
    let sig = sign(&key, &bad);
    let mut req = multipart(&[("bundle", &bad), ("signature", &sig)]);
    *req.uri_mut() = "/submit".parse().unwrap();
    req.headers_mut().insert(
        header::REFERER,
        format!("{AUDIENCE}/submit").parse().unwrap(),
    );
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let doc = Html::parse_document(std::str::from_utf8(&bytes).unwrap());
    let details = texts(&doc, "ul.details li");
    assert!(
        details[0].contains("llm_batch_optimized_results.csv") && details[0].contains("row 2"),
        "{details:?}"
    );
}

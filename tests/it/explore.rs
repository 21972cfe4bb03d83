//! GPU, comparison, model, submit and checks pages with their JSON twins
//! (issue #5), checked structurally on two small real-format runs.

use crate::common::*;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use scraper::{Html, Selector};
use serde_json::Value;
use tower::ServiceExt;
use wattcounts::catalog;

const MODEL: &str = "Qwen/Qwen2.5-0.5B-Instruct";

/// L4 and H100 PCIe, two models each, accepted.
async fn app_with_two_gpus() -> TestApp {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    for gpu in ["l4", "h100-pcie"] {
        let run = BundleBuilder::on(gpu, &[MODEL, "meta-llama/Llama-3.2-3B-Instruct"]).generate();
        let gz = BundleBuilder::of(&run).by("alice", &key).build();
        let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(r["status"], "accepted", "{gpu}: {:#}", r["checks"]);
    }
    app
}

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
    let qwen = rows.iter().find(|r| r["model"] == MODEL).unwrap();
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
        .find(|r| r.text().collect::<String>().contains(MODEL))
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

#[tokio::test]
async fn model_page_names_the_best_gpu_with_its_pareto_chart() {
    let app = app_with_two_gpus().await;
    let (status, doc) = html_page(&app, &format!("/models/{MODEL}")).await;
    assert_eq!(status, StatusCode::OK);
    let (_, json) = app.get(&format!("/api/v1/models/{MODEL}")).await;
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

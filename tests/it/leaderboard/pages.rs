//! Front page, leaderboard HTML and its JSON twin, checked structurally.

use crate::common::*;
use axum::http::StatusCode;
use scraper::Selector;

async fn app_with_data() -> TestApp {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let b = BundleBuilder::fixture().by("alice", &key).build();
    assert_eq!(app.submit(&b, &sign(&key, &b)).await.0, StatusCode::CREATED);
    app
}

#[tokio::test]
async fn front_page_counts_and_latest() {
    let app = app_with_data().await;
    let (status, doc) = html_page(&app, "/").await;
    assert_eq!(status, StatusCode::OK);
    let counts = texts(&doc, ".counts li b");
    // submissions, GPUs, models, iterations
    assert_eq!(&counts[..4], &["1", "1", "2", "18"]);
    let latest = texts(&doc, "main table tbody tr td:nth-child(2)");
    assert_eq!(latest, vec!["alice"]);
    assert!(
        texts(&doc, ".banner").is_empty(),
        "no demo banner without demo data"
    );
}

#[tokio::test]
async fn leaderboard_filters_and_sorts() {
    let app = app_with_data().await;
    let (status, doc) = html_page(&app, "/leaderboard?scenario=batch").await;
    assert_eq!(status, StatusCode::OK);
    let scen = texts(&doc, "tbody tr td:nth-child(7)");
    assert_eq!(scen, vec!["batch", "batch"]);
    // J/token, with its interval beside it (and under it on a phone).
    let ranges = texts(&doc, "tbody tr td:nth-child(5)");
    assert_eq!(texts(&doc, "tbody tr td:nth-child(4) span.range"), ranges);
    for r in &ranges {
        let (lo, hi) = r.split_once('–').unwrap();
        assert!(
            lo.parse::<f64>().unwrap() <= hi.parse::<f64>().unwrap(),
            "{r}"
        );
    }
    // One GPU, two models: each first of its model, models in
    // case-insensitive order.
    assert_eq!(texts(&doc, "tbody tr td:nth-child(1)"), ["1", "1"]);
    let models = texts(&doc, "tbody tr td:nth-child(3) a");
    assert_eq!(
        models,
        [
            "meta-llama/Llama-3.2-3B-Instruct",
            "Qwen/Qwen2.5-0.5B-Instruct"
        ]
    );

    let (status, json) = app
        .get("/api/v1/leaderboard?scenario=server@0.33&sort=throughput")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json["total"], 2);
    let e = json["entries"].as_array().unwrap();
    assert!(e.iter().all(|x| x["lambda_qps"] == 0.33));
    // One GPU: first of each model whatever the sort.
    assert!(e.iter().all(|x| x["rank_in_model"] == 1));
    assert_eq!(json["sort"], "throughput");
    assert_eq!(json["total"], 2);
}

/// Each row's GPU and model are links to their pages, in the row's view;
/// following them answers 200 with that GPU and model on the page.
#[tokio::test]
async fn leaderboard_rows_link_to_their_gpu_and_model() {
    let app = app_with_data().await;
    let (_, doc) = html_page(&app, "/leaderboard?scenario=batch").await;
    let links = |sel: &str| -> Vec<String> {
        doc.select(&Selector::parse(sel).unwrap())
            .map(|a| a.value().attr("href").unwrap().to_string())
            .collect()
    };
    let gpus = links("tbody tr td:nth-child(2) a");
    let models = links("tbody tr td:nth-child(3) a");
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0], "/gpus/l4?origin=real");
    let mut models = models;
    models.sort();
    assert_eq!(
        models,
        [
            "/models/Qwen/Qwen2.5-0.5B-Instruct?origin=real",
            "/models/meta-llama/Llama-3.2-3B-Instruct?origin=real"
        ]
    );
    for href in gpus.iter().chain(&models) {
        let (status, page) = html_page(&app, href).await;
        assert_eq!(status, StatusCode::OK, "{href}");
        let text: String = page.root_element().text().collect();
        assert!(text.contains("NVIDIA L4"), "{href}");
    }
}

#[tokio::test]
async fn unknown_parameters_are_400_not_500() {
    let app = app_with_data().await;
    let (status, doc) = html_page(&app, "/leaderboard?sort=drop%20table").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(texts(&doc, "main p")[0].contains("sort='drop table'"));
    let (status, body) = app.get("/api/v1/leaderboard?scenario=idle").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "bad_parameter");
}

#[tokio::test]
async fn hostile_model_names_show_as_text() {
    let app = TestApp::new().await;
    let key = app.register("mallory").await;
    let evil = "<script>alert(1)</script>";
    let b = BundleBuilder::fixture()
        .model_named(evil)
        .by("mallory", &key)
        .build();
    let (status, body) = app.submit(&b, &sign(&key, &b)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // An unknown model goes to review; the review toggle shows it.
    assert_eq!(body["status"], "needs_review");
    let (_, doc) = html_page(&app, "/leaderboard?include_review=true").await;
    assert!(
        texts(&doc, "tbody td:nth-child(3)")
            .iter()
            .any(|t| t.starts_with(evil) && t.contains("needs review")),
        "shown as text, marked as awaiting review"
    );
    assert!(
        doc.select(&Selector::parse("script").unwrap())
            .next()
            .is_none(),
        "no script element"
    );
    let id = body["submission_id"].as_str().unwrap();
    let (_, doc) = html_page(&app, &format!("/submissions/{id}")).await;
    assert!(texts(&doc, "td").iter().any(|t| t == evil), "shown as text");
    assert!(doc
        .select(&Selector::parse("script").unwrap())
        .next()
        .is_none());
}

/// The bare leaderboard opens on the most-measured model and says which
/// (issue #55): Qwen 1.5B is measured on two GPUs, Qwen 0.5B on one; the
/// form's "all models" shows every model.
#[tokio::test]
async fn the_bare_leaderboard_opens_on_the_most_measured_model() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    const SMALL: &str = "Qwen/Qwen2.5-1.5B-Instruct";
    for (gpu, models) in [("l4", vec![QWEN, SMALL]), ("h100-pcie", vec![SMALL])] {
        let gz = BundleBuilder::on(gpu, &models).by("alice", &key).build();
        let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{r}");
    }
    let sel = |s: &str| scraper::Selector::parse(s).unwrap();
    let models_shown = |doc: &scraper::Html| -> std::collections::BTreeSet<String> {
        doc.select(&sel("table.board td.model a"))
            .map(|a| a.text().collect::<String>())
            .collect()
    };
    let (status, doc) = html_page(&app, "/leaderboard").await;
    assert_eq!(status, StatusCode::OK);
    let said: String = doc
        .select(&sel("p.opened-on"))
        .flat_map(|p| p.text())
        .collect();
    assert!(
        said.contains(&format!("Showing {SMALL}, the most-measured model here"))
            && said.contains("on 2 GPUs"),
        "{said}"
    );
    assert_eq!(
        models_shown(&doc),
        [SMALL.to_string()].into_iter().collect()
    );
    let (_, all) = html_page(&app, "/leaderboard?model=all").await;
    assert_eq!(
        models_shown(&all),
        [QWEN.to_string(), SMALL.to_string()].into_iter().collect()
    );
    assert_eq!(all.select(&sel("p.opened-on")).count(), 0);
}

//! `/insights` and its JSON and CSV twins over HTTP: an empty service says
//! why it has nothing; on the demo every GPU-choice figure equals what the
//! leaderboard's own medians give, worked out here from the leaderboard
//! JSON (not from the insights code), and the page carries the
//! synthetic-data note, each finding's basis, counts, chart and link.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::*;
use wattcounts::synth::SynthOptions;

#[tokio::test]
async fn an_empty_service_answers_with_no_findings_and_why() {
    let app = TestApp::new().await;
    let (status, body) = app.get("/api/v1/insights").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["findings"], serde_json::json!([]));
    let why = body["why_empty"].as_str().unwrap();
    assert!(why.contains("No accepted groups in this view"), "{why}");
    assert_eq!(body["synthetic"], false);
    let (status, doc) = html_page(&app, "/insights").await;
    assert_eq!(status, 200);
    assert!(texts(&doc, "p.answer")
        .iter()
        .any(|t| t.contains("nothing to recompute")));
    let (status, _, csv) = app
        .raw(
            axum::http::Request::get("/api/v1/insights.csv")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(std::str::from_utf8(&csv).unwrap().lines().count(), 1);
}

/// Per model, the leaderboard's median energy per token per GPU, read from
/// the leaderboard JSON of one scenario.
async fn medians(
    app: &TestApp,
    view: &str,
    scenario: &str,
) -> BTreeMap<String, Vec<(String, f64)>> {
    let mut out: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    let mut page = 1;
    loop {
        let (status, body) = app
            .get(&format!(
                "/api/v1/leaderboard?{view}&scenario={scenario}&per_page=1000&page={page}"
            ))
            .await;
        assert_eq!(status, 200, "{body}");
        let rows = body["entries"].as_array().unwrap();
        for r in rows {
            out.entry(r["model"].as_str().unwrap().to_string())
                .or_default()
                .push((
                    r["gpu_name"].as_str().unwrap().to_string(),
                    r["energy_per_token_j"].as_f64().unwrap(),
                ));
        }
        if rows.len() < 1000 {
            break;
        }
        page += 1;
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_demo_the_gpu_choice_equals_the_leaderboards_medians() {
    let app = TestApp::new().await;
    let opts = SynthOptions {
        iterations: 3,
        batch_prompts: 200,
        server_duration_s: 20.0,
        ..SynthOptions::small()
    };
    wattcounts::demo::load_if_empty(&app.service, app.dir.path(), &opts)
        .await
        .unwrap()
        .unwrap();
    let (_, board) = app.get("/api/v1/leaderboard?per_page=1").await;
    let protocol = board["views"][0]["protocol_id"].as_str().unwrap();
    let view = format!("origin=demo&protocol={protocol}");
    let (status, body) = app.get(&format!("/api/v1/insights?{view}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["synthetic"], true);
    assert!(body["note"].as_str().unwrap().contains("synthetic"));
    let findings = body["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{body}");
    let by_id = |id: &str| -> &Value {
        findings
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {body}"))
    };

    // Best against worst in batch, from the leaderboard's medians.
    let batch = medians(&app, &view, "batch").await;
    let mut savings: Vec<(f64, String, String, String)> = batch
        .iter()
        .filter(|(_, gpus)| gpus.len() >= 2)
        .map(|(model, gpus)| {
            let best = gpus.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
            let worst = gpus.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
            (
                (worst.1 - best.1) / worst.1 * 100.0,
                model.clone(),
                best.0.clone(),
                worst.0.clone(),
            )
        })
        .collect();
    assert!(savings.len() >= 3, "{batch:?}");
    savings.sort_by(|a, b| b.0.total_cmp(&a.0));
    let f = by_id("gpu_choice.best_vs_worst.batch");
    assert_eq!(f["basis"], "best_vs_worst_per_model");
    assert_eq!(f["models"], savings.len());
    assert!(
        close(f["max_saving_pct"].as_f64().unwrap(), savings[0].0),
        "{f}"
    );
    assert_eq!(f["model"], savings[0].1.as_str());
    assert_eq!(f["best_gpu"], savings[0].2.as_str());
    assert_eq!(f["worst_gpu"], savings[0].3.as_str());
    let mut pcts: Vec<f64> = savings.iter().map(|s| s.0).collect();
    pcts.sort_by(f64::total_cmp);
    let n = pcts.len();
    let median = if n % 2 == 1 {
        pcts[n / 2]
    } else {
        (pcts[n / 2 - 1] + pcts[n / 2]) / 2.0
    };
    assert!(
        close(f["median_saving_pct"].as_f64().unwrap(), median),
        "{f}"
    );
    let range = &f["max_saving_interval_pct"];
    assert!(
        range["lo"].as_f64().unwrap() <= savings[0].0
            && savings[0].0 <= range["hi"].as_f64().unwrap()
    );
    assert!(f["paper"].as_str().unwrap().contains("70 %"));
    assert!(f["method"].as_str().unwrap().starts_with("/methodology#"));

    // Against the single best: the GPU best for the most models.
    let mut wins: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &savings {
        *wins.entry(s.2.as_str()).or_default() += 1;
    }
    let s = by_id("gpu_choice.vs_single_best.batch");
    let single = s["single_gpu"].as_str().unwrap();
    // Among GPUs best for equally many, fewer ties goes first: the count
    // itself is the most.
    assert_eq!(
        wins.get(single).copied(),
        wins.values().max().copied(),
        "{s}"
    );
    let not_run = batch
        .values()
        .filter(|gpus| !gpus.iter().any(|g| g.0 == single))
        .count();
    assert_eq!(s["models_not_run"], not_run, "{s}");
    let ran: Vec<f64> = batch
        .values()
        .filter_map(|gpus| {
            let mine = gpus.iter().find(|g| g.0 == single)?.1;
            let best = gpus.iter().map(|g| g.1).fold(f64::INFINITY, f64::min);
            Some((mine - best) / mine * 100.0)
        })
        .collect();
    let mean = ran.iter().sum::<f64>() / ran.len() as f64;
    assert!(
        close(s["mean_saving_pct"].as_f64().unwrap(), mean),
        "{s} vs {mean}"
    );
    assert_eq!(s["paper"], Value::Null);

    // Every finding says what it compares and what it rests on.
    for f in findings {
        for key in ["id", "scenario", "metric", "basis", "statement", "method"] {
            assert!(f[key].as_str().is_some_and(|v| !v.is_empty()), "{key}: {f}");
        }
        if f["missing"].is_null() {
            assert!(f["groups"].as_u64().unwrap() >= 2, "{f}");
        }
    }

    // The page: the note, every finding with basis, counts, chart and link.
    let (status, doc) = html_page(&app, &format!("/insights?{view}")).await;
    assert_eq!(status, 200);
    let banner = texts(&doc, "p.banner").join(" ");
    assert!(banner.contains("not hardware"), "{banner}");
    let sections = texts(&doc, "section.finding h3");
    assert_eq!(sections.len(), findings.len());
    let statements = texts(&doc, "section.finding p.answer");
    assert!(statements.contains(&f["statement"].as_str().unwrap().to_string()));
    let charts = doc
        .select(&scraper::Selector::parse("section.finding figure svg title").unwrap())
        .count();
    assert!(charts >= 3, "{charts}");
    let links: Vec<String> = doc
        .select(&scraper::Selector::parse("section.finding dd a").unwrap())
        .filter_map(|a| a.value().attr("href").map(str::to_string))
        .collect();
    assert!(
        links.iter().any(|l| l.starts_with("/compare?gpus=")),
        "{links:?}"
    );
    for l in links.iter().filter(|l| l.starts_with("/compare")).take(2) {
        let (status, _) = html_page(&app, l).await;
        assert_eq!(status, 200, "{l}");
    }

    // CSV: one row per finding, the same figures.
    let (status, _, csv) = app
        .raw(
            axum::http::Request::get(format!("/api/v1/insights.csv?{view}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, 200);
    let mut reader = csv::Reader::from_reader(&csv[..]);
    let head = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), findings.len());
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let row = rows
        .iter()
        .find(|r| &r[col("id")] == "gpu_choice.best_vs_worst.batch")
        .unwrap();
    let csv_max: f64 = row[col("max_saving_pct")].parse().unwrap();
    assert!(close(csv_max, savings[0].0));
    assert_eq!(&row[col("synthetic")], "true");
}

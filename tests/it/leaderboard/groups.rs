//! What counts as one leaderboard group (issue #12): GPU × model × scenario
//! × rate × protocol × origin. Each bad input that used to move a median is
//! refused or kept apart, and nothing else changes.

use axum::http::StatusCode;
use serde_json::Value;
use wattcounts::synth::{self, Fault, SynthOptions};

use crate::common::*;

fn entries(board: &Value) -> Vec<Value> {
    board["entries"].as_array().unwrap().clone()
}

/// The figures of every row, without the evidence ids (which name rows).
fn figures(board: &Value) -> Vec<(String, String, String, f64, u64)> {
    entries(board)
        .iter()
        .map(|e| {
            (
                e["gpu_id"].as_str().unwrap().to_string(),
                e["model"].as_str().unwrap().to_string(),
                format!("{}@{}", e["scenario"], e["lambda_qps"]),
                e["energy_per_token_j"].as_f64().unwrap(),
                e["submissions"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn blob_count(app: &TestApp) -> usize {
    walk_files(&app.dir.path().join("blobs")).len()
}

#[tokio::test]
async fn a_repacked_run_is_one_submission() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let first = BundleBuilder::fixture().by("alice", &key).build();
    let (status, receipt) = app.submit(&first, &sign(&key, &first)).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = receipt["submission_id"].as_str().unwrap().to_string();
    let (_, board) = app.get("/api/v1/leaderboard").await;
    let counts = app.counts().await;
    let blobs = blob_count(&app);

    // The same run folder packed again: only the submission_id differs.
    let again = BundleBuilder::fixture().by("alice", &key).build();
    assert_ne!(again, first);
    let (status, body) = app.submit(&again, &sign(&key, &again)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "run_already_submitted");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&id) && msg.contains("status accepted"),
        "{msg}"
    );
    assert_eq!(first_detail(&body)["pointer"], "/files");
    assert_eq!(app.counts().await, counts, "nothing stored");
    assert_eq!(blob_count(&app), blobs, "no blob written");
    assert_eq!(app.get("/api/v1/leaderboard").await.1, board);
    // The exact bytes again are still a replay: 200, the same receipt.
    let (status, replay) = app.submit(&first, &sign(&key, &first)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(replay, receipt);
    // The receipt carries the run-content digest and the protocol.
    assert_eq!(receipt["content_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(receipt["protocol"]["batch_label"], "reference");
    assert_eq!(receipt["protocol"]["max_tokens"], 256);
}

#[tokio::test]
async fn a_rejected_run_sent_again_names_its_status() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let run = BundleBuilder::faulty(Fault::GpuEnergyMismatch, 3)
        .protocol(Protocol::Reference)
        .generate();
    let gz = BundleBuilder::of(&run).by("alice", &key).build();
    let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(r["status"], "rejected");
    let again = BundleBuilder::of(&run).by("alice", &key).build();
    let (status, body) = app.submit(&again, &sign(&key, &again)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("status rejected"));
    assert_eq!(app.counts().await.submissions, 1);
}

#[tokio::test]
async fn an_off_protocol_run_gets_groups_of_its_own() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, before) = app.get("/api/v1/leaderboard?per_page=1000").await;
    assert!(!entries(&before).is_empty(), "{before}");

    // The same GPU and models on a shorter protocol (40 prompts, 20 s).
    let models = [
        wattcounts::catalog::model_by_id("Qwen/Qwen2.5-0.5B-Instruct").unwrap(),
        wattcounts::catalog::model_by_id("meta-llama/Llama-3.2-3B-Instruct").unwrap(),
    ];
    let small = synth::generate_run(
        wattcounts::catalog::gpu_by_id("l4").unwrap(),
        &models,
        &SynthOptions::small(),
    );
    let gz = BundleBuilder::of(&small).by("alice", &key).build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["protocol"]["batch_label"], "prompts/iteration 40");
    assert_eq!(r["protocol"]["server_label"], "test duration s 20");

    // The default (reference) view is exactly what it was.
    let (_, after) = app.get("/api/v1/leaderboard?per_page=1000").await;
    assert_eq!(figures(&after), figures(&before));
    assert!(entries(&after)
        .iter()
        .all(|e| e["protocol"] == "reference" && e["submissions"] == 1));
    // Its own rows are one filter away, labelled.
    let id = r["protocol"]["batch_id"].as_str().unwrap();
    let (_, own) = app
        .get(&format!(
            "/api/v1/leaderboard?protocol={id}&include_review=true"
        ))
        .await;
    let own = entries(&own);
    assert_eq!(own.len(), 2, "two models, batch");
    assert!(own.iter().all(|e| e["protocol"] == "prompts/iteration 40"
        && e["reference_protocol"] == false
        && e["submissions"] == 1));
    // Bad protocol values are a 400 naming the parameter.
    let (status, body) = app.get("/api/v1/leaderboard?protocol=paper").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("protocol='paper'"));
}

#[tokio::test]
async fn rows_of_two_protocols_in_one_bundle_are_refused() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture()
        .edit(
            "Qwen2_5-0_5B-Instruct__/llm_batch_optimized_results.csv",
            |s| {
                // The second data row asks for fewer tokens than the rest.
                let mut lines: Vec<String> = s.lines().map(str::to_string).collect();
                lines[2] = lines[2].replace("max_tokens=256", "max_tokens=128");
                lines.join("\n") + "\n"
            },
        )
        .by("alice", &key)
        .build();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "protocol_inconsistent");
    let d = first_detail(&body);
    assert_eq!(
        d["file"],
        "_Qwen_Qwen2_5-0_5B-Instruct__/llm_batch_optimized_results.csv"
    );
    assert_eq!(d["row"], 3);
    assert_eq!(d["column"], "max_tokens");
    assert!(d["message"].as_str().unwrap().contains("max_tokens 128"));
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn demo_and_real_data_are_never_merged() {
    let app = TestApp::new().await;
    let demo_key = new_key();
    add_submitter(app.store.as_ref(), "demo", &demo_key).await;
    let demo_run = BundleBuilder::faulty(Fault::None, 7)
        .protocol(Protocol::Reference)
        .generate();
    let gz = BundleBuilder::of(&demo_run).by("demo", &demo_key).build();
    let (_, demo) = app.submit(&gz, &sign(&demo_key, &gz)).await;
    assert_eq!(demo["demo"], true);

    // Only demo data: the default view shows it and says so.
    let (_, board) = app.get("/api/v1/leaderboard").await;
    assert_eq!(board["origin"], "demo");
    assert!(board["view"].as_str().unwrap().contains("synthetic demo"));
    assert!(!entries(&board).is_empty(), "{board}");
    assert!(entries(&board).iter().all(|e| e["origin"] == "demo"));

    // A real submission on the same GPU and model (made with the same
    // generator, another seed).
    let key = app.register("alice").await;
    let gz = BundleBuilder::faulty(Fault::None, 8)
        .protocol(Protocol::Reference)
        .by("alice", &key)
        .build();
    let (_, real) = app.submit(&gz, &sign(&key, &gz)).await;
    let (_, board) = app.get("/api/v1/leaderboard?scenario=batch").await;
    assert_eq!(board["origin"], "real", "real data is the default now");
    let row = &entries(&board)[0];
    assert_eq!(
        (row["origin"].as_str(), row["demo"].as_bool()),
        (Some("real"), Some(false))
    );
    assert_eq!(row["submissions"], 1);
    assert_eq!(row["evidence"], real["submission_id"]);
    let batch = |r: &Value| {
        r["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["scenario"] == "batch")
            .unwrap()["energy_per_token_j"]["median"]
            .clone()
    };
    assert_eq!(row["energy_per_token_j"], batch(&real));
    let (_, demo_board) = app
        .get("/api/v1/leaderboard?scenario=batch&origin=demo")
        .await;
    let demo_row = &entries(&demo_board)[0];
    assert_eq!(demo_row["origin"], "demo");
    assert_eq!(demo_row["submissions"], 1);
    assert_eq!(demo_row["energy_per_token_j"], batch(&demo));
    // The old link that hid the demo still works.
    let (_, old) = app
        .get("/api/v1/leaderboard?scenario=batch&include_demo=false")
        .await;
    assert_eq!(old["origin"], "real");

    // The demo's own run, sent as real data, is the same run: refused.
    let copy = BundleBuilder::of(&demo_run).by("alice", &key).build();
    let (status, body) = app.submit(&copy, &sign(&key, &copy)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains(demo["submission_id"].as_str().unwrap()));

    // The CSV says each row's origin; the pages say which data they show.
    let (_, _, csv) = app
        .raw(
            axum::http::Request::get("/api/v1/leaderboard.csv?origin=demo")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    let csv = String::from_utf8(csv.to_vec()).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "origin").unwrap();
    assert!(csv.lines().count() > 1, "{csv}");
    assert!(csv
        .lines()
        .skip(1)
        .all(|l| l.split(',').nth(at) == Some("demo")));
    let (_, doc) = html_page(&app, "/gpus/l4?origin=demo").await;
    assert!(texts(&doc, "p.view")[0].contains("synthetic demo"));
    let (_, doc) = html_page(&app, "/gpus/l4").await;
    assert!(texts(&doc, "p.view")[0].contains("real submissions"));
}

/// `/api/v1/gpus/{id}`'s submissions, page by page down
/// `older_submissions`: each page's length, and every id in order.
async fn walk_gpu_submissions(app: &TestApp, gpu: &str) -> (Vec<usize>, Vec<String>) {
    let (mut pages, mut seen) = (Vec::new(), Vec::new());
    let mut next = Some(format!("/api/v1/gpus/{gpu}"));
    while let Some(path) = next.take() {
        let (status, h) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {h}");
        let ids = h["submissions"].as_array().unwrap();
        pages.push(ids.len());
        seen.extend(
            ids.iter()
                .map(|x| x["submission_id"].as_str().unwrap().to_string()),
        );
        next = h["older_submissions"]
            .as_str()
            .map(|b| format!("/api/v1/gpus/{gpu}?before={b}"));
    }
    (pages, seen)
}

/// The GPU page lists a GPU's own submissions, however many newer ones
/// other GPUs have, 50 at a time.
#[tokio::test]
async fn a_gpu_page_lists_its_submissions_under_newer_ones_elsewhere() {
    // Uncached: the rows are rewritten under the service below.
    let app = TestApp::configured(|c| c.no_response_cache = true).await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (_, l4) = app.submit(&gz, &sign(&key, &gz)).await;
    // 501 newer submissions on another GPU, stored directly (fast).
    let h100 = BundleBuilder::on("h100-pcie", &["Qwen/Qwen2.5-0.5B-Instruct"]).generate();
    let copies = app
        .insert_copies(
            &BundleBuilder::of(&h100).by("alice", &key).build(),
            &key,
            501,
            wattcounts::domain::Status::Accepted,
        )
        .await;
    let (status, json) = app.get("/api/v1/gpus/l4").await;
    assert_eq!(status, StatusCode::OK);
    let listed: Vec<&str> = json["submissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["submission_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [l4["submission_id"].as_str().unwrap()]);
    // 50 a page, walked by `older_submissions` (issue #55): 501 = 10 × 50
    // + 1, so 11 pages; each copy listed exactly once.
    let (pages, seen) = walk_gpu_submissions(&app, "h100-pcie").await;
    assert_eq!(pages, [50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 1]);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    let mut inserted: Vec<String> = copies.iter().map(|u| u.to_string()).collect();
    inserted.sort();
    assert_eq!(sorted, inserted, "every copy listed once");
    // Received in the same millisecond, the ids order them: the walk is
    // then exactly the ids, descending.
    app.raw
        .as_ref()
        .unwrap()
        .exec("UPDATE submissions SET received_at = '2026-01-01T00:00:00.000Z' WHERE gpu_id = 'h100-pcie'")
        .await;
    let (pages, tied) = walk_gpu_submissions(&app, "h100-pcie").await;
    assert_eq!(pages.len(), 11);
    inserted.reverse();
    assert_eq!(tied, inserted);
    // The page says where it is and links the next one.
    let (_, doc) = html_page(&app, "/gpus/h100-pcie").await;
    let older = doc
        .select(&scraper::Selector::parse("a[rel=next]").unwrap())
        .next()
        .expect("an older-submissions link")
        .value()
        .attr("href")
        .unwrap()
        .to_string();
    assert!(older.contains(&format!("before={}", tied[49])), "{older}");
    let (status, doc) = html_page(&app, &older).await;
    assert_eq!(status, StatusCode::OK);
    assert!(texts(&doc, "main p")
        .iter()
        .any(|t| t.contains("back to the newest")));
    // A `before=` that lists nothing here is a 400 naming it.
    let l4_id = l4["submission_id"].as_str().unwrap();
    for (before, why) in [
        ("nonsense", "not a submission id"),
        (l4_id, "measured on another GPU"),
        ("00000000-0000-4000-8000-000000000000", "no such submission"),
    ] {
        let (status, e) = app
            .get(&format!("/api/v1/gpus/h100-pcie?before={before}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{before}");
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(why) && msg.contains("before="),
            "{before}: {e}"
        );
    }
    let (_, board) = app
        .get("/api/v1/leaderboard?gpu=h100-pcie&scenario=batch")
        .await;
    assert_eq!(entries(&board)[0]["submissions"], 501);
}

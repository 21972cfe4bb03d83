//! `serve --demo`'s loader: every catalogue GPU through the real pipeline,
//! marked as demo, idempotent, and never mixed into real data.

use crate::common::*;
use wattcounts::domain::Status;
use wattcounts::synth::SynthOptions;

fn tiny() -> SynthOptions {
    SynthOptions {
        iterations: 3,
        batch_prompts: 200,
        // Long enough that every server configuration generates tokens.
        server_duration_s: 20.0,
        ..SynthOptions::small()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_every_gpu_once_and_marks_it_demo() {
    let app = TestApp::new().await;
    let service = app.service.clone();
    let summary = wattcounts::demo::load_if_empty(&service, app.dir.path(), &tiny())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        summary.bundles,
        wattcounts::catalog::paper_gpus().count() as u64
    );
    // The demo is clean: every bundle passes every check.
    for status in [Status::NeedsReview, Status::Rejected] {
        let flagged = app.store.submissions_with_status(status, 1).await.unwrap();
        if let Some(s) = flagged.first() {
            let problems: Vec<String> = app
                .store
                .check_results(s.id)
                .await
                .unwrap()
                .into_iter()
                .filter(|c| c.is_problem())
                .map(|c| c.message)
                .collect();
            panic!("demo bundle for {} is {status}: {problems:#?}", s.gpu_name);
        }
    }
    let counts = app.store.dataset_counts().await.unwrap();
    assert_eq!(counts.submissions, summary.bundles);
    assert_eq!(counts.demo_submissions, summary.bundles);
    // The shipped catalogue (a test in this process may have added models).
    assert_eq!(
        counts.models,
        wattcounts::catalog::shipped_models().len() as u64
    );

    // A second start adds nothing.
    let again = wattcounts::demo::load_if_empty(&service, app.dir.path(), &tiny())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.bundles, 0);
    assert_eq!(app.store.dataset_counts().await.unwrap(), counts);

    // This demo is off the reference protocol: the default view (real
    // data, reference protocol) is empty and names the demo's views.
    let (_, default) = app.get("/api/v1/leaderboard?per_page=5").await;
    assert_eq!(default["total"], 0, "{default}");
    let protocol = default["views"][0]["protocol_id"].as_str().unwrap();
    // Its rows are flagged in the API, and the real view holds none.
    let (_, demo) = app
        .get(&format!(
            "/api/v1/leaderboard?per_page=5&origin=demo&protocol={protocol}"
        ))
        .await;
    let rows = demo["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{demo}");
    assert!(rows.iter().all(|e| e["demo"] == true), "{demo}");
    let (_, real) = app
        .get(&format!(
            "/api/v1/leaderboard?origin=real&protocol={protocol}"
        ))
        .await;
    assert_eq!(real["total"], 0, "{real}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_demo_next_to_real_data() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let b = BundleBuilder::fixture().by("alice", &key).build();
    app.submit(&b, &sign(&key, &b)).await;
    let loaded = wattcounts::demo::load_if_empty(&app.service, app.dir.path(), &tiny())
        .await
        .unwrap();
    assert!(loaded.is_none());
    assert_eq!(
        app.store.dataset_counts().await.unwrap().demo_submissions,
        0
    );
}

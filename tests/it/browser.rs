//! Real headless Chromium (Debian's `chromium`, driven by playwright-core
//! from scripts/browser) loads every page of a real server with data: no
//! console errors, no dialogs, the key elements present, on a desktop and a
//! phone viewport; screenshots land in target/browser-screenshots. The
//! hostile model name must show as text. Skipped, with the reason, when
//! Chromium or the script's node_modules are missing, unless
//! WATTCOUNTS_BROWSER_TEST=required (as in CI).

use std::path::Path;

use crate::common::*;
use serde_json::json;

const HOSTILE: &str = "<script>alert(1)</script>";

fn missing_tools() -> Option<String> {
    let chromium = std::env::var("CHROMIUM_PATH").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !Path::new(&chromium).exists() {
        return Some(format!("{chromium} not found (apt-get install chromium)"));
    }
    if !root
        .join("scripts/browser/node_modules/playwright-core")
        .exists()
    {
        return Some(
            "scripts/browser/node_modules missing (npm ci --prefix scripts/browser)".into(),
        );
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_in_headless_chromium() {
    if let Some(why) = missing_tools() {
        if std::env::var("WATTCOUNTS_BROWSER_TEST").as_deref() == Ok("required") {
            panic!("browser test required but {why}");
        }
        eprintln!("skipped: {why}");
        return;
    }
    // A data dir filled through the real pipeline, then a real server on it.
    let data = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", data.path().join("wattcounts.db").display());
    let store = wattcounts::store::open(&url).await.unwrap();
    let state = wattcounts::web::AppState::with_store(
        store.clone(),
        &wattcounts::config::ServeConfig::defaults(data.path()),
        AUDIENCE.into(),
    )
    .unwrap();
    let service = state.service.clone();
    let key = new_key();
    add_submitter(store.as_ref(), "alice", &key).await;
    let mut first_id = String::new();
    for gpu in ["l4", "h100-pcie"] {
        let run = small_run(
            gpu,
            &[
                "Qwen/Qwen2.5-0.5B-Instruct",
                "meta-llama/Llama-3.2-3B-Instruct",
            ],
        );
        let gz = bundle_of(&run, "alice", &key);
        let (_, r) = service.submit(gz.clone(), sign(&key, &gz)).await.unwrap();
        first_id = r.submission_id.to_string();
    }
    // A model named like a script: it must show as text (and await review).
    let hostile = fixture_with_model_named(HOSTILE);
    let gz = bundle_with(hostile, "alice", &key);
    let (_, r) = service.submit(gz.clone(), sign(&key, &gz)).await.unwrap();
    assert_eq!(r.status, wattcounts::store::Status::NeedsReview);
    // A published snapshot for the snapshot pages.
    let created = service
        .create_snapshot(
            &wattcounts::snapshot::Library::new(data.path().join("snapshots")).unwrap(),
            &Default::default(),
            |_| {},
        )
        .await
        .unwrap();
    let snapshot_id = created.published.manifest.snapshot_id;
    drop(state);
    drop(service);
    drop(store);

    let server = spawn_server(&[
        "--data-dir",
        data.path().to_str().unwrap(),
        "--public-url",
        AUDIENCE,
    ]);
    let pages = json!([
        {"path": "/", "expect": "ul.counts li"},
        {"path": "/leaderboard", "expect": "table tbody tr"},
        {"path": "/leaderboard?scenario=server@0.33&sort=ttft", "expect": "table tbody tr"},
        {"path": "/leaderboard?include_review=true", "expect": "span.tag.review", "text": HOSTILE},
        {"path": "/gpus", "expect": "table tbody tr"},
        {"path": "/gpus/l4", "expect": "svg.chart rect.bar"},
        {"path": "/compare?gpus=l4,h100-pcie&scenario=server@0.33", "expect": "td.winner"},
        {"path": "/models/Qwen/Qwen2.5-0.5B-Instruct", "expect": "svg.chart circle.front-dot"},
        {"path": format!("/submissions/{first_id}"), "expect": "table.checks tbody tr"},
        {"path": "/submit", "expect": "form[action='/submit'] input[type=file]"},
        {"path": "/checks", "expect": "table tbody tr"},
        {"path": "/admin", "expect": "form[action='/admin/login']"},
        {"path": "/snapshots", "expect": "table tbody tr code.digest"},
        {"path": format!("/snapshots/{snapshot_id}"), "expect": "pre.card"},
    ]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join("target/browser-screenshots");
    let status = std::process::Command::new("node")
        .arg(root.join("scripts/browser/check.mjs"))
        .arg(&server.url)
        .arg(&out)
        .arg(pages.to_string())
        .status()
        .expect("node runs");
    assert!(
        status.success(),
        "the browser check failed (see its output above)"
    );
    let shots = std::fs::read_dir(&out).unwrap().count();
    assert!(shots >= 28, "{shots} screenshots in {}", out.display());
}

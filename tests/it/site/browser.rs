//! Real headless Chromium (Debian's `chromium`, driven by playwright-core
//! from scripts/browser) loads every page of a real server with data, at
//! 1,280, 768, 390 and 320 px: no console errors, no dialogs, the key
//! elements present, no page wider than the screen below 1,280 px, no table
//! wider than its box at 1,280 px on the pages marked `fit` (folded tables
//! unfolded), no horizontal overflow of the key columns on the phone, no
//! overlapping chart labels and no chart text under 11 px, a tie shown
//! where intervals overlap and a verdict where they separate; screenshots
//! land in target/browser-screenshots (emptied each run). The hostile model name must show as
//! text. Skipped, with the reason, when
//! Chromium or the script's node_modules are missing, unless
//! WATTCOUNTS_BROWSER_TEST=required (as in CI).

use std::path::Path;

use crate::common::*;
use serde_json::json;

const HOSTILE: &str = "<script>alert(1)</script>";
const SMALL: &str = "Qwen/Qwen2.5-0.5B-Instruct";
const LLAMA: &str = "meta-llama/Llama-3.1-8B-Instruct";
const MID: &str = "Qwen/Qwen2.5-1.5B-Instruct";

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
        skip(Need::Browser, &why);
        return;
    }
    // A data dir filled through the real pipeline, then a real server on it.
    let data = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", data.path().join("wattcounts.db").display());
    let store = wattcounts::store::open(&url).await.unwrap();
    let state = wattcounts::app::with_store(
        store.clone(),
        &wattcounts::config::ServeConfig::defaults(data.path()),
        AUDIENCE.into(),
    )
    .unwrap();
    let service = state.service.clone();
    let key = new_key();
    add_submitter(store.as_ref(), "alice", &key).await;
    // Three GPUs, two models (Llama-3.1-8B among them: the question a
    // reader comes with), the reference protocol.
    let mut first_id = String::new();
    for gpu in ["l4", "h100-pcie", "h100-nvl"] {
        let run = BundleBuilder::on(gpu, &[SMALL, MID, LLAMA]).generate();
        let gz = BundleBuilder::of(&run).by("alice", &key).build();
        let (_, r) = service.submit(gz.clone(), sign(&key, &gz)).await.unwrap();
        first_id = r.submission_id.to_string();
    }
    // One section of the fixture whose best GPU is a verdict and one that
    // is a tie: the pages must say each (the readers tests check the rule).
    let board = service
        .all_groups(&wattcounts::leaderboard::Query::default())
        .await
        .unwrap();
    let mut verdict_page = None;
    let mut tie_page = None;
    for model in [SMALL, LLAMA] {
        for s in wattcounts::compare::model_summary(&board.entries, model, &[]) {
            let at = (model, s.scenario.slug());
            match s.verdict {
                Some(v) if v.is_tie() => tie_page = tie_page.or(Some(at)),
                Some(_) => verdict_page = verdict_page.or(Some(at)),
                None => {}
            }
        }
    }
    let (verdict_model, verdict_at) = verdict_page.expect("the fixture has a verdict");
    // The other eight GPUs of the paper, with the one model the search
    // above leaves alone: /compare with all eleven side by side.
    let paper: Vec<&str> = wattcounts::catalog::paper_gpus()
        .map(|g| g.id.as_str())
        .collect();
    assert_eq!(paper.len(), 11);
    for gpu in paper
        .iter()
        .filter(|g| !["l4", "h100-pcie", "h100-nvl"].contains(g))
    {
        let run = BundleBuilder::on(gpu, &[MID]).generate();
        let gz = BundleBuilder::of(&run).by("alice", &key).build();
        service.submit(gz.clone(), sign(&key, &gz)).await.unwrap();
    }
    let compare_all = format!(
        "/compare?{}&scenario=server@0.33",
        paper
            .iter()
            .map(|g| format!("gpu={g}"))
            .collect::<Vec<_>>()
            .join("&")
    );
    let (tie_model, tie_at) = tie_page.expect("the fixture has a tie");
    // A model named like a script: it must show as text (and await review).
    let gz = BundleBuilder::fixture()
        .model_named(HOSTILE)
        .by("alice", &key)
        .build();
    let (_, r) = service.submit(gz.clone(), sign(&key, &gz)).await.unwrap();
    assert_eq!(r.status, wattcounts::domain::Status::NeedsReview);
    let approve = r.submission_id.to_string();
    // The forms' work: another submission in review (a model the
    // catalogue lacks) to reject, bob to suspend and his key to revoke, and
    // a bundle of alice's to upload through /submit.
    let gz = BundleBuilder::fixture()
        .marked("to reject")
        .model_named("example-org/Not-In-The-Catalogue")
        .by("alice", &key)
        .build();
    let (_, r) = service.submit(gz.clone(), sign(&key, &gz)).await.unwrap();
    assert_eq!(r.status, wattcounts::domain::Status::NeedsReview);
    let reject = r.submission_id.to_string();
    let bob = new_key();
    add_submitter(store.as_ref(), "bob", &bob).await;
    let upload = BundleBuilder::fixture()
        .marked("uploaded in the browser")
        .by("alice", &key)
        .build();
    let upload_sig = sign(&key, &upload);
    std::fs::write(data.path().join("upload.tar.gz"), &upload).unwrap();
    std::fs::write(data.path().join("upload.tar.gz.sig"), &upload_sig).unwrap();
    let forms = json!({
        "token": ADMIN_TOKEN,
        "approve": approve,
        "reject": reject,
        "suspend": "bob",
        "revoke": wattcounts::signing::fingerprint(bob.public_key()),
        "bundle": data.path().join("upload.tar.gz"),
        "signature": data.path().join("upload.tar.gz.sig"),
    });
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
    // The estimator's fit of these data, stored: `serve` loads it at
    // start instead of fitting (3 GPUs × 3 models, the least it takes).
    let fitted = service.refresh_estimator().await.unwrap();
    assert!(
        matches!(fitted, wattcounts::service::estimates::Refreshed::Fitted(_)),
        "{fitted:?}"
    );
    // ML.ENERGY v3's published files, as `serve --demo` imports them.
    service
        .import_peer(wattcounts::service::peers::PeerImportRequest::bundled(
            wattcounts::peer::PeerSource::MlEnergyV3,
            "test",
        ))
        .await
        .unwrap();
    drop(state);
    drop(service);
    drop(store);

    let server = spawn_server(&[
        "--data-dir",
        data.path().to_str().unwrap(),
        "--public-url",
        AUDIENCE,
        "--admin-token",
        &admin_token_flag(),
    ]);
    let pages = json!([
        {"path": "/", "expect": "form.picker select[name=model]", "name": "index"},
        {"path": "/models", "expect": "table.models tbody tr"},
        {"path": format!("/models/{LLAMA}"), "expect": "section#server-0-33 table.choices", "name": "model-llama", "fit": true,
         "text": "TTFT p50 ≤ 100 ms", "within": "section#server-0-33"},
        {"path": format!("/models/{LLAMA}?ttft_ms=100"), "expect": "tr.asked", "name": "model-llama-deadline"},
        {"path": format!("/models/{verdict_model}"), "expect": "p.verdict", "name": "model-verdict",
         "text": "uses less energy than the runner-up", "within": format!("section#{verdict_at} p.verdict")},
        {"path": format!("/models/{tie_model}"), "expect": "p.verdict", "name": "model-tie",
         "text": "tie within measurement noise", "within": format!("section#{tie_at} p.verdict")},
        {"path": "/leaderboard", "expect": "table tbody tr", "fit": true},
        {"path": "/leaderboard?scenario=server@0.33&sort=ttft", "expect": "table tbody tr"},
        {"path": "/leaderboard?include_review=true", "expect": "span.tag.review", "text": HOSTILE},
        {"path": "/gpus", "expect": "table tbody tr"},
        {"path": "/gpus/l4", "expect": "svg.chart .bar, svg.chart .dot", "fit": true},
        {"path": "/compare?gpu=l4&gpu=h100-pcie&gpu=h100-nvl&scenario=server@0.33", "expect": "td.best", "name": "compare"},
        {"path": compare_all, "expect": "td.best", "name": "compare-all", "fit": true,
         "text": "show every column", "within": "main"},
        {"path": "/insights", "expect": "section.finding figure svg", "name": "insights", "fit": true,
         "text": "best against worst GPU per model", "within": "main"},
        {"path": "/estimate", "expect": "form select[name=model]", "name": "estimate-form",
         "text": "is not a measurement", "within": "main"},
        {"path": format!("/estimate?model={LLAMA}&gpu=a100-sxm4-40gb&scenario=batch"), "expect": "tr.estimate", "name": "estimate", "fit": true,
         "text": "Estimate:", "within": "main"},
        {"path": format!("/models/{LLAMA}#estimates"), "expect": "section#estimates tr.estimate", "name": "model-estimates"},
        {"path": "/methodology", "expect": "table.coverage tbody tr", "text": "tie within measurement noise"},
        {"path": format!("/submissions/{first_id}"), "expect": "table.checks tbody tr", "name": "submission", "fit": true},
        {"path": "/submit", "expect": "form[action='/submit'] input[type=file]"},
        {"path": "/checks", "expect": "table tbody tr"},
        {"path": "/admin", "expect": "form[action='/admin/login']"},
        {"path": "/peers", "expect": "section table tbody tr code", "name": "peers"},
        {"path": "/peers/mlenergy-v3", "expect": "p.banner.peer", "name": "peer", "fit": true,
         "text": "Published by others, under another protocol", "within": "main"},
        {"path": format!("/models/{LLAMA}#also"), "expect": "section.peer-note tbody tr", "name": "model-llama-peer",
         "text": "Also measured by ML.ENERGY Leaderboard v3", "within": "main"},
        {"path": "/snapshots", "expect": "table tbody tr code.digest", "fit": true},
        {"path": format!("/snapshots/{snapshot_id}"), "expect": "pre.card", "name": "snapshot", "fit": true},
        {"path": "/log", "expect": "table tbody tr code.wrap", "name": "log", "text": "verify log --server", "within": "main"},
        {"path": "/api", "expect": "article#post--api-v1-submissions table tbody tr", "name": "api",
         "text": "POST /api/v1/submissions", "within": "main"},
        {"path": "/gpus/no-such-gpu", "expect": "main h1", "name": "error", "status": 404},
        {"path": "/no-such-page", "expect": "main h1", "name": "unknown-page", "status": 404},
    ]);
    let count = pages.as_array().unwrap().len();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join("target/browser-screenshots");
    // Emptied first: the count below is this run's, not an earlier one's.
    if out.exists() {
        std::fs::remove_dir_all(&out).unwrap();
    }
    std::fs::create_dir_all(&out).unwrap();
    let status = std::process::Command::new("node")
        .arg(root.join("scripts/browser/check.mjs"))
        .arg(&server.url)
        .arg(&out)
        .arg(pages.to_string())
        .env("FORMS_JSON", forms.to_string())
        .status()
        .expect("node runs");
    assert!(
        status.success(),
        "the browser check failed (see its output above)"
    );
    // One screenshot per page at each of the four widths (1,280, 768, 390
    // and 320 px), no name taken twice.
    let shots = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(shots, 4 * count, "screenshots in {}", out.display());
}

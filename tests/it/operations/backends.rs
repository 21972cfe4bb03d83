//! The behaviour suite both backends must pass: every case runs on SQLite,
//! and on PostgreSQL when WATTCOUNTS_TEST_PG_URL is set (each case in a
//! schema of its own), once with one instance and once with two instances
//! on PostgreSQL and S3 that share no directory (each request to the other
//! in turn), and on SQLite with its files in S3. Together the cases touch every `Store` method.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;
use wattcounts::synth::{self, Fault};

/// Instantiates each case once per backend.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::$case(super::TestApp::new().await).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    if let Some(app) = super::TestApp::postgres().await {
                        super::$case(app).await
                    }
                }
            )*
        }
        /// One instance on SQLite with its files in S3: the bucket's
        /// paths run without PostgreSQL too.
        mod sqlite_s3 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::$case(super::TestApp::sqlite_s3().await).await
                }
            )*
        }
        /// Two instances on PostgreSQL and S3, no directory shared.
        mod postgres_s3_two_instances {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    if let Some(app) = super::TestApp::postgres_s3_pair().await {
                        super::$case(app).await
                    }
                }
            )*
        }
    };
}

on_both_backends!(
    submit_replay_and_read_back,
    bad_bundle_stores_nothing,
    reused_submission_id_is_a_conflict,
    taken_handle_and_key_are_conflicts,
    review_and_decision_are_recorded,
    key_revocation_from_a_time,
    suspension_blocks_new_bundles,
    leaderboard_counts_and_latest,
    consistency_compares_with_stored_peers,
    parallel_distinct_submissions_all_land,
    one_bundle_sent_concurrently_is_stored_once,
    rebuild_yields_what_the_writes_kept,
    runs_of_an_older_energy_rule_are_derived_again,
    server_runs_stored_before_request_sums_get_them_from_their_bundles,
);

/// A deployment upgraded from before the per-request sums (migration
/// 0015): its server runs, configurations and groups lack them until `db
/// rebuild` (run by `serve` at start) derives them from the stored
/// bundles, and then they equal what ingest derives today.
async fn server_runs_stored_before_request_sums_get_them_from_their_bundles(app: TestApp) {
    let alice = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &alice).build();
    let (status, receipt) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{receipt}");
    let raw = app.raw.as_ref().unwrap();
    let sums_sql = "SELECT COALESCE(e2e_sum_s, -1.0) FROM runs WHERE scenario = 'server'
        ORDER BY model, lambda_qps, iteration";
    let today = raw.floats(sums_sql).await;
    assert!(
        !today.is_empty() && today.iter().all(|s| *s > 0.0),
        "{today:?}"
    );
    let batch_sums = "SELECT COALESCE(e2e_sum_s, -1.0) FROM runs WHERE scenario = 'batch'";
    assert!(raw.floats(batch_sums).await.iter().all(|s| *s == -1.0));
    let kept = read_model(&app).await;
    let server_rows = || kept.0.iter().filter(|r| r.scenario.as_str() == "server");
    assert!(server_rows().count() > 0);
    assert!(
        server_rows().all(|r| r.mean_concurrency.is_some_and(|c| c > 0.0)
            && r.prefill_energy_share.is_some_and(|s| s > 0.0 && s < 1.0)),
        "{:?}",
        kept.0
    );
    assert!(!app.service.needs_rebuild().await.unwrap());

    for sql in [
        "UPDATE runs SET timed_requests = NULL, ttft_sum_s = NULL, e2e_sum_s = NULL,
            mean_concurrency = NULL, prefill_energy_j = NULL",
        "UPDATE configurations SET concurrency_median = NULL, prefill_share_median = NULL",
        "UPDATE leaderboard_groups SET concurrency_median = NULL, prefill_share_median = NULL",
    ] {
        raw.exec(sql).await;
    }
    assert!(app.service.needs_rebuild().await.unwrap());
    let report = app.service.rebuild(|_| {}).await.unwrap();
    assert_eq!((report.submissions, report.derived), (1, 1));
    assert!(!app.service.needs_rebuild().await.unwrap());
    assert_eq!(raw.floats(sums_sql).await, today);
    assert_eq!(read_model(&app).await, kept);
}

/// A deployment upgraded from energy rule 1 (mean power × duration): its
/// stored runs and configuration figures are derived again from the
/// stored bundles by `db rebuild`, which `serve` runs by itself, and then
/// equal what ingest derives today.
async fn runs_of_an_older_energy_rule_are_derived_again(app: TestApp) {
    let alice = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &alice).build();
    let (status, receipt) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{receipt}");
    let runs_sql = "SELECT gpu_energy_j FROM runs ORDER BY model, scenario, lambda_qps, iteration";
    let raw = app.raw.as_ref().unwrap();
    let today = raw.floats(runs_sql).await;
    let kept = read_model(&app).await;
    assert!(!app.service.needs_rebuild().await.unwrap());

    // What rule 1 stored: energy = mean power × duration (above the
    // trapezoid by about one sample period ÷ duration), and the figures
    // made from it.
    raw.exec("UPDATE submissions SET energy_rule = 1").await;
    raw.exec(
        "UPDATE runs SET gpu_energy_j = power_mean_w * duration_s,
            energy_per_token_j = power_mean_w * duration_s / generation_tokens",
    )
    .await;
    raw.exec("UPDATE configurations SET ept_median_j = ept_median_j * 1.01")
        .await;
    let old = raw.floats(runs_sql).await;
    assert!(
        old.iter().zip(&today).all(|(o, t)| o > t),
        "{old:?} vs {today:?}"
    );
    assert!(app.service.needs_rebuild().await.unwrap());

    let report = app.service.rebuild(|_| {}).await.unwrap();
    assert_eq!((report.submissions, report.derived), (1, 1));
    assert!(!app.service.needs_rebuild().await.unwrap());
    assert_eq!(raw.floats(runs_sql).await, today);
    assert_eq!(read_model(&app).await, kept);
    let (_, again) = app
        .get(&format!(
            "/api/v1/submissions/{}",
            receipt["submission_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(again["configurations"], receipt["configurations"]);
}

/// After submissions, an approval, a rejection and a key revocation, `db
/// rebuild` gives exactly what the writes kept; and from a deployment
/// that predates the read model (no protocols, digests or groups), it
/// derives them from the stored bundles, reporting a duplicate run.
async fn rebuild_yields_what_the_writes_kept(app: TestApp) {
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    let send = |run: synth::RunFolder, who: &'static str, key: ssh_key::PrivateKey| {
        let app = &app;
        async move {
            let gz = BundleBuilder::of(&run).by(who, &key).build();
            let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
            r
        }
    };
    let fixture_run = fixture().clone();
    let ok = send(fixture_run.clone(), "alice", alice.clone()).await;
    assert_eq!(ok["status"], "accepted");
    let approved = send(
        BundleBuilder::faulty(Fault::WarmStart, 2)
            .protocol(Protocol::Reference)
            .generate(),
        "alice",
        alice.clone(),
    )
    .await;
    let refused = send(
        BundleBuilder::faulty(Fault::WarmStart, 3)
            .protocol(Protocol::Reference)
            .generate(),
        "alice",
        alice.clone(),
    )
    .await;
    let pending = send(
        BundleBuilder::faulty(Fault::WarmStart, 5)
            .protocol(Protocol::Reference)
            .generate(),
        "alice",
        alice.clone(),
    )
    .await;
    assert_eq!(pending["status"], "needs_review");
    let off = send(
        BundleBuilder::faulty(Fault::None, 6).generate(),
        "alice",
        alice.clone(),
    )
    .await;
    for (r, decision) in [(&approved, "approve"), (&refused, "reject")] {
        let (status, body) = app
            .admin_post(
                &format!(
                    "/api/v1/admin/submissions/{}/decision",
                    r["submission_id"].as_str().unwrap()
                ),
                json!({"decision": decision, "reason": "rebuild test"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let bobs = send(
        BundleBuilder::faulty(Fault::None, 4)
            .protocol(Protocol::Reference)
            .generate(),
        "bob",
        bob.clone(),
    )
    .await;
    assert_eq!(bobs["status"], "accepted");
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/keys/revoke",
            json!({"fingerprint": wattcounts::signing::fingerprint(bob.public_key()), "reason": "leaked", "effective_at": bobs["received_at"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let kept = read_model(&app).await;
    assert!(
        kept.0.iter().any(|e| e.submissions == 2),
        "the approval joined a group"
    );
    assert!(kept.1.iter().any(|e| e.needs_review), "a row in review");
    assert!(
        !kept.0.iter().any(|e| e
            .evidence_ids
            .iter()
            .any(|i| i.to_string() == bobs["submission_id"])),
        "the revoked key's bundle left"
    );
    assert!(
        kept.0.iter().any(|e| !e.reference_protocol),
        "the off-protocol rows"
    );
    assert_eq!(kept.2.submissions, 3, "fixture, approved, off-protocol");

    let report = app.service.rebuild(|_| {}).await.unwrap();
    assert_eq!(
        (report.submissions, report.derived, report.duplicates.len()),
        (6, 0, 0)
    );
    assert_eq!(read_model(&app).await, kept);

    // A deployment from before the read model, holding a run stored twice.
    let dup = app
        .insert_directly(
            &BundleBuilder::of(&fixture_run).by("alice", &alice).build(),
            &alice,
            wattcounts::domain::Status::Accepted,
            "recorded-before-the-rule",
        )
        .await;
    let raw = app.raw.as_ref().unwrap();
    raw.exec("UPDATE submissions SET protocol = NULL, content_sha256 = NULL")
        .await;
    raw.exec("DELETE FROM leaderboard_groups").await;
    raw.exec("DELETE FROM dataset_counters").await;
    assert!(app.service.needs_rebuild().await.unwrap());
    let report = app.service.rebuild(|_| {}).await.unwrap();
    assert_eq!((report.submissions, report.derived), (7, 7));
    assert_eq!(
        report.duplicates,
        [(
            dup,
            uuid::Uuid::parse_str(ok["submission_id"].as_str().unwrap()).unwrap()
        )]
    );
    assert_eq!(read_model(&app).await, kept, "the duplicate joins no group");
    assert!(!app.service.needs_rebuild().await.unwrap());
    let (_, receipt) = app
        .get(&format!(
            "/api/v1/submissions/{}",
            off["submission_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        receipt["protocol"], off["protocol"],
        "derived again from the bundle"
    );
}

async fn submit_replay_and_read_back(app: TestApp) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let (status, receipt) = app.submit(&gz, &sig).await;
    assert_eq!(status, StatusCode::CREATED, "{receipt}");
    assert_eq!(receipt["status"], "accepted", "{:#}", receipt["checks"]);
    assert_eq!(receipt["counts"]["iterations"], 18);
    assert_eq!(
        receipt["checks"].as_array().unwrap().len(),
        wattcounts::checks::rules().len()
    );
    let stored = app.counts().await;
    assert_eq!(
        (stored.submissions, stored.runs, stored.configurations),
        (1, 18, 6)
    );
    let (status, again) = app.submit(&gz, &sig).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, receipt);
    assert_eq!(app.counts().await, stored);
    let id = receipt["submission_id"].as_str().unwrap();
    let (_, fetched) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(fetched, receipt);
    let (status, body) = app
        .get("/api/v1/submissions/00000000-0000-4000-8000-000000000000")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
}

async fn bad_bundle_stores_nothing(app: TestApp) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture()
        .edit(harness_suffix(), |t| t.replacen("[", "[oops, ", 1))
        .by("alice", &key)
        .build();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    app.assert_nothing_stored_since(&before).await;
}

fn harness_suffix() -> &'static str {
    "_Qwen_Qwen2_5-0_5B-Instruct__/llm_batch_optimized_results.csv"
}

async fn reused_submission_id_is_a_conflict(app: TestApp) {
    let key = app.register("alice").await;
    let mut m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let files = fixture().files.clone();
    let first = archive(&serde_json::to_vec(&m).unwrap(), &files);
    assert_eq!(
        app.submit(&first, &sign(&key, &first)).await.0,
        StatusCode::CREATED
    );
    m["run"]["name"] = json!("another name");
    let second = archive(&serde_json::to_vec(&m).unwrap(), &files);
    let (status, body) = app.submit(&second, &sign(&key, &second)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "submission_id_reused");
    assert_eq!(app.counts().await.submissions, 1);
}

async fn taken_handle_and_key_are_conflicts(app: TestApp) {
    let key = app.register("alice").await;
    let (status, body) = app.register_with("Alice", &new_key(), AUDIENCE).await;
    assert_eq!(status, StatusCode::CONFLICT, "handles are case-insensitive");
    assert_error(&body, "handle_taken");
    let (status, body) = app.register_with("bob", &key, AUDIENCE).await;
    assert_eq!(status, StatusCode::CONFLICT, "a key has one owner");
    assert_error(&body, "key_taken");
    let c = app.counts().await;
    assert_eq!((c.submitters, c.keys), (1, 1));
}

async fn review_and_decision_are_recorded(app: TestApp) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::faulty(Fault::WarmStart, 42)
        .by("alice", &key)
        .build();
    let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(r["status"], "needs_review");
    let id = r["submission_id"].as_str().unwrap().to_string();
    let queue = app
        .store
        .submissions_with_status(wattcounts::domain::Status::NeedsReview, 10)
        .await
        .unwrap();
    assert_eq!(queue.len(), 1);
    let path = format!("/api/v1/admin/submissions/{id}/decision");
    let (status, r) = app
        .admin_post(&path, json!({"decision": "approve", "reason": "explained"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!(r["status"], "accepted");
    assert_eq!(r["moderation"][0]["from_status"], "needs_review");
    assert_eq!(r["moderation"][0]["reason"], "explained");
    let (status, body) = app
        .admin_post(&path, json!({"decision": "approve", "reason": "twice"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "wrong_status");
}

async fn key_revocation_from_a_time(app: TestApp) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::faulty(Fault::None, 1)
        .by("alice", &key)
        .build();
    let (_, before) = app.submit(&gz, &sign(&key, &gz)).await;
    let gz = BundleBuilder::faulty(Fault::None, 2)
        .by("alice", &key)
        .build();
    let (_, after) = app.submit(&gz, &sign(&key, &gz)).await;
    // The key is void from the moment the second bundle was received (the
    // rule is received_at >= effective_at): the stored times order the
    // events, not a sleep in the test.
    let cut = after["received_at"].as_str().unwrap().to_string();
    assert!(
        before["received_at"].as_str().unwrap() < cut.as_str(),
        "the two bundles were received in the same millisecond: {before} {after}"
    );
    let fp = wattcounts::signing::fingerprint(key.public_key());
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/keys/revoke",
            json!({"fingerprint": fp, "effective_at": cut, "reason": "leaked"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["rejected_submissions"],
        json!([after["submission_id"]])
    );
    let id_of = |r: &Value| r["submission_id"].as_str().unwrap().to_string();
    let (_, b) = app
        .get(&format!("/api/v1/submissions/{}", id_of(&before)))
        .await;
    let (_, a) = app
        .get(&format!("/api/v1/submissions/{}", id_of(&after)))
        .await;
    assert_eq!(
        (b["status"].as_str(), a["status"].as_str()),
        (Some("accepted"), Some("rejected"))
    );
    let gz = BundleBuilder::faulty(Fault::None, 3)
        .by("alice", &key)
        .build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["code"], "key_revoked");
}

async fn suspension_blocks_new_bundles(app: TestApp) {
    let key = app.register("alice").await;
    let (status, _) = app
        .admin_post(
            "/api/v1/admin/submitters/ALICE/suspend",
            json!({"reason": "spam"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["code"], "submitter_suspended");
    app.assert_nothing_stored_since(&before).await;
}

async fn leaderboard_counts_and_latest(app: TestApp) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    app.submit(&gz, &sign(&key, &gz)).await;
    let flagged = BundleBuilder::faulty(Fault::WarmStart, 9)
        .protocol(Protocol::Reference)
        .by("alice", &key)
        .build();
    app.submit(&flagged, &sign(&key, &flagged)).await;

    let (_, board) = app.get("/api/v1/leaderboard?scenario=batch").await;
    assert_eq!(board["total"], 2, "two models, accepted only: {board}");
    let (_, with_review) = app
        .get("/api/v1/leaderboard?scenario=batch&include_review=true")
        .await;
    assert_eq!(
        with_review["total"], 2,
        "same model merged across submissions"
    );
    let qwen = with_review["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["model"] == "Qwen/Qwen2.5-0.5B-Instruct")
        .unwrap();
    assert_eq!(qwen["submissions"], 2, "{qwen}");
    let counts = app.store.dataset_counts().await.unwrap();
    assert_eq!((counts.submissions, counts.gpus, counts.models), (1, 1, 2));
    assert_eq!(counts.iterations, 18);
    assert!(counts.power_samples > 1000);
    let latest = app.store.latest_submissions(5).await.unwrap();
    assert_eq!(latest.len(), 1, "only accepted submissions are listed");
    assert_eq!(latest[0].iterations, 18);
}

async fn consistency_compares_with_stored_peers(app: TestApp) {
    let key = app.register("alice").await;
    for seed in [1, 2, 3] {
        let gz = BundleBuilder::faulty(Fault::None, seed)
            .by("alice", &key)
            .build();
        let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(r["status"], "accepted", "{:#}", r["checks"]);
    }
    // Peers are keyed as groups are: same GPU, protocol and origin.
    let stored = app.store.latest_submissions(1).await.unwrap();
    let protocol = stored[0].protocol.clone().unwrap();
    let configs = app.store.configurations(stored[0].id).await.unwrap();
    let keys = |demo: bool| -> Vec<String> {
        configs
            .iter()
            .map(|c| {
                wattcounts::leaderboard::group_of(Some("l4"), "NVIDIA L4", demo, &protocol, c)
                    .key
                    .canonical()
            })
            .collect()
    };
    let peers = app.store.peer_groups(&keys(false)).await.unwrap();
    assert_eq!(peers.len(), 3, "3 configurations");
    assert!(peers.iter().all(|p| p.submissions == 3), "{peers:?}");
    assert!(app.store.peer_groups(&keys(true)).await.unwrap().is_empty());
    let other = wattcounts::domain::Protocol {
        max_tokens: Some(128),
        ..protocol.clone()
    };
    let other_keys: Vec<String> = configs
        .iter()
        .map(|c| {
            wattcounts::leaderboard::group_of(Some("l4"), "NVIDIA L4", false, &other, c)
                .key
                .canonical()
        })
        .collect();
    assert!(app.store.peer_groups(&other_keys).await.unwrap().is_empty());
    let gz = BundleBuilder::faulty(Fault::HalfPower, 4)
        .by("alice", &key)
        .build();
    let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(r["status"], "needs_review");
}

/// 32 distinct bundles at once: every one lands, none is refused for a
/// busy or locked database.
async fn parallel_distinct_submissions_all_land(app: TestApp) {
    let key = app.register("alice").await;
    let app = Arc::new(app);
    let mut set = tokio::task::JoinSet::new();
    for n in 0..32 {
        let gz = BundleBuilder::fixture().marked(n).by("alice", &key).build();
        let sig = sign(&key, &gz);
        let app = app.clone();
        set.spawn(async move { app.submit(&gz, &sig).await });
    }
    let mut created = 0;
    while let Some(r) = set.join_next().await {
        let (status, body) = r.unwrap();
        assert_eq!(status, StatusCode::CREATED, "{body}");
        created += 1;
    }
    assert_eq!(created, 32);
    let c = app.counts().await;
    assert_eq!((c.submissions, c.runs), (32, 32 * 18));
}

/// The same bytes sent 8 times at once: stored once, one 201, and every
/// answer is the same receipt.
async fn one_bundle_sent_concurrently_is_stored_once(app: TestApp) {
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let app = Arc::new(app);
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (app, gz, sig) = (app.clone(), gz.clone(), sig.clone());
        set.spawn(async move { app.submit(&gz, &sig).await });
    }
    let mut receipts = Vec::new();
    let mut created = 0;
    while let Some(r) = set.join_next().await {
        let (status, body) = r.unwrap();
        match status {
            StatusCode::CREATED => created += 1,
            StatusCode::OK => {}
            other => panic!("{other}: {body}"),
        }
        receipts.push(body);
    }
    assert_eq!(created, 1);
    assert!(receipts.len() >= 2, "{} answers", receipts.len());
    assert!(receipts.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(app.counts().await.submissions, 1);
}

/// `db copy`: a SQLite deployment moved to PostgreSQL answers the same
/// receipts and leaderboard, and keeps taking submissions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_data_copies_to_postgres() {
    let Some(url) = pg_url() else { return };
    let old = TestApp::new().await;
    let key = old.register("alice").await;
    let mut ids = Vec::new();
    for (fault, seed) in [
        (Fault::None, 1),
        (Fault::WarmStart, 2),
        (Fault::Overheated, 3),
    ] {
        let gz = BundleBuilder::faulty(fault, seed).by("alice", &key).build();
        let (_, r) = old.submit(&gz, &sign(&key, &gz)).await;
        ids.push(r["submission_id"].as_str().unwrap().to_string());
    }
    let (status, _) = old
        .admin_post(
            &format!("/api/v1/admin/submissions/{}/decision", ids[1]),
            json!({"decision": "approve", "reason": "ok"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let sqlite = wattcounts::store::sqlite::SqliteStore::open(&format!(
        "sqlite:{}",
        old.dir.path().join("test.db").display()
    ))
    .await
    .unwrap();
    let pg = wattcounts::store::postgres::PgStore::open(&url, Some(&pg_schema()))
        .await
        .unwrap();
    let report = wattcounts::store::copy::sqlite_to_postgres(sqlite.pool(), pg.pool(), |_, _| {})
        .await
        .unwrap();
    assert_eq!(report[0], ("submitters", 1));
    assert_eq!(report[2], ("submissions", 3));
    // Copying again into a database with data is refused.
    let refused = wattcounts::store::copy::sqlite_to_postgres(sqlite.pool(), pg.pool(), |_, _| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("already holds 1 submitter(s); copy into an empty one"),
        "{refused}"
    );

    let new = TestApp::with_store(Arc::new(pg), tempfile::tempdir().unwrap(), 256 << 20);
    assert_eq!(new.counts().await, old.counts().await);
    for id in &ids {
        let path = format!("/api/v1/submissions/{id}");
        assert_eq!(new.get(&path).await.1, old.get(&path).await.1);
    }
    let board = "/api/v1/leaderboard?include_review=true";
    assert_eq!(new.get(board).await.1, old.get(board).await.1);
    // New rows get fresh ids after the copied ones.
    let gz = BundleBuilder::faulty(Fault::None, 4)
        .by("alice", &key)
        .build();
    assert_eq!(
        new.submit(&gz, &sign(&key, &gz)).await.0,
        StatusCode::CREATED
    );
    new.register("bob").await;
}

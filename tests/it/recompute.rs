//! An independent recomputation (issue #40, item 4). Seeded random
//! histories of submissions, replays, rejections, approvals, key
//! revocations and suspensions run on SQLite and on PostgreSQL; after each,
//! every group's published energy per token is recomputed here from the
//! stored runs (raw SQL, this file's own median, never the aggregation
//! under test) and compared with the leaderboard's JSON; and the same
//! history gives the same figures on both backends.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use wattcounts::synth::Fault;

use crate::common::*;

/// Group identity as both sides can name it: GPU name, model, scenario,
/// arrival rate (as text; -1 for batch).
type GroupId = (String, String, String, String);

/// The middle value, or the mean of the two middle ones.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Every row of `sql` (whose columns are cast to text) on either backend.
async fn text_rows(raw: &RawDb, sql: &str) -> Vec<Vec<String>> {
    use sqlx::Row;
    match raw {
        RawDb::Sqlite(p) => sqlx::query(sql)
            .fetch_all(p)
            .await
            .unwrap()
            .iter()
            .map(|r| (0..r.len()).map(|i| r.get::<String, _>(i)).collect())
            .collect(),
        RawDb::Pg(p) => sqlx::query(sql)
            .fetch_all(p)
            .await
            .unwrap()
            .iter()
            .map(|r| (0..r.len()).map(|i| r.get::<String, _>(i)).collect())
            .collect(),
    }
}

/// Each group's energy per token from the stored runs: a submission is a
/// member when it is accepted and not a duplicate; its figure for a
/// configuration it stored is the median over that configuration's runs
/// that generated tokens; the group's is the median over its members.
async fn recomputed(raw: &RawDb) -> BTreeMap<GroupId, f64> {
    let configs = text_rows(
        raw,
        "SELECT s.id, s.gpu_name, c.model, c.scenario, CAST(COALESCE(c.lambda_qps, -1) AS TEXT)
         FROM configurations c JOIN submissions s ON s.id = c.submission_id
         WHERE s.status = 'accepted' AND s.duplicate_of IS NULL",
    )
    .await;
    let runs = text_rows(
        raw,
        "SELECT submission_id, model, scenario, CAST(COALESCE(lambda_qps, -1) AS TEXT),
                CAST(energy_per_token_j AS TEXT)
         FROM runs WHERE generation_tokens > 0",
    )
    .await;
    let mut members: BTreeMap<GroupId, Vec<f64>> = BTreeMap::new();
    for c in configs {
        let own: Vec<f64> = runs
            .iter()
            .filter(|r| r[0] == c[0] && r[1] == c[2] && r[2] == c[3] && r[3] == c[4])
            .map(|r| r[4].parse().unwrap())
            .collect();
        assert!(
            !own.is_empty(),
            "a stored configuration without runs: {c:?}"
        );
        members
            .entry((c[1].clone(), c[2].clone(), c[3].clone(), lambda_text(&c[4])))
            .or_default()
            .push(median(own));
    }
    members.into_iter().map(|(k, v)| (k, median(v))).collect()
}

/// One spelling of a rate on both sides ("-1" for none).
fn lambda_text(s: &str) -> String {
    let v: f64 = s.parse().unwrap();
    format!("{v:.6}")
}

/// Every group the leaderboard publishes (real data, every protocol view).
async fn published(app: &TestApp) -> BTreeMap<GroupId, f64> {
    let (_, board) = app.get("/api/v1/leaderboard?origin=real").await;
    let mut out = BTreeMap::new();
    for view in board["views"].as_array().unwrap() {
        if view["origin"] != "real" {
            continue;
        }
        let path = format!(
            "/api/v1/leaderboard?origin=real&protocol={}&per_page=1000",
            view["protocol_id"].as_str().unwrap()
        );
        let (status, page) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for r in page["entries"].as_array().unwrap() {
            let lambda = r["lambda_qps"].as_f64().unwrap_or(-1.0);
            out.insert(
                (
                    r["gpu_name"].as_str().unwrap().to_string(),
                    r["model"].as_str().unwrap().to_string(),
                    r["scenario"].as_str().unwrap().to_string(),
                    lambda_text(&lambda.to_string()),
                ),
                r["energy_per_token_j"].as_f64().unwrap(),
            );
        }
    }
    out
}

/// The bundles a history draws from: six clean runs of Qwen 0.5B on an L4
/// (one group per scenario and rate, members that differ), and two from a
/// GPU the catalogue lacks (stored in review, until approved).
fn pool() -> &'static Vec<wattcounts::synth::RunFolder> {
    static POOL: std::sync::OnceLock<Vec<wattcounts::synth::RunFolder>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let mut runs: Vec<_> = (1..=6)
            .map(|s| BundleBuilder::faulty(Fault::None, s).generate())
            .collect();
        runs.extend((7..=8).map(|s| BundleBuilder::faulty(Fault::UnknownGpu, s).generate()));
        runs
    })
}

/// Runs the history drawn from `seed` on `app`; returns the published
/// groups after checking them against the recomputation.
async fn history(app: &TestApp, seed: u64) -> BTreeMap<GroupId, f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let handles = ["alice", "bob", "carol"];
    let mut keys = Vec::new();
    for h in handles {
        keys.push(app.register(h).await);
    }
    let mut blocked = [false; 3];
    let mut unsent: Vec<usize> = (0..pool().len()).collect();
    // (submission id, bytes, signature, status) of what was stored.
    let mut sent: Vec<(String, Vec<u8>, Vec<u8>, String)> = Vec::new();
    for _ in 0..12 {
        match rng.gen_range(0..10) {
            // Half of the steps send a new bundle.
            0..=4 if !unsent.is_empty() => {
                let run = unsent.remove(rng.gen_range(0..unsent.len()));
                let who = rng.gen_range(0..3);
                let gz = BundleBuilder::of(&pool()[run])
                    .by(handles[who], &keys[who])
                    .build();
                let sig = sign(&keys[who], &gz);
                let (status, body) = app.submit(&gz, &sig).await;
                if blocked[who] {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
                    unsent.push(run);
                    continue;
                }
                assert_eq!(status, StatusCode::CREATED, "{body}");
                let id = body["submission_id"].as_str().unwrap().to_string();
                let st = body["status"].as_str().unwrap().to_string();
                sent.push((id, gz, sig, st));
            }
            5 if !sent.is_empty() => {
                // A replay of stored bytes changes nothing.
                let (id, gz, sig, _) = &sent[rng.gen_range(0..sent.len())];
                let (status, body) = app.submit(gz, sig).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                assert_eq!(body["submission_id"], id.as_str());
            }
            6 | 7 => {
                let want = if rng.gen_bool(0.5) {
                    "accepted"
                } else {
                    "needs_review"
                };
                let Some(i) = sent.iter().position(|s| s.3 == want) else {
                    continue;
                };
                let decision = if want == "accepted" || rng.gen_bool(0.3) {
                    "reject"
                } else {
                    "approve"
                };
                let (status, body) = app
                    .admin_post(
                        &format!("/api/v1/admin/submissions/{}/decision", sent[i].0),
                        json!({"decision": decision, "reason": "random history"}),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{body}");
                sent[i].3 = if decision == "reject" {
                    "rejected"
                } else {
                    "accepted"
                }
                .into();
            }
            8 => {
                let who = rng.gen_range(0..3);
                let (status, body) = app
                    .admin_post(
                        &format!("/api/v1/admin/submitters/{}/suspend", handles[who]),
                        json!({"reason": "random history"}),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{body}");
                blocked[who] = true;
            }
            _ => {
                let who = rng.gen_range(0..3);
                let fp = wattcounts::signing::fingerprint(keys[who].public_key());
                let (status, body) = app
                    .admin_post(
                        "/api/v1/admin/keys/revoke",
                        json!({"fingerprint": fp, "reason": "random history"}),
                    )
                    .await;
                assert!(
                    status == StatusCode::OK || status == StatusCode::CONFLICT,
                    "{body}"
                );
                blocked[who] = true;
            }
        }
    }
    let ours = recomputed(app.raw.as_ref().unwrap()).await;
    let theirs = published(app).await;
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "seed {seed}: the groups differ"
    );
    for (k, want) in &ours {
        let got = theirs[k];
        assert!(
            (got - want).abs() <= 1e-9 * want.abs(),
            "seed {seed} {k:?}: published {got}, recomputed {want}"
        );
    }
    theirs
}

const SEEDS: [u64; 3] = [11, 12, 13];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_histories_publish_what_the_runs_say_on_both_backends() {
    let mut on_sqlite = Vec::new();
    for seed in SEEDS {
        on_sqlite.push(history(&TestApp::new().await, seed).await);
    }
    assert!(
        on_sqlite.iter().any(|g| !g.is_empty()),
        "no history published anything"
    );
    let mut on_postgres = Vec::new();
    for seed in SEEDS {
        let Some(app) = TestApp::postgres().await else {
            return;
        };
        on_postgres.push(history(&app, seed).await);
    }
    for ((seed, a), b) in SEEDS.iter().zip(&on_sqlite).zip(&on_postgres) {
        assert_eq!(a.len(), b.len(), "seed {seed}");
        for (k, v) in a {
            assert!(
                (v - b[k]).abs() <= 1e-12 * v.abs(),
                "seed {seed} {k:?}: {v} on SQLite, {} on PostgreSQL",
                b[k]
            );
        }
    }
}

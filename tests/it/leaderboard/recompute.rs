//! An independent recomputation (issue #40, item 4). Seeded random
//! histories of submissions, replays, rejections, approvals, key
//! revocations and suspensions run on SQLite and on PostgreSQL; after each,
//! every group's published energy per token, throughput, mean power,
//! members, submitters and iterations are recomputed here from the stored
//! runs (raw SQL, this file's own median, never the aggregation under test)
//! and compared with the leaderboard's JSON; and the same history gives the
//! same figures, and the same leaderboard, compare, insights and model JSON
//! (ids and times aside), on both backends.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
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

/// A group's published figures that this file recomputes.
#[derive(Debug, Clone, PartialEq)]
struct Figures {
    energy_per_token_j: f64,
    throughput_tok_s: f64,
    power_mean_w: f64,
    /// Members: accepted submissions, duplicates not counted.
    submissions: u64,
    submitters: u64,
    /// The members' iterations that generated tokens.
    iterations: u64,
}

impl Figures {
    fn close_to(&self, other: &Figures, rel: f64) -> bool {
        let near = |a: f64, b: f64| (a - b).abs() <= rel * a.abs().max(b.abs());
        near(self.energy_per_token_j, other.energy_per_token_j)
            && near(self.throughput_tok_s, other.throughput_tok_s)
            && near(self.power_mean_w, other.power_mean_w)
            && (self.submissions, self.submitters, self.iterations)
                == (other.submissions, other.submitters, other.iterations)
    }
}

/// Each group's figures from the stored runs: a submission is a member
/// when it is accepted and not a duplicate; its figure for a configuration
/// it stored is the median over that configuration's runs that generated
/// tokens; the group's is the median over its members (as /methodology
/// states it).
async fn recomputed(raw: &RawDb) -> BTreeMap<GroupId, Figures> {
    let configs = text_rows(
        raw,
        "SELECT s.id, s.gpu_name, c.model, c.scenario, CAST(COALESCE(c.lambda_qps, -1) AS TEXT), u.handle
         FROM configurations c JOIN submissions s ON s.id = c.submission_id
         JOIN submitters u ON u.id = s.submitter_id
         WHERE s.status = 'accepted' AND s.duplicate_of IS NULL",
    )
    .await;
    let runs = text_rows(
        raw,
        "SELECT submission_id, model, scenario, CAST(COALESCE(lambda_qps, -1) AS TEXT),
                CAST(energy_per_token_j AS TEXT), CAST(throughput_tok_s AS TEXT),
                CAST(power_mean_w AS TEXT)
         FROM runs WHERE generation_tokens > 0",
    )
    .await;
    // Per group: each member's (ept, throughput, power) medians, its
    // iterations and its submitter.
    type Member = ([f64; 3], u64, String);
    let mut members: BTreeMap<GroupId, Vec<Member>> = BTreeMap::new();
    for c in configs {
        let own: Vec<&Vec<String>> = runs
            .iter()
            .filter(|r| r[0] == c[0] && r[1] == c[2] && r[2] == c[3] && r[3] == c[4])
            .collect();
        assert!(
            !own.is_empty(),
            "a stored configuration without runs: {c:?}"
        );
        let col = |i: usize| median(own.iter().map(|r| r[i].parse().unwrap()).collect());
        members
            .entry((c[1].clone(), c[2].clone(), c[3].clone(), lambda_text(&c[4])))
            .or_default()
            .push(([col(4), col(5), col(6)], own.len() as u64, c[5].clone()));
    }
    members
        .into_iter()
        .map(|(k, v)| {
            let of = |i: usize| median(v.iter().map(|m| m.0[i]).collect());
            let mut who: Vec<&String> = v.iter().map(|m| &m.2).collect();
            who.sort();
            who.dedup();
            let figures = Figures {
                energy_per_token_j: of(0),
                throughput_tok_s: of(1),
                power_mean_w: of(2),
                submissions: v.len() as u64,
                submitters: who.len() as u64,
                iterations: v.iter().map(|m| m.1).sum(),
            };
            (k, figures)
        })
        .collect()
}

/// One spelling of a rate on both sides ("-1" for none).
fn lambda_text(s: &str) -> String {
    let v: f64 = s.parse().unwrap();
    format!("{v:.6}")
}

/// Every group the leaderboard publishes (real data, every protocol view).
async fn published(app: &TestApp) -> BTreeMap<GroupId, Figures> {
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
                Figures {
                    energy_per_token_j: r["energy_per_token_j"].as_f64().unwrap(),
                    throughput_tok_s: r["throughput_tok_s"].as_f64().unwrap(),
                    power_mean_w: r["power_mean_w"].as_f64().unwrap(),
                    submissions: r["submissions"].as_u64().unwrap(),
                    submitters: r["submitters"].as_u64().unwrap(),
                    iterations: r["iterations"].as_u64().unwrap(),
                },
            );
        }
    }
    out
}

/// The bundles a history draws from: six clean reference-protocol runs of
/// Qwen 0.5B, three on an L4 and three on a T4 (one group per GPU, scenario
/// and rate, members that differ: GPUs to compare), and two from a GPU the
/// catalogue lacks (stored in review, until approved).
fn pool() -> &'static Vec<wattcounts::synth::RunFolder> {
    static POOL: std::sync::OnceLock<Vec<wattcounts::synth::RunFolder>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let mut runs: Vec<_> = (1..=6)
            .map(|s| {
                let gpu = if s <= 3 { "l4" } else { "t4" };
                BundleBuilder::on(gpu, &[QWEN]).seeded(s).generate()
            })
            .collect();
        runs.extend((7..=8).map(|s| BundleBuilder::faulty(Fault::UnknownGpu, s).generate()));
        runs
    })
}

/// Runs the history drawn from `seed` on `app`; returns the published
/// groups after checking them against the recomputation.
async fn history(app: &TestApp, seed: u64) -> History {
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
        let got = &theirs[k];
        assert!(
            got.close_to(want, 1e-9),
            "seed {seed} {k:?}: published {got:?}, recomputed {want:?}"
        );
    }
    let mut answers = Vec::new();
    for path in ANSWERS {
        let (status, body) = app.get(path).await;
        answers.push((path.to_string(), status, anonymised(body)));
    }
    History {
        groups: theirs,
        answers,
    }
}

/// What a history published: its groups, and the JSON of the pages a
/// reader compares GPUs by.
struct History {
    groups: BTreeMap<GroupId, Figures>,
    answers: Vec<(String, StatusCode, Value)>,
}

/// The answers compared across backends whole.
const ANSWERS: [&str; 6] = [
    "/api/v1/leaderboard?origin=real&per_page=1000",
    "/api/v1/leaderboard?origin=real&per_page=1000&include_review=true",
    "/api/v1/compare?gpus=l4,t4&scenario=batch",
    "/api/v1/compare",
    "/api/v1/insights",
    "/api/v1/models/Qwen/Qwen2.5-0.5B-Instruct",
];

/// `v` with what differs between two instances by design replaced: ids
/// (random UUIDs), times and the version of each answer's own request.
fn anonymised(v: Value) -> Value {
    match v {
        Value::String(s) if uuid::Uuid::parse_str(&s).is_ok() => Value::String("<id>".into()),
        Value::String(s) if chrono::DateTime::parse_from_rfc3339(&s).is_ok() => {
            Value::String("<time>".into())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(anonymised).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, anonymised(v))).collect()),
        other => other,
    }
}

/// Whether `a` and `b` are the same JSON, numbers within a relative
/// `rel` (the backends sum in their own order); the first difference's
/// pointer otherwise.
fn same_json(a: &Value, b: &Value, at: &str, rel: f64) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if (x - y).abs() <= rel * x.abs().max(y.abs()) {
                Ok(())
            } else {
                Err(format!("{at}: {x} against {y}"))
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Err(format!("{at}: {} items against {}", x.len(), y.len()));
            }
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                same_json(x, y, &format!("{at}/{i}"), rel)?;
            }
            Ok(())
        }
        (Value::Object(x), Value::Object(y)) => {
            let keys = |o: &serde_json::Map<String, Value>| o.keys().cloned().collect::<Vec<_>>();
            if keys(x) != keys(y) {
                return Err(format!("{at}: keys {:?} against {:?}", keys(x), keys(y)));
            }
            for (k, x) in x {
                same_json(x, &y[k], &format!("{at}/{k}"), rel)?;
            }
            Ok(())
        }
        _ if a == b => Ok(()),
        _ => Err(format!("{at}: {a} against {b}")),
    }
}

const SEEDS: [u64; 3] = [11, 12, 13];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_histories_publish_what_the_runs_say_on_both_backends() {
    let mut on_sqlite = Vec::new();
    for seed in SEEDS {
        on_sqlite.push(history(&TestApp::new().await, seed).await);
    }
    assert!(
        on_sqlite.iter().any(|h| !h.groups.is_empty()),
        "no history published anything"
    );
    let mut on_postgres = Vec::new();
    for seed in SEEDS {
        let Some(app) = TestApp::postgres().await else {
            return;
        };
        on_postgres.push(history(&app, seed).await);
    }
    // The same history gives the same figures, and the same leaderboard,
    // compare, insights and model JSON, on both backends.
    for ((seed, a), b) in SEEDS.iter().zip(&on_sqlite).zip(&on_postgres) {
        assert_eq!(
            a.groups.keys().collect::<Vec<_>>(),
            b.groups.keys().collect::<Vec<_>>(),
            "seed {seed}"
        );
        for (k, v) in &a.groups {
            assert!(
                v.close_to(&b.groups[k], 1e-12),
                "seed {seed} {k:?}: {v:?} on SQLite, {:?} on PostgreSQL",
                b.groups[k]
            );
        }
        for ((path, sa, ja), (_, sb, jb)) in a.answers.iter().zip(&b.answers) {
            assert_eq!(
                sa, sb,
                "seed {seed} {path}: {ja} on SQLite, {jb} on PostgreSQL"
            );
            if let Err(at) = same_json(ja, jb, "", 1e-12) {
                panic!("seed {seed} {path}: SQLite and PostgreSQL differ at {at}");
            }
        }
    }
}

//! Load, then a crash (issue #13, item 11): 64 concurrent clients (half
//! submitting distinct bundles, half reading pages and JSON) for 60 s
//! against a real release server; at half time the server is killed with
//! SIGKILL and started again on the same data. Submitters whose request
//! failed send the same bytes again. Then: every acknowledged submission
//! is present, none is stored twice, the database passes its integrity
//! check, and no orphan staging file or blob is left.
//!
//!     cargo build --release --examples --bins
//!     target/release/examples/load_crash [--seconds 60] [--clients 64]
//!         [--database-url postgres://postgres@127.0.0.1:5432/test]
//!
//! On PostgreSQL the tables go to a fresh schema, dropped at the end.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::*;

#[derive(Default)]
struct Tally {
    statuses: BTreeMap<String, u64>,
    submit_latency: Vec<Duration>,
    read_latency: Vec<Duration>,
    acknowledged: HashSet<String>,
    /// Bundles a 201 or 200 answered twice for (a retry's replay).
    replays_after_retry: u64,
    retries: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let seconds: u64 = arg(&args, "--seconds").map_or(Ok(60), |s| s.parse())?;
    let clients: usize = arg(&args, "--clients").map_or(Ok(64), |s| s.parse())?;
    let pg = arg(&args, "--database-url");
    let submitters = clients / 2;

    let data = tempfile::tempdir()?;
    let (db_url, schema) = match &pg {
        Some(base) => {
            let schema = format!("load_{}", uuid::Uuid::new_v4().simple());
            let sep = if base.contains('?') { '&' } else { '?' };
            // Created by the store on open; search_path points the server at it.
            wattcounts::store::postgres::PgStore::open(base, Some(&schema)).await?;
            (
                Some(format!("{base}{sep}options=-c%20search_path%3D{schema}")),
                Some(schema),
            )
        }
        None => (None, None),
    };
    let backend = if pg.is_some() { "PostgreSQL" } else { "SQLite" };
    // Port 0 the first time; the restarts come back on the port it got.
    let mut server = serve_on("127.0.0.1:0", data.path(), db_url.as_deref(), &[])?;
    let url = server.url.clone();
    let bind = url.trim_start_matches("http://").to_string();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;

    // Submitters, and enough distinct bundles for each to keep sending.
    let per_submitter = (seconds as usize * 3).max(20);
    eprintln!("{backend}: preparing {submitters} × {per_submitter} bundles ...");
    let t = Instant::now();
    let mut queues = Vec::new();
    for i in 0..submitters {
        let key = new_key();
        let handle = format!("load-{i}");
        register(&client, &url, &handle, &key).await?;
        queues.push(distinct_bundles(&handle, &key, 0, per_submitter));
    }
    eprintln!("ready in {:.1} s", t.elapsed().as_secs_f64());
    let (rss_before, _) = memory_mb(server.pid());

    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let down = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for queue in queues {
        let (client, url, tally, stop, sent) = (
            client.clone(),
            url.clone(),
            tally.clone(),
            stop.clone(),
            sent.clone(),
        );
        tasks.spawn(async move {
            for (bundle, sig) in queue {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                sent.fetch_add(1, Ordering::SeqCst);
                let mut tries = 0;
                loop {
                    let start = Instant::now();
                    let r = client
                        .post(format!("{url}/api/v1/submissions"))
                        .multipart(form(bundle.clone(), sig.clone()))
                        .send()
                        .await;
                    let status = match r {
                        Ok(resp) => {
                            let code = resp.status().as_u16();
                            let body: serde_json::Value = resp.json().await.unwrap_or_default();
                            let mut t = tally.lock().unwrap();
                            t.submit_latency.push(start.elapsed());
                            if code == 200 || code == 201 {
                                let id = body["submission_id"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_string();
                                if code == 200 && tries > 0 {
                                    t.replays_after_retry += 1;
                                }
                                t.acknowledged.insert(id);
                            }
                            code.to_string()
                        }
                        Err(_) => "connection error".to_string(),
                    };
                    let retry = status == "connection error" || status == "503";
                    {
                        let mut t = tally.lock().unwrap();
                        *t.statuses.entry(format!("submit {status}")).or_default() += 1;
                        if retry {
                            t.retries += 1;
                        }
                    }
                    if !retry {
                        break;
                    }
                    // The same bytes again, as a client would after a failure.
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
    }
    let paths = [
        "/",
        "/leaderboard",
        "/api/v1/leaderboard",
        "/gpus",
        "/api/v1/stats",
        "/healthz",
        "/api/v1/gpus",
    ];
    for i in 0..(clients - submitters) {
        let (client, url, tally, stop, down) = (
            client.clone(),
            url.clone(),
            tally.clone(),
            stop.clone(),
            down.clone(),
        );
        tasks.spawn(async move {
            let mut n = i;
            while !stop.load(Ordering::SeqCst) {
                let path = paths[n % paths.len()];
                n += 1;
                let start = Instant::now();
                let status = match client.get(format!("{url}{path}")).send().await {
                    Ok(r) => {
                        let code = r.status().as_u16();
                        let _ = r.bytes().await;
                        code.to_string()
                    }
                    Err(_) => "connection error".into(),
                };
                {
                    let mut t = tally.lock().unwrap();
                    if !down.load(Ordering::SeqCst) || status != "connection error" {
                        t.read_latency.push(start.elapsed());
                    }
                    *t.statuses.entry(format!("read {status}")).or_default() += 1;
                }
                if status == "connection error" {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
    }

    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds / 2)).await;
    let store_url = format!("sqlite:{}", data.path().join("wattcounts.db").display());
    let state = data.path().join("monitor.json");
    let verifier = log_verifier_key(&pg, &schema, &store_url).await?;
    let before_crash = monitor(&url, &state, &verifier)?;
    let acked_at_crash = tally.lock().unwrap().acknowledged.len();
    let (rss_at_crash, _) = memory_mb(server.pid());
    down.store(true, Ordering::SeqCst);
    let mut locked = server.locked_lines();
    server.crash();
    eprintln!(
        "kill -9 at {:.1} s ({acked_at_crash} acknowledged); restarting",
        started.elapsed().as_secs_f64()
    );
    let restart = Instant::now();
    server = serve_on(&bind, data.path(), db_url.as_deref(), &[])?;
    let recovery = restart.elapsed();
    wait_healthy(&client, &url, Duration::from_secs(30)).await?;
    let recovery_healthy = restart.elapsed();
    down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(seconds - seconds / 2).saturating_sub(recovery_healthy))
        .await;
    stop.store(true, Ordering::SeqCst);
    while tasks.join_next().await.is_some() {}
    let elapsed = started.elapsed();
    let (rss_after, hwm_after) = memory_mb(server.pid());

    // Every acknowledged submission is there.
    let t = std::mem::take(&mut *tally.lock().unwrap());
    let mut lost = 0;
    for id in &t.acknowledged {
        let r = client
            .get(format!("{url}/api/v1/submissions/{id}"))
            .send()
            .await?;
        if r.status() != 200 {
            lost += 1;
            eprintln!("LOST: {id} answers {}", r.status());
        }
    }
    // The log only grew from the checkpoint the monitor kept before the crash.
    let after_restart = monitor(&url, &state, &verifier)?;
    locked += server.locked_lines();
    server.stop();

    // The database: how many stored, integrity, and the blobs it names.
    // A run stored twice is two rows with one run-content digest.
    const DUPLICATES: &str =
        "SELECT CAST(COUNT(*) - COUNT(DISTINCT content_sha256) AS BIGINT) FROM submissions";
    let (stored, integrity, referenced, duplicates, store) = {
        let (store, duplicates): (Arc<dyn wattcounts::store::Store>, i64) = match (&pg, &schema) {
            (Some(base), Some(schema)) => {
                let pg = wattcounts::store::postgres::PgStore::open(base, Some(schema)).await?;
                let d = sqlx::query_scalar(DUPLICATES).fetch_one(pg.pool()).await?;
                (Arc::new(pg), d)
            }
            _ => {
                let sqlite = wattcounts::store::sqlite::SqliteStore::open(&store_url).await?;
                let d = sqlx::query_scalar(DUPLICATES)
                    .fetch_one(sqlite.pool())
                    .await?;
                (Arc::new(sqlite), d)
            }
        };
        let stored = store.counts().await?.submissions;
        let referenced: HashSet<String> = store.blob_paths().await?.into_iter().collect();
        let integrity = if pg.is_none() {
            let pool = sqlx::SqlitePool::connect(&store_url).await?;
            let r: String = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_one(&pool)
                .await?;
            r
        } else {
            "n/a (PostgreSQL)".to_string()
        };
        (stored, integrity, referenced, duplicates, store)
    };
    let bad_blobs = blobs_off_their_digest(&pg, &schema, &store_url, data.path()).await?;
    let log_problems = log_tree_problems(store.as_ref()).await?;
    let read_model_diff =
        read_model_after_rebuild(store.as_ref(), data.path(), db_url.as_deref()).await?;
    // A restart with no grace sweeps what the crash left; then count what
    // is on disk that no row names.
    let mut sweep = serve_on(
        &bind,
        data.path(),
        db_url.as_deref(),
        &["--orphan-grace-secs", "0"],
    )?;
    sweep.stop();
    let blobs = data.path().join("blobs");
    // The staging folder exists once anything was uploaded: a missing one
    // means this looks in the wrong place, not that nothing was left.
    let staging_left = std::fs::read_dir(blobs.join("tmp"))
        .map_err(|e| anyhow::anyhow!("{}: {e}", blobs.join("tmp").display()))?
        .count();
    let mut orphan_blobs = 0;
    for shard in std::fs::read_dir(blobs.join("sha256"))?.flatten() {
        for f in std::fs::read_dir(shard.path())?.flatten() {
            let rel = format!(
                "sha256/{}/{}",
                shard.file_name().to_string_lossy(),
                f.file_name().to_string_lossy()
            );
            if !referenced.contains(&rel) {
                orphan_blobs += 1;
            }
        }
    }
    if let (Some(base), Some(schema)) = (&pg, &schema) {
        let pool = sqlx::PgPool::connect(base).await?;
        sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
            .execute(&pool)
            .await?;
    }

    let mut submit = t.submit_latency.clone();
    submit.sort();
    let mut read = t.read_latency.clone();
    read.sort();
    let n_submit_ok = t
        .statuses
        .iter()
        .filter(|(k, _)| *k == "submit 201" || *k == "submit 200")
        .map(|(_, v)| v)
        .sum::<u64>();
    // Every 5xx but 503 is a fault; 503s (admission full, database away)
    // are the service saying "later", counted apart and bounded below.
    let http_code_of = |k: &str| k.rsplit(' ').next().and_then(|c| c.parse::<u16>().ok());
    let unexpected_5xx: u64 = t
        .statuses
        .iter()
        .filter(|(k, _)| http_code_of(k).is_some_and(|c| c >= 500 && c != 503))
        .map(|(_, v)| v)
        .sum();
    let admission_503: u64 = t
        .statuses
        .iter()
        .filter(|(k, _)| k.ends_with(" 503"))
        .map(|(_, v)| v)
        .sum();
    println!("== load and crash, {backend}: {clients} clients ({submitters} submitting), {:.1} s, kill -9 at half time", elapsed.as_secs_f64());
    println!(
        "submissions acknowledged  {} ({:.1}/s), sent {}, retries {}, replays after retry {}",
        t.acknowledged.len(),
        n_submit_ok as f64 / elapsed.as_secs_f64(),
        sent.load(Ordering::SeqCst),
        t.retries,
        t.replays_after_retry
    );
    println!(
        "submit latency            p50 {:.0} ms, p99 {:.0} ms",
        pct(&submit, 0.5),
        pct(&submit, 0.99)
    );
    println!(
        "reads                     {} ({:.0}/s), p50 {:.1} ms, p99 {:.1} ms",
        read.len(),
        read.len() as f64 / elapsed.as_secs_f64(),
        pct(&read, 0.5),
        pct(&read, 0.99)
    );
    println!("answers by status         {:?}", t.statuses);
    println!("unexpected 5xx            {unexpected_5xx} (admission/unavailable 503s apart: {admission_503})");
    println!("server RSS                {rss_before:.0} MB before load, {rss_at_crash:.0} MB at the crash, {rss_after:.0} MB after (peak of the restarted process {hwm_after:.0} MB)");
    println!(
        "recovery                  listening {:.0} ms after restart, healthy {:.0} ms",
        recovery.as_secs_f64() * 1000.0,
        recovery_healthy.as_secs_f64() * 1000.0
    );
    println!("lost acknowledged         {lost}");
    // Rows beyond the acknowledged ones are submissions whose answer the
    // crash cut off (harmless); the lost ones are counted above.
    println!(
        "stored vs acknowledged    {stored} stored, {} acknowledged ({} stored but never acknowledged)",
        t.acknowledged.len(),
        (stored as i64 - (t.acknowledged.len() as i64 - lost as i64)).max(0)
    );
    println!("duplicates                {duplicates} (rows sharing a run-content digest)");
    println!("integrity_check           {integrity}");
    println!("blobs off their digest    {bad_blobs} (rows whose bundle file is missing or hashes otherwise)");
    println!("log                       before the crash: {before_crash}; after: {after_restart}; stored tree {}", if log_problems.is_empty() { "equals the leaves' tree".to_string() } else { log_problems.join("; ") });
    println!("\"database is locked\"     {locked} line(s) in the server's log (checkpoint publisher and ingest share one writer lock)");
    println!(
        "read model vs db rebuild  {}",
        read_model_diff.as_deref().unwrap_or("identical")
    );
    println!("orphans after restart     {staging_left} staging file(s), {orphan_blobs} blob(s) no row names");
    // At most 1 in 20 submissions may be told to come back later.
    let sent_total = sent.load(Ordering::SeqCst);
    let busy_ok = admission_503 * 20 <= sent_total.max(1) as u64;
    println!(
        "503 bound                 {admission_503} of {sent_total} sent (at most 5 %): {}",
        if busy_ok { "ok" } else { "over" }
    );
    let ok = lost == 0
        && duplicates == 0
        && busy_ok
        && unexpected_5xx == 0
        && staging_left == 0
        && bad_blobs == 0
        && log_problems.is_empty()
        && !after_restart.starts_with("FAILED")
        && read_model_diff.is_none()
        && locked == 0
        && orphan_blobs == 0
        && (pg.is_some() || integrity == "ok")
        && stored as usize >= t.acknowledged.len();
    println!("{}", if ok { "PASS" } else { "FAIL" });
    std::process::exit(if ok { 0 } else { 1 });
}

/// `wattcounts verify log` against `url`: its last line, or "FAILED …".
fn monitor(url: &str, state: &std::path::Path, verifier: &str) -> anyhow::Result<String> {
    let bin =
        std::env::var("WATTCOUNTS_BIN").unwrap_or_else(|_| "target/release/wattcounts".into());
    let out = std::process::Command::new(bin)
        .args(["verify", "log", "--server", url, "--state"])
        .arg(state)
        .args(["--log-key", verifier])
        .output()?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let last = text.lines().last().unwrap_or_default().trim().to_string();
    Ok(if out.status.success() {
        last
    } else {
        format!("FAILED ({}): {text}", out.status)
    })
}

async fn sqlite_or_pg(
    pg: &Option<String>,
    schema: &Option<String>,
    store_url: &str,
) -> anyhow::Result<either_pool::Pool> {
    Ok(match (pg, schema) {
        (Some(base), Some(schema)) => {
            let store = wattcounts::store::postgres::PgStore::open(base, Some(schema)).await?;
            either_pool::Pool::Pg(store.pool().clone())
        }
        _ => either_pool::Pool::Sqlite(sqlx::SqlitePool::connect(store_url).await?),
    })
}

mod either_pool {
    pub enum Pool {
        Sqlite(sqlx::SqlitePool),
        Pg(sqlx::PgPool),
    }
    impl Pool {
        pub async fn strings(&self, sql: &str) -> anyhow::Result<Vec<(String, String)>> {
            Ok(match self {
                Pool::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await?,
                Pool::Pg(p) => sqlx::query_as(sql).fetch_all(p).await?,
            })
        }
    }
}

/// The log's verifier key as the database records it.
async fn log_verifier_key(
    pg: &Option<String>,
    schema: &Option<String>,
    store_url: &str,
) -> anyhow::Result<String> {
    let pool = sqlite_or_pg(pg, schema, store_url).await?;
    pool.strings("SELECT origin, verifier_key FROM log_head WHERE id = 1")
        .await?
        .pop()
        .map(|(_, key)| key)
        .ok_or_else(|| anyhow::anyhow!("the log has no key recorded"))
}

/// Rows whose bundle file is missing or does not hash to the row's digest.
async fn blobs_off_their_digest(
    pg: &Option<String>,
    schema: &Option<String>,
    store_url: &str,
    data: &std::path::Path,
) -> anyhow::Result<usize> {
    use sha2::Digest;
    let pool = sqlite_or_pg(pg, schema, store_url).await?;
    let mut bad = 0;
    for (sha, path) in pool
        .strings("SELECT bundle_sha256, blob_path FROM submissions")
        .await?
    {
        let file = data.join("blobs").join(&path);
        match std::fs::read(&file) {
            Ok(bytes) if hex::encode(sha2::Sha256::digest(&bytes)) == sha => {}
            Ok(_) => {
                bad += 1;
                eprintln!("BLOB: {} does not hash to {sha}", file.display());
            }
            Err(e) => {
                bad += 1;
                eprintln!("BLOB: {}: {e}", file.display());
            }
        }
    }
    Ok(bad)
}

/// The stored tree hashes against a tree recomputed from the stored leaves.
async fn log_tree_problems(store: &dyn wattcounts::store::Store) -> anyhow::Result<Vec<String>> {
    let size = store.log_stats().await?.size;
    let mut tree = wattcounts::tlog::StoredHashes::default();
    let mut problems = Vec::new();
    for (i, e) in store.log_entries(0, size).await?.into_iter().enumerate() {
        if e.index != i as u64 {
            problems.push(format!("leaf {i} stored at index {}", e.index));
        }
        tree.append(e.leaf.as_bytes())?;
    }
    let indexes: Vec<u64> = (0..tlog_tiles::stored_hash_count(size)).collect();
    let stored = store.log_hashes(&indexes).await?;
    let recomputed = tlog_tiles::HashReader::read_hashes(&tree, &indexes)?;
    if stored != recomputed {
        problems.push(format!(
            "the stored hashes of {size} leaves differ from the leaves' tree"
        ));
    }
    Ok(problems)
}

/// The read model as the crashed and restarted writers left it, against
/// what `wattcounts db rebuild` makes of the stored runs: None when equal.
async fn read_model_after_rebuild(
    store: &dyn wattcounts::store::Store,
    data: &std::path::Path,
    db_url: Option<&str>,
) -> anyhow::Result<Option<String>> {
    async fn views(store: &dyn wattcounts::store::Store) -> anyhow::Result<String> {
        let mut out = String::new();
        for include_review in [false, true] {
            let q = wattcounts::leaderboard::Query {
                include_review,
                per_page: 1_000_000,
                ..Default::default()
            };
            out += &format!("{:?}\n", store.groups(&q).await?.0);
        }
        out += &format!("{:?}", store.dataset_counts().await?);
        Ok(out)
    }
    let kept = views(store).await?;
    let bin =
        std::env::var("WATTCOUNTS_BIN").unwrap_or_else(|_| "target/release/wattcounts".into());
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["db", "rebuild", "--data-dir"]).arg(data);
    if let Some(url) = db_url {
        cmd.args(["--database-url", url]);
    }
    let out = cmd.output()?;
    anyhow::ensure!(
        out.status.success(),
        "db rebuild: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rebuilt = views(store).await?;
    Ok((kept != rebuilt).then(|| {
        let at = kept
            .chars()
            .zip(rebuilt.chars())
            .take_while(|(a, b)| a == b)
            .count();
        format!(
            "DIFFERS from character {at}: kept …{}… rebuilt …{}…",
            kept.chars().skip(at).take(120).collect::<String>(),
            rebuilt.chars().skip(at).take(120).collect::<String>()
        )
    }))
}

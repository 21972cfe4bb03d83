//! How the read paths, one more submission and `snapshot create` scale
//! with the data: the paper-scale demo, then N copies of it.
//!
//!     cargo build --release && cargo run --release --example scale_bench -- [--copies 160] [--database-url URL] [--pages-only]
//!
//! The demo is loaded once into target/bench-scale (or the PostgreSQL
//! database given, in a schema of its own), measured, then copied N times
//! (rows inserted directly with new ids and digests, then `db rebuild`)
//! and measured again. Pages are timed uncached against a real `serve
//! --no-response-cache` process; its RSS is read from /proc. `snapshot
//! create` runs as a child process whose peak RSS comes from wait4.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

const PAGES: &[&str] = &[
    "/",
    "/api/v1/stats",
    "/leaderboard",
    "/api/v1/leaderboard",
    "/api/v1/leaderboard.csv",
    "/gpus",
    "/gpus/l4",
    "/compare",
    "/models",
    "/api/v1/models",
    "/models/meta-llama/Llama-3.1-8B-Instruct",
    "/api/v1/models/meta-llama/Llama-3.1-8B-Instruct",
    "/models/meta-llama/Llama-3.1-8B-Instruct?ttft_ms=100",
    "/insights",
    "/api/v1/insights",
    "/api/v1/estimate?model=meta-llama%2FLlama-3.1-8B-Instruct&gpu=a100-sxm4-40gb&scenario=batch",
    "/feeds/submissions",
    "/feeds/gpus/l4",
    "/feeds/models/meta-llama/Llama-3.1-8B-Instruct",
];
const REPEATS: usize = 15;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn binary() -> anyhow::Result<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/wattcounts");
    anyhow::ensure!(
        p.exists(),
        "{} is missing: run `cargo build --release` first",
        p.display()
    );
    Ok(p)
}

/// kB from a /proc/PID/status line (VmRSS, VmHWM).
fn proc_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_server(data: &Path, db: &str, audience: &str) -> anyhow::Result<Server> {
    let port = free_port();
    let child = Command::new(binary()?)
        .args(["serve", "--no-response-cache", "--data-dir"])
        .arg(data)
        .args(["--database-url", db, "--bind", &format!("127.0.0.1:{port}")])
        .args(["--public-url", audience])
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()?;
    let url = format!("http://127.0.0.1:{port}");
    let server = Server { child, url };
    let client = reqwest::Client::new();
    for _ in 0..600 {
        if client
            .get(format!("{}/healthz", server.url))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return Ok(server);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the server did not come up")
}

/// How far down `/gpus/l4`'s submissions the deep page is: the 21st page
/// of 50 (submissions 1,001-1,050), or the last when there are fewer.
const DEEP_PAGES: usize = 20;

/// The L4 page that lists its submissions from 1,000 down (or its last),
/// found by following `older_submissions`, and which page it is.
async fn deep_gpu_page(server: &Server) -> anyhow::Result<(String, usize)> {
    let client = reqwest::Client::new();
    let mut path = "/gpus/l4".to_string();
    let mut page = 1;
    while page <= DEEP_PAGES {
        let api = path.replacen("/gpus/", "/api/v1/gpus/", 1);
        let v: serde_json::Value = client
            .get(format!("{}{api}", server.url))
            .send()
            .await?
            .json()
            .await?;
        let Some(before) = v["older_submissions"].as_str() else {
            break;
        };
        path = format!("/gpus/l4?before={before}");
        page += 1;
    }
    Ok((path, page))
}

/// Median uncached answer time per page, and the server's RSS after.
async fn time_pages(server: &Server) -> anyhow::Result<(Vec<(String, f64)>, u64, u64)> {
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    let (deep, n) = deep_gpu_page(server).await?;
    eprintln!("the deep GPU page is page {n} of /gpus/l4's submissions");
    let deep_label = format!(
        "/gpus/l4, submissions page {} (or the last)",
        DEEP_PAGES + 1
    );
    let pages = PAGES
        .iter()
        .map(|p| (p.to_string(), p.to_string()))
        .chain([(deep_label, deep)]);
    for (page, path) in pages {
        let mut times = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            let t = Instant::now();
            let r = client.get(format!("{}{path}", server.url)).send().await?;
            let status = r.status();
            r.bytes().await?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            anyhow::ensure!(status.is_success(), "{page}: {status}");
        }
        times.sort_by(f64::total_cmp);
        out.push((page, times[REPEATS / 2]));
    }
    let pid = server.child.id();
    Ok((out, proc_kb(pid, "VmRSS:"), proc_kb(pid, "VmHWM:")))
}

/// One more submission through the HTTP API: seconds and its id.
async fn submit_one(server: &Server, bundle: &[u8], sig: &str) -> anyhow::Result<(f64, String)> {
    let form = reqwest::multipart::Form::new()
        .part("bundle", reqwest::multipart::Part::bytes(bundle.to_vec()))
        .part("signature", reqwest::multipart::Part::text(sig.to_string()));
    let t = Instant::now();
    let r = reqwest::Client::new()
        .post(format!("{}/api/v1/submissions", server.url))
        .multipart(form)
        .send()
        .await?;
    let status = r.status();
    let body = r.text().await?;
    let took = t.elapsed().as_secs_f64();
    anyhow::ensure!(status.as_u16() == 201, "submission: {status} {body}");
    let receipt: serde_json::Value = serde_json::from_str(&body)?;
    Ok((
        took,
        receipt["submission_id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

/// `snapshot create` as a child: (seconds, peak RSS in kB).
fn snapshot(data: &Path, db: &str) -> anyhow::Result<(f64, u64)> {
    let t = Instant::now();
    let child = Command::new(binary()?)
        .args(["snapshot", "create", "--data-dir"])
        .arg(data)
        .args(["--database-url", db])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child and fills `usage`; std never waits on it.
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    anyhow::ensure!(r > 0 && status == 0, "snapshot create failed ({status})");
    // Snapshots are read-only files in a writable folder: remove it.
    let snaps = data.join("snapshots");
    if let Ok(rd) = std::fs::read_dir(&snaps) {
        for e in rd.flatten() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    Ok((t.elapsed().as_secs_f64(), usage.ru_maxrss as u64))
}

/// One more demo bundle on the reference protocol (all 50 models on the L4,
/// a seed of its own): it joins 150 of the demo's groups, the ones that
/// hold 161 submissions at the large scale, so each is recomputed over all
/// of them.
fn one_more(
    key: &ssh_key::PrivateKey,
    audience: &str,
    seed: u64,
) -> anyhow::Result<(Vec<u8>, String)> {
    let gpu = wattcounts::catalog::gpu_by_id("l4").unwrap();
    let models: Vec<&_> = wattcounts::catalog::models().iter().collect();
    let run = wattcounts::synth::generate_run(
        gpu,
        &models,
        &wattcounts::synth::SynthOptions {
            seed,
            ..Default::default()
        },
    );
    let packed = wattcounts::pack::pack(&wattcounts::pack::PackInput {
        run_name: run.name,
        files: run.files,
        config_file: "config-v2.yaml".into(),
        config_yaml: run.config_yaml,
        handle: "demo".into(),
        key_fingerprint: wattcounts::signing::fingerprint(key.public_key()),
        audience: audience.into(),
        harness_commit: "bench".into(),
        vllm_version: Some("0.14.0".into()),
        declare_power_limit: false,
        created_at: chrono::Utc::now(),
        model_configs: Vec::new(),
        weights_indexes: Vec::new(),
    })?;
    let sig = wattcounts::signing::sign(
        key,
        wattcounts::signing::SUBMISSION_NAMESPACE,
        &packed.bytes,
    )?;
    Ok((packed.bytes, sig))
}

/// The copies: every demo submission N times, with new ids and digests,
/// its runs, configurations and check results with it, in one transaction.
macro_rules! seed_copies {
    ($pool:expr, $copies:expr, $skip:expr) => {{
        let pool = $pool;
        let mut tx = pool.begin().await?;
        let originals: Vec<(String, String)> = sqlx::query_as(
            "SELECT id, bundle_sha256 FROM submissions WHERE is_demo = $1 AND id NOT IN ($2, $3, $4)",
        )
        .bind(true)
        .bind(&$skip[0])
        .bind(&$skip[1])
        .bind(&$skip[2])
        .fetch_all(&mut *tx)
        .await?;
        for copy in 1..=$copies {
            for (id, sha) in &originals {
                let new = uuid::Uuid::new_v4().to_string();
                let new_sha = format!("{}{:04x}", &sha[..60], copy);
                sqlx::query(
                    "INSERT INTO submissions (id, bundle_sha256, submitter_id, key_id, status, received_at, gpu_name,
                        gpu_id, run_name, is_demo, bundle_bytes, blob_path, signature, manifest, protocol,
                        content_sha256, iterations, power_samples, energy_rule)
                     SELECT $1, $2, submitter_id, key_id, status, received_at, gpu_name, gpu_id, run_name, is_demo,
                        bundle_bytes, blob_path, signature, manifest, protocol, $3, iterations, power_samples,
                        energy_rule
                     FROM submissions WHERE id = $4",
                )
                .bind(&new)
                .bind(&new_sha)
                .bind(format!("copy-{new}"))
                .bind(id)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO runs (submission_id, model, scenario, lambda_qps, iteration, started_at, duration_s,
                        requests_ok, requests_failed, prompt_tokens, generation_tokens, gpu_energy_j,
                        reported_gpu_energy_j, cpu_energy_j, dram_energy_j, power_mean_w, power_max_w, power_min_w,
                        power_samples, temp_first_c, temp_max_c, energy_per_token_j, energy_per_request_j,
                        throughput_tok_s, itl_s, ttft_p50_s, ttft_p90_s, e2e_p50_s, e2e_p90_s, timed_requests,
                        ttft_sum_s, e2e_sum_s, mean_concurrency, prefill_energy_j)
                     SELECT $1, model, scenario, lambda_qps, iteration, started_at, duration_s, requests_ok,
                        requests_failed, prompt_tokens, generation_tokens, gpu_energy_j, reported_gpu_energy_j,
                        cpu_energy_j, dram_energy_j, power_mean_w, power_max_w, power_min_w, power_samples,
                        temp_first_c, temp_max_c, energy_per_token_j, energy_per_request_j, throughput_tok_s, itl_s,
                        ttft_p50_s, ttft_p90_s, e2e_p50_s, e2e_p90_s, timed_requests, ttft_sum_s, e2e_sum_s,
                        mean_concurrency, prefill_energy_j
                     FROM runs WHERE submission_id = $2 ORDER BY id",
                )
                .bind(&new)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO configurations (submission_id, position, model, scenario, lambda_qps, iterations,
                        ept_median_j, ept_cv, throughput_median, power_mean_median_w, metrics, group_key, ept_lo,
                        ept_hi, ept_conf, epr_median, ttft_median, itl_median, intervals, concurrency_median,
                        prefill_share_median)
                     SELECT $1, position, model, scenario, lambda_qps, iterations, ept_median_j, ept_cv,
                        throughput_median, power_mean_median_w, metrics, group_key, ept_lo, ept_hi, ept_conf,
                        epr_median, ttft_median, itl_median, intervals, concurrency_median, prefill_share_median
                     FROM configurations WHERE submission_id = $2",
                )
                .bind(&new)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO check_results (submission_id, position, check_id, outcome, result)
                     SELECT $1, position, check_id, outcome, result FROM check_results WHERE submission_id = $2",
                )
                .bind(&new)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            }
            if copy % 20 == 0 {
                eprintln!("  seeded {copy}/{} copies", $copies);
            }
        }
        tx.commit().await?;
        anyhow::Ok(())
    }};
}

struct Scale {
    label: String,
    runs: u64,
    submissions: u64,
    pages: Vec<(String, f64)>,
    rss_kb: u64,
    hwm_kb: u64,
    /// Median of three submissions' times, and their ids.
    submit_s: f64,
    submitted: Vec<String>,
    snapshot_s: f64,
    snapshot_kb: u64,
    medians: Vec<(String, f64, u64)>,
    /// The estimator: reading its training rows from the read model, the
    /// fit and the validation (in process, as the job does them).
    estimator_read_s: f64,
    estimator_fit_s: f64,
    estimator_validation_s: f64,
}

/// The estimator's work at this scale, timed in process: read the groups,
/// fit, validate (never stored: the server's own job loads or fits). Also
/// makes sure the server finds a stored fit of the data, so its job does
/// not fit in the background while the pages are timed.
async fn time_estimator(data: &Path, db: &str, audience: &str) -> anyhow::Result<(f64, f64, f64)> {
    use wattcounts::estimator::trained::{Provenance, Trained};
    let store = wattcounts::store::open(db).await?;
    let mut cfg = wattcounts::config::ServeConfig::defaults(data);
    cfg.no_response_cache = true;
    let state = wattcounts::app::with_store(store, &cfg, audience.into())?;
    let t = Instant::now();
    let board = state
        .service
        .all_groups(&wattcounts::leaderboard::Query::default())
        .await?;
    let rows = wattcounts::estimator::training_rows(&board.entries);
    let read = t.elapsed().as_secs_f64();
    let trained = tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        Trained::train(
            rows,
            Default::default(),
            Provenance {
                data_stamp: String::new(),
                origin: "demo".into(),
                protocol: "reference".into(),
                fitted_at: String::new(),
                fit_seconds: 0.0,
                validation_seconds: 0.0,
            },
            1,
            || start.elapsed().as_secs_f64(),
        )
    })
    .await??;
    state.service.refresh_estimator().await?;
    Ok((
        read,
        trained.provenance.fit_seconds,
        trained.provenance.validation_seconds,
    ))
}

async fn measure(
    label: &str,
    data: &Path,
    db: &str,
    audience: &str,
    key: &ssh_key::PrivateKey,
    seed: u64,
    pages_only: bool,
) -> anyhow::Result<Scale> {
    let store = wattcounts::store::open(db).await?;
    let counts = store.counts().await?;
    drop(store);
    eprintln!(
        "{label}: {} submissions, {} runs",
        counts.submissions, counts.runs
    );
    let (snapshot_s, snapshot_kb) = if pages_only {
        (f64::NAN, 0)
    } else {
        snapshot(data, db)?
    };
    let (estimator_read_s, estimator_fit_s, estimator_validation_s) =
        time_estimator(data, db, audience).await?;
    let server = start_server(data, db, audience).await?;
    let (pages, rss_kb, hwm_kb) = time_pages(&server).await?;
    let board: serde_json::Value = reqwest::get(format!(
        "{}/api/v1/leaderboard?origin=demo&per_page=1000",
        server.url
    ))
    .await?
    .json()
    .await?;
    let medians = board["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                format!(
                    "{} {} {} {}",
                    e["gpu_id"], e["model"], e["scenario"], e["lambda_qps"]
                ),
                e["energy_per_token_j"].as_f64().unwrap(),
                e["submissions"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut times = Vec::new();
    let mut submitted = Vec::new();
    for n in 0..3 {
        let (bundle, sig) = tokio::task::spawn_blocking({
            let key = key.clone();
            let audience = audience.to_string();
            move || one_more(&key, &audience, seed + n)
        })
        .await??;
        let (t, id) = submit_one(&server, &bundle, &sig).await?;
        times.push(t);
        submitted.push(id);
    }
    times.sort_by(f64::total_cmp);
    let submit_s = times[1];
    Ok(Scale {
        label: label.into(),
        runs: counts.runs,
        submissions: counts.submissions,
        pages,
        rss_kb,
        hwm_kb,
        submit_s,
        submitted,
        snapshot_s,
        snapshot_kb,
        medians,
        estimator_read_s,
        estimator_fit_s,
        estimator_validation_s,
    })
}

fn sqlite3_csv_seconds(db_file: &Path) -> Option<f64> {
    let t = Instant::now();
    let ok = Command::new("sqlite3")
        .arg("-csv")
        .arg(db_file)
        .arg("SELECT * FROM runs")
        .stdout(Stdio::null())
        .status()
        .ok()?
        .success();
    ok.then(|| t.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let copies: u32 = arg(&args, "--copies").map_or(Ok(160), |v| v.parse())?;
    // The pages, one more submission and the estimator only: no `snapshot
    // create` and no sqlite3 dump (at 1,600 copies those take minutes and
    // are measured at 160).
    let pages_only = args.iter().any(|a| a == "--pages-only");
    let pg = arg(&args, "--database-url");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-scale");
    let data = root.join(if pg.is_some() { "pg" } else { "sqlite" });
    if data.exists() {
        // Files under snapshots/ are read-only; the folders are not.
        std::fs::remove_dir_all(&data).with_context(|| format!("clearing {}", data.display()))?;
    }
    std::fs::create_dir_all(&data)?;
    let db = match &pg {
        Some(url) => {
            let admin = sqlx::PgPool::connect(url).await?;
            sqlx::query("DROP SCHEMA IF EXISTS bench_scale CASCADE")
                .execute(&admin)
                .await?;
            sqlx::query("CREATE SCHEMA bench_scale")
                .execute(&admin)
                .await?;
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}options=-c%20search_path%3Dbench_scale")
        }
        None => format!("sqlite:{}", data.join("wattcounts.db").display()),
    };
    let audience = "https://bench.wattcounts.test";
    // The demo, through the real pipeline (cached bundles are reused).
    {
        let store = wattcounts::store::open(&db).await?;
        let mut cfg = wattcounts::config::ServeConfig::defaults(&data);
        cfg.no_response_cache = true;
        let state = wattcounts::app::with_store(store, &cfg, audience.into())?;
        let demo_cache = root.join("demo-cache");
        std::fs::create_dir_all(&demo_cache)?;
        let t = Instant::now();
        wattcounts::demo::load_if_empty(&state.service, &demo_cache, &Default::default())
            .await?
            .context("demo not loaded")?;
        eprintln!("demo loaded in {:.1} s", t.elapsed().as_secs_f64());
    }
    // The demo's own key (made by the loader): "one more" is demo data too.
    let key = wattcounts::signing::load_private_key(&std::fs::read_to_string(
        root.join("demo-cache/demo/demo_ed25519"),
    )?)?;
    let demo = measure("demo", &data, &db, audience, &key, 9001, pages_only).await?;

    eprintln!("seeding {copies} copies of the demo");
    let t = Instant::now();
    match &pg {
        Some(_) => seed_copies!(&sqlx::PgPool::connect(&db).await?, copies, &demo.submitted)?,
        None => seed_copies!(
            &sqlx::SqlitePool::connect(&db).await?,
            copies,
            &demo.submitted
        )?,
    }
    let seeded = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let out = Command::new(binary()?)
        .args(["db", "rebuild", "--data-dir"])
        .arg(&data)
        .args(["--database-url", &db])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "db rebuild: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rebuilt = t.elapsed().as_secs_f64();
    eprintln!("seeded in {seeded:.1} s, db rebuild {rebuilt:.1} s");
    let big = measure(
        &format!("{}x", copies + 1),
        &data,
        &db,
        audience,
        &key,
        9100,
        pages_only,
    )
    .await?;

    // The figures.
    println!(
        "backend: {}",
        if pg.is_some() { "postgres" } else { "sqlite" }
    );
    println!(
        "scale: demo {} submissions / {} runs; {} {} submissions / {} runs (seeding {seeded:.1} s, db rebuild {rebuilt:.1} s)",
        demo.submissions, demo.runs, big.label, big.submissions, big.runs
    );
    println!(
        "{:<52} {:>10} {:>10} {:>7}",
        "uncached page, median of 15",
        "demo ms",
        format!("{} ms", big.label),
        "ratio"
    );
    for ((p, a), (_, b)) in demo.pages.iter().zip(&big.pages) {
        println!("{p:<52} {a:>10.2} {b:>10.2} {:>6.2}x", b / a);
    }
    println!(
        "server RSS after the pages: demo {:.0} MB (peak {:.0}), {} {:.0} MB (peak {:.0})",
        demo.rss_kb as f64 / 1024.0,
        demo.hwm_kb as f64 / 1024.0,
        big.label,
        big.rss_kb as f64 / 1024.0,
        big.hwm_kb as f64 / 1024.0
    );
    println!(
        "one more submission (an L4 demo bundle of all 50 models, into groups of 1-4 and of 164-167 submissions; median of 3): demo {:.2} s, {} {:.2} s ({:.2}x)",
        demo.submit_s,
        big.label,
        big.submit_s,
        big.submit_s / demo.submit_s
    );
    if !pages_only {
        println!(
            "snapshot create (no traces): demo {:.2} s peak {:.0} MB; {} {:.2} s peak {:.0} MB",
            demo.snapshot_s,
            demo.snapshot_kb as f64 / 1024.0,
            big.label,
            big.snapshot_s,
            big.snapshot_kb as f64 / 1024.0
        );
    }
    println!(
        "estimator (in process, one thread): read the groups {:.3} s → {:.3} s; fit {:.2} s → {:.2} s ({:.2}x); validation {:.1} s → {:.1} s ({:.2}x)",
        demo.estimator_read_s,
        big.estimator_read_s,
        demo.estimator_fit_s,
        big.estimator_fit_s,
        big.estimator_fit_s / demo.estimator_fit_s,
        demo.estimator_validation_s,
        big.estimator_validation_s,
        big.estimator_validation_s / demo.estimator_validation_s
    );
    if pg.is_none() && !pages_only {
        if let Some(s) = sqlite3_csv_seconds(&data.join("wattcounts.db")) {
            println!(
                "sqlite3 -csv of the runs table at {}: {s:.2} s (snapshot create {:.2}x that)",
                big.label,
                big.snapshot_s / s
            );
        }
    }
    // The medians at N× equal the demo's, each group counting N+1 times the
    // submissions; the L4 groups also hold the three extra L4 bundles.
    let mut same = 0;
    for ((k, m, n), (k2, m2, n2)) in demo.medians.iter().zip(&big.medians) {
        anyhow::ensure!(k == k2, "row order differs: {k} / {k2}");
        if k.starts_with("\"l4\"") {
            // The extras may wait for review (the consistency check
            // compares them with 161 identical peers).
            let base = n * u64::from(copies + 1);
            anyhow::ensure!(
                (base..=base + 3).contains(n2),
                "{k}: {n} then {n2} submissions"
            );
            continue;
        }
        anyhow::ensure!(
            m == m2,
            "{k}: median {m} at demo scale, {m2} at {}",
            big.label
        );
        anyhow::ensure!(
            *n2 == n * u64::from(copies + 1),
            "{k}: {n} then {n2} submissions"
        );
        same += 1;
    }
    println!(
        "medians: {same} demo groups (the L4's aside) equal at both scales, each counting {}x the submissions",
        copies + 1
    );
    Ok(())
}

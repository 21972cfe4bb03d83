//! Ingest throughput, next to the floor of merely gunzipping and hashing the
//! same bytes.
//!
//!     cargo run --release --example ingest_bench            # one paper-sized bundle:
//!         50 models × (5 batch + 2 rates × 5 server) iterations, 10 Hz traces, on an H200
//!     cargo run --release --example ingest_bench -- --demo  # the whole `serve --demo` data set
//!     ... -- --demo --jobs 2                                  # two bundles at a time
//!
//! Generated bundles are cached in target/bench-cache so reruns measure
//! ingest only.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wattcounts::analysis::StageTimings;
use wattcounts::catalog;
use wattcounts::pack::{self, PackInput};
use wattcounts::signing;
use wattcounts::store::NewSubmitter;
use wattcounts::synth::{self, SynthOptions};

const AUDIENCE: &str = "https://bench.wattcounts.test";

fn floor(bundles: &[Vec<u8>]) -> Duration {
    let start = Instant::now();
    let mut buf = vec![0u8; 1 << 20];
    for bytes in bundles {
        let _ = Sha256::digest(bytes);
        let mut gz = flate2::read::GzDecoder::new(bytes.as_slice());
        while gz.read(&mut buf).unwrap() > 0 {}
    }
    start.elapsed()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The single paper-sized bundle: 50 models on an H200 (all of them fit).
fn one_bundle(cache: &Path, key: &ssh_key::PrivateKey) -> anyhow::Result<Vec<u8>> {
    let path = cache.join("h200-50-models.tar.gz");
    if let Ok(b) = std::fs::read(&path) {
        return Ok(b);
    }
    let gpu = catalog::gpu_by_id("h200").expect("H200 in catalogue");
    let models: Vec<_> = catalog::models().iter().take(50).collect();
    let run = synth::generate_run(gpu, &models, &SynthOptions::default());
    assert!(run.skipped_models.is_empty(), "all 50 models fit an H200");
    let packed = pack::pack(&PackInput {
        run_name: run.name,
        files: run.files,
        config_file: "config-v2.yaml".into(),
        config_yaml: run.config_yaml,
        handle: "bench".into(),
        key_fingerprint: signing::fingerprint(key.public_key()),
        audience: AUDIENCE.into(),
        harness_commit: "bench".into(),
        vllm_version: None,
        declare_power_limit: false,
        created_at: chrono::Utc::now(),
        model_configs: Vec::new(),
        weights_indexes: Vec::new(),
    })?;
    std::fs::write(&path, &packed.bytes)?;
    Ok(packed.bytes)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let whole_demo = args.iter().any(|a| a == "--demo");
    // --jobs N: bundles ingested concurrently (default 1).
    let jobs: usize = args
        .iter()
        .position(|a| a == "--jobs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    // --pg URL: ingest into PostgreSQL (a fresh schema per round) instead
    // of a fresh SQLite file.
    let pg: Option<String> = args
        .iter()
        .position(|a| a == "--pg")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let cache = Path::new("target/bench-cache");
    std::fs::create_dir_all(cache)?;
    let key_path = cache.join("bench_ed25519");
    if !key_path.exists() {
        std::fs::write(&key_path, signing::generate_ed25519("bench")?.0)?;
    }
    let key = signing::load_private_key(&std::fs::read_to_string(&key_path)?)?;
    let fingerprint = signing::fingerprint(key.public_key());

    let t = Instant::now();
    let bundles: Vec<Vec<u8>> = if whole_demo {
        catalog::paper_gpus()
            .map(|g| {
                eprintln!("preparing {} ...", g.nvml_name);
                wattcounts::demo::demo_bundle(cache, g, &key, AUDIENCE, &SynthOptions::default())
            })
            .collect::<Result<_, _>>()?
    } else {
        vec![one_bundle(cache, &key)?]
    };
    eprintln!("bundles ready in {:.1} s", secs(t.elapsed()));
    let sigs: Vec<Vec<u8>> = bundles
        .iter()
        .map(|b| signing::sign(&key, signing::SUBMISSION_NAMESPACE, b).map(String::into_bytes))
        .collect::<Result<_, _>>()?;

    let mut floors: Vec<Duration> = (0..3).map(|_| floor(&bundles)).collect();
    floors.sort();
    let floor_t = floors[1];

    let rounds = if whole_demo { 1 } else { 3 };
    let mut best: Option<(Duration, StageTimings, u64, u64, u64)> = None;
    for round in 0..rounds {
        let dir = tempfile::tempdir()?;
        let store: Arc<dyn wattcounts::store::Store> = match &pg {
            Some(url) => {
                let schema = format!("bench_{}", uuid::Uuid::new_v4().simple());
                Arc::new(wattcounts::store::postgres::PgStore::open(url, Some(&schema)).await?)
            }
            None => {
                wattcounts::store::open(&format!("sqlite:{}", dir.path().join("b.db").display()))
                    .await?
            }
        };
        store
            .create_submitter(&NewSubmitter {
                // Demo bundles are packed for the reserved demo handle.
                handle: if whole_demo {
                    wattcounts::handles::DEMO_HANDLE.into()
                } else {
                    "bench".into()
                },
                display_name: "bench".into(),
                fingerprint: fingerprint.clone(),
                algorithm: "ssh-ed25519".into(),
                public_key: key.public_key().to_openssh()?,
            })
            .await?;
        let mut cfg = wattcounts::config::ServeConfig::defaults(dir.path());
        // Cold answers for the leaderboard timings: nothing is cached.
        cfg.no_response_cache = true;
        let state = wattcounts::app::with_store(store, &cfg, AUDIENCE.into())?;
        let ingestor = state.service.clone();
        let (mut stages, mut iterations, mut samples, mut unpacked) =
            (StageTimings::default(), 0, 0, 0);
        let t = Instant::now();
        // Bundles are uploaded `jobs` at a time, as concurrent submitters would.
        let mut pending = bundles.iter().cloned().zip(sigs.iter().cloned());
        loop {
            let mut set = tokio::task::JoinSet::new();
            for (b, s) in pending.by_ref().take(jobs) {
                let ingestor = ingestor.clone();
                set.spawn(async move {
                    let mut st = StageTimings::default();
                    let r = ingestor.submit_timed(b, s, &mut st).await;
                    r.map(|(_, receipt)| (receipt, st))
                });
            }
            if set.is_empty() {
                break;
            }
            while let Some(done) = set.join_next().await {
                let (receipt, st) = done?.map_err(|e| anyhow::anyhow!("{e}"))?;
                stages.add(&st);
                iterations += receipt.counts.iterations;
                samples += receipt.counts.power_samples;
                unpacked += st.unpacked_bytes;
            }
        }
        let wall = t.elapsed();
        eprintln!("  round {}: {:.3} s", round + 1, secs(wall));
        if round + 1 == rounds {
            leaderboard_timings(state.clone()).await?;
        }
        if best.as_ref().is_none_or(|b| wall < b.0) {
            best = Some((wall, stages, iterations, samples, unpacked));
        }
    }
    let (wall, st, iterations, samples, unpacked) = best.unwrap();
    let mb = bundles.iter().map(|b| b.len()).sum::<usize>() as f64 / 1e6;
    println!("jobs: {jobs} bundle(s) at a time; stage times below are summed over bundles");
    println!(
        "volume: {} bundle(s), {mb:.1} MB gzip, {:.1} MB unpacked, {iterations} iterations, {samples} power samples",
        bundles.len(),
        unpacked as f64 / 1e6
    );
    println!(
        "floor (gunzip + sha256): {:.3} s = {:.1} MB/s",
        secs(floor_t),
        mb / secs(floor_t)
    );
    println!(
        "ingest end to end:       {:.3} s = {:.1} MB/s, {:.0} iterations/s, {:.2}x the floor",
        secs(wall),
        mb / secs(wall),
        iterations as f64 / secs(wall),
        secs(wall) / secs(floor_t)
    );
    let total = secs(st.total());
    for (name, d) in [
        ("hash", st.hash),
        ("verify", st.verify),
        ("decompress", st.decompress),
        ("digest+parse", st.parse),
        ("derive", st.derive),
        ("checks", st.checks),
        ("store", st.store),
    ] {
        println!(
            "  {name:<13} {:>8.3} s  {:>5.1} %",
            secs(d),
            100.0 * secs(d) / total
        );
    }
    Ok(())
}

/// Cold leaderboard answers (nothing is cached yet) over the data just
/// ingested: median and worst of 20, for the HTML page and its JSON twin.
async fn leaderboard_timings(state: wattcounts::web::AppState) -> anyhow::Result<()> {
    use tower::ServiceExt;
    let router = wattcounts::web::app(state);
    for path in [
        "/leaderboard?per_page=100",
        "/api/v1/leaderboard?per_page=100",
    ] {
        let mut times = Vec::new();
        for _ in 0..20 {
            let req = axum::http::Request::get(path).body(axum::body::Body::empty())?;
            let t = Instant::now();
            let resp = router.clone().oneshot(req).await?;
            let status = resp.status();
            axum::body::to_bytes(resp.into_body(), usize::MAX).await?;
            times.push(t.elapsed());
            anyhow::ensure!(status.is_success(), "{path}: {status}");
        }
        times.sort();
        eprintln!(
            "  {path}: median {:.1} ms, worst {:.1} ms",
            secs(times[10]) * 1e3,
            secs(times[19]) * 1e3
        );
    }
    Ok(())
}

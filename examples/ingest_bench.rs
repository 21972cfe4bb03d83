//! Ingest throughput for one paper-sized bundle: 50 models × (5 batch + 2
//! rates × 5 server) iterations with 10 Hz power traces, on one GPU, next to
//! the floor of merely gunzipping and hashing the same bytes.
//!
//!     cargo run --release --example ingest_bench

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wattcounts::bundle::unpack::UnpackLimits;
use wattcounts::catalog;
use wattcounts::ingest::{IngestConfig, Ingestor, StageTimings};
use wattcounts::pack::{self, PackInput};
use wattcounts::signing;
use wattcounts::store::blobs::BlobStore;
use wattcounts::store::NewSubmitter;
use wattcounts::synth::{self, SynthOptions};

const AUDIENCE: &str = "https://bench.wattcounts.test";

fn floor(bytes: &[u8]) -> Duration {
    let start = Instant::now();
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    let _ = hasher.finalize();
    let mut gz = flate2::read::GzDecoder::new(bytes);
    let mut buf = vec![0u8; 1 << 20];
    while gz.read(&mut buf).unwrap() > 0 {}
    start.elapsed()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let gpu = catalog::gpu_by_id("h200").expect("H200 in catalogue");
    let models: Vec<_> = catalog::models().iter().take(50).collect();
    let opts = SynthOptions::default();
    eprintln!(
        "generating {} models on {} (5 batch + 2 rates x 5 server iterations each)...",
        models.len(),
        gpu.nvml_name
    );
    let t = Instant::now();
    let run = synth::generate_run(gpu, &models, &opts);
    assert!(run.skipped_models.is_empty(), "all 50 models fit an H200");
    let raw: usize = run.files.iter().map(|f| f.1.len()).sum();
    eprintln!(
        "  {:.1} s, {:.1} MB of CSV",
        secs(t.elapsed()),
        raw as f64 / 1e6
    );

    let (private, public) = signing::generate_ed25519("bench")?;
    let key = signing::load_private_key(&private)?;
    let fingerprint = signing::fingerprint(key.public_key());
    let t = Instant::now();
    let packed = pack::pack(&PackInput {
        run_name: run.name.clone(),
        files: run.files,
        config_file: "config-v2.yaml".into(),
        config_yaml: run.config_yaml,
        handle: "bench".into(),
        key_fingerprint: fingerprint.clone(),
        audience: AUDIENCE.into(),
        harness_commit: "bench".into(),
        vllm_version: None,
        declare_power_limit: false,
    })?;
    let bundle = packed.bytes;
    let sig = signing::sign(&key, signing::SUBMISSION_NAMESPACE, &bundle)?.into_bytes();
    eprintln!(
        "  packed in {:.1} s: {:.1} MB compressed",
        secs(t.elapsed()),
        bundle.len() as f64 / 1e6
    );

    let mut floors: Vec<Duration> = (0..3).map(|_| floor(&bundle)).collect();
    floors.sort();
    let floor_t = floors[1];

    let mut best: Option<(Duration, StageTimings, u64, u64)> = None;
    for round in 0..3 {
        let dir = tempfile::tempdir()?;
        let store =
            wattcounts::store::open(&format!("sqlite:{}", dir.path().join("b.db").display()))
                .await?;
        store
            .create_submitter(&NewSubmitter {
                handle: "bench".into(),
                display_name: "bench".into(),
                fingerprint: fingerprint.clone(),
                algorithm: "ssh-ed25519".into(),
                public_key: public.clone(),
            })
            .await?;
        let ingestor = Ingestor::new(
            store,
            BlobStore::new(dir.path().join("blobs"))?,
            IngestConfig {
                public_url: AUDIENCE.into(),
                unpack: UnpackLimits::default(),
            },
        );
        let ingestor = Arc::new(ingestor);
        let mut stages = StageTimings::default();
        let t = Instant::now();
        let (_, receipt) = ingestor
            .submit_timed(bundle.clone(), sig.clone(), &mut stages)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let wall = t.elapsed();
        eprintln!("  round {}: {:.3} s", round + 1, secs(wall));
        if best.as_ref().is_none_or(|b| wall < b.0) {
            best = Some((
                wall,
                stages,
                receipt.counts.iterations,
                receipt.counts.power_samples,
            ));
        }
    }
    let (wall, st, iterations, samples) = best.unwrap();
    let mb = bundle.len() as f64 / 1e6;
    println!("bundle: {mb:.1} MB gzip, {:.1} MB unpacked, {iterations} iterations, {samples} power samples", raw as f64 / 1e6);
    println!(
        "floor (gunzip + sha256): {:.3} s = {:.1} MB/s",
        secs(floor_t),
        mb / secs(floor_t)
    );
    println!(
        "ingest end to end:        {:.3} s = {:.1} MB/s, {:.0} iterations/s, {:.2}x the floor",
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

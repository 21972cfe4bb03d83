//! What the checks say about the synthetic demo: generates each catalogue
//! GPU's run (paper-scale options), packs it, runs the pure analysis and
//! prints the status and every warning or failure. A clean generator gives
//! `accepted` everywhere.
//!
//! cargo run --release --example demo_checks [-- [--small] [--seed=N] GPU_ID ...]

use std::time::Instant;

use wattcounts::analysis::{analyse, IngestConfig, StageTimings};
use wattcounts::bundle::manifest::ManifestSchema;
use wattcounts::bundle::unpack::UnpackLimits;
use wattcounts::checks;
use wattcounts::{catalog, demo, synth};

fn main() -> anyhow::Result<()> {
    let mut wanted: Vec<String> = std::env::args().skip(1).collect();
    let small = wanted.iter().any(|a| a == "--small");
    wanted.retain(|a| a != "--small");
    // --seed=N tries another generator seed.
    let seed = wanted
        .iter()
        .find_map(|a| a.strip_prefix("--seed=").and_then(|v| v.parse().ok()));
    wanted.retain(|a| !a.starts_with("--seed="));
    let schema = ManifestSchema::new();
    let cfg = IngestConfig {
        public_url: "https://demo.wattcounts.test".into(),
        unpack: UnpackLimits::default(),
        thresholds: Default::default(),
    };
    let key = ssh_key::PrivateKey::random(&mut rand_core::OsRng, ssh_key::Algorithm::Ed25519)?;
    let mut opts = if small {
        synth::SynthOptions::small()
    } else {
        synth::SynthOptions::default()
    };
    if let Some(seed) = seed {
        opts.seed = seed;
    }
    let cache = tempfile::tempdir()?;
    let mut total_checks = std::time::Duration::ZERO;
    for gpu in catalog::paper_gpus() {
        if !wanted.is_empty() && !wanted.contains(&gpu.id) {
            continue;
        }
        let bundle = demo::demo_bundle(cache.path(), gpu, &key, &cfg.public_url, &opts)?;
        let mut t = StageTimings::default();
        let start = Instant::now();
        let a = analyse(&bundle, &schema, &cfg, chrono::Utc::now(), &mut t)
            .map_err(|r| anyhow::anyhow!("{r}"))?;
        total_checks += t.checks;
        let status = checks::status_from_checks(&a.checks);
        println!(
            "{:<16} {:<12} {} configurations, analysed in {:.3} s, checks {:.1} ms",
            gpu.id,
            status.as_str(),
            a.configurations.len(),
            start.elapsed().as_secs_f64(),
            t.checks.as_secs_f64() * 1e3
        );
        for c in a.checks.iter().filter(|c| c.is_problem()) {
            println!("    {} {}: {}", c.outcome.as_str(), c.id, c.message);
        }
    }
    println!(
        "checks took {:.1} ms in all",
        total_checks.as_secs_f64() * 1e3
    );
    Ok(())
}

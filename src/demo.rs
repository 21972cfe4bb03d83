//! `serve --demo`: fills a database without real submissions with synthetic harness runs for
//! every catalogue GPU, packed, signed with a demo key registered as
//! `demo`, and ingested through the real pipeline.
//!
//! Bundles are cached in `<data-dir>/demo/` (keyed by the audience they were
//! packed for), so a restart with a fresh database skips the generation.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;

use wattcounts_rules::catalog;
use wattcounts_rules::handles::DEMO_HANDLE;
use wattcounts_rules::pack::{self, PackInput};
use wattcounts_rules::signing;
use wattcounts_service::Service;
use wattcounts_store::NewSubmitter;
use wattcounts_synth::{self as synth, SynthOptions};

#[derive(Debug, Clone, Default)]
pub struct DemoSummary {
    pub bundles: u64,
    pub iterations: u64,
    pub power_samples: u64,
    pub bytes: u64,
    pub seconds: f64,
}

fn demo_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("demo")
}

/// The demo key, created on first use.
fn demo_key(dir: &Path) -> anyhow::Result<ssh_key::PrivateKey> {
    let path = dir.join("demo_ed25519");
    if !path.exists() {
        let (private, _) = signing::generate_ed25519("wattcounts-demo")?;
        let tmp = dir.join("demo_ed25519.tmp");
        std::fs::write(&tmp, private)?;
        std::fs::rename(&tmp, &path)?;
    }
    signing::load_private_key(&std::fs::read_to_string(&path)?)
}

/// Short stable tag of an audience, for cache file names.
fn audience_tag(audience: &str) -> String {
    wattcounts_rules::digest::sha256_hex(audience.as_bytes())[..10].to_string()
}

/// Builds (or reads from the cache) the demo bundle of one GPU.
pub fn demo_bundle(
    dir: &Path,
    gpu: &catalog::GpuSpec,
    key: &ssh_key::PrivateKey,
    audience: &str,
    opts: &SynthOptions,
) -> anyhow::Result<Vec<u8>> {
    let path = dir.join("bundles").join(format!(
        "{}-{}-seed{}-v{}.tar.gz",
        gpu.id,
        audience_tag(audience),
        opts.seed,
        synth::GENERATOR_VERSION
    ));
    if let Ok(bytes) = std::fs::read(&path) {
        return Ok(bytes);
    }
    let models: Vec<&catalog::ModelSpec> = catalog::shipped_models().iter().collect();
    let run = synth::generate_run(gpu, &models, opts);
    let packed = pack::pack(&PackInput {
        run_name: run.name,
        files: run.files,
        config_file: "config-v2.yaml".into(),
        config_yaml: run.config_yaml,
        handle: DEMO_HANDLE.into(),
        key_fingerprint: signing::fingerprint(key.public_key()),
        audience: audience.into(),
        harness_commit: "synthetic-demo".into(),
        vllm_version: Some("0.14.0".into()),
        declare_power_limit: false,
        created_at: chrono::Utc::now(),
        model_configs: Vec::new(),
        weights_indexes: Vec::new(),
    })?;
    std::fs::create_dir_all(path.parent().expect("has parent"))?;
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, &packed.bytes)?;
    std::fs::rename(&tmp, &path)?;
    Ok(packed.bytes)
}

/// Imports the ML.ENERGY v3 LLM files shipped with the service (real
/// measurements, labelled as their own origin, `peer:mlenergy-v3`), so the
/// first page has real figures beside the synthetic demo. Importing the
/// same files again changes nothing, so every start may call it.
pub async fn load_peers(service: &Service) -> anyhow::Result<()> {
    use wattcounts_rules::peer::{PeerImportOutcome, PeerSource};
    use wattcounts_service::peers::PeerImportRequest;
    let t = Instant::now();
    let report = service
        .import_peer(PeerImportRequest::bundled(PeerSource::MlEnergyV3, "demo"))
        .await?;
    if let PeerImportOutcome::Stored { .. } = report.outcome {
        eprintln!(
            "demo: imported {} configurations of {} ({}) in {:.1} s",
            report.configurations,
            PeerSource::MlEnergyV3.info().name,
            report.origin,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Loads the demo into a database that holds no real submissions.
pub async fn load_if_empty(
    service: &Service,
    data_dir: &Path,
    opts: &SynthOptions,
) -> anyhow::Result<Option<DemoSummary>> {
    // Only demo data so far (or none): load the GPUs not stored yet, so a
    // load cut short by a crash finishes on the next start.
    let all = service.table_counts().await?.submissions;
    let demo = service.dataset_counts().await?.demo_submissions;
    if all > demo {
        eprintln!("demo: the database holds real submissions; not adding demo data");
        return Ok(None);
    }
    let dir = demo_dir(data_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let key = demo_key(&dir)?;
    let fingerprint = signing::fingerprint(key.public_key());
    // The demo's own submitter is registered directly: the service is its
    // own witness for the key it just made.
    let store = service.store_for_tools();
    if store.key_by_fingerprint(&fingerprint).await?.is_none() {
        store
            .create_submitter(&NewSubmitter {
                handle: DEMO_HANDLE.into(),
                display_name: "Synthetic demo data".into(),
                fingerprint: fingerprint.clone(),
                algorithm: "ssh-ed25519".into(),
                public_key: key.public_key().to_openssh()?,
            })
            .await
            .context("registering the demo handle (is another key registered as 'demo'?)")?;
    }
    let done: std::collections::HashSet<String> = service
        .latest_submissions(10_000)
        .await?
        .into_iter()
        .filter(|r| r.is_demo)
        .map(|r| r.gpu_name)
        .collect();
    if !done.is_empty() {
        eprintln!("demo: {} GPUs already loaded; adding the rest", done.len());
    }
    let audience = service.config().public_url.clone();
    // The paper's GPUs: the demo stands in for the paper's measurements.
    let gpus: Vec<&catalog::GpuSpec> = catalog::paper_gpus().collect();
    let start = Instant::now();
    let mut summary = DemoSummary::default();
    for (i, gpu) in gpus.iter().enumerate() {
        if done.contains(&gpu.nvml_name) {
            continue;
        }
        let t = Instant::now();
        let bundle = {
            let (dir, gpu, key, audience, opts) = (
                dir.clone(),
                (*gpu).clone(),
                key.clone(),
                audience.clone(),
                opts.clone(),
            );
            tokio::task::spawn_blocking(move || demo_bundle(&dir, &gpu, &key, &audience, &opts))
                .await??
        };
        let sig = signing::sign(&key, signing::SUBMISSION_NAMESPACE, &bundle)?;
        summary.bytes += bundle.len() as u64;
        let (_, receipt) = service
            .submit(bundle, sig.into_bytes())
            .await
            .map_err(|e| anyhow::anyhow!("demo bundle for {}: {e}", gpu.nvml_name))?;
        summary.bundles += 1;
        summary.iterations += receipt.counts.iterations;
        summary.power_samples += receipt.counts.power_samples;
        let done = i + 1;
        let bar = "#".repeat(done * 20 / gpus.len()) + &".".repeat(20 - done * 20 / gpus.len());
        eprintln!(
            "demo [{bar}] {done}/{}  {:<24} {:>2} models {:>4} iterations  {:.1} s",
            gpus.len(),
            gpu.nvml_name,
            receipt.counts.models,
            receipt.counts.iterations,
            t.elapsed().as_secs_f64()
        );
    }
    summary.seconds = start.elapsed().as_secs_f64();
    eprintln!(
        "demo: {} bundles, {} iterations, {} power samples, {:.0} MB in {:.1} s",
        summary.bundles,
        summary.iterations,
        summary.power_samples,
        summary.bytes as f64 / 1e6,
        summary.seconds
    );
    Ok(Some(summary))
}

//! `demo generate`: synthetic harness run folders.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use wattcounts_rules::catalog;
use wattcounts_synth::{self as synth, SynthOptions};

#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// Write harness-format run folders, one per GPU: DIR/<gpu-id>/run_*/ and DIR/<gpu-id>/config-v2.yaml.
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[arg(long)]
    pub out: PathBuf,
    /// GPU ids or NVML names (comma separated); default: the whole catalogue.
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<String>,
    /// Model ids (comma separated); default: all 50 catalogue models.
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Random seed. `serve --demo` uses 2025: the same seed makes the same
    /// run, which a service holding the demo refuses as already stored.
    #[arg(long, default_value_t = 2025)]
    pub seed: u64,
    /// Small runs (3 iterations, 40 prompts, 20 s server tests) for quick
    /// trials. Off the reference protocol: their rows form groups of their own.
    #[arg(long)]
    pub small: bool,
}

pub async fn run(cmd: DemoCommand) -> anyhow::Result<()> {
    match cmd {
        DemoCommand::Generate(a) => generate(&a),
    }
}

pub fn select_gpus(names: &[String]) -> anyhow::Result<Vec<&'static catalog::GpuSpec>> {
    if names.is_empty() {
        return Ok(catalog::paper_gpus().collect());
    }
    names
        .iter()
        .map(|n| {
            catalog::gpu_by_id(n)
                .or_else(|| catalog::gpu_by_nvml_name(n))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown GPU '{n}'; known: {}",
                        catalog::gpus()
                            .iter()
                            .map(|g| g.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
        })
        .collect()
}

pub fn select_models(ids: &[String]) -> anyhow::Result<Vec<&'static catalog::ModelSpec>> {
    if ids.is_empty() {
        return Ok(catalog::shipped_models().iter().collect());
    }
    ids.iter()
        .map(|id| catalog::model_by_id(id).ok_or_else(|| anyhow::anyhow!("unknown model '{id}'")))
        .collect()
}

fn generate(a: &GenerateArgs) -> anyhow::Result<()> {
    let gpus = select_gpus(&a.gpus)?;
    let models = select_models(&a.models)?;
    let opts = SynthOptions {
        seed: a.seed,
        ..if a.small {
            SynthOptions::small()
        } else {
            SynthOptions::default()
        }
    };
    for (i, gpu) in gpus.iter().enumerate() {
        let run = synth::generate_run(gpu, &models, &opts);
        let dir = a.out.join(&gpu.id);
        std::fs::create_dir_all(&dir)?;
        let path = synth::write_run(&dir, &run)?;
        let bytes: usize = run.files.iter().map(|f| f.1.len()).sum();
        eprintln!(
            "[{}/{}] {}: {} models ({} skipped: too large), {:.1} MB -> {}",
            i + 1,
            gpus.len(),
            gpu.nvml_name,
            models.len() - run.skipped_models.len(),
            run.skipped_models.len(),
            bytes as f64 / 1e6,
            path.display()
        );
    }
    Ok(())
}

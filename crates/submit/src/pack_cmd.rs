//! `pack`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use wattcounts_rules::pack::{self, PackInput};
use wattcounts_rules::signing;

#[derive(Debug, Args)]
#[command(
    after_help = "Packing attests that the folder is the harness output as written, and that it may be \
published in the open dataset under CC-BY-4.0."
)]
pub struct PackArgs {
    /// The harness run folder (results/run_YYYYmmdd_HHMMSS).
    pub run_dir: PathBuf,
    /// The harness YAML config the run used (config-v2.yaml).
    #[arg(long)]
    pub config: PathBuf,
    /// Your registered handle.
    #[arg(long)]
    pub handle: String,
    /// Your public key (.pub), or the private key: its fingerprint goes in the manifest.
    #[arg(long)]
    pub key: PathBuf,
    /// Public URL of the service you submit to (see its /healthz).
    #[arg(long)]
    pub audience: String,
    /// Output file; defaults to <run folder name>.tar.gz here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Git commit of the harness that produced the run.
    #[arg(long, default_value = "unrecorded")]
    pub harness_commit: String,
    /// vLLM version the harness ran with.
    #[arg(long)]
    pub vllm_version: Option<String>,
    /// State that a power limit below the default was set on purpose.
    #[arg(long)]
    pub declare_power_limit: bool,
    /// A model's config.json, as ID=FILE (repeatable), for a model whose
    /// Hugging Face cache folder is gone; otherwise each model's config is
    /// read from the cache the harness used ($HF_HUB_CACHE, $HF_HOME/hub,
    /// ~/.cache/huggingface/hub). A model outside the service's catalogue
    /// is catalogued from its config; without one it waits for review.
    #[arg(long = "model-config", value_name = "ID=FILE", value_parser = crate::model_configs::parse_given)]
    pub model_configs: Vec<(String, PathBuf)>,
    /// The revision to fetch a model's config.json at, as ID=REV
    /// (repeatable), when neither the cache nor --model-config has it:
    /// fetched from $HF_ENDPOINT (default https://huggingface.co; $HF_TOKEN
    /// for gated repos) at this revision, else the one the cache names,
    /// else main. HF_HUB_OFFLINE=1 fetches nothing.
    #[arg(long = "model-revision", value_name = "ID=REV", value_parser = crate::model_configs::parse_revision)]
    pub model_revisions: Vec<(String, String)>,
}

fn fingerprint_of(path: &PathBuf) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if text.contains("PRIVATE KEY") {
        let key = signing::load_private_key(&text)?;
        return Ok(signing::fingerprint(key.public_key()));
    }
    Ok(signing::fingerprint(&signing::parse_public_key(&text)?))
}

pub async fn run(a: &PackArgs) -> anyhow::Result<()> {
    let run_name = a
        .run_dir
        .canonicalize()
        .with_context(|| format!("{} does not exist", a.run_dir.display()))?
        .file_name()
        .and_then(|n| n.to_str())
        .context("the run folder needs a UTF-8 name")?
        .to_string();
    let read = crate::run_folder::read_run_folder(&a.run_dir)?;
    for folder in &read.empty_folders {
        eprintln!(
            "note: left out {folder}/: the folder is empty (a model that failed at load leaves it so; the harness logs the failure and goes on), so the bundle holds no figures for it"
        );
    }
    let config_yaml = std::fs::read_to_string(&a.config)
        .with_context(|| format!("reading {}", a.config.display()))?;
    let models = llm_models(&config_yaml);
    let hub = crate::model_configs::hub_cache();
    let mut found = crate::model_configs::collect(&models, &a.model_configs, hub.as_deref())?;
    let cached = found.0.len();
    for (id, revision, data) in &found.0 {
        eprintln!(
            "model {id}: config.json ({} bytes{}) packed",
            data.len(),
            revision
                .as_deref()
                .map(|r| format!(", revision {r} from the Hugging Face cache"))
                .unwrap_or_else(|| ", from --model-config".into())
        );
    }
    let endpoint = crate::model_configs::hub_endpoint();
    if let Some(endpoint) = &endpoint {
        crate::model_configs::fetch_missing(
            &mut found,
            endpoint,
            &a.model_revisions,
            hub.as_deref(),
        )
        .await;
        for (id, revision, data) in &found.0[cached..] {
            eprintln!(
                "model {id}: config.json ({} bytes, revision {}) fetched from {endpoint} and packed",
                data.len(),
                revision.as_deref().unwrap_or("?")
            );
        }
    }
    let (model_configs, missing) = found;
    // Each model's model.safetensors.index.json beside its config, from the
    // cache, else the Hub at the same revision (a single-file checkpoint
    // has none: nothing is said of it).
    let mut weights_indexes = Vec::new();
    for (id, revision, _) in &model_configs {
        let Some(revision) = revision else { continue };
        let index = match hub
            .as_deref()
            .and_then(|h| crate::model_configs::index_from_cache(h, id, revision))
        {
            Some(b) => Some(b),
            None => match &endpoint {
                Some(e) => crate::model_configs::fetch_file(
                    e,
                    id,
                    revision,
                    "model.safetensors.index.json",
                )
                .await
                .ok()
                .map(|(_, b)| b),
                None => None,
            },
        };
        if let Some(b) = index {
            eprintln!(
                "model {id}: model.safetensors.index.json ({} bytes) packed",
                b.len()
            );
            weights_indexes.push((id.clone(), b));
        }
    }
    for id in &missing {
        eprintln!(
            "model {id}: no config.json in {}, no --model-config{}; packed without one (a model the service's catalogue lacks then waits for review)",
            hub.as_deref()
                .map(|h| h.display().to_string())
                .unwrap_or_else(|| "the Hugging Face cache".into()),
            if endpoint.is_some() { " and none from the Hub" } else { " and HF_HUB_OFFLINE is set" }
        );
    }
    let input = PackInput {
        run_name: run_name.clone(),
        files: read.files,
        config_file: a
            .config
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("config.yaml")
            .to_string(),
        config_yaml,
        handle: a.handle.clone(),
        key_fingerprint: fingerprint_of(&a.key)?,
        audience: a.audience.clone(),
        harness_commit: a.harness_commit.clone(),
        vllm_version: a.vllm_version.clone(),
        declare_power_limit: a.declare_power_limit,
        created_at: chrono::Utc::now(),
        model_configs,
        weights_indexes,
    };
    let packed = pack::pack(&input)?;
    let g = &packed.manifest.system.gpu;
    if g.power_limit_w < g.default_power_limit_w && !a.declare_power_limit {
        eprintln!(
            "warning: the GPU ran at a power limit of {} W, below its default {} W; pass --declare-power-limit if that was on purpose",
            g.power_limit_w, g.default_power_limit_w
        );
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{run_name}.tar.gz")));
    std::fs::write(&out, &packed.bytes).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "wrote {} ({} bytes, {} files, GPU {}, submission_id {})",
        out.display(),
        packed.bytes.len(),
        packed.manifest.files.len(),
        g.name,
        packed.manifest.submission_id
    );
    Ok(())
}

/// The models the run's YAML config lists (`LLM_MODELS`).
fn llm_models(yaml: &str) -> Vec<String> {
    serde_yaml_ng::from_str::<serde_json::Value>(yaml)
        .ok()
        .and_then(|v| {
            v.get("LLM_MODELS")?.as_array().map(|a| {
                a.iter()
                    .filter_map(|m| m.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default()
}

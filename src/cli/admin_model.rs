//! `admin model add`: a maintainer adds a model the catalogue lacks from
//! its own config.json, through the running service's maintainer API (so
//! the addition is stored with its provenance, logged, and the submissions
//! that waited on it are judged again there). The config comes from a
//! file, or from the Hugging Face Hub (`$HF_ENDPOINT`, default
//! https://huggingface.co) at a stated revision.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Add a model from its config.json (`--config FILE`, or `--revision`
    /// alone to fetch `$HF_ENDPOINT/ID/resolve/REVISION/config.json`). The
    /// service derives its parameters (total and active), shape and
    /// precision by the formula docs/model-figures.md states, refuses
    /// implausible figures (each named), logs the addition with the
    /// config's SHA-256, and judges again each submission that waited on
    /// the model. Prints the figures and each submission judged again;
    /// exits 1 when the service refuses it.
    Add(ModelAddArgs),
}

#[derive(Debug, Args)]
pub struct ModelAddArgs {
    /// Base URL of the service, e.g. http://127.0.0.1:8080
    #[arg(long)]
    pub server: String,
    /// The model's Hugging Face id, ORG/NAME (as the harness names it).
    #[arg(long)]
    pub id: String,
    /// The model's config.json; without it, fetched from $HF_ENDPOINT.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The repo's revision (a commit hash) the config is of; needed to
    /// fetch it, recorded either way.
    #[arg(long)]
    pub revision: Option<String>,
    /// Why, for the transparency log.
    #[arg(long)]
    pub reason: String,
    /// A maintainer token (`wattcounts admin token`).
    #[arg(long, env = "WATTCOUNTS_ADMIN_TOKEN", hide_env_values = true)]
    pub token: String,
}

pub async fn run(cmd: ModelCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ModelCommand::Add(a) => add(&a).await,
    }
}

/// The config's text: the file, or the Hub's copy at the revision.
async fn config_text(a: &ModelAddArgs) -> anyhow::Result<String> {
    if let Some(path) = &a.config {
        return std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()));
    }
    let Some(revision) = &a.revision else {
        anyhow::bail!(
            "give --config FILE, or --revision REV to fetch the config from $HF_ENDPOINT"
        );
    };
    let hub = std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into());
    let (_, bytes) = wattcounts_submit::model_configs::fetch_config(&hub, &a.id, revision).await?;
    Ok(String::from_utf8(bytes)?)
}

async fn add(a: &ModelAddArgs) -> anyhow::Result<ExitCode> {
    let config = match config_text(a).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::from(crate::cli::EXIT_USAGE));
        }
    };
    let body = match super::admin_gpu::post(
        &a.server,
        "models",
        &a.token,
        json!({ "id": a.id, "config": config, "revision": a.revision, "reason": a.reason }),
    )
    .await?
    {
        Ok(body) => body,
        Err(code) => return Ok(code),
    };
    let added = &body["addition"];
    let spec = &added["spec"];
    println!(
        "added '{}' as catalogue model version {}: {:.2} B parameters ({:.2} B active), {} layers, hidden {}, {} heads ({} KV), {}, config.json sha256 {}",
        spec["id"].as_str().unwrap_or(""),
        added["version"],
        spec["params_b"].as_f64().unwrap_or(0.0),
        spec["active_params_b"].as_f64().unwrap_or(0.0),
        spec["layers"],
        spec["hidden_size"],
        spec["attention_heads"],
        spec["kv_heads"],
        added["provenance"]["precision"].as_str().unwrap_or(""),
        added["provenance"]["config_sha256"].as_str().unwrap_or("")
    );
    super::admin_gpu::print_rejudged(&body);
    Ok(ExitCode::SUCCESS)
}

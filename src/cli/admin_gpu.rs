//! `admin gpu add`: a maintainer adds a GPU the catalogue lacks, through
//! the running service's maintainer API (so the addition is stored, logged
//! and the submissions that waited on it are judged again there).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

#[derive(Debug, Subcommand)]
pub enum GpuCommand {
    /// Add a GPU from a JSON file holding one catalogue row: nvml_name (as
    /// nvidia-smi prints it), architecture, form_factor, release_date,
    /// release_year, tdp_w, idle_w, idle_basis, memory_gb, memory_type,
    /// memory_bus_bits, memory_bandwidth_gb_s, fp16_tflops, tensor_tflops,
    /// base_clock_mhz, boost_clock_mhz, transistor_count_m and source (the
    /// datasheet or spec page). `GET /api/v1/catalogue/gpus` shows rows of
    /// that shape. Prints the version it became and each waiting submission
    /// judged again; exits 1 when the service refuses it (each implausible
    /// figure named).
    Add(GpuAddArgs),
}

#[derive(Debug, Args)]
pub struct GpuAddArgs {
    /// Base URL of the service, e.g. http://127.0.0.1:8080
    #[arg(long)]
    pub server: String,
    /// The GPU's row as JSON.
    #[arg(long)]
    pub file: PathBuf,
    /// Why, for the transparency log (e.g. the issue that asked for it).
    #[arg(long)]
    pub reason: String,
    /// A maintainer token (`wattcounts admin token`).
    #[arg(long, env = "WATTCOUNTS_ADMIN_TOKEN", hide_env_values = true)]
    pub token: String,
}

pub async fn run(cmd: GpuCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        GpuCommand::Add(a) => add(&a).await,
    }
}

async fn add(a: &GpuAddArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&a.file)
        .with_context(|| format!("reading {}", a.file.display()))?;
    let gpu: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", a.file.display()))?;
    let body = match post(
        &a.server,
        "gpus",
        &a.token,
        json!({ "gpu": gpu, "reason": a.reason }),
    )
    .await?
    {
        Ok(body) => body,
        Err(code) => return Ok(code),
    };
    let added = &body["addition"];
    println!(
        "added '{}' as catalogue version {} (id {})",
        added["spec"]["nvml_name"].as_str().unwrap_or(""),
        added["version"],
        added["spec"]["id"].as_str().unwrap_or("")
    );
    print_rejudged(&body);
    Ok(ExitCode::SUCCESS)
}

/// POSTs `body` to the maintainer API's catalogue `what` (gpus, models):
/// the answer's JSON, or the exit code of a refusal, printed with each
/// detail it names.
pub(super) async fn post(
    server: &str,
    what: &str,
    token: &str,
    body: Value,
) -> anyhow::Result<Result<Value, ExitCode>> {
    let url = format!(
        "{}/api/v1/admin/catalogue/{what}",
        server.trim_end_matches('/')
    );
    let resp = reqwest::Client::new()
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let e = &body["error"];
        eprintln!(
            "refused ({status}, {}): {}",
            e["code"].as_str().unwrap_or("?"),
            e["message"].as_str().unwrap_or("")
        );
        for d in e["details"].as_array().into_iter().flatten() {
            eprintln!(
                "  {}{} {}",
                d["file"]
                    .as_str()
                    .map(|f| format!("{f} "))
                    .unwrap_or_default(),
                d["pointer"].as_str().unwrap_or(""),
                d["message"].as_str().unwrap_or("")
            );
        }
        return Ok(Err(ExitCode::from(crate::cli::EXIT_REJECTED)));
    }
    Ok(Ok(body))
}

/// The submissions an addition judged again, one line each.
pub(super) fn print_rejudged(body: &Value) {
    let rejudged = body["rejudged"].as_array().cloned().unwrap_or_default();
    println!("{} waiting submission(s) judged again", rejudged.len());
    for r in rejudged {
        println!(
            "  {}: {} -> {}",
            r["submission_id"].as_str().unwrap_or(""),
            r["from"].as_str().unwrap_or(""),
            r["to"].as_str().unwrap_or("")
        );
    }
}

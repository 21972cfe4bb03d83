//! `verify snapshot|receipt|log`: what anyone can check without trusting
//! the service. Exit 0 when everything holds, 1 naming what does not, 2
//! when the input cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use wattcounts_submit::verify_receipt::{self, key_arg, ReceiptArgs};

use wattcounts_rules::tlog::audit::{self, MonitorStep};
use wattcounts_snapshot::verify::{self, Location, LogOptions};

#[derive(Debug, Subcommand)]
pub enum VerifyCommand {
    /// Check a snapshot folder or URL against its manifest.json: every
    /// file's size, SHA-256, row count and Parquet columns; with --log-key,
    /// also that every submission in it is in the transparency log and
    /// that the log only grew since the previous snapshot.
    Snapshot(SnapshotArgs),
    /// Check a receipt's transparency-log proof offline: the leaf matches
    /// the receipt (and --bundle's bytes), the proof puts it in the tree,
    /// and the checkpoint is signed by the log key.
    Receipt(ReceiptArgs),
    /// Monitor a service's log: fetch its checkpoint, check the signature
    /// and that it extends the one kept in --state, then keep the new one.
    /// Exit 1 (and keep the old state) when the log forked or shrank.
    Log(LogArgs),
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// A snapshot folder, or a URL: https://HOST/snapshots/ID,
    /// https://HOST/snapshots/latest, or https://HOST (its latest snapshot).
    pub target: String,
    /// The SHA-256 of manifest.json you cited or were given; without it the
    /// manifest found is trusted and only the files are checked against it.
    #[arg(long)]
    pub manifest_sha256: Option<String>,
    /// The log's verifier key (the text at /log/key, or a file holding it):
    /// also check the snapshot against the transparency log.
    #[arg(long)]
    pub log_key: Option<String>,
    /// The previous snapshot you hold (folder or URL): check that this one's
    /// log extends exactly that one's.
    #[arg(long, requires = "log_key")]
    pub previous: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The service, e.g. https://wattcounts.example
    #[arg(long)]
    pub server: String,
    /// Where the monitor keeps the last checkpoint it accepted (created on
    /// the first run).
    #[arg(long)]
    pub state: PathBuf,
    /// The log's verifier key (text or file). Needed on the first run; later
    /// runs use the one kept in --state and refuse a different one.
    #[arg(long)]
    pub log_key: Option<String>,
}

pub async fn run(cmd: VerifyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        VerifyCommand::Snapshot(a) => snapshot(a).await,
        VerifyCommand::Receipt(a) => verify_receipt::run(&a),
        VerifyCommand::Log(a) => monitor(a).await,
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct MonitorState {
    verifier_key: String,
    checkpoint: String,
    checked_at: String,
}

async fn get_text(client: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("GET {url}: {e}"))?;
    anyhow::ensure!(
        resp.status().is_success(),
        "GET {url}: HTTP {}",
        resp.status()
    );
    Ok(resp.text().await?)
}

async fn monitor(a: LogArgs) -> anyhow::Result<ExitCode> {
    let kept: Option<MonitorState> = match std::fs::read(&a.state) {
        Ok(b) => Some(serde_json::from_slice(&b).map_err(|e| {
            anyhow::anyhow!("{} is not a monitor state file: {e}", a.state.display())
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => anyhow::bail!("reading {}: {e}", a.state.display()),
    };
    let key = match (&a.log_key, &kept) {
        (Some(k), Some(s)) => {
            let k = key_arg(k)?;
            anyhow::ensure!(
                k == s.verifier_key,
                "--log-key {k} is not the key {} kept in {}",
                s.verifier_key,
                a.state.display()
            );
            k
        }
        (Some(k), None) => key_arg(k)?,
        (None, Some(s)) => s.verifier_key.clone(),
        (None, None) => anyhow::bail!(
            "the first run needs --log-key (the verifier key the service publishes at /log/key, from a source you trust)"
        ),
    };
    let base = a.server.trim_end_matches('/');
    let client = reqwest::Client::new();
    let signed = get_text(&client, &format!("{base}/log/checkpoint")).await?;
    let kept_text = kept.as_ref().map(|s| s.checkpoint.as_str());
    // The proof the step needs, if the log grew since the kept checkpoint.
    let sizes = match (
        kept_text.and_then(|k| {
            wattcounts_rules::tlog::checkpoint::open_checkpoint(k.as_bytes(), &key).ok()
        }),
        wattcounts_rules::tlog::checkpoint::open_checkpoint(signed.as_bytes(), &key).ok(),
    ) {
        (Some(old), Some(new)) => audit::proof_needed(Some(&old), &new),
        _ => None,
    };
    let proof: Vec<String> = match sizes {
        Some((from, to)) => {
            let url = format!("{base}/api/v1/log/consistency?from={from}&to={to}");
            let body: serde_json::Value = serde_json::from_str(&get_text(&client, &url).await?)
                .map_err(|e| anyhow::anyhow!("GET {url}: not JSON: {e}"))?;
            body["hashes"]
                .as_array()
                .map(|v| {
                    v.iter()
                        .filter_map(|h| h.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        }
        None => Vec::new(),
    };
    match audit::monitor_step(kept_text, &signed, &key, &proof) {
        Ok((cp, step)) => {
            let state = MonitorState {
                verifier_key: key.clone(),
                checkpoint: signed,
                checked_at: wattcounts_rules::timestamp::ts(&chrono::Utc::now()),
            };
            let tmp = a.state.with_extension("tmp");
            std::fs::write(&tmp, serde_json::to_vec_pretty(&state)?)?;
            std::fs::rename(&tmp, &a.state)?;
            match step {
                MonitorStep::First { size } => println!(
                    "log '{}': first checkpoint kept ({size} leaves); later runs check it only grows",
                    cp.origin()
                ),
                MonitorStep::Unchanged { size } => {
                    println!("log '{}': unchanged at {size} leaves", cp.origin())
                }
                MonitorStep::Grew { from, to } => println!(
                    "log '{}': grew from {from} to {to} leaves, consistent with the kept checkpoint",
                    cp.origin()
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(alarm) => {
            println!("ALARM  {base}: {alarm}");
            println!(
                "(the kept checkpoint in {} is unchanged: keep it as evidence)",
                a.state.display()
            );
            Ok(ExitCode::from(super::EXIT_REJECTED))
        }
    }
}

async fn snapshot(a: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let location = Location::parse(&a.target);
    let log = LogOptions {
        verifier_key: a.log_key.as_deref().map(key_arg).transpose()?,
        previous: a.previous.as_deref().map(Location::parse),
    };
    let report = verify::verify(&location, a.manifest_sha256.as_deref(), &log, |c| {
        if c.problems.is_empty() {
            println!(
                "ok       {:<24} {:>12} bytes{}",
                c.path,
                c.bytes.unwrap_or(0),
                c.rows.map_or(String::new(), |r| format!(", {r} rows"))
            );
        } else {
            for p in &c.problems {
                println!("DIFFERS  {:<24} {p}", c.path);
            }
        }
    })
    .await?;
    for p in &report.manifest_problems {
        println!("DIFFERS  manifest.json            {p}");
    }
    if let Some(l) = &report.log {
        if l.problems.is_empty() {
            println!(
                "ok       transparency log         {} submissions are leaves of the signed checkpoint of {} leaves{}",
                l.submissions,
                l.size,
                l.previous_size.map_or(String::new(), |p| format!(
                    "; the log extends the previous snapshot's {p} leaves"
                ))
            );
        }
        for p in &l.problems {
            println!("DIFFERS  transparency log         {p}");
        }
    }
    let bad = report
        .files
        .iter()
        .filter(|f| !f.problems.is_empty())
        .count()
        + usize::from(!report.manifest_problems.is_empty())
        + usize::from(report.log.as_ref().is_some_and(|l| !l.problems.is_empty()));
    if report.ok() {
        println!(
            "snapshot {} verified: {} files match manifest.json (sha256 {}){}",
            report.snapshot_id,
            report.files.len(),
            report.manifest_sha256,
            if report.log.is_some() {
                ", and the transparency log holds every submission"
            } else {
                ""
            }
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "snapshot {}: {bad} file(s) differ from manifest.json (sha256 {})",
            report.snapshot_id, report.manifest_sha256
        );
        Ok(ExitCode::from(super::EXIT_REJECTED))
    }
}

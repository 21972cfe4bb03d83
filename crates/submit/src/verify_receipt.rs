//! `verify receipt`: a receipt's transparency-log proof checked offline,
//! against the log key the submitter trusts (and the bundle's own bytes).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use wattcounts_rules::bundle::unpack;
use wattcounts_rules::digest::sha256_hex;
use wattcounts_rules::receipt::Receipt;
use wattcounts_rules::tlog::audit;
use wattcounts_rules::tlog::checkpoint;

#[derive(Debug, Args)]
pub struct ReceiptArgs {
    /// The receipt JSON `wattcounts submit` printed (or GET /api/v1/submissions/ID).
    pub receipt: PathBuf,
    /// The log's verifier key (the text at /log/key, or a file holding it).
    #[arg(long)]
    pub log_key: String,
    /// The bundle the receipt is for: its SHA-256 must be the leaf's.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
}

/// A verifier key given as text or as a file holding it.
pub fn key_arg(arg: &str) -> anyhow::Result<String> {
    let p = std::path::Path::new(arg);
    let text = if p.is_file() {
        std::fs::read_to_string(p)?
    } else {
        arg.to_string()
    };
    let key = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(
        checkpoint::verifier_origin(&key).is_ok(),
        "'{arg}' is not a log verifier key (name+id+key, as /log/key shows) nor a file holding one"
    );
    Ok(key)
}

/// Checks the receipt (and the bundle) offline; prints what it proves or
/// NOT VERIFIED and why.
pub fn run(a: &ReceiptArgs) -> anyhow::Result<ExitCode> {
    let key = key_arg(&a.log_key)?;
    let text = std::fs::read(&a.receipt)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", a.receipt.display()))?;
    let r: Receipt = serde_json::from_slice(&text)
        .map_err(|e| anyhow::anyhow!("{} is not a receipt: {e}", a.receipt.display()))?;
    let bundle = match &a.bundle {
        Some(p) => {
            let bytes =
                std::fs::read(p).map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))?;
            // A bundle the service would refuse today (bytes after its tar)
            // is not vouched for, whatever the log says of its digest.
            if let Err(r) = unpack::check_stored(&bytes) {
                println!("NOT VERIFIED  {}: {r}", p.display());
                return Ok(ExitCode::from(crate::EXIT_REJECTED));
            }
            Some(sha256_hex(&bytes))
        }
        None => None,
    };
    match audit::verify_receipt(&r, &key, bundle.as_deref()) {
        Ok(f) => {
            println!(
                "receipt verified: submission {} is leaf {} of the log '{}' (checkpoint of {} leaves signed by {key}){}",
                r.submission_id,
                f.index,
                f.origin,
                f.tree_size,
                if bundle.is_some() { "; the bundle's SHA-256 is the leaf's" } else { "" }
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("NOT VERIFIED  {}: {e}", a.receipt.display());
            Ok(ExitCode::from(crate::EXIT_REJECTED))
        }
    }
}

//! `peer import` and `peer list`: published measurements of other
//! benchmarks (issue #39), read from their own files and stored as an
//! origin of their own, never merged with Watt Counts groups. Exit
//! statuses as `submit`'s: 0 stored (or unchanged), 1 refused (a file or
//! figure breaks a rule; nothing is stored), 2 a usage error or a database
//! that cannot be reached.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use wattcounts_rules::peer::{PeerImportOutcome, PeerSource};
use wattcounts_service::peers::{PeerFiles, PeerImportError, PeerImportRequest};

use super::db::StoreArgs;

#[derive(Debug, Subcommand)]
pub enum PeerCommand {
    /// Import a published peer release from its folder, as published. Every
    /// file and figure is checked first (units, ranges, the GPU catalogue);
    /// any error names the file and the JSON pointer, and stores nothing.
    /// The same files imported again change nothing; a newer release is
    /// stored beside the older one, which stays readable, and a running
    /// `serve` on the same database shows it within a second or two. Each
    /// import is a leaf of the transparency log. A new data dir gets its
    /// database, as `serve` creates it. Exit 0 stored or unchanged, 1
    /// refused (nothing stored), 2 usage or database error.
    ///
    /// Example, ML.ENERGY Leaderboard v3 from a checkout of
    /// github.com/ml-energy/leaderboard:
    ///   wattcounts peer import mlenergy-v3 leaderboard/public/data --source-ref $(git -C leaderboard rev-parse HEAD)
    ///
    /// ML.ENERGY Leaderboard v2 (its terms are disputed: see
    /// docs/operating.md before importing it):
    ///   wattcounts peer import mlenergy-v2 leaderboard-v2/data/llm_text_generation --source-ref $(git -C leaderboard-v2 rev-parse HEAD)
    ///
    /// The 2023 leaderboard (v1), whose files name a GPU only as "A100" or
    /// "V100", needs the board each was stated (one whose memory cannot
    /// hold the files' models at FP16 is refused):
    ///   wattcounts peer import mlenergy-v1 leaderboard-v2/data/legacy --source-ref c3af7f3 \
    ///     --gpu A100="NVIDIA A100-SXM4-40GB" --gpu V100="Tesla V100-SXM2-32GB"
    Import(ImportArgs),
    /// The stored peer releases, with their provenance and file digests.
    List(StoreArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Which dataset: mlenergy-v3 (github.com/ml-energy/leaderboard,
    /// public/data), mlenergy-v2 (github.com/ml-energy/leaderboard-v2,
    /// data/llm_text_generation) or mlenergy-v1 (the same repository,
    /// data/legacy).
    pub source: String,
    /// The published folder (for mlenergy-v3: the one holding index.json and tasks/).
    pub folder: PathBuf,
    /// FAMILY=BOARD: the catalogue GPU (NVML name) a GPU the files name only
    /// by family was, e.g. A100="NVIDIA A100-SXM4-40GB" (mlenergy-v1 only;
    /// repeat per family). Recorded in the release's label and identity.
    #[arg(long = "gpu", value_name = "FAMILY=BOARD")]
    pub gpus: Vec<String>,
    /// The commit (or release date) of the files, as you fetched them.
    #[arg(long)]
    pub source_ref: String,
    /// When you fetched them (RFC 3339 or YYYY-MM-DD); today by default.
    #[arg(long)]
    pub retrieved: Option<String>,
    /// The licence text to store with the release; by default the text of
    /// the licence the publisher states (Apache-2.0 for mlenergy-v3).
    #[arg(long)]
    pub licence_file: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub async fn run(cmd: PeerCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PeerCommand::Import(a) => import(a).await,
        PeerCommand::List(a) => list(&a).await.map(|()| ExitCode::SUCCESS),
    }
}

fn parse_date(s: &str) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    let day = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map_err(|_| anyhow::anyhow!("--retrieved '{s}' is neither RFC 3339 nor YYYY-MM-DD"))?;
    Ok(day.and_hms_opt(0, 0, 0).expect("midnight").and_utc())
}

async fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let Some(source) = PeerSource::parse(&a.source) else {
        eprintln!(
            "error: no peer dataset '{}'; known: {}",
            a.source,
            PeerSource::ALL.map(|p| p.info().slug).join(", ")
        );
        return Ok(ExitCode::from(super::EXIT_USAGE));
    };
    let retrieved_at = match &a.retrieved {
        Some(s) => parse_date(s)?,
        None => chrono::Utc::now(),
    };
    let licence_text = match &a.licence_file {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("--licence-file {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let mut gpus = wattcounts_rules::peer::GpuStatements::new();
    for g in &a.gpus {
        let Some((family, board)) = g.split_once('=') else {
            eprintln!(
                "error: --gpu {g}: FAMILY=BOARD is wanted, e.g. A100=\"NVIDIA A100-SXM4-40GB\""
            );
            return Ok(ExitCode::from(super::EXIT_USAGE));
        };
        if gpus
            .insert(family.trim().to_string(), board.trim().to_string())
            .is_some()
        {
            eprintln!("error: --gpu {}: stated twice", family.trim());
            return Ok(ExitCode::from(super::EXIT_USAGE));
        }
    }
    let service = import_service(&a.store).await?;
    let start = std::time::Instant::now();
    eprintln!(
        "reading {} from {} ...",
        source.info().name,
        a.folder.display()
    );
    let report = match service
        .import_peer(PeerImportRequest {
            source,
            files: PeerFiles::Folder(a.folder.clone()),
            source_ref: a.source_ref.clone(),
            retrieved_at,
            licence_text,
            actor: "cli".into(),
            gpus,
        })
        .await
    {
        Ok(r) => r,
        // The files broke a rule: refused, as `submit` refuses a bundle.
        Err(e @ PeerImportError::Read(_)) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(super::EXIT_REJECTED));
        }
        // Not a folder, no --source-ref: the command was asked wrongly.
        Err(e @ PeerImportError::Usage(_)) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(super::EXIT_USAGE));
        }
        Err(e) => return Err(e.into()),
    };
    let mut lines = Vec::new();
    for f in &report.files {
        lines.push(format!(
            "read {} ({} bytes, sha256 {})",
            f.path, f.bytes, f.sha256
        ));
    }
    for s in &report.skipped {
        lines.push(format!("skipped: {s}"));
    }
    lines.push(match report.outcome {
        PeerImportOutcome::Stored { release_id, log_index } => format!(
            "imported {} release {} as {} (release {release_id}): {} configurations, files sha256 {}, log leaf {log_index}, in {:.1} s",
            source.info().name,
            report.label,
            report.origin,
            report.configurations,
            report.files_sha256,
            start.elapsed().as_secs_f64()
        ),
        PeerImportOutcome::Unchanged { release_id } => format!(
            "unchanged: these files (sha256 {}) are stored already as release {release_id} of {}; nothing was written",
            report.files_sha256, report.origin
        ),
    });
    print_lines(&lines)?;
    Ok(ExitCode::SUCCESS)
}

/// The service an import writes through. `serve` creates the data dir and
/// its SQLite database (migrated) on first start, and so does an import,
/// the same way: a deployment's first command may be `peer import`. The
/// GPUs maintainers added join the catalogue, as `serve` judges by them.
/// (`peer list` opens only a database that exists: nothing is listed in
/// one it would create.)
async fn import_service(a: &StoreArgs) -> anyhow::Result<wattcounts_service::Service> {
    std::fs::create_dir_all(&a.data_dir)
        .with_context(|| format!("creating {}", a.data_dir.display()))?;
    let url = a.database_url.clone().unwrap_or_else(|| {
        format!(
            "sqlite:{}",
            crate::config::sqlite_path(&a.data_dir).display()
        )
    });
    // Opening creates and migrates it, as `serve` opens it.
    let service = super::db::maintenance_service(&StoreArgs {
        data_dir: a.data_dir.clone(),
        database_url: Some(url),
        blob_url: a.blob_url.clone(),
    })
    .await?;
    service.load_catalogue_additions().await?;
    Ok(service)
}

/// Writes `lines` to stdout. A reader that stopped reading (`peer list |
/// head`) has closed the pipe: the rest is not wanted, which is no error
/// (a `println!` would panic there).
fn print_lines(lines: &[String]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let mut written = Ok(());
    for l in lines {
        written = writeln!(out, "{l}");
        if written.is_err() {
            break;
        }
    }
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

async fn list(a: &StoreArgs) -> anyhow::Result<()> {
    let service = super::db::maintenance_service(a).await?;
    let releases = service.peer_releases().await?;
    let mut lines = Vec::new();
    if releases.is_empty() {
        lines.push("no peer release is imported (wattcounts peer import --help)".to_string());
    }
    for r in releases {
        lines.push(format!(
            "release {} · {} {} · {} configurations · {} {} @ {} · licence {} · retrieved {} · imported {} by {} · files sha256 {} · log leaf {}",
            r.id,
            r.source.origin(),
            r.label,
            r.configurations,
            r.source_repository,
            r.source_path,
            r.source_ref,
            r.licence,
            r.retrieved_at.format("%Y-%m-%d"),
            r.imported_at.format("%Y-%m-%dT%H:%M:%SZ"),
            r.actor,
            r.files_sha256,
            r.log_index.map_or("none".to_string(), |i| i.to_string())
        ));
        for f in service.peer_files(r.id).await? {
            lines.push(format!(
                "  {} {} bytes sha256 {}",
                f.path, f.bytes, f.sha256
            ));
        }
    }
    print_lines(&lines)?;
    Ok(())
}

//! `snapshot create|list` (maintainers) and `verify snapshot` (anyone).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::snapshot::verify::{self, Location};
use crate::snapshot::{self, Library};
use crate::store::blobs::BlobStore;

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Publish an immutable snapshot of the accepted data: runs, configurations
    /// (Parquet + CSV), submissions.csv, a dataset card, CITATION.cff and
    /// manifest.json, in <data-dir>/snapshots/<id>/. The running service lists
    /// it at once.
    Create(CreateArgs),
    /// List the published snapshots, newest first.
    List(StorageArgs),
}

#[derive(Debug, Args)]
pub struct StorageArgs {
    /// The service's data folder (snapshots go to <data-dir>/snapshots).
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Database URL; defaults to sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Also write power_traces-<gpu>.parquet (one per GPU): every 10 Hz power sample, read back
    /// from the stored bundles (about 10× the size of the rest).
    #[arg(long)]
    pub traces: bool,
    /// The service's public origin, for links in the card and CITATION.cff.
    #[arg(long, env = "WATTCOUNTS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Who publishes it, recorded in the manifest.
    #[arg(long, default_value = "maintainer (command line)")]
    pub by: String,
}

#[derive(Debug, Subcommand)]
pub enum VerifyCommand {
    /// Check a snapshot folder or URL against its manifest.json: every
    /// file's size, SHA-256, row count and Parquet columns. Exit 0 when all
    /// match, 1 naming each file that differs, 2 when it cannot be read.
    Snapshot(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A snapshot folder, or a URL: https://HOST/snapshots/ID,
    /// https://HOST/snapshots/latest, or https://HOST (its latest snapshot).
    pub target: String,
    /// The SHA-256 of manifest.json you cited or were given; without it the
    /// manifest found is trusted and only the files are checked against it.
    #[arg(long)]
    pub manifest_sha256: Option<String>,
}

fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

pub async fn run(cmd: SnapshotCommand) -> anyhow::Result<()> {
    match cmd {
        SnapshotCommand::Create(a) => {
            let data_dir = &a.storage.data_dir;
            let url = crate::config::existing_database_url(data_dir, a.database_url.as_deref())?;
            let store = crate::store::open(&url).await?;
            let blobs = BlobStore::new(data_dir.join("blobs"))?;
            let library = Library::new(data_dir.join("snapshots"))?;
            let options = snapshot::Options {
                traces: a.traces,
                created_by: a.by.clone(),
                public_url: a.public_url.clone(),
            };
            let start = std::time::Instant::now();
            let created =
                snapshot::create(store.as_ref(), &blobs, &library, &options, move |line| {
                    eprintln!("[{:>6.1} s] {line}", start.elapsed().as_secs_f64())
                })
                .await?;
            let m = &created.published.manifest;
            println!("snapshot {}", m.snapshot_id);
            for f in &m.files {
                println!(
                    "  {:<24} {:>10} {:>12}  sha256 {}",
                    f.path,
                    f.rows.map_or(String::new(), |r| format!("{r} rows")),
                    mb(f.bytes),
                    f.sha256
                );
            }
            println!(
                "  {:<24} {:>10} {:>12}  sha256 {}  (cite this)",
                "manifest.json",
                "",
                mb(created.published.manifest_bytes),
                created.published.manifest_sha256
            );
            println!(
                "total {} in {:.2} s (reading the database {:.2} s, writing {:.2} s)",
                mb(m.total_bytes() + created.published.manifest_bytes),
                (created.read_time + created.write_time).as_secs_f64(),
                created.read_time.as_secs_f64(),
                created.write_time.as_secs_f64()
            );
            Ok(())
        }
        SnapshotCommand::List(a) => {
            let library = Library::new(a.data_dir.join("snapshots"))?;
            let list = library.list()?;
            if list.is_empty() {
                println!("no snapshots in {}", library.root().display());
            }
            for p in list {
                let m = &p.manifest;
                println!(
                    "{}  {}  {} submissions, {} iterations{}  {}  manifest sha256 {}",
                    m.snapshot_id,
                    m.created_at,
                    m.coverage.submissions,
                    m.coverage.iterations,
                    if m.includes_power_traces {
                        ", traces"
                    } else {
                        ""
                    },
                    mb(m.total_bytes()),
                    p.manifest_sha256
                );
            }
            Ok(())
        }
    }
}

pub async fn verify(cmd: VerifyCommand) -> anyhow::Result<ExitCode> {
    let VerifyCommand::Snapshot(a) = cmd;
    let location = Location::parse(&a.target);
    let report = verify::verify(&location, a.manifest_sha256.as_deref(), |c| {
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
    let bad = report
        .files
        .iter()
        .filter(|f| !f.problems.is_empty())
        .count()
        + usize::from(!report.manifest_problems.is_empty());
    if report.ok() {
        println!(
            "snapshot {} verified: {} files match manifest.json (sha256 {})",
            report.snapshot_id,
            report.files.len(),
            report.manifest_sha256
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

//! `db copy` (a SQLite deployment's data into PostgreSQL), `db rebuild`
//! (every derived table from the stored submissions) and `db audit-bundles`
//! (stored bundles the unpacker refuses today).

use clap::{Args, Subcommand};

use wattcounts_store::postgres::PgStore;
use wattcounts_store::sqlite::SqliteStore;

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Copy every submitter, key, submission, run, check result and
    /// moderation event from a SQLite database into an empty PostgreSQL one
    /// (created tables, ids kept, one transaction). Raw bundles stay in the
    /// data dir: give the new instances the same --data-dir.
    Copy(CopyArgs),
    /// Recompute every derived table (protocols, run-content digests,
    /// leaderboard groups, dataset counters) from the stored submissions,
    /// in one transaction. Protocols and digests that were never recorded
    /// are derived from the stored bundles (each checked against its
    /// sha256). Reports submissions whose run content an older one holds;
    /// those join no group. `serve` runs this by itself after an upgrade.
    Rebuild(StoreArgs),
    /// Read every stored bundle again under today's unpacking rules (one
    /// gzip member, nothing after the tar's end-of-archive marker, clean
    /// entry paths) and list those that break one, with the submission,
    /// the byte offset and what is there. Changes nothing. Exit 1 when
    /// any is found.
    AuditBundles(StoreArgs),
}

/// Where a deployment keeps its data (as `serve` is given it).
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The service's data dir (the bundles are under <data-dir>/blobs).
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: std::path::PathBuf,
    /// sqlite:PATH or postgres://...; defaults to sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    /// The service's bucket, s3://BUCKET[/PREFIX], when bundles are kept there.
    #[arg(long, env = "WATTCOUNTS_BLOB_URL")]
    pub blob_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Source, e.g. sqlite:data/wattcounts.db
    #[arg(long)]
    pub from: String,
    /// Destination, e.g. postgres://wattcounts@db.example/wattcounts
    #[arg(long)]
    pub to: String,
}

pub async fn run(cmd: DbCommand) -> anyhow::Result<std::process::ExitCode> {
    match cmd {
        DbCommand::Rebuild(a) => rebuild(&a).await.map(|()| std::process::ExitCode::SUCCESS),
        DbCommand::AuditBundles(a) => audit_bundles(&a).await,
        DbCommand::Copy(a) => {
            if !a.from.starts_with("sqlite:") {
                anyhow::bail!("--from must be a sqlite: URL");
            }
            if !(a.to.starts_with("postgres:") || a.to.starts_with("postgresql:")) {
                anyhow::bail!("--to must be a postgres:// URL");
            }
            let from = SqliteStore::open(&a.from).await?;
            let to = PgStore::open(&a.to, None).await?;
            let start = std::time::Instant::now();
            let report =
                wattcounts_store::copy::sqlite_to_postgres(from.pool(), to.pool(), |table, n| {
                    eprintln!("copied {n:>9} rows of {table}");
                })
                .await?;
            let total: u64 = report.iter().map(|r| r.1).sum();
            eprintln!(
                "done: {total} rows in {:.1} s; start serve with --database-url {}",
                start.elapsed().as_secs_f64(),
                a.to
            );
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}

/// A service over a deployment's data for maintenance: it checks no
/// audience and runs no rule again.
pub(crate) async fn maintenance_service(
    a: &StoreArgs,
) -> anyhow::Result<wattcounts_service::Service> {
    let url = crate::config::existing_database_url(&a.data_dir, a.database_url.as_deref())?;
    let store = wattcounts_store::open(&url).await?;
    let (blobs, _) = crate::config::file_stores(&a.data_dir, a.blob_url.as_deref())?;
    Ok(wattcounts_service::Service::new(
        store,
        blobs,
        wattcounts_service::analysis::IngestConfig {
            public_url: String::new(),
            unpack: Default::default(),
            thresholds: Default::default(),
        },
    ))
}

async fn audit_bundles(a: &StoreArgs) -> anyhow::Result<std::process::ExitCode> {
    let service = maintenance_service(a).await?;
    let start = std::time::Instant::now();
    let audit = service
        .audit_bundles(|line| eprintln!("[{:>6.1} s] {line}", start.elapsed().as_secs_f64()))
        .await?;
    for f in &audit.findings {
        let who = f.submission.map_or_else(
            || "no submission".to_string(),
            |id| format!("submission {id}"),
        );
        println!("refused: {who}, {}: {} {}", f.blob_path, f.code, f.message);
    }
    println!(
        "audited {} stored bundles ({:.1} MB) in {:.1} s: {} break a rule of today's unpacker; nothing was changed",
        audit.checked,
        audit.bytes as f64 / 1e6,
        start.elapsed().as_secs_f64(),
        audit.findings.len()
    );
    Ok(if audit.findings.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(super::EXIT_REJECTED)
    })
}

async fn rebuild(a: &StoreArgs) -> anyhow::Result<()> {
    let service = maintenance_service(a).await?;
    let start = std::time::Instant::now();
    let report = service
        .rebuild(|line| eprintln!("[{:>6.1} s] {line}", start.elapsed().as_secs_f64()))
        .await?;
    for (dup, first) in &report.duplicates {
        println!(
            "duplicate: submission {dup} holds the same run content as {first}; it joins no group"
        );
    }
    println!(
        "rebuilt in {:.1} s: {} submissions ({} derived from their bundles), {} configurations, {} groups, {} duplicate(s)",
        start.elapsed().as_secs_f64(),
        report.submissions,
        report.derived,
        report.configurations,
        report.groups,
        report.duplicates.len()
    );
    Ok(())
}

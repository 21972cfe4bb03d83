//! `db copy` (a SQLite deployment's data into PostgreSQL), `db rebuild`
//! (every derived table from the stored submissions), `db audit-bundles`
//! (stored bundles the unpacker refuses today), and `db backup` / `db
//! restore` (the whole deployment into a folder and back).

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
    /// Back up the whole deployment, while `serve` runs, into a new folder:
    /// the database as one SQLite file consistent as of one moment (from
    /// SQLite or PostgreSQL), every bundle it names and every published
    /// snapshot's files, each checked against its SHA-256, and backup.json
    /// (written last) listing them with their digests and the log's public
    /// key. The log's signing key only with --with-log-key.
    Backup(BackupArgs),
    /// Restore a `db backup` folder into an empty deployment: checks every
    /// digest first (a damaged backup writes nothing), then fills a new
    /// SQLite file or an empty PostgreSQL database (migrating a backup of
    /// an older version), the bundles and the snapshots, and the log key
    /// when the backup holds it. Start `serve` on the same flags after.
    Restore(RestoreArgs),
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// A new (or empty) folder to write the backup into.
    #[arg(long)]
    pub to: std::path::PathBuf,
    /// Also copy the transparency log's signing key (a secret: keep the
    /// folder as safe as the key). Without it, keep <data-dir>/log.key (or
    /// --log-key-file) apart: a restored deployment must sign with it.
    #[arg(long)]
    pub with_log_key: bool,
    /// The log key's file when it is not <data-dir>/log.key.
    #[arg(long, env = "WATTCOUNTS_LOG_KEY_FILE")]
    pub log_key_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A folder `db backup` wrote.
    #[arg(long)]
    pub from: std::path::PathBuf,
    /// The new deployment's data dir (bundles and snapshots go under it;
    /// the database too unless --database-url names an empty PostgreSQL one).
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: std::path::PathBuf,
    /// postgres://… of an empty database; defaults to a new
    /// sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    /// s3://BUCKET[/PREFIX] when the new deployment keeps its files there.
    #[arg(long, env = "WATTCOUNTS_BLOB_URL")]
    pub blob_url: Option<String>,
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
        DbCommand::Backup(a) => backup(&a).await.map(|()| std::process::ExitCode::SUCCESS),
        DbCommand::Restore(a) => restore(&a).await.map(|()| std::process::ExitCode::SUCCESS),
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

async fn backup(a: &BackupArgs) -> anyhow::Result<()> {
    use wattcounts_service::backup::{self, Database};
    let url =
        crate::config::existing_database_url(&a.store.data_dir, a.store.database_url.as_deref())?;
    let (blobs, library) =
        crate::config::file_stores(&a.store.data_dir, a.store.blob_url.as_deref())?;
    let key = a
        .log_key_file
        .clone()
        .unwrap_or_else(|| a.store.data_dir.join("log.key"));
    let key = a.with_log_key.then_some(key.as_path());
    let start = std::time::Instant::now();
    let progress = |line: &str| eprintln!("[{:>6.1} s] {line}", start.elapsed().as_secs_f64());
    // Either store, opened as `serve` opens it, for as long as the backup.
    let (sqlite, pg);
    let db = if url.starts_with("sqlite:") {
        sqlite = SqliteStore::open(&url).await?;
        Database::Sqlite(&sqlite)
    } else {
        pg = PgStore::open(&url, None).await?;
        Database::Postgres(&pg)
    };
    let report = backup::backup(db, &blobs, &library, &a.to, key, progress).await?;
    println!(
        "backed up {} submissions ({} bundles, {} snapshot files, {:.1} MB) and a log of {} leaves into {} in {:.1} s{}",
        report.submissions,
        report.bundles,
        report.snapshot_files,
        report.bytes as f64 / 1e6,
        report.log_size,
        a.to.display(),
        start.elapsed().as_secs_f64(),
        if key.is_some() {
            "; the log's signing key is in it: keep the folder secret"
        } else {
            "; the log's signing key is not in it: keep it apart (--with-log-key to include it)"
        }
    );
    Ok(())
}

async fn restore(a: &RestoreArgs) -> anyhow::Result<()> {
    use wattcounts_service::backup::{self, RestoreDb, Target};
    let (blobs, library) = crate::config::file_stores(&a.data_dir, a.blob_url.as_deref())?;
    let sqlite_file = crate::config::sqlite_path(&a.data_dir);
    let pg = match a.database_url.as_deref() {
        Some(u) if u.starts_with("postgres:") || u.starts_with("postgresql:") => {
            Some(PgStore::open(u, None).await?)
        }
        Some(u) if u.starts_with("sqlite:") => anyhow::bail!(
            "--database-url {u}: a restore writes SQLite to <data-dir>/wattcounts.db; leave --database-url out"
        ),
        Some(u) => anyhow::bail!("--database-url {u}: expected postgres://…"),
        None => None,
    };
    let target = Target {
        database: match &pg {
            Some(pg) => RestoreDb::Postgres(pg),
            None => RestoreDb::SqliteFile(&sqlite_file),
        },
        blobs: blobs.objects(),
        snapshots: library.objects(),
        log_key: a.data_dir.join("log.key"),
        scratch: a.data_dir.join("scratch"),
    };
    let start = std::time::Instant::now();
    let report = backup::restore(&a.from, &target, |line| {
        eprintln!("[{:>6.1} s] {line}", start.elapsed().as_secs_f64())
    })
    .await?;
    let m = &report.manifest;
    println!(
        "restored {} submissions, {} files and a log of {} leaves (backup of {}) in {:.1} s",
        m.submissions,
        report.files,
        m.log_size,
        m.created_at,
        start.elapsed().as_secs_f64()
    );
    if report.log_key_restored {
        println!("the log key is at {}", a.data_dir.join("log.key").display());
    } else if !a.data_dir.join("log.key").exists() {
        println!(
            "the backup holds no log key: put the deployment's key at {} (or give serve --log-key-file); \
             serve refuses any other key, since the log's verifier key is {}",
            a.data_dir.join("log.key").display(),
            m.log_verifier_key.as_deref().unwrap_or("not set yet")
        );
    }
    println!(
        "start it with: wattcounts serve --data-dir {}{}",
        a.data_dir.display(),
        a.database_url
            .as_deref()
            .map(|u| format!(" --database-url {u}"))
            .unwrap_or_default()
    );
    Ok(())
}

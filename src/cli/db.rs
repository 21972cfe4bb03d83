//! `db copy`: move a SQLite deployment's data into PostgreSQL.

use clap::{Args, Subcommand};

use crate::store::postgres::PgStore;
use crate::store::sqlite::SqliteStore;

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Copy every submitter, key, submission, run, check result and
    /// moderation event from a SQLite database into an empty PostgreSQL one
    /// (created tables, ids kept, one transaction). Raw bundles stay in the
    /// data dir: give the new instances the same --data-dir.
    Copy(CopyArgs),
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

pub async fn run(cmd: DbCommand) -> anyhow::Result<()> {
    match cmd {
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
                crate::store::copy::sqlite_to_postgres(from.pool(), to.pool(), |table, n| {
                    eprintln!("copied {n:>9} rows of {table}");
                })
                .await?;
            let total: u64 = report.iter().map(|r| r.1).sum();
            eprintln!(
                "done: {total} rows in {:.1} s; start serve with --database-url {}",
                start.elapsed().as_secs_f64(),
                a.to
            );
            Ok(())
        }
    }
}

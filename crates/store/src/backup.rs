//! The database side of `db backup` and `db restore`: a copy of either
//! backend as one SQLite file, consistent as of one moment while writers
//! go on, and what a backup must carry beside it, read from that copy.

use std::path::Path;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{PgPool, SqlitePool};

use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;

/// SQLite: `VACUUM INTO` writes a consistent copy while others write.
pub async fn sqlite_into_file(from: &SqliteStore, path: &Path) -> anyhow::Result<()> {
    // The path is a string literal in SQL: quotes doubled.
    let literal = path.to_string_lossy().replace('\'', "''");
    sqlx::query(&format!("VACUUM INTO '{literal}'"))
        .execute(from.pool())
        .await
        .map_err(|e| anyhow::anyhow!("copying the SQLite database into {}: {e}", path.display()))?;
    Ok(())
}

/// PostgreSQL: every table read in one REPEATABLE READ transaction into a
/// new SQLite file of today's schema.
pub async fn postgres_into_file(from: &PgStore, path: &Path) -> anyhow::Result<()> {
    let url = format!("sqlite:{}", path.display());
    let copy = SqliteStore::open(&url).await?;
    crate::copy::postgres_to_sqlite(from.pool(), copy.pool(), |_, _| {}).await?;
    // Fold the write-ahead log into the file before it is renamed: the
    // copy must be whole in that one file. (busy, log pages, checkpointed)
    let WalCheckpoint {
        busy,
        log,
        checkpointed: done,
    } = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
        .fetch_one(copy.pool())
        .await?;
    anyhow::ensure!(
        busy == 0 && log == done,
        "folding the copy's write-ahead log into {}: {done} of {log} pages (busy {busy})",
        path.display()
    );
    copy.pool().close().await;
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{side}", path.display()));
    }
    Ok(())
}

/// What a backup must carry beside its database copy, read from the copy.
#[derive(Debug, Default)]
pub struct Contents {
    /// Rows per copied table.
    pub tables: Vec<(String, u64)>,
    /// Every submission's id, bundle SHA-256 and blob path, oldest first.
    pub bundles: Vec<StoredBundle>,
    pub log_size: u64,
    pub log_origin: Option<String>,
    pub log_verifier_key: Option<String>,
    /// Every published snapshot: id, manifest.json's text and SHA-256.
    pub snapshots: Vec<PublishedSnapshot>,
}

/// A submission's bundle: its id, the bundle's SHA-256 and where the
/// blob store keeps it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredBundle {
    pub id: String,
    pub bundle_sha256: String,
    pub blob_path: String,
}

/// A published snapshot: its id, manifest.json's bytes and their SHA-256.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PublishedSnapshot {
    pub id: String,
    pub manifest: String,
    pub manifest_sha256: String,
}

/// What `PRAGMA wal_checkpoint` answers: whether a reader held it back,
/// the log's pages and how many were folded into the file.
#[derive(sqlx::FromRow)]
struct WalCheckpoint {
    busy: i64,
    log: i64,
    checkpointed: i64,
}

/// Reads `path` read-only (its bytes stay as they were copied).
pub async fn contents(path: &Path) -> anyhow::Result<Contents> {
    let db = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(SqliteConnectOptions::new().filename(path).read_only(true))
        .await
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?;
    let out = read_contents(&db).await;
    db.close().await;
    out
}

async fn read_contents(db: &SqlitePool) -> anyhow::Result<Contents> {
    let mut tables = Vec::new();
    for table in crate::copy::table_names() {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(db)
            .await?;
        tables.push((table.to_string(), n as u64));
    }
    let head: crate::tlog::StoredLogHead =
        sqlx::query_as("SELECT origin, verifier_key FROM log_head WHERE id = 1")
            .fetch_one(db)
            .await?;
    let log_size: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM log_entries")
        .fetch_one(db)
        .await?;
    Ok(Contents {
        tables,
        bundles: sqlx::query_as(
            "SELECT id, bundle_sha256, blob_path FROM submissions ORDER BY received_at, id",
        )
        .fetch_all(db)
        .await?,
        log_size: log_size as u64,
        log_origin: head.origin,
        log_verifier_key: head.verifier_key,
        snapshots: sqlx::query_as(
            "SELECT id, manifest, manifest_sha256 FROM snapshots
             WHERE published_at IS NOT NULL ORDER BY created_at, id",
        )
        .fetch_all(db)
        .await?,
    })
}

/// A backup's SQLite file into an empty PostgreSQL database. The file is
/// copied to `scratch` first: opening migrates it (a backup made by an
/// older version), and the backup stays as it was.
pub async fn file_into_postgres(file: &Path, scratch: &Path, to: &PgPool) -> anyhow::Result<()> {
    std::fs::create_dir_all(scratch)?;
    let copy = scratch.join("restore.db");
    let _ = std::fs::remove_file(&copy);
    std::fs::copy(file, &copy).map_err(|e| anyhow::anyhow!("copying {}: {e}", file.display()))?;
    let sqlite = SqliteStore::open(&format!("sqlite:{}", copy.display())).await?;
    let out = crate::copy::sqlite_to_postgres(sqlite.pool(), to, |_, _| {}).await;
    sqlite.pool().close().await;
    for f in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{f}", copy.display()));
    }
    out.map(|_| ())
}

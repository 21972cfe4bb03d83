//! SQLite backend: WAL, a busy timeout, and one writer at a time (a mutex
//! around write transactions) so concurrent submissions queue instead of
//! failing with "database is locked". The statements are shared with
//! PostgreSQL (see `sql`).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use uuid::Uuid;

use super::sql::{
    bind_all, db_err, group_query, intervals_of, json_err, model_rank_column, opt_ts, parse_status,
    snapshot_row, sql_store, unique_violation, EventRow, Param, COUNTER_ADD, GROUP_COLUMNS,
    GROUP_INSERT, GROUP_KEY_INSERT, KEY_SELECT, MEMBER_SELECT, RUN_COLUMNS, SUBMISSION_SELECT,
};
use super::{
    parse_ts, ts, Actor, DatasetCounts, Decided, InsertOutcome, KeyRecord, ModerationEvent,
    NewSubmission, NewSubmitter, PriorClaims, SnapshotRow, Status, StoreError, SubmissionRecord,
    TableCounts,
};
use wattcounts_rules::bundle::harness::Scenario;
use wattcounts_rules::checks::{CheckResult, PeerGroup};
use wattcounts_rules::derived::ConfigurationMetrics;

pub struct SqliteStore {
    pool: SqlitePool,
    writer: tokio::sync::Mutex<()>,
}

impl SqliteStore {
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        let opts = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: an acknowledged submission survives a power cut too.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await?;
        sqlx::migrate!("../../migrations/sqlite").run(&pool).await?;
        let store = SqliteStore {
            pool,
            writer: tokio::sync::Mutex::new(()),
        };
        store.fill_handle_skeletons().await?;
        Ok(store)
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// SQLite has one writer; taking the lock here, before the transaction,
    /// means writers wait in line rather than hitting SQLITE_BUSY mid-way.
    async fn write_lock(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        Some(self.writer.lock().await)
    }
}

impl SqliteStore {
    /// SQLite needs no row lock: one writer holds the database.
    const LOCK_GROUP: Option<&'static str> = None;
    /// Likewise for the log: the writer appends alone.
    const LOCK_LOG: Option<&'static str> = None;
    /// Write transactions take SQLite's write lock up front: a second
    /// process on the same file then waits (busy timeout) instead of
    /// failing with "database is locked" when a deferred transaction
    /// that has read tries to write.
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    /// SQLite's planner takes the group index without statistics.
    const ANALYZE: Option<&'static str> = None;
    /// Run first in a transaction that reads a snapshot: SQLite's read transaction already sees one state of the database.
    const READ_SNAPSHOT: &'static [&'static str] = &[];
    /// SQLite compares text byte by byte already.
    const BYTE_ORDER: &'static str = "";
}

super::tlog::log_store!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
sql_store!(
    SqliteStore,
    "sqlite",
    sqlx::sqlite::SqliteRow,
    sqlx::SqliteConnection
);

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

use super::calls::{CallBounds, CallCounts, Calls};
use super::dialect::{self, Dialect};
use super::identity::*;
use super::intake::*;
use super::moderation::*;
use super::read_model::*;
use super::snapshots::*;
use super::sql::*;
use super::{
    parse_ts, ts, Actor, DatasetCounts, Decided, InsertOutcome, KeyRecord, ModerationEvent,
    NewSubmission, NewSubmitter, PriorClaims, SnapshotRow, Status, StoreError, SubmissionRecord,
    TableCounts,
};
use wattcounts_rules::bundle::harness::Scenario;
use wattcounts_rules::checks::{CheckResult, PeerGroup};
use wattcounts_rules::derived::ConfigurationMetrics;

pub struct SqliteStore {
    calls: Calls,
    pool: SqlitePool,
    writer: tokio::sync::Mutex<()>,
}

impl SqliteStore {
    const DIALECT: Dialect = dialect::SQLITE;

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
            .after_release(|conn, _| Box::pin(clean_for_reuse(conn)))
            .connect_with(opts)
            .await?;
        sqlx::migrate!("../../migrations/sqlite").run(&pool).await?;
        let store = SqliteStore {
            calls: Calls::default(),
            pool,
            writer: tokio::sync::Mutex::new(()),
        };
        store.fill_handle_skeletons().await?;
        Ok(store)
    }

    /// Bounds every call by its kind (see `calls`).
    pub fn bounded(mut self, bounds: CallBounds) -> Self {
        self.calls = self.calls.bounded(bounds);
        self
    }

    /// Counts every call into `counts` (the tests' budget of store calls).
    pub fn counting(mut self, counts: std::sync::Arc<CallCounts>) -> Self {
        self.calls = self.calls.counting(counts);
        self
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

super::tlog::log_store!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::sql::store_base!(SqliteStore);
super::intake::intake_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::read_model::read_model_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::identity::identity_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::moderation::moderation_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::snapshots::snapshots_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::estimator_fits::estimator_fits_sql!(
    SqliteStore,
    sqlx::sqlite::SqliteRow,
    sqlx::SqliteConnection
);
super::limits::limits_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);
super::peers::peers_sql!(SqliteStore, sqlx::sqlite::SqliteRow, sqlx::SqliteConnection);

//! PostgreSQL backend, for several service instances on one database. No
//! in-process write lock: unique constraints decide races between
//! instances, and row locks (`FOR UPDATE`) guard status changes. Short
//! acquire and statement timeouts make a missing database a quick 503
//! rather than a hang; the pool reconnects by itself when it is back.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;
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

pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects and migrates. `schema`, when given, is created if needed and
    /// used for everything (tests give each case its own).
    pub async fn open(url: &str, schema: Option<&str>) -> anyhow::Result<Self> {
        let mut opts = PgConnectOptions::from_str(url)?
            // Nothing waits on a dead or stuck database for long.
            .options([("statement_timeout", "15s"), ("lock_timeout", "5s")])
            // The server's side of a silent cut: it probes an idle client
            // socket after 10 s and drops the session (and the row locks
            // its open transaction holds, which other instances wait on)
            // after 3 unanswered probes 5 s apart. The client's side is
            // the per-call bound of `bounded` (sqlx sets no keepalive).
            .options([
                ("tcp_keepalives_idle", "10"),
                ("tcp_keepalives_interval", "5"),
                ("tcp_keepalives_count", "3"),
            ]);
        if let Some(s) = schema {
            let admin = PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(5))
                .connect_with(opts.clone())
                .await?;
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{s}\""))
                .execute(&admin)
                .await?;
            admin.close().await;
            opts = opts.options([("search_path", s)]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .min_connections(1)
            // A request waits at most this long for a connection before the
            // service answers 503.
            .acquire_timeout(Duration::from_millis(1500))
            .test_before_acquire(true)
            .connect_with(opts)
            .await?;
        // Instances starting together take turns: sqlx holds an advisory
        // lock while it migrates.
        sqlx::migrate!("../../migrations/postgres")
            .run(&pool)
            .await?;
        let store = PgStore { pool };
        store.fill_handle_skeletons().await?;
        Ok(store)
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn write_lock(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        None
    }
}

impl PgStore {
    /// The group row a writer holds while it recomputes the group: two
    /// instances adding to one group at once take turns and lose nothing.
    const LOCK_GROUP: Option<&'static str> =
        Some("SELECT group_key FROM group_keys WHERE group_key = $1 FOR UPDATE");
    /// Appenders of every instance take turns on the one head row, so the
    /// log stays linear: the next index is read under this lock.
    const LOCK_LOG: Option<&'static str> = Some("SELECT id FROM log_head WHERE id = 1 FOR UPDATE");
    /// Row locks and unique constraints order writers; a plain BEGIN.
    const BEGIN_WRITE: &'static str = "BEGIN";
    /// Statistics for the tables a rebuild rewrote (allowed in a transaction).
    const ANALYZE: Option<&'static str> = Some("ANALYZE configurations, submissions");
    /// Run first in a transaction that reads a snapshot: PostgreSQL's default (READ COMMITTED) lets each statement see newer commits.
    const READ_SNAPSHOT: &'static [&'static str] = &[
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        // The runs stream for as long as the files take to write: the
        // service-wide statement timeout is for requests, not exports.
        "SET LOCAL statement_timeout = 0",
    ];
    /// Orders text byte by byte, as SQLite does, whatever the database's
    /// collation: both backends list models in one order.
    const BYTE_ORDER: &'static str = " COLLATE \"C\"";
}

super::tlog::log_store!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
sql_store!(
    PgStore,
    "postgres",
    sqlx::postgres::PgRow,
    sqlx::PgConnection
);

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

pub struct PgStore {
    calls: Calls,
    pool: PgPool,
}

impl PgStore {
    const DIALECT: Dialect = dialect::POSTGRES;

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
            // the per-call bound of `calls` (sqlx sets no keepalive).
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
            .after_release(|conn, _| Box::pin(super::sql::clean_for_reuse(conn)))
            .connect_with(opts)
            .await?;
        // Instances starting together take turns: sqlx holds an advisory
        // lock while it migrates.
        sqlx::migrate!("../../migrations/postgres")
            .run(&pool)
            .await?;
        let store = PgStore {
            calls: Calls::default(),
            pool,
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

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn write_lock(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        None
    }
}

super::tlog::log_store!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::sql::store_base!(PgStore);
super::intake::intake_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::read_model::read_model_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::identity::identity_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::moderation::moderation_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::snapshots::snapshots_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::estimator_fits::estimator_fits_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::limits::limits_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);
super::peers::peers_sql!(PgStore, sqlx::postgres::PgRow, sqlx::PgConnection);

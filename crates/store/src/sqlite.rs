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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows are read by column name (issue #56): the same columns in the
    /// opposite order map to the same record, so a column added in the
    /// middle of a SELECT cannot shift a figure. The values are written
    /// out here, each field a different number.
    #[tokio::test]
    async fn a_reordered_select_maps_the_same() {
        let pool = SqlitePool::connect("sqlite::memory:").await.unwrap();
        let columns = [
            ("id", "'00000000-0000-4000-8000-000000000007'"),
            ("bundle_sha256", "'bundle'"),
            ("handle", "'alice'"),
            ("status", "'needs_review'"),
            ("received_at", "'2026-12-07T01:02:03.004Z'"),
            ("gpu_name", "'NVIDIA L4'"),
            ("gpu_id", "'l4'"),
            ("run_name", "'run_1'"),
            ("is_demo", "1"),
            ("bundle_bytes", "11"),
            ("blob_path", "'blobs/ab'"),
            ("iterations", "12"),
            ("power_samples", "13"),
            ("protocol", "NULL"),
            ("content_sha256", "'content'"),
            ("duplicate_of", "NULL"),
            ("log_index", "14"),
            ("energy_rule", "2"),
        ];
        for reversed in [false, true] {
            let mut list: Vec<String> =
                columns.iter().map(|(n, v)| format!("{v} AS {n}")).collect();
            if reversed {
                list.reverse();
            }
            let row = sqlx::query(&format!("SELECT {}", list.join(", ")))
                .fetch_one(&pool)
                .await
                .unwrap();
            let r = submission_record(&row).unwrap();
            assert_eq!(r.id.to_string(), "00000000-0000-4000-8000-000000000007");
            assert_eq!(
                (r.bundle_sha256.as_str(), r.handle.as_str(), r.status),
                (
                    "bundle",
                    "alice",
                    wattcounts_rules::domain::Status::NeedsReview
                )
            );
            assert_eq!(
                wattcounts_rules::timestamp::ts(&r.received_at),
                "2026-12-07T01:02:03.004Z"
            );
            assert_eq!(
                (
                    r.gpu_name.as_str(),
                    r.gpu_id.as_deref(),
                    r.run_name.as_str()
                ),
                ("NVIDIA L4", Some("l4"), "run_1")
            );
            assert!(r.is_demo);
            assert_eq!(
                (r.bundle_bytes, r.iterations, r.power_samples),
                (11, 12, 13)
            );
            assert_eq!(
                (r.blob_path.as_str(), r.content_sha256.as_deref()),
                ("blobs/ab", Some("content"))
            );
            assert!(r.protocol.is_none() && r.duplicate_of.is_none());
            assert_eq!((r.log_index, r.energy_rule), (Some(14), 2));
        }
    }

    /// The `FromRow` structs read by name too: four text columns in the
    /// reverse order (a tuple would swap them silently) map the same.
    #[tokio::test]
    async fn a_reordered_select_maps_the_same_into_a_from_row_struct() {
        let pool = SqlitePool::connect("sqlite::memory:").await.unwrap();
        for sql in [
            "SELECT 'i' AS id, 'c' AS created_at, 'm' AS manifest, 's' AS manifest_sha256",
            "SELECT 's' AS manifest_sha256, 'm' AS manifest, 'c' AS created_at, 'i' AS id",
        ] {
            let row: crate::SnapshotRow = sqlx::query_as(sql).fetch_one(&pool).await.unwrap();
            assert_eq!(
                (
                    row.id.as_str(),
                    row.created_at.as_str(),
                    row.manifest.as_str(),
                    row.manifest_sha256.as_str()
                ),
                ("i", "c", "m", "s"),
                "{sql}"
            );
        }
    }
}

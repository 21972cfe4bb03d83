//! Storage, by aggregate: each module holds one aggregate's trait and its
//! SQL (intake, read_model, identity, moderation, snapshots, tlog,
//! estimator_fits, limits, peers); `dialect` holds what differs between SQLite
//! and PostgreSQL, `calls` the one door every call passes (its bound and
//! its count), and `sqlite` / `postgres` put them together per backend.
//! Beside them: the blob store for raw bundles (`blobs`, `objects`) and the
//! database copy (`copy`). Nothing here knows HTTP.

pub mod backup;
pub mod blobs;
pub mod calls;
pub mod copy;
pub mod crash_points;
mod dialect;
pub mod estimator_fits;
pub mod identity;
pub mod intake;
pub mod limits;
pub mod moderation;
pub mod objects;
pub mod peers;
pub mod postgres;
pub mod read_model;
pub mod receipt;
pub mod snapshots;
mod sql;
pub mod sqlite;
pub mod tlog;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule was hit; names what was taken.
    #[error("{0} is already taken")]
    Conflict(&'static str),
    /// The database is not answering (down, overloaded, timed out).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// The rows the store hands out, defined with the rules and analytics so
/// that the service re-exports no type of the store's own.
pub use wattcounts_analytics::leaderboard::{Facets, GroupView};
pub use wattcounts_rules::catalog::CatalogueAddition;
use wattcounts_rules::domain::Status;
pub use wattcounts_rules::domain::{Actor, DatasetCounts, SubmissionRecord, TableCounts};
use wattcounts_rules::receipt::ModerationEvent;
use wattcounts_rules::timestamp::ts;

/// What is stored already under a submission_id or a run content (the
/// rule that reads it is `wattcounts_rules::claims::judge`).
pub use wattcounts_rules::claims::PriorClaims;

/// The whole store: each aggregate's trait (its module holds its SQL),
/// and what belongs to none of them. `Arc<dyn Store>` is what the service
/// holds; the aggregates' methods are callable on it as they are.
#[async_trait]
pub trait Store:
    Intake
    + ReadModel
    + Identity
    + Moderation
    + Snapshots
    + EstimatorFits
    + Limits
    + Peers
    + LogStore
    + Send
    + Sync
{
    /// "sqlite" or "postgres".
    fn backend(&self) -> &'static str;
    async fn ping(&self) -> Result<(), StoreError>;
    /// Connections of the pool: (in use, idle).
    fn pool_stats(&self) -> (u32, u32);
}

pub use estimator_fits::EstimatorFits;
pub use identity::Identity;
pub use intake::Intake;
pub use limits::Limits;
pub use moderation::Moderation;
pub use peers::Peers;
pub use read_model::ReadModel;
pub use snapshots::Snapshots;
pub use tlog::LogStore;

pub use estimator_fits::EstimatorFitRow;
pub use identity::{AdminSessionRow, KeyRecord, NewSubmitter};
pub use intake::{InsertOutcome, NewSubmission};
pub use moderation::Decided;
pub use read_model::RebuildReport;
pub use snapshots::{SnapshotPart, SnapshotRow};

pub fn parse_ts(s: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::Other(anyhow::anyhow!("bad stored timestamp {s}: {e}")))
}

/// Opens the store named by a database URL (`sqlite:PATH` or `postgres://…`).
pub async fn open(url: &str) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(std::sync::Arc::new(sqlite::SqliteStore::open(url).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        // Over the network, every call is bounded: a silent cut answers
        // 503 in seconds instead of holding requests.
        Ok(std::sync::Arc::new(
            postgres::PgStore::open(url, None)
                .await?
                .bounded(calls::CallBounds::default()),
        ))
    } else {
        anyhow::bail!(
            "unsupported database URL '{url}': expected sqlite:PATH or postgres://USER@HOST/DB"
        )
    }
}

//! Storage: one trait, one module per backend, and the blob store for raw
//! bundles. Nothing here knows HTTP.

pub mod blobs;
pub mod sqlite;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::metrics::{ConfigurationMetrics, IterationMetrics};

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

#[derive(Debug, Clone)]
pub struct NewSubmitter {
    pub handle: String,
    pub display_name: String,
    pub fingerprint: String,
    pub algorithm: String,
    pub public_key: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyRecord {
    pub key_id: i64,
    pub submitter_id: i64,
    pub handle: String,
    pub fingerprint: String,
    pub public_key: String,
    pub revoked_at: Option<DateTime<Utc>>,
    pub submitter_suspended_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Accepted,
    NeedsReview,
    Rejected,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Accepted => "accepted",
            Status::NeedsReview => "needs_review",
            Status::Rejected => "rejected",
        }
    }
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "accepted" => Some(Status::Accepted),
            "needs_review" => Some(Status::NeedsReview),
            "rejected" => Some(Status::Rejected),
            _ => None,
        }
    }
}

/// Everything one accepted bundle adds, written in one transaction.
#[derive(Debug, Clone)]
pub struct NewSubmission {
    pub id: Uuid,
    pub bundle_sha256: String,
    pub submitter_id: i64,
    pub key_id: i64,
    pub status: Status,
    pub received_at: DateTime<Utc>,
    pub gpu_name: String,
    pub gpu_id: Option<String>,
    pub run_name: String,
    pub is_demo: bool,
    pub bundle_bytes: u64,
    pub blob_path: String,
    pub signature: String,
    pub manifest_json: String,
    pub runs: Vec<IterationMetrics>,
    pub configurations: Vec<ConfigurationMetrics>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum InsertOutcome {
    Inserted,
    /// These exact bytes were stored before, under this id.
    SameBytes(Uuid),
    /// The submission_id is known with other bytes.
    IdTaken,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionRecord {
    pub id: Uuid,
    pub bundle_sha256: String,
    pub handle: String,
    pub status: Status,
    pub received_at: DateTime<Utc>,
    pub gpu_name: String,
    pub gpu_id: Option<String>,
    pub run_name: String,
    pub is_demo: bool,
    pub bundle_bytes: u64,
    pub blob_path: String,
    pub iterations: u64,
    pub power_samples: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TableCounts {
    pub submitters: u64,
    pub keys: u64,
    pub submissions: u64,
    pub runs: u64,
    pub configurations: u64,
}

#[async_trait]
pub trait Store: Send + Sync {
    fn backend(&self) -> &'static str;
    async fn ping(&self) -> Result<(), StoreError>;
    async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError>;
    async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError>;
    /// Revokes a key from `at` on; false if no such key.
    async fn revoke_key(&self, fingerprint: &str, at: DateTime<Utc>) -> Result<bool, StoreError>;
    async fn submission_by_digest(&self, sha256: &str) -> Result<Option<Uuid>, StoreError>;
    async fn submission_digest(&self, id: Uuid) -> Result<Option<String>, StoreError>;
    async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError>;
    async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, StoreError>;
    async fn configurations(&self, id: Uuid) -> Result<Vec<ConfigurationMetrics>, StoreError>;
    async fn counts(&self) -> Result<TableCounts, StoreError>;
    /// Every configuration of submissions in one of `statuses`.
    async fn configuration_rows(
        &self,
        statuses: &[Status],
    ) -> Result<Vec<crate::leaderboard::SourceRow>, StoreError>;
    /// What the accepted data holds, for the front page.
    async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError>;
    /// Most recent accepted submissions, newest first.
    async fn latest_submissions(&self, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError>;
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct DatasetCounts {
    pub submissions: u64,
    pub demo_submissions: u64,
    pub gpus: u64,
    pub models: u64,
    pub iterations: u64,
    pub power_samples: u64,
}

/// Timestamps are stored as RFC 3339 text in UTC with milliseconds, which
/// sorts correctly as text.
pub fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub fn parse_ts(s: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::Other(anyhow::anyhow!("bad stored timestamp {s}: {e}")))
}

/// Opens the store named by a database URL (`sqlite:` paths for now).
pub async fn open(url: &str) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(std::sync::Arc::new(sqlite::SqliteStore::open(url).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        anyhow::bail!("PostgreSQL support is not built yet; use a sqlite: URL")
    } else {
        anyhow::bail!("unsupported database URL '{url}': expected sqlite:PATH")
    }
}

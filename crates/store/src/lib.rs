//! Storage: one trait, one module per backend, and the blob store for raw
//! bundles. Nothing here knows HTTP.

pub mod blobs;
pub mod bounded;
pub mod copy;
pub mod objects;
pub mod postgres;
pub mod receipt;
mod sql;
pub mod sqlite;
pub mod tlog;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use wattcounts_rules::checks::{CheckResult, PeerGroup};
use wattcounts_rules::derived::{ConfigurationMetrics, IterationMetrics};

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

/// Everything one bundle adds, written in one transaction.
#[derive(Debug, Clone)]
pub struct NewSubmission {
    pub id: Uuid,
    pub bundle_sha256: String,
    pub submitter_id: i64,
    /// The submitter's handle: the row stores `submitter_id`, the receipt
    /// the insert returns names the handle.
    pub handle: String,
    pub key_id: i64,
    /// The signing key's fingerprint, recorded in the submission's log leaf.
    pub key_fingerprint: String,
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
    /// What the runs followed; decides the groups the configurations join.
    pub protocol: wattcounts_rules::domain::Protocol,
    /// [`wattcounts_rules::protocol::content_digest`]: one submission per run content.
    pub content_sha256: String,
    pub runs: Vec<IterationMetrics>,
    pub configurations: Vec<ConfigurationMetrics>,
    pub checks: Vec<CheckResult>,
}

impl NewSubmission {
    /// The iterations the row counts (its stored `iterations`).
    pub fn iterations(&self) -> u64 {
        self.runs.len() as u64
    }
    /// The power samples of all its iterations (its stored `power_samples`).
    pub fn power_samples(&self) -> u64 {
        self.runs.iter().map(|r| r.power_samples).sum()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum InsertOutcome {
    /// Stored; the receipt of what was written (the caller reads nothing
    /// back).
    Inserted(Box<wattcounts_rules::receipt::Receipt>),
    /// These exact bytes were stored before, under this id.
    SameBytes(Uuid),
    /// The submission_id is known with other bytes.
    IdTaken,
    /// The same run content is stored under this id, in this status.
    SameContent(Uuid, Status),
}

#[async_trait]
pub trait Store: tlog::LogStore + Send + Sync {
    fn backend(&self) -> &'static str;
    async fn ping(&self) -> Result<(), StoreError>;
    /// Connections of the pool: (in use, idle).
    fn pool_stats(&self) -> (u32, u32);
    /// Counts one hit in `bucket`'s fixed window starting at `window_start`
    /// (unix seconds) and returns the hits in that window, this one
    /// included. A bucket whose stored window is older starts again at 1.
    async fn count_hit(&self, bucket: &str, window_start: i64) -> Result<i64, StoreError>;
    /// Drops counters of windows that started before `before`.
    async fn forget_hits(&self, before: i64) -> Result<u64, StoreError>;
    async fn create_admin_session(&self, row: &AdminSessionRow) -> Result<(), StoreError>;
    /// The session with this id hash, if it has not expired at `now` nor
    /// been idle since `idle_before`; its last use becomes `now`.
    async fn use_admin_session(
        &self,
        id_sha256: &str,
        now: &DateTime<Utc>,
        idle_before: &DateTime<Utc>,
    ) -> Result<Option<AdminSessionRow>, StoreError>;
    /// Ends one session; false if there was none.
    async fn end_admin_session(&self, id_sha256: &str) -> Result<bool, StoreError>;
    /// Drops sessions expired at `now` or idle since `idle_before`.
    async fn forget_admin_sessions(
        &self,
        now: &DateTime<Utc>,
        idle_before: &DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError>;
    async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError>;
    /// The registered handle with this confusable skeleton
    /// ([`wattcounts_rules::handles::skeleton`]), if any.
    async fn handle_by_skeleton(&self, skeleton: &str) -> Result<Option<String>, StoreError>;
    /// Every registered handle, oldest first (maintainer audits; small table).
    async fn handles(&self) -> Result<Vec<String>, StoreError>;
    /// Every blob path a submission references (start-up recovery).
    async fn blob_paths(&self) -> Result<Vec<String>, StoreError>;
    /// Every registered key, oldest first (maintainer audits; small table).
    async fn keys(&self) -> Result<Vec<KeyRecord>, StoreError>;
    /// The submissions signed with a key, oldest first, with their status.
    async fn submissions_of_key(&self, key_id: i64) -> Result<Vec<(Uuid, Status)>, StoreError>;
    /// Revokes a key from `effective_at` on: bundles received from then on
    /// are rejected (earlier ones stay), and one event is recorded for the
    /// key and one per submission it turns down. None if no such key.
    async fn revoke_key(
        &self,
        fingerprint: &str,
        effective_at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<Vec<Uuid>>, StoreError>;
    /// Suspends a submitter: their new bundles are refused. False if no such handle.
    async fn suspend_submitter(&self, handle: &str, by: &Actor) -> Result<bool, StoreError>;
    /// Moves a submission from one of `from` to `to` and records the event,
    /// atomically; says what the status was if it was not one of `from`.
    async fn decide(
        &self,
        id: Uuid,
        from: &[Status],
        to: Status,
        by: &Actor,
    ) -> Result<Decided, StoreError>;
    async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, StoreError>;
    /// Every GPU maintainers added, oldest first.
    async fn catalogue_additions(&self) -> Result<Vec<CatalogueAddition>, StoreError>;
    /// Adds `spec` to the catalogue with a decision leaf in the log, in one
    /// transaction; `None` when a GPU of that name was added before.
    async fn add_catalogue_gpu(
        &self,
        spec: &wattcounts_rules::catalog::GpuSpec,
        by: &Actor,
    ) -> Result<Option<CatalogueAddition>, StoreError>;
    /// Submissions waiting in review on a GPU the catalogue lacked when
    /// they arrived, by the name their manifest gives.
    async fn waiting_on_gpu(&self, nvml_name: &str) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Judges a waiting submission again now that the catalogue has its GPU:
    /// its GPU id, check results and status, a decision leaf saying why, its
    /// configurations in the groups of that GPU, all in one transaction.
    /// Refused (`WrongStatus`) unless it still waits in review.
    async fn rejudge(
        &self,
        id: Uuid,
        gpu_id: &str,
        checks: &[CheckResult],
        to: Status,
        by: &Actor,
    ) -> Result<Decided, StoreError>;
    async fn check_results(&self, id: Uuid) -> Result<Vec<CheckResult>, StoreError>;
    /// What the accepted members of these groups measured (canonical
    /// group keys: same GPU, protocol and origin), from the read model: one
    /// row per group, however many submissions it holds.
    async fn peer_groups(&self, group_keys: &[String]) -> Result<Vec<PeerGroup>, StoreError>;
    /// What a new bundle's submission_id and run content already name, in
    /// one read (the insert's two uniqueness rules, asked before the work
    /// of checking the bundle against its peers).
    async fn prior_claims(&self, id: Uuid, content_sha256: &str)
        -> Result<PriorClaims, StoreError>;
    /// Submissions in `status`, oldest first (the review queue).
    async fn submissions_with_status(
        &self,
        status: Status,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError>;
    async fn submission_by_digest(&self, sha256: &str) -> Result<Option<Uuid>, StoreError>;
    /// Changes whenever another writer (another instance) stores a
    /// submission or records a moderation decision: (submissions, events).
    async fn data_stamp(&self) -> Result<(i64, i64), StoreError>;
    /// The manifest (JSON) and the `.sig` text the bundle came with.
    async fn submission_documents(&self, id: Uuid) -> Result<Option<(String, String)>, StoreError>;
    async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError>;
    async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, StoreError>;
    async fn configurations(&self, id: Uuid) -> Result<Vec<ConfigurationMetrics>, StoreError>;
    async fn counts(&self) -> Result<TableCounts, StoreError>;
    /// One page of groups from the read model and how many match.
    /// `q.origin: None` reads both origins (each row says which).
    async fn groups(&self, q: &Query) -> Result<(Vec<LeaderboardRow>, u64), StoreError>;
    /// The models, GPUs and server rates present in one view (origin,
    /// protocol, visibility of `q`; its other filters are ignored).
    async fn group_facets(&self, q: &Query) -> Result<Facets, StoreError>;
    /// The views the read model holds: origin × protocol × scenario with
    /// their group counts (a few dozen rows, whatever the data size).
    async fn group_views(&self, include_review: bool) -> Result<Vec<GroupView>, StoreError>;
    /// What the accepted data holds, for the front page (counters and the
    /// read model only).
    async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError>;
    /// Most recent accepted submissions, newest first.
    async fn latest_submissions(&self, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Most recent accepted submissions measured on one GPU, newest first.
    async fn submissions_on_gpu(
        &self,
        gpu_id: &str,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Submissions whose protocol or run-content digest is not recorded
    /// yet (stored before they existed), or whose runs an older energy rule
    /// derived: what `db rebuild` must derive from the stored bundles.
    async fn submissions_to_derive(&self) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Whether some configuration lacks a figure the read model now keeps
    /// (stored before it did): `db rebuild` computes it from the metrics.
    async fn read_model_outdated(&self) -> Result<bool, StoreError>;
    /// Recomputes every derived table (protocols and content digests from
    /// `derived`, duplicates, group keys, the groups, the counters) from the
    /// stored submissions, in one transaction.
    async fn rebuild_read_model(
        &self,
        derived: &std::collections::HashMap<Uuid, wattcounts_rules::derived::StoredDerivation>,
    ) -> Result<RebuildReport, StoreError>;
    /// Everything a dataset snapshot publishes (accepted submissions only),
    /// read in one transaction so the parts agree with each other, sent in
    /// order: the submissions, the groups, then the runs in batches of
    /// `batch` (the channel's bound keeps memory flat).
    /// Then the transparency log as the same read sees it: its size,
    /// root and (from `previous_log_size`, the previous snapshot's) a
    /// consistency proof, then every leaf in batches.
    async fn snapshot_source(
        &self,
        out: tokio::sync::mpsc::Sender<SnapshotPart>,
        batch: usize,
        previous_log_size: Option<u64>,
    ) -> Result<(), StoreError>;

    // Snapshots: reserved, written, then published (see 0008_snapshots.sql).

    /// Reserves a snapshot id; false when it is taken (published, or being
    /// written by this or another instance).
    async fn reserve_snapshot(&self, id: &str, at: &DateTime<Utc>) -> Result<bool, StoreError>;
    /// Marks a reserved snapshot published, once its manifest is written.
    async fn publish_snapshot(
        &self,
        row: &SnapshotRow,
        at: &DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Forgets a reservation that was never published.
    async fn drop_snapshot_reservation(&self, id: &str) -> Result<(), StoreError>;
    /// Reservations made before `before` and never published: creations
    /// that crashed.
    async fn stale_snapshot_reservations(
        &self,
        before: &DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;
    /// Published snapshots, newest first.
    async fn snapshots(&self) -> Result<Vec<SnapshotRow>, StoreError>;
    /// One published snapshot, or the newest for `None`.
    async fn snapshot(&self, id: Option<&str>) -> Result<Option<SnapshotRow>, StoreError>;

    // Estimator fits (see 0011_estimator_fits.sql).

    /// Stores a fit under its version (a version already stored is left
    /// as it is: the same version is the same fit) and keeps only the
    /// newest `keep` fits.
    async fn put_estimator_fit(&self, row: &EstimatorFitRow, keep: u32) -> Result<(), StoreError>;
    /// The stored fit of this version, if any.
    async fn estimator_fit(&self, version: &str) -> Result<Option<EstimatorFitRow>, StoreError>;
}

/// A stored estimator fit: its version, where its rows came from, and the
/// whole fit as JSON (`wattcounts_analytics::estimator::trained::StoredFit`).
#[derive(Debug, Clone, PartialEq)]
pub struct EstimatorFitRow {
    pub version: String,
    pub data_stamp: String,
    pub origin: String,
    pub protocol: String,
    pub fitted_at: DateTime<Utc>,
    pub body: String,
}

/// A signed-in maintainer of the admin pages, as the database keeps it
/// (the session id itself is never stored, only its SHA-256).
#[derive(Debug, Clone, PartialEq)]
pub struct AdminSessionRow {
    pub id_sha256: String,
    pub maintainer: String,
    pub token_sha256: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_used_at: DateTime<Utc>,
}

/// A published snapshot as the database lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotRow {
    pub id: String,
    /// The manifest's `created_at`, RFC 3339.
    pub created_at: String,
    /// manifest.json's exact bytes.
    pub manifest: String,
    pub manifest_sha256: String,
}

use wattcounts_analytics::leaderboard::{LeaderboardRow, Query};

/// What `db rebuild` did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RebuildReport {
    pub submissions: u64,
    /// Protocols and digests derived from stored bundles this time.
    pub derived: u64,
    /// (duplicate, the older submission with the same run content).
    pub duplicates: Vec<(Uuid, Uuid)>,
    pub configurations: u64,
    pub groups: u64,
}

/// One piece of the accepted data as a snapshot reads it.
#[derive(Debug, Clone)]
pub enum SnapshotPart {
    /// Every accepted submission, oldest first.
    Submissions(Vec<SubmissionRecord>),
    /// Every accepted group (the leaderboard rows, all origins and protocols).
    Groups(Vec<LeaderboardRow>),
    /// Iterations with their submission, in submission then harness order.
    Runs(Vec<(Uuid, IterationMetrics)>),
    /// The log's size and root when read, with a consistency proof from
    /// the previous snapshot's size when one was asked for.
    LogHead {
        size: u64,
        root: wattcounts_rules::tlog::Hash,
        consistency: Option<wattcounts_rules::tlog::TreeProof>,
    },
    /// Leaves in index order (canonical JSON).
    LogEntries(Vec<String>),
    /// The read transaction ended well: everything was sent.
    Done,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// Moved; the status it had.
    Done(Status),
    NotFound,
    /// Not in one of the expected statuses; what it is in.
    WrongStatus(Status),
}

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
        Ok(std::sync::Arc::new(bounded::Bounded::new(
            std::sync::Arc::new(postgres::PgStore::open(url, None).await?),
            bounded::CallBounds::default(),
        )))
    } else {
        anyhow::bail!(
            "unsupported database URL '{url}': expected sqlite:PATH or postgres://USER@HOST/DB"
        )
    }
}

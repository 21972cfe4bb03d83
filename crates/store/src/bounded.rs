//! A client-side bound on every database call of a networked store. A
//! connection whose peer vanished without a reset (a cut link, a dropped
//! packet path) never answers, the server's `statement_timeout` never
//! fires because nothing reaches the server, and sqlx 0.8 sets no TCP
//! keepalive on its sockets (launchbadge/sqlx#3540); without this bound a
//! request would hang until the 30 s request deadline. Each call gets a
//! few seconds (writes more: a bundle's runs are one transaction) and then
//! reads as [`StoreError::Unavailable`], the 503 of the outage path. The
//! dropped future takes its connection with it; the pool tests a
//! connection before handing it out again, within the acquire timeout.
//! Maintenance calls that stream or rebuild for minutes are not bounded.
//! Every call, bounded or not, passes one door here, so the wrapper also
//! counts them when asked ([`Bounded::counting`]): the tests hold an
//! upload to its budget of store calls on both backends.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::tlog::{LogEntry, LogStats, LogStore};
use super::*;
use wattcounts_analytics::leaderboard::{LeaderboardRow, Query};
use wattcounts_rules::checks::{CheckResult, PeerGroup};
use wattcounts_rules::derived::ConfigurationMetrics;
use wattcounts_rules::tlog::Hash;

/// How long a call may take before the database counts as unreachable.
#[derive(Debug, Clone, Copy)]
pub struct CallBounds {
    pub read: Duration,
    pub write: Duration,
}

impl Default for CallBounds {
    /// Reads answer in milliseconds on a healthy server (the read paths
    /// are indexed and paged); 2.5 s leaves room for a loaded one and
    /// still answers a cut well inside 3 s.
    fn default() -> Self {
        CallBounds {
            read: Duration::from_millis(2500),
            write: Duration::from_secs(10),
        }
    }
}

#[derive(Clone, Copy)]
enum Call {
    Read,
    Write,
}

pub struct Bounded {
    inner: Arc<dyn Store>,
    bounds: CallBounds,
    calls: Option<Arc<CallCounts>>,
}

/// Store calls by method name, as a [`Bounded`] store made them.
#[derive(Debug, Default)]
pub struct CallCounts(std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>>);

impl CallCounts {
    fn record(&self, name: &'static str) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(name).or_default() += 1;
    }
    /// The calls made since the last take, and a fresh start.
    pub fn take(&self) -> std::collections::BTreeMap<&'static str, u64> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Bounded {
    pub fn new(inner: Arc<dyn Store>, bounds: CallBounds) -> Self {
        Bounded {
            inner,
            bounds,
            calls: None,
        }
    }

    /// Also counts every call into `calls`.
    pub fn counting(mut self, calls: Arc<CallCounts>) -> Self {
        self.calls = Some(calls);
        self
    }

    /// A maintenance call: counted, not bounded.
    async fn unbounded<T>(
        &self,
        name: &'static str,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if let Some(c) = &self.calls {
            c.record(name);
        }
        fut.await
    }

    async fn bound<T>(
        &self,
        call: Call,
        name: &'static str,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if let Some(c) = &self.calls {
            c.record(name);
        }
        let limit = match call {
            Call::Read => self.bounds.read,
            Call::Write => self.bounds.write,
        };
        match tokio::time::timeout(limit, fut).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::Unavailable(format!(
                "{name} had no answer from the database within {:.1} s",
                limit.as_secs_f64()
            ))),
        }
    }
}

#[async_trait]
impl Store for Bounded {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    async fn ping(&self) -> Result<(), StoreError> {
        self.bound(Call::Read, "ping", self.inner.ping()).await
    }
    fn pool_stats(&self) -> (u32, u32) {
        self.inner.pool_stats()
    }
    async fn count_hit(&self, bucket: &str, window_start: i64) -> Result<i64, StoreError> {
        self.bound(
            Call::Read,
            "count_hit",
            self.inner.count_hit(bucket, window_start),
        )
        .await
    }
    async fn forget_hits(&self, before: i64) -> Result<u64, StoreError> {
        self.bound(Call::Read, "forget_hits", self.inner.forget_hits(before))
            .await
    }
    async fn create_admin_session(&self, row: &AdminSessionRow) -> Result<(), StoreError> {
        self.bound(
            Call::Read,
            "create_admin_session",
            self.inner.create_admin_session(row),
        )
        .await
    }
    async fn use_admin_session(
        &self,
        id_sha256: &str,
        now: &DateTime<Utc>,
        idle_before: &DateTime<Utc>,
    ) -> Result<Option<AdminSessionRow>, StoreError> {
        self.bound(
            Call::Read,
            "use_admin_session",
            self.inner.use_admin_session(id_sha256, now, idle_before),
        )
        .await
    }
    async fn end_admin_session(&self, id_sha256: &str) -> Result<bool, StoreError> {
        self.bound(
            Call::Read,
            "end_admin_session",
            self.inner.end_admin_session(id_sha256),
        )
        .await
    }
    async fn forget_admin_sessions(
        &self,
        now: &DateTime<Utc>,
        idle_before: &DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        self.bound(
            Call::Read,
            "forget_admin_sessions",
            self.inner.forget_admin_sessions(now, idle_before),
        )
        .await
    }
    async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError> {
        self.bound(
            Call::Write,
            "create_submitter",
            self.inner.create_submitter(s),
        )
        .await
    }
    async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError> {
        self.bound(
            Call::Read,
            "key_by_fingerprint",
            self.inner.key_by_fingerprint(fingerprint),
        )
        .await
    }
    async fn handle_by_skeleton(&self, skeleton: &str) -> Result<Option<String>, StoreError> {
        self.bound(
            Call::Read,
            "handle_by_skeleton",
            self.inner.handle_by_skeleton(skeleton),
        )
        .await
    }
    async fn handles(&self) -> Result<Vec<String>, StoreError> {
        self.unbounded("handles", self.inner.handles()).await
    }
    async fn blob_paths(&self) -> Result<Vec<String>, StoreError> {
        self.unbounded("blob_paths", self.inner.blob_paths()).await
    }
    async fn keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
        self.unbounded("keys", self.inner.keys()).await
    }
    async fn submissions_of_key(&self, key_id: i64) -> Result<Vec<(Uuid, Status)>, StoreError> {
        self.bound(
            Call::Read,
            "submissions_of_key",
            self.inner.submissions_of_key(key_id),
        )
        .await
    }
    async fn revoke_key(
        &self,
        fingerprint: &str,
        effective_at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<Vec<Uuid>>, StoreError> {
        self.bound(
            Call::Write,
            "revoke_key",
            self.inner.revoke_key(fingerprint, effective_at, by),
        )
        .await
    }
    async fn suspend_submitter(&self, handle: &str, by: &Actor) -> Result<bool, StoreError> {
        self.bound(
            Call::Write,
            "suspend_submitter",
            self.inner.suspend_submitter(handle, by),
        )
        .await
    }
    async fn decide(
        &self,
        id: Uuid,
        from: &[Status],
        to: Status,
        by: &Actor,
    ) -> Result<Decided, StoreError> {
        self.bound(Call::Write, "decide", self.inner.decide(id, from, to, by))
            .await
    }
    async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, StoreError> {
        self.bound(
            Call::Read,
            "moderation_events",
            self.inner.moderation_events(id),
        )
        .await
    }
    async fn catalogue_additions(&self) -> Result<Vec<crate::CatalogueAddition>, StoreError> {
        self.bound(
            Call::Read,
            "catalogue_additions",
            self.inner.catalogue_additions(),
        )
        .await
    }
    async fn add_catalogue_gpu(
        &self,
        spec: &wattcounts_rules::catalog::GpuSpec,
        by: &Actor,
    ) -> Result<Option<crate::CatalogueAddition>, StoreError> {
        self.bound(
            Call::Write,
            "add_catalogue_gpu",
            self.inner.add_catalogue_gpu(spec, by),
        )
        .await
    }
    async fn waiting_on_gpu(&self, nvml_name: &str) -> Result<Vec<SubmissionRecord>, StoreError> {
        self.bound(
            Call::Read,
            "waiting_on_gpu",
            self.inner.waiting_on_gpu(nvml_name),
        )
        .await
    }
    async fn rejudge(
        &self,
        id: Uuid,
        gpu_id: &str,
        checks: &[CheckResult],
        to: Status,
        by: &Actor,
    ) -> Result<Decided, StoreError> {
        self.bound(
            Call::Write,
            "rejudge",
            self.inner.rejudge(id, gpu_id, checks, to, by),
        )
        .await
    }
    async fn check_results(&self, id: Uuid) -> Result<Vec<CheckResult>, StoreError> {
        self.bound(Call::Read, "check_results", self.inner.check_results(id))
            .await
    }
    async fn peer_groups(&self, group_keys: &[String]) -> Result<Vec<PeerGroup>, StoreError> {
        self.bound(
            Call::Read,
            "peer_groups",
            self.inner.peer_groups(group_keys),
        )
        .await
    }
    async fn prior_claims(
        &self,
        id: Uuid,
        content_sha256: &str,
    ) -> Result<PriorClaims, StoreError> {
        self.bound(
            Call::Read,
            "prior_claims",
            self.inner.prior_claims(id, content_sha256),
        )
        .await
    }
    async fn submissions_with_status(
        &self,
        status: Status,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError> {
        self.bound(
            Call::Read,
            "submissions_with_status",
            self.inner.submissions_with_status(status, limit),
        )
        .await
    }
    async fn submission_by_digest(&self, sha256: &str) -> Result<Option<Uuid>, StoreError> {
        self.bound(
            Call::Read,
            "submission_by_digest",
            self.inner.submission_by_digest(sha256),
        )
        .await
    }
    async fn data_stamp(&self) -> Result<(i64, i64), StoreError> {
        self.bound(Call::Read, "data_stamp", self.inner.data_stamp())
            .await
    }
    async fn submission_documents(&self, id: Uuid) -> Result<Option<(String, String)>, StoreError> {
        self.bound(
            Call::Read,
            "submission_documents",
            self.inner.submission_documents(id),
        )
        .await
    }
    async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError> {
        self.bound(
            Call::Write,
            "insert_submission",
            self.inner.insert_submission(s),
        )
        .await
    }
    async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, StoreError> {
        self.bound(Call::Read, "submission", self.inner.submission(id))
            .await
    }
    async fn configurations(&self, id: Uuid) -> Result<Vec<ConfigurationMetrics>, StoreError> {
        self.bound(Call::Read, "configurations", self.inner.configurations(id))
            .await
    }
    async fn counts(&self) -> Result<TableCounts, StoreError> {
        self.bound(Call::Read, "counts", self.inner.counts()).await
    }
    async fn groups(&self, q: &Query) -> Result<(Vec<LeaderboardRow>, u64), StoreError> {
        self.bound(Call::Read, "groups", self.inner.groups(q)).await
    }
    async fn group_facets(&self, q: &Query) -> Result<Facets, StoreError> {
        self.bound(Call::Read, "group_facets", self.inner.group_facets(q))
            .await
    }
    async fn group_views(&self, include_review: bool) -> Result<Vec<GroupView>, StoreError> {
        self.bound(
            Call::Read,
            "group_views",
            self.inner.group_views(include_review),
        )
        .await
    }
    async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError> {
        self.bound(Call::Read, "dataset_counts", self.inner.dataset_counts())
            .await
    }
    async fn latest_submissions(&self, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError> {
        self.bound(
            Call::Read,
            "latest_submissions",
            self.inner.latest_submissions(limit),
        )
        .await
    }
    async fn submissions_on_gpu(
        &self,
        gpu_id: &str,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError> {
        self.bound(
            Call::Read,
            "submissions_on_gpu",
            self.inner.submissions_on_gpu(gpu_id, limit),
        )
        .await
    }
    async fn submissions_to_derive(&self) -> Result<Vec<SubmissionRecord>, StoreError> {
        self.unbounded("submissions_to_derive", self.inner.submissions_to_derive())
            .await
    }
    async fn read_model_outdated(&self) -> Result<bool, StoreError> {
        self.bound(
            Call::Read,
            "read_model_outdated",
            self.inner.read_model_outdated(),
        )
        .await
    }
    async fn rebuild_read_model(
        &self,
        derived: &std::collections::HashMap<Uuid, wattcounts_rules::derived::StoredDerivation>,
    ) -> Result<RebuildReport, StoreError> {
        self.unbounded("rebuild_read_model", self.inner.rebuild_read_model(derived))
            .await
    }
    async fn snapshot_source(
        &self,
        out: tokio::sync::mpsc::Sender<SnapshotPart>,
        batch: usize,
        previous_log_size: Option<u64>,
    ) -> Result<(), StoreError> {
        self.unbounded(
            "snapshot_source",
            self.inner.snapshot_source(out, batch, previous_log_size),
        )
        .await
    }
    async fn reserve_snapshot(&self, id: &str, at: &DateTime<Utc>) -> Result<bool, StoreError> {
        self.bound(
            Call::Read,
            "reserve_snapshot",
            self.inner.reserve_snapshot(id, at),
        )
        .await
    }
    async fn publish_snapshot(
        &self,
        row: &SnapshotRow,
        at: &DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.bound(
            Call::Write,
            "publish_snapshot",
            self.inner.publish_snapshot(row, at),
        )
        .await
    }
    async fn drop_snapshot_reservation(&self, id: &str) -> Result<(), StoreError> {
        self.bound(
            Call::Read,
            "drop_snapshot_reservation",
            self.inner.drop_snapshot_reservation(id),
        )
        .await
    }
    async fn stale_snapshot_reservations(
        &self,
        before: &DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        self.bound(
            Call::Read,
            "stale_snapshot_reservations",
            self.inner.stale_snapshot_reservations(before),
        )
        .await
    }
    async fn snapshots(&self) -> Result<Vec<SnapshotRow>, StoreError> {
        self.bound(Call::Read, "snapshots", self.inner.snapshots())
            .await
    }
    async fn snapshot(&self, id: Option<&str>) -> Result<Option<SnapshotRow>, StoreError> {
        self.bound(Call::Read, "snapshot", self.inner.snapshot(id))
            .await
    }
    async fn put_estimator_fit(&self, row: &EstimatorFitRow, keep: u32) -> Result<(), StoreError> {
        self.bound(
            Call::Write,
            "put_estimator_fit",
            self.inner.put_estimator_fit(row, keep),
        )
        .await
    }
    async fn estimator_fit(&self, version: &str) -> Result<Option<EstimatorFitRow>, StoreError> {
        self.bound(
            Call::Read,
            "estimator_fit",
            self.inner.estimator_fit(version),
        )
        .await
    }
}

#[async_trait]
impl LogStore for Bounded {
    async fn log_key(&self) -> Result<Option<(String, String)>, StoreError> {
        self.bound(Call::Read, "log_key", self.inner.log_key())
            .await
    }
    async fn claim_log_key(
        &self,
        origin: &str,
        verifier_key: &str,
    ) -> Result<(String, String), StoreError> {
        self.bound(
            Call::Write,
            "claim_log_key",
            self.inner.claim_log_key(origin, verifier_key),
        )
        .await
    }
    async fn log_size(&self) -> Result<u64, StoreError> {
        self.bound(Call::Read, "log_size", self.inner.log_size())
            .await
    }
    async fn log_stats(&self) -> Result<LogStats, StoreError> {
        self.bound(Call::Read, "log_stats", self.inner.log_stats())
            .await
    }
    async fn log_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, StoreError> {
        self.bound(Call::Read, "log_hashes", self.inner.log_hashes(indexes))
            .await
    }
    async fn log_entries(&self, start: u64, end: u64) -> Result<Vec<LogEntry>, StoreError> {
        self.bound(
            Call::Read,
            "log_entries",
            self.inner.log_entries(start, end),
        )
        .await
    }
    async fn backfill_log(&self) -> Result<u64, StoreError> {
        self.unbounded("backfill_log", self.inner.backfill_log())
            .await
    }
    async fn latest_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        self.bound(
            Call::Read,
            "latest_checkpoint",
            self.inner.latest_checkpoint(),
        )
        .await
    }
    async fn publish_checkpoint(
        &self,
        size: u64,
        signed: &str,
        at: &str,
    ) -> Result<bool, StoreError> {
        self.bound(
            Call::Write,
            "publish_checkpoint",
            self.inner.publish_checkpoint(size, signed, at),
        )
        .await
    }
}

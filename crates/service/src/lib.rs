//! The one door between HTTP (or the CLI) and the data: every operation a
//! handler can ask for. It owns the store (private: handlers never name
//! it), the blob store and the data version that response caches key on,
//! and bumps that version on every write it makes.

pub mod admin_sessions;
pub mod admission;
pub mod analysis;
pub mod backup;
pub mod bundle_audit;
pub mod catalogue;
pub mod error;
pub mod estimates;
pub mod files;
pub mod flights;
pub mod moderation;
pub mod peers;
pub mod rebuild;
pub mod register;
pub mod snapshots;
pub mod tlog;
pub mod upload;
pub mod views;

pub mod ingest;
pub mod limits;
pub mod telemetry;

/// The rows and counts a page shows and the moderator named on a
/// decision: types of the rules and analytics, gathered here for callers.
/// No type of the store or of the snapshot crate leaves the service; stored
/// files leave as [`files::StoredFile`].
pub mod read {
    pub use wattcounts_analytics::leaderboard::{Facets, GroupView};
    pub use wattcounts_rules::domain::{Actor, DatasetCounts, SubmissionRecord, TableCounts};
    pub use wattcounts_rules::snapshot_manifest::Published;
}

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::analysis::{IngestConfig, StageTimings};
use crate::ingest::{IngestError, Ingestor, Novelty};
use crate::limits::RateLimits;
use wattcounts_analytics::leaderboard::{LeaderboardRow, ProtocolFilter, Query};
use wattcounts_rules::checks::CheckResult;
use wattcounts_rules::derived::ConfigurationMetrics;
use wattcounts_rules::domain::{Origin, Status};
use wattcounts_rules::receipt::ModerationEvent;
use wattcounts_rules::receipt::Receipt;
use wattcounts_store::blobs::BlobStore;
use wattcounts_store::{Actor, DatasetCounts, GroupView, Store, SubmissionRecord, TableCounts};

pub use error::{ErrorKind, ServiceError};
pub use moderation::{Decision, ModerationError};

pub struct Service {
    store: Arc<dyn Store>,
    ingestor: Ingestor,
    tlog: tlog::Tlog,
    admission: admission::Admission,
    /// Copies of one bundle arriving together: one ingest, the rest replays.
    flights: flights::Flights,
    estimates: estimates::Estimates,
    /// Bumped whenever this instance changes what readers see.
    data_version: AtomicU64,
    /// The published snapshots this instance serves and makes.
    shelf: Option<snapshots::Shelf>,
    /// The imported peer origins as of a data version (the data control
    /// shows them on every page; they change only with an import).
    peer_origins: tokio::sync::RwLock<Option<(u64, Arc<Vec<peers::PeerOrigin>>)>>,
    /// The estimator judged on the newest ML.ENERGY v3 release.
    peer_validation: tokio::sync::RwLock<Option<Arc<peers::RealHardwareValidation>>>,
    /// Each peer release's insights, computed once (a release never changes).
    peer_insights: tokio::sync::RwLock<
        std::collections::HashMap<i64, Arc<wattcounts_analytics::peer_insights::PeerInsights>>,
    >,
}

/// One page of the leaderboard and the view it was read from.
#[derive(Debug, Clone)]
pub struct Board {
    pub entries: Vec<LeaderboardRow>,
    pub total: u64,
    /// The origin shown (resolved when the reader did not choose).
    pub origin: Origin,
    /// Every view the read model holds (for the origin and protocol pickers).
    pub views: Vec<GroupView>,
    /// The imported peer origins (the data control links to their own
    /// pages: their figures are never rows of a Watt Counts view).
    pub peers: Arc<Vec<peers::PeerOrigin>>,
}

impl Service {
    /// A service without rate limits or the log's key, admitting as many
    /// ingests at once as the machine has cores (maintenance tools: it
    /// stores and reads, but signs no checkpoint).
    pub fn new(store: Arc<dyn Store>, blobs: BlobStore, config: IngestConfig) -> Self {
        Self::with_limits(
            store,
            blobs,
            config,
            admission::AdmissionLimits::for_this_machine(),
            RateLimits::off(),
            None,
        )
    }

    pub fn with_limits(
        store: Arc<dyn Store>,
        blobs: BlobStore,
        config: IngestConfig,
        admission: admission::AdmissionLimits,
        rates: RateLimits,
        log_key: Option<wattcounts_rules::tlog::checkpoint::LogKey>,
    ) -> Self {
        Service {
            tlog: tlog::Tlog::new(store.clone(), log_key),
            ingestor: Ingestor::new(store.clone(), blobs, config, rates),
            admission: admission::Admission::new(admission),
            flights: flights::Flights::default(),
            estimates: estimates::Estimates::new(estimates::EstimatorConfig::default()),
            store,
            data_version: AtomicU64::new(0),
            shelf: None,
            peer_origins: Default::default(),
            peer_validation: Default::default(),
            peer_insights: Default::default(),
        }
    }

    /// The estimator's job runs with these settings (before the service
    /// is shared).
    pub fn with_estimator(mut self, config: estimates::EstimatorConfig) -> Self {
        self.estimates = estimates::Estimates::new(config);
        self
    }

    pub fn limits(&self) -> &RateLimits {
        &self.ingestor.limits
    }

    /// Counts a request of `action` from a client address against its
    /// limit (the edge calls this before reading a body).
    pub async fn count_request(
        &self,
        action: crate::limits::Action,
        ip: std::net::IpAddr,
    ) -> Result<(), crate::limits::LimitError> {
        self.ingestor
            .limits
            .count(&*self.store, action, crate::limits::Subject::Ip(ip))
            .await
    }

    pub fn config(&self) -> &IngestConfig {
        &self.ingestor.config
    }
    pub fn blobs(&self) -> &BlobStore {
        &self.ingestor.blobs
    }

    /// A stored submission's original bundle and its SHA-256 (None: no
    /// such submission).
    pub async fn stored_bundle(
        &self,
        id: Uuid,
    ) -> Result<Option<(files::StoredFile, String)>, ServiceError> {
        let rec = self.store.submission(id).await?;
        Ok(rec.map(|r| {
            (
                files::StoredFile::new(self.blobs().objects(), r.blob_path),
                r.bundle_sha256,
            )
        }))
    }
    pub fn backend(&self) -> &'static str {
        self.store.backend()
    }
    pub async fn ping(&self) -> Result<(), ServiceError> {
        self.store.ping().await.map_err(ServiceError::from)
    }

    /// Whether this instance can serve: the database answers and the blob
    /// store's folder can be written (a probe file made and removed).
    /// Says what is not ready.
    pub async fn ready(&self) -> Result<(), String> {
        self.store
            .ping()
            .await
            .map_err(|e| format!("database: {e}"))?;
        self.blobs()
            .probe()
            .await
            .map_err(|e| format!("blob store ({}): {e}", self.blobs().objects().describe()))?;
        let floor = self.admission.limits().free_floor_bytes;
        if floor > 0 {
            let free = self
                .blobs()
                .free_bytes()
                .map_err(|e| format!("data dir: its free space cannot be read: {e}"))?;
            if free < floor {
                return Err(format!(
                    "data dir: {free} bytes free, under the floor of {floor} (--min-free-disk-bytes)"
                ));
            }
        }
        Ok(())
    }

    /// Connections of the database pool: (in use, idle).
    pub fn pool_stats(&self) -> (u32, u32) {
        self.store.pool_stats()
    }

    pub fn data_version(&self) -> u64 {
        self.data_version.load(Ordering::SeqCst)
    }
    /// Stored data changed: cached answers are stale.
    fn changed(&self) {
        self.data_version.fetch_add(1, Ordering::SeqCst);
    }

    /// Notices what other instances write to a shared database: every
    /// `every`, compares the store's data stamp with the last one seen and
    /// marks the data changed when it moved. Runs until the process ends.
    pub async fn watch_other_writers(self: Arc<Self>, every: Duration) {
        let mut last = None;
        loop {
            match self.store.data_stamp().await {
                Ok(stamp) => {
                    if last.is_some_and(|l| l != stamp) {
                        self.changed();
                        // Another instance may have added a GPU (a logged
                        // decision moves the stamp): judge by it here too.
                        if let Err(e) = self.load_catalogue_additions().await {
                            tracing::warn!(error = %e, "catalogue additions unavailable");
                        }
                    }
                    last = Some(stamp);
                }
                Err(e) => tracing::warn!(error = %e, "data stamp unavailable"),
            }
            tokio::time::sleep(every).await;
        }
    }

    // Submissions.

    pub async fn submit(
        &self,
        bundle: Vec<u8>,
        signature: Vec<u8>,
    ) -> Result<(Novelty, Receipt), IngestError> {
        let mut t = StageTimings::default();
        self.submit_timed(bundle, signature, &mut t).await
    }

    /// A bundle in memory: staged (and digested) like an upload, then
    /// ingested; `t.hash` is the staging time.
    pub async fn submit_timed(
        &self,
        bundle: Vec<u8>,
        signature: Vec<u8>,
        t: &mut StageTimings,
    ) -> Result<(Novelty, Receipt), IngestError> {
        let start = std::time::Instant::now();
        let mut upload = self.begin_upload()?;
        upload.write_all(bundle).await?;
        let staged = upload.finish().await?;
        t.hash = start.elapsed();
        self.ingest_staged(staged, signature, t).await
    }

    /// Starts receiving an upload into the staging folder.
    pub fn begin_upload(&self) -> Result<upload::Upload, IngestError> {
        let writer = self
            .blobs()
            .staging()
            .map_err(|e| IngestError::Internal(format!("creating a staging file: {e}")))?;
        Ok(upload::Upload::new(writer, self.admission.staging_claim()))
    }

    /// Ingests a received upload when its turn comes (503 when the queue
    /// is full). Each stage's time goes to the metrics.
    pub async fn submit_upload(
        &self,
        staged: upload::StagedUpload,
        signature: Vec<u8>,
    ) -> Result<(Novelty, Receipt), IngestError> {
        self.ingest_staged(staged, signature, &mut StageTimings::default())
            .await
    }

    /// [`Service::submit_upload`] that also hands the stages' times to the
    /// caller (the ingest benchmark, through [`Service::submit_timed`]).
    async fn ingest_staged(
        &self,
        staged: upload::StagedUpload,
        signature: Vec<u8>,
        t: &mut StageTimings,
    ) -> Result<(Novelty, Receipt), IngestError> {
        // Copies of these bytes arriving together take turns here, outside
        // the ingest queue; bytes already stored are then answered from the
        // store before any check slot is taken, so a burst of retries
        // cannot fill the queue that new bundles wait in.
        let digest = staged.sha256_hex().to_string();
        let _flight = self.flights.turn(&digest).await;
        let result = match self
            .ingestor
            .known(&digest, staged.digests(), &signature)
            .await
        {
            Ok(Some(known)) => Ok(known),
            Ok(None) => {
                let _turn = self.admission.ingest_turn().await?;
                let (bundle, _claim) = staged.into_parts();
                let result = self.ingestor.submit_staged(bundle, signature, t).await;
                crate::telemetry::ingest_stages(t);
                result
            }
            Err(e) => Err(e),
        };
        let (outcome, mut receipt) = match result {
            Ok(r) => r,
            Err(e) => {
                if let IngestError::Rejected(r) = &e {
                    crate::telemetry::rejection(r.code);
                }
                return Err(e);
            }
        };
        crate::telemetry::submission(
            match outcome {
                Novelty::Created => "created",
                Novelty::Replayed => "replayed",
            },
            receipt.status.as_str(),
        );
        if outcome == Novelty::Created {
            self.changed();
        }
        // Stored already: a failure here is the log's, and the same bytes
        // sent again answer with the whole receipt.
        self.attach_log(&mut receipt)
            .await
            .map_err(|e| IngestError::Internal(e.to_string()))?;
        Ok((outcome, receipt))
    }

    /// The receipt as it stands now, with its log proof.
    pub async fn receipt(&self, id: Uuid) -> Result<Option<Receipt>, tlog::TlogError> {
        let Some(mut r) = self.ingestor.receipt(id).await? else {
            return Ok(None);
        };
        self.attach_log(&mut r).await?;
        Ok(Some(r))
    }

    /// Adds the receipt's log part (tools without the log's key add none).
    async fn attach_log(&self, r: &mut Receipt) -> Result<(), tlog::TlogError> {
        if let (Some(index), Some(_)) = (r.log_index, self.tlog.verifier_key()) {
            r.log = Some(self.tlog.receipt_part(index).await?);
        }
        Ok(())
    }

    /// The transparency log.
    pub fn tlog(&self) -> &tlog::Tlog {
        &self.tlog
    }

    /// Start-up: checks that this instance signs with the log's key,
    /// appends leaves for whatever was stored before the log existed, and
    /// publishes a checkpoint of the log as it stands. Returns how many
    /// leaves were backfilled.
    pub async fn start_log(&self) -> Result<u64, tlog::TlogError> {
        self.tlog.claim().await?;
        let backfilled = self.store.backfill_log().await?;
        if backfilled > 0 {
            self.changed();
        }
        self.tlog.publish().await?;
        Ok(backfilled)
    }

    /// Publishes a checkpoint every `every` when the log has grown (and
    /// right away on demand through [`tlog::Tlog::publish`]).
    pub async fn publish_checkpoints(self: Arc<Self>, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            if let Err(e) = self.tlog.publish().await {
                tracing::warn!(error = %e, "publishing a log checkpoint failed");
            }
        }
    }
    pub async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, ServiceError> {
        self.store.submission(id).await.map_err(ServiceError::from)
    }
    pub async fn configurations(
        &self,
        id: Uuid,
    ) -> Result<Vec<ConfigurationMetrics>, ServiceError> {
        self.store
            .configurations(id)
            .await
            .map_err(ServiceError::from)
    }
    pub async fn check_results(&self, id: Uuid) -> Result<Vec<CheckResult>, ServiceError> {
        self.store
            .check_results(id)
            .await
            .map_err(ServiceError::from)
    }
    pub async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, ServiceError> {
        self.store
            .moderation_events(id)
            .await
            .map_err(ServiceError::from)
    }
    /// The manifest JSON and the signature text a bundle came with.
    pub async fn submission_documents(
        &self,
        id: Uuid,
    ) -> Result<Option<(String, String)>, ServiceError> {
        self.store
            .submission_documents(id)
            .await
            .map_err(ServiceError::from)
    }
    pub async fn latest_submissions(
        &self,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, ServiceError> {
        self.store
            .latest_submissions(limit)
            .await
            .map_err(ServiceError::from)
    }
    pub async fn submissions_on_gpu(
        &self,
        gpu_id: &str,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, ServiceError> {
        self.store
            .submissions_on_gpu(gpu_id, limit)
            .await
            .map_err(ServiceError::from)
    }
    pub async fn submissions_with_model(
        &self,
        model: &str,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, ServiceError> {
        self.store
            .submissions_with_model(model, limit)
            .await
            .map_err(ServiceError::from)
    }
    /// The models each submission measured.
    pub async fn models_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Vec<String>)>, ServiceError> {
        self.store.models_of(ids).await.map_err(ServiceError::from)
    }
    /// When each submission was accepted: by its last accepting decision,
    /// else at receipt (accepted at intake), in the order of `records`.
    pub async fn accepted_times(
        &self,
        records: &[SubmissionRecord],
    ) -> Result<Vec<chrono::DateTime<chrono::Utc>>, ServiceError> {
        let ids: Vec<Uuid> = records.iter().map(|r| r.id).collect();
        let decided: std::collections::HashMap<Uuid, chrono::DateTime<chrono::Utc>> =
            self.store.accepted_at(&ids).await?.into_iter().collect();
        Ok(records
            .iter()
            .map(|r| decided.get(&r.id).copied().unwrap_or(r.received_at))
            .collect())
    }
    pub async fn review_queue(&self, limit: u32) -> Result<Vec<SubmissionRecord>, ServiceError> {
        self.store
            .submissions_with_status(Status::NeedsReview, limit)
            .await
            .map_err(ServiceError::from)
    }
    pub async fn dataset_counts(&self) -> Result<DatasetCounts, ServiceError> {
        self.store
            .dataset_counts()
            .await
            .map_err(ServiceError::from)
    }
    /// Rows per table (tests, operations).
    pub async fn table_counts(&self) -> Result<TableCounts, ServiceError> {
        self.store.counts().await.map_err(ServiceError::from)
    }

    // Reading the read model.

    /// The origin a reader sees when they do not choose: real data where the
    /// protocol asked for (the reference one by default) has any, the demo
    /// where only the demo has, real (empty) when neither has.
    pub fn default_origin(views: &[GroupView], protocol: &ProtocolFilter) -> Origin {
        let has = |o: Origin| {
            views.iter().any(|v| {
                v.origin == o
                    && match protocol {
                        ProtocolFilter::Reference => v.reference,
                        ProtocolFilter::Id(id) => &v.protocol_id == id,
                        ProtocolFilter::Any => true,
                    }
            })
        };
        if !has(Origin::Real) && has(Origin::Demo) {
            Origin::Demo
        } else {
            Origin::Real
        }
    }

    /// One page of groups, with the origin resolved.
    pub async fn leaderboard(&self, q: &Query) -> Result<Board, ServiceError> {
        let views = self.store.group_views(q.include_review).await?;
        let origin = q
            .origin
            .unwrap_or_else(|| Self::default_origin(&views, &q.protocol));
        let q = Query {
            origin: Some(origin),
            ..q.clone()
        };
        let (entries, total) = self.store.groups(&q).await?;
        Ok(Board {
            entries,
            total,
            origin,
            views,
            peers: self.peer_origins().await?,
        })
    }

    /// The models, GPUs and rates of one view, for filter controls.
    pub async fn facets(&self, q: &Query) -> Result<wattcounts_store::Facets, ServiceError> {
        self.store.group_facets(q).await.map_err(ServiceError::from)
    }

    /// Every group of one view (pages that compare across a view: GPUs,
    /// compare, model). Bounded by the number of configurations measured,
    /// not by the number of runs or submissions.
    pub async fn all_groups(&self, q: &Query) -> Result<Board, ServiceError> {
        self.leaderboard(&Query {
            page: 1,
            per_page: 100_000,
            evidence_list: false,
            ..q.clone()
        })
        .await
    }

    // Moderation: every decision changes what readers see.

    pub async fn decide(
        &self,
        id: Uuid,
        decision: Decision,
        by: &Actor,
    ) -> Result<Status, ModerationError> {
        let r = moderation::decide(self.store.as_ref(), id, decision, by).await;
        self.changed();
        r
    }
    pub async fn suspend(&self, handle: &str, by: &Actor) -> Result<(), ModerationError> {
        let r = moderation::suspend(self.store.as_ref(), handle, by).await;
        self.changed();
        r
    }
    pub async fn revoke(
        &self,
        fingerprint: &str,
        effective_at: Option<DateTime<Utc>>,
        by: &Actor,
    ) -> Result<Vec<Uuid>, ModerationError> {
        let r = moderation::revoke(self.store.as_ref(), fingerprint, effective_at, by).await;
        self.changed();
        r
    }

    /// Start-up recovery: removes staging files and blobs no submission
    /// references, once older than `grace`. Returns (files, bytes).
    pub async fn recover(&self, grace: Duration) -> anyhow::Result<(u64, u64)> {
        let keep: std::collections::HashSet<String> =
            self.store.blob_paths().await?.into_iter().collect();
        let blobs = self.blobs().clone();
        Ok(tokio::task::spawn_blocking(move || blobs.sweep(&keep, grace)).await??)
    }

    // Snapshots.

    /// Start-up: lists snapshot folders published before the database
    /// listed them, and clears what crashed creations left.
    pub async fn tidy_snapshots(&self) -> anyhow::Result<(usize, usize)> {
        let Some(shelf) = &self.shelf else {
            return Ok((0, 0));
        };
        let imported = shelf.library.import_folders(self.store.as_ref()).await?;
        let removed = shelf.library.remove_stale(self.store.as_ref()).await?;
        Ok((imported, removed))
    }

    pub async fn create_snapshot(
        &self,
        library: &wattcounts_snapshot::library::Library,
        options: &wattcounts_snapshot::create::Options,
        progress: impl FnMut(&str) + Send + 'static,
    ) -> anyhow::Result<wattcounts_snapshot::create::Created> {
        let mut options = options.clone();
        if options.estimator.is_none() {
            options.estimator = Some(match self.estimator_of_current_data().await {
                Ok(Some(t)) => estimates::card_section(&t),
                _ => "## Energy estimator\n\nNo fit of the estimator on these data was stored when this snapshot was made; the snapshot holds measurements only.".into(),
            });
        }
        if options.log_key.is_none() {
            self.tlog.claim().await?;
            options.log_key = self.tlog.key_arc();
        }
        wattcounts_snapshot::create::create(
            self.store.as_ref(),
            self.blobs(),
            library,
            &options,
            progress,
        )
        .await
        // The store's failure leaves as the service's (a 503 when the
        // database is away), anything else as it was.
        .map_err(|e| match e.downcast::<wattcounts_store::StoreError>() {
            Ok(store) => anyhow::Error::new(ServiceError::from(store)),
            Err(other) => other,
        })
    }

    /// The store, for the few tools that work below the service on purpose
    /// (`db copy`, the scale benchmark's seeding). Handlers never call it.
    pub fn store_for_tools(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

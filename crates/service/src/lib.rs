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

mod board;
mod health;
mod intake;
mod jobs;
mod reads;

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

use crate::analysis::IngestConfig;
use crate::ingest::Ingestor;
use crate::limits::RateLimits;
use wattcounts_store::blobs::BlobStore;
use wattcounts_store::Store;

pub use board::Board;
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

    pub fn data_version(&self) -> u64 {
        self.data_version.load(Ordering::SeqCst)
    }
    /// Stored data changed: cached answers are stale.
    fn changed(&self) {
        self.data_version.fetch_add(1, Ordering::SeqCst);
    }

    /// The store, for the few tools that work below the service on purpose
    /// (`db copy`, the scale benchmark's seeding). Handlers never call it.
    pub fn store_for_tools(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

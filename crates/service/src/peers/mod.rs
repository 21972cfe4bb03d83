//! Peers (issue #39): published releases of other benchmarks, imported
//! ([`import`]), shown one release or one model at a time ([`views`]),
//! summed up within themselves ([`insights`]), and used to judge the
//! estimator on real hardware ([`validation`]); never merged with Watt
//! Counts figures.

mod import;
mod insights;
mod validation;
mod views;

pub use import::*;
pub use insights::*;
pub use validation::*;
pub use views::*;

use std::sync::Arc;
use std::time::Duration;

use wattcounts_rules::peer::{PeerFile, PeerReleaseRecord, SourceInfo};

use crate::{Service, ServiceError};

/// A peer origin as the data control offers it: its newest release.
#[derive(Debug, Clone)]
pub struct PeerOrigin {
    pub info: &'static SourceInfo,
    pub label: String,
    pub configurations: u64,
    /// The GPUs measured, as the publisher names them.
    pub gpus: Vec<String>,
}

impl Service {
    /// Every stored release, newest first within each origin.
    pub async fn peer_releases(&self) -> Result<Vec<PeerReleaseRecord>, ServiceError> {
        Ok(self.store.peer_releases().await?)
    }

    /// The stored releases' ids, sorted: a stored release never changes,
    /// so a new id is the only news an import brings.
    async fn peer_release_ids(&self) -> Result<Vec<i64>, ServiceError> {
        let mut ids: Vec<i64> = self.peer_releases().await?.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Notices releases another process stored in this database (`wattcounts
    /// peer import` beside a running `serve`, or another instance's import):
    /// every `every`, reads the stored releases' ids and marks the data
    /// changed when they moved, so the cached answers, the data control's
    /// origins and the estimator's real-hardware table follow. The store's
    /// data stamp, which `watch_other_writers` polls, counts submissions and
    /// decisions only: an import does not move it. Runs until the process
    /// ends.
    pub async fn watch_peer_imports(self: Arc<Self>, every: Duration) {
        let mut last: Option<Vec<i64>> = None;
        loop {
            match self.peer_release_ids().await {
                Ok(ids) => {
                    // The first look is news too: what was read before it
                    // (the estimator's table, at start) may predate an
                    // import made meanwhile. One extra refresh at start.
                    if last.as_ref() != Some(&ids) {
                        self.changed();
                    }
                    last = Some(ids);
                }
                Err(e) => tracing::warn!(error = %e, "peer releases unavailable"),
            }
            tokio::time::sleep(every).await;
        }
    }

    /// The files a release read, with their digests.
    pub async fn peer_files(&self, release_id: i64) -> Result<Vec<PeerFile>, ServiceError> {
        Ok(self.store.peer_files(release_id).await?)
    }

    /// Each imported origin's newest release, for the data control. Read
    /// once per change of the data, not per page.
    pub async fn peer_origins(&self) -> Result<Arc<Vec<PeerOrigin>>, ServiceError> {
        let version = self.data_version();
        if let Some((v, cached)) = &*self.peer_origins.read().await {
            if *v == version {
                return Ok(cached.clone());
            }
        }
        let mut origins: Vec<PeerOrigin> = Vec::new();
        for r in self.store.peer_releases().await? {
            if origins.iter().any(|o| o.info.origin == r.source.origin()) {
                continue;
            }
            origins.push(PeerOrigin {
                info: r.source.info(),
                gpus: r.facets.gpus.iter().map(|g| g.value.clone()).collect(),
                label: r.label,
                configurations: r.configurations,
            });
        }
        let origins = Arc::new(origins);
        *self.peer_origins.write().await = Some((version, origins.clone()));
        Ok(origins)
    }
}

//! What runs beside the requests: start-up (the log's backfill, recovery
//! of orphan files), and the loops that publish checkpoints and notice
//! other instances' writes. The estimator's and the peers' jobs live with
//! their own modules.

use std::sync::Arc;
use std::time::Duration;

use crate::{tlog, Service};

impl Service {
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

    /// Start-up recovery: removes staging files and blobs no submission
    /// references, once older than `grace`. Returns (files, bytes).
    pub async fn recover(&self, grace: Duration) -> anyhow::Result<(u64, u64)> {
        let keep: std::collections::HashSet<String> =
            self.store.blob_paths().await?.into_iter().collect();
        let blobs = self.blobs().clone();
        Ok(tokio::task::spawn_blocking(move || blobs.sweep(&keep, grace)).await??)
    }
}

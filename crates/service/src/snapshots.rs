//! The published snapshots this instance serves and makes: their library
//! (the data dir's `snapshots/` or the bucket's) and the lock that lets one
//! creation run at a time here. The web asks the service; it holds neither.

use std::time::Duration;

use crate::files::StoredFile;
use crate::{ErrorKind, ServiceError};
use wattcounts_rules::snapshot_manifest::Published;
use wattcounts_snapshot::Library;

/// What a maintainer asks of a new snapshot.
#[derive(Debug, Clone, Default)]
pub struct SnapshotRequest {
    /// Also write `power_traces.parquet` (read back from the stored bundles).
    pub traces: bool,
    /// Who asked for it, recorded in the manifest.
    pub created_by: String,
}

/// A snapshot just published, and how long its read and write took.
#[derive(Debug, Clone)]
pub struct NewSnapshot {
    pub published: Published,
    pub took: Duration,
}

/// The library and its creation lock.
pub struct Shelf {
    pub(crate) library: Library,
    pub(crate) creating: tokio::sync::Mutex<()>,
}

impl Shelf {
    pub fn new(library: Library) -> Self {
        Shelf {
            library,
            creating: tokio::sync::Mutex::new(()),
        }
    }
}

impl crate::Service {
    /// Serves and makes snapshots from `library`.
    pub fn with_snapshot_library(mut self, library: Library) -> Self {
        self.shelf = Some(Shelf::new(library));
        self
    }

    fn shelf(&self) -> anyhow::Result<&Shelf> {
        self.shelf
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("this instance was started without a snapshot library"))
    }

    /// Where the snapshots are kept, in words (a folder or a bucket).
    pub fn snapshot_place(&self) -> String {
        match &self.shelf {
            Some(shelf) => shelf.library.objects().describe(),
            None => "no snapshot library".into(),
        }
    }

    /// Every published snapshot, newest first (none without a library).
    pub async fn snapshots(&self) -> anyhow::Result<Vec<Published>> {
        match &self.shelf {
            Some(shelf) => shelf.library.list(self.store.as_ref()).await,
            None => Ok(Vec::new()),
        }
    }

    /// One published snapshot (`latest`: the newest).
    pub async fn snapshot(&self, id: &str) -> anyhow::Result<Option<Published>> {
        match &self.shelf {
            Some(shelf) => shelf.library.get(self.store.as_ref(), id).await,
            None => Ok(None),
        }
    }

    /// A published snapshot's file `name`; None when it has no such file.
    pub fn snapshot_file(&self, p: &Published, name: &str) -> Option<StoredFile> {
        let shelf = self.shelf.as_ref()?;
        Some(StoredFile::new(
            shelf.library.objects(),
            shelf.library.file(p, name)?,
        ))
    }

    /// A published snapshot's dataset card, or nothing when it cannot be
    /// read (the page shows the rest).
    pub async fn snapshot_card(&self, p: &Published) -> String {
        let Some(file) = self.snapshot_file(p, "README.md") else {
            return String::new();
        };
        file.read()
            .await
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default()
    }

    /// Makes and publishes a snapshot, one at a time on this instance (a
    /// second request waits for the first). A database away is
    /// `Unavailable`; any other failure is `Internal`, with its cause.
    pub async fn publish_snapshot(
        &self,
        request: SnapshotRequest,
        progress: impl FnMut(&str) + Send + 'static,
    ) -> Result<NewSnapshot, ServiceError> {
        let internal = |e: anyhow::Error| match e.downcast::<ServiceError>() {
            Ok(service) => service,
            Err(other) => ServiceError {
                kind: ErrorKind::Internal,
                message: format!("{other:#}"),
            },
        };
        let shelf = self.shelf().map_err(internal)?;
        let _one_at_a_time = shelf.creating.lock().await;
        let options = wattcounts_snapshot::Options {
            traces: request.traces,
            created_by: request.created_by,
            public_url: Some(self.config().public_url.clone()),
            log_key: None,
            estimator: None,
        };
        let created = self
            .create_snapshot(&shelf.library, &options, progress)
            .await
            .map_err(internal)?;
        Ok(NewSnapshot {
            published: created.published,
            took: created.read_time + created.write_time,
        })
    }
}

impl crate::Service {
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
                Ok(Some(t)) => crate::estimates::card_section(&t),
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
}

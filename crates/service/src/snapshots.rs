//! The published snapshots this instance serves and makes: their library
//! (the data dir's `snapshots/` or the bucket's) and the lock that lets one
//! creation run at a time here. The web asks the service; it holds neither.

use wattcounts_snapshot::{Library, Published};

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

    /// Where a published snapshot's file `name` is kept, and the objects it
    /// is read from; None when the snapshot has no such file.
    pub fn snapshot_file(
        &self,
        p: &Published,
        name: &str,
    ) -> Option<(&crate::read::Objects, String)> {
        let shelf = self.shelf.as_ref()?;
        Some((shelf.library.objects(), shelf.library.file(p, name)?))
    }

    /// A published snapshot's dataset card, or nothing when it cannot be
    /// read (the page shows the rest).
    pub async fn snapshot_card(&self, p: &Published) -> String {
        let Some((objects, name)) = self.snapshot_file(p, "README.md") else {
            return String::new();
        };
        objects
            .read(&name)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default()
    }

    /// Makes and publishes a snapshot, one at a time on this instance (a
    /// second request waits for the first).
    pub async fn publish_snapshot(
        &self,
        options: &wattcounts_snapshot::create::Options,
        progress: impl FnMut(&str) + Send + 'static,
    ) -> anyhow::Result<wattcounts_snapshot::create::Created> {
        let shelf = self.shelf()?;
        let _one_at_a_time = shelf.creating.lock().await;
        self.create_snapshot(&shelf.library, options, progress)
            .await
    }
}

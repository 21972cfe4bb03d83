//! Stored files as readers get them (an original bundle, a snapshot's
//! file), wherever they are kept: in the data dir, which the web serves
//! with its file server, or in a bucket, streamed through this instance.
//! The web sees a [`StoredFile`], never the object store behind it.

use std::ops::Range;
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use wattcounts_store::objects::Objects;

/// One stored file: where it is and how to read a range of it.
pub struct StoredFile {
    objects: Objects,
    name: String,
}

/// Bytes of a stored file, as a stream.
pub struct FileBytes {
    /// The whole file's length.
    pub total: u64,
    /// The bytes sent.
    pub range: Range<u64>,
    pub body: BoxStream<'static, std::io::Result<Bytes>>,
}

impl StoredFile {
    /// The file `name` of `objects` (the service makes these; benches and
    /// tools that hold an object store of their own may too).
    pub fn new(objects: &Objects, name: String) -> Self {
        StoredFile {
            objects: objects.clone(),
            name,
        }
    }

    /// Its name where it is kept (for logs).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its path on this machine's disk, when it is kept in the data dir.
    pub fn local_path(&self) -> Option<PathBuf> {
        self.objects.local_path(&self.name)
    }

    /// Reads the range `range` picks once the file's length is known
    /// (None: all of it); `InvalidInput` when that range lies outside.
    pub async fn fetch(
        &self,
        range: impl FnOnce(u64) -> Option<Range<u64>>,
    ) -> std::io::Result<FileBytes> {
        let f = self.objects.fetch(&self.name, range).await?;
        Ok(FileBytes {
            total: f.total,
            range: f.range,
            body: f.body,
        })
    }

    /// The whole file, in memory (small files only: a dataset card).
    pub async fn read(&self) -> std::io::Result<Vec<u8>> {
        self.objects.read(&self.name).await
    }
}

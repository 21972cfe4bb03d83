//! Content-addressed store for raw bundles: `<root>/sha256/ab/abcdef….tar.gz`
//! in the data dir or a bucket. Uploads stream to a local staging file, are
//! fsynced, then renamed into place (or uploaded whole), so a crash never
//! leaves a half-written blob under its final name.

use std::io::Write;
use std::path::PathBuf;

use sha2::{Digest, Sha256, Sha512};

use super::objects::Objects;
use wattcounts_rules::signing::MessageDigests;

/// An upload on its way to the staging file, digested as it is written.
pub struct StagingWriter {
    file: tempfile::NamedTempFile,
    sha256: Sha256,
    sha512: Sha512,
    len: u64,
}

impl StagingWriter {
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let (sha256, sha512) = (&mut self.sha256, &mut self.sha512);
        if bytes.len() >= 1 << 20 {
            // A bundle handed over whole: both digests at once.
            rayon::join(|| sha256.update(bytes), || sha512.update(bytes));
        } else {
            sha256.update(bytes);
            sha512.update(bytes);
        }
        self.len += bytes.len() as u64;
        self.file.write_all(bytes)
    }
    /// The whole upload, digested. Not yet flushed to disk: see
    /// [`StagedBundle::sync`], which runs beside the analysis.
    pub fn finish(self) -> std::io::Result<StagedBundle> {
        let sha256: [u8; 32] = self.sha256.finalize().into();
        Ok(StagedBundle {
            sha256_hex: hex::encode(sha256),
            digests: MessageDigests {
                sha256,
                sha512: self.sha512.finalize().into(),
            },
            len: self.len,
            file: self.file,
        })
    }
}

/// A whole bundle in the staging folder, with its digests.
pub struct StagedBundle {
    file: tempfile::NamedTempFile,
    pub len: u64,
    /// The bundle's address: SHA-256 of its bytes, hex.
    pub sha256_hex: String,
    /// What its signature is checked against.
    pub digests: MessageDigests,
}

impl StagedBundle {
    /// Flushes the file to disk, so that a bundle acknowledged as stored
    /// survives a crash; before [`BlobStore::commit`].
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.as_file().sync_all()
    }
    /// A fresh reader from the start of the file.
    pub fn open(&self) -> std::io::Result<std::fs::File> {
        self.file.reopen()
    }
}

/// The bundles: staged in a local scratch folder while they arrive and are
/// checked, then stored by content address in the data dir or a bucket.
#[derive(Debug, Clone)]
pub struct BlobStore {
    /// Where uploads are staged; always local.
    scratch: PathBuf,
    objects: Objects,
}

impl BlobStore {
    /// Bundles in a local folder, staged in its `tmp/`.
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        let root = root.into();
        let objects = Objects::local(&root)?;
        std::fs::create_dir_all(root.join("sha256"))?;
        Self::with_objects(objects, root.join("tmp"))
    }

    /// Bundles wherever `objects` is (a bucket), staged in `scratch`.
    pub fn with_objects(objects: Objects, scratch: impl Into<PathBuf>) -> std::io::Result<Self> {
        let scratch = scratch.into();
        std::fs::create_dir_all(&scratch)?;
        Ok(BlobStore { scratch, objects })
    }

    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Writes and removes a small file where uploads are staged and where
    /// they are stored: the store can take a bundle now.
    pub async fn probe(&self) -> std::io::Result<()> {
        let scratch = self.scratch.clone();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&scratch)?;
            let f = tempfile::NamedTempFile::new_in(&scratch)?;
            std::fs::write(f.path(), b"ready")?;
            f.close()
        })
        .await??;
        self.objects.probe().await
    }

    /// Bytes free to an unprivileged writer on the disk uploads are staged
    /// on (the data dir), as statvfs(3) counts them.
    pub fn free_bytes(&self) -> std::io::Result<u64> {
        use std::os::unix::ffi::OsStrExt;
        std::fs::create_dir_all(&self.scratch)?;
        let path = std::ffi::CString::new(self.scratch.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is a NUL-terminated string and `st` a writable
        // statvfs that outlives the call.
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(st.f_bavail as u64 * st.f_frsize as u64)
    }

    /// Path relative to the root, as stored in the database.
    pub fn relative_path(sha256_hex: &str) -> String {
        format!("sha256/{}/{}.tar.gz", &sha256_hex[..2], sha256_hex)
    }

    /// A temporary file in the store that an upload streams into; it is
    /// deleted when dropped unless [`commit`](Self::commit)ted.
    pub fn staging(&self) -> std::io::Result<StagingWriter> {
        std::fs::create_dir_all(&self.scratch)?;
        Ok(StagingWriter {
            file: tempfile::NamedTempFile::new_in(&self.scratch)?,
            sha256: Sha256::new(),
            sha512: Sha512::new(),
            len: 0,
        })
    }

    /// Stages bytes already in memory (tools, the demo loader, tests).
    pub fn stage(&self, bytes: &[u8]) -> std::io::Result<StagedBundle> {
        let mut w = self.staging()?;
        w.write(bytes)?;
        w.finish()
    }

    /// Stores a staged file under its content address (a blocking thread's
    /// call). A bundle already stored is not written again.
    pub fn commit(&self, staged: StagedBundle) -> std::io::Result<String> {
        let rel = Self::relative_path(&staged.sha256_hex);
        match self.objects.local_path(&rel) {
            Some(dest) => {
                if dest.exists() {
                    return Ok(rel);
                }
                let dir = dest.parent().expect("blob path has a parent");
                std::fs::create_dir_all(dir)?;
                staged.file.persist(&dest).map_err(|e| e.error)?;
                super::objects::sync_dir(dir);
            }
            None => {
                if !self.objects.exists_blocking(&rel)? {
                    self.objects.put_file_blocking(&rel, staged.file.path())?;
                }
            }
        }
        Ok(rel)
    }

    /// A stored bundle's bytes (a blocking thread's call).
    pub fn read(&self, relative: &str) -> std::io::Result<Vec<u8>> {
        self.objects.read_blocking(relative)
    }

    /// A stored bundle, or part of it, for a download.
    pub async fn fetch(
        &self,
        relative: &str,
        range: impl FnOnce(u64) -> Option<std::ops::Range<u64>>,
    ) -> std::io::Result<super::objects::Fetched> {
        self.objects.fetch(relative, range).await
    }

    /// Removes what a crash or a lost race left behind: staging files, and
    /// blobs no row references (`keep` holds the referenced relative
    /// paths), each only once older than `grace`, so a bundle that another
    /// instance is storing right now is left alone. Returns (files, bytes).
    /// A blocking thread's call.
    pub fn sweep(
        &self,
        keep: &std::collections::HashSet<String>,
        grace: std::time::Duration,
    ) -> std::io::Result<(u64, u64)> {
        let now = std::time::SystemTime::now();
        let old = |t: std::time::SystemTime| now.duration_since(t).is_ok_and(|age| age >= grace);
        let mut removed = (0u64, 0u64);
        if let Ok(rd) = std::fs::read_dir(&self.scratch) {
            for e in rd.flatten() {
                let m = e.metadata()?;
                if m.is_file() && m.modified().is_ok_and(old) {
                    std::fs::remove_file(e.path())?;
                    removed.0 += 1;
                    removed.1 += m.len();
                }
            }
        }
        for f in self.objects.list_blocking("sha256")? {
            if !keep.contains(&f.name) && old(f.modified) {
                self.objects.delete_blocking(&f.name)?;
                removed.0 += 1;
                removed.1 += f.bytes;
            }
        }
        Ok(removed)
    }
}

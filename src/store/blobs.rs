//! Content-addressed store for raw bundles: `<root>/sha256/ab/abcdef….tar.gz`.
//! Writes go to a temporary file (`tmp/`), are fsynced and renamed into
//! place, so a crash never leaves a half-written blob under its final name.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256, Sha512};

use crate::signing::MessageDigests;

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

#[derive(Debug, Clone)]
pub struct BlobStore {
    root: PathBuf,
}

impl BlobStore {
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(root.join("sha256"))?;
        Ok(BlobStore { root })
    }

    /// Writes and removes a small file where uploads are staged: the store
    /// can take a bundle now.
    pub fn probe(&self) -> std::io::Result<()> {
        let dir = self.root.join("tmp");
        std::fs::create_dir_all(&dir)?;
        let f = tempfile::NamedTempFile::new_in(&dir)?;
        std::fs::write(f.path(), b"ready")?;
        f.close()
    }

    /// Path relative to the root, as stored in the database.
    pub fn relative_path(sha256_hex: &str) -> String {
        format!("sha256/{}/{}.tar.gz", &sha256_hex[..2], sha256_hex)
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// A temporary file in the store that an upload streams into; it is
    /// deleted when dropped unless [`commit`](Self::commit)ted.
    pub fn staging(&self) -> std::io::Result<StagingWriter> {
        let dir = self.root.join("tmp");
        std::fs::create_dir_all(&dir)?;
        Ok(StagingWriter {
            file: tempfile::NamedTempFile::new_in(dir)?,
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

    /// Moves a staged file to its content address.
    pub fn commit(&self, staged: StagedBundle) -> std::io::Result<String> {
        let rel = Self::relative_path(&staged.sha256_hex);
        let dest = self.root.join(&rel);
        if dest.exists() {
            return Ok(rel);
        }
        let dir = dest.parent().expect("blob path has a parent");
        std::fs::create_dir_all(dir)?;
        staged.file.persist(&dest).map_err(|e| e.error)?;
        sync_dir(dir);
        Ok(rel)
    }

    pub fn read(&self, relative: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.root.join(relative))
    }

    /// Removes what a crash or a lost race left behind: staging files, and
    /// blobs no row references (`keep` holds the referenced relative
    /// paths), each only once older than `grace`, so a bundle that another
    /// instance is storing right now is left alone. Returns (files, bytes).
    pub fn sweep(
        &self,
        keep: &std::collections::HashSet<String>,
        grace: std::time::Duration,
    ) -> std::io::Result<(u64, u64)> {
        let now = std::time::SystemTime::now();
        let old = |m: &std::fs::Metadata| {
            m.modified()
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age >= grace)
        };
        let mut removed = (0u64, 0u64);
        let mut remove = |path: &Path, m: &std::fs::Metadata| -> std::io::Result<()> {
            std::fs::remove_file(path)?;
            removed.0 += 1;
            removed.1 += m.len();
            Ok(())
        };
        if let Ok(rd) = std::fs::read_dir(self.root.join("tmp")) {
            for e in rd.flatten() {
                let m = e.metadata()?;
                if m.is_file() && old(&m) {
                    remove(&e.path(), &m)?;
                }
            }
        }
        for shard in std::fs::read_dir(self.root.join("sha256"))?.flatten() {
            let Ok(rd) = std::fs::read_dir(shard.path()) else {
                continue;
            };
            for e in rd.flatten() {
                let m = e.metadata()?;
                let rel = format!(
                    "sha256/{}/{}",
                    shard.file_name().to_string_lossy(),
                    e.file_name().to_string_lossy()
                );
                if m.is_file() && !keep.contains(&rel) && old(&m) {
                    remove(&e.path(), &m)?;
                }
            }
        }
        Ok(removed)
    }
}

fn sync_dir(dir: &Path) {
    // Makes the rename durable; not supported everywhere, so best effort.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

//! The published snapshots: one folder each under `<data-dir>/snapshots/`,
//! named by snapshot id. A folder appears there only once complete (it is
//! built as `.tmp-<id>` and renamed), so whatever is listed is whole.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::manifest::{self, Manifest};
use crate::ingest::sha256_hex;

/// A published snapshot as readers see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Published {
    pub manifest: Manifest,
    /// SHA-256 of `manifest.json`: the snapshot's fingerprint.
    pub manifest_sha256: String,
    pub manifest_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
}

/// Unfinished folders older than this are from a crashed creation.
const STALE_AFTER: Duration = Duration::from_secs(3600);

pub(super) const TMP_PREFIX: &str = ".tmp-";

impl Library {
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Ok(Library { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self, id: &str) -> Option<PathBuf> {
        manifest::valid_id(id).then(|| self.root.join(id))
    }

    /// Every complete snapshot, newest first. A folder whose manifest does
    /// not read is skipped (and logged), not served.
    pub fn list(&self) -> std::io::Result<Vec<Published>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(id) = name.to_str() else { continue };
            if !manifest::valid_id(id) {
                continue;
            }
            match self.get(id) {
                Ok(Some(p)) => out.push(p),
                Ok(None) => {}
                Err(e) => tracing::warn!(snapshot = id, error = %e, "unreadable snapshot skipped"),
            }
        }
        out.sort_by(|a, b| {
            b.manifest
                .created_at
                .cmp(&a.manifest.created_at)
                .then_with(|| b.manifest.snapshot_id.cmp(&a.manifest.snapshot_id))
        });
        Ok(out)
    }

    pub fn get(&self, id: &str) -> anyhow::Result<Option<Published>> {
        let Some(dir) = self.dir(id) else {
            return Ok(None);
        };
        let bytes = match std::fs::read(dir.join(manifest::FILE_NAME)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let manifest: Manifest = serde_json::from_slice(&bytes)?;
        anyhow::ensure!(
            manifest.snapshot_id == id,
            "folder {id} holds the manifest of {}",
            manifest.snapshot_id
        );
        Ok(Some(Published {
            manifest_sha256: sha256_hex(&bytes),
            manifest_bytes: bytes.len() as u64,
            manifest,
        }))
    }

    pub fn latest(&self) -> std::io::Result<Option<Published>> {
        Ok(self.list()?.into_iter().next())
    }

    /// The path of a file a snapshot lists (or its manifest); None for any
    /// other name, so a request cannot reach outside the snapshot.
    pub fn file(&self, p: &Published, name: &str) -> Option<PathBuf> {
        let listed = name == manifest::FILE_NAME || p.manifest.file(name).is_some();
        listed
            .then(|| self.dir(&p.manifest.snapshot_id))
            .flatten()
            .map(|d| d.join(name))
    }

    /// Reserves a fresh id based on `base` (adding `-2`, `-3`, … if taken)
    /// by creating its unfinished folder; two instances sharing the folder
    /// cannot reserve the same id.
    pub(super) fn reserve(&self, base: &str) -> std::io::Result<(String, PathBuf)> {
        for n in 1..1000 {
            let id = if n == 1 {
                base.to_string()
            } else {
                format!("{base}-{n}")
            };
            let tmp = self.root.join(format!("{TMP_PREFIX}{id}"));
            match std::fs::create_dir(&tmp) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
            // Checked after the reservation: a finished snapshot renamed its
            // folder away before we could create ours.
            if self.root.join(&id).exists() {
                std::fs::remove_dir(&tmp)?;
                continue;
            }
            return Ok((id, tmp));
        }
        Err(std::io::Error::other(format!(
            "no free snapshot id after {base}-999"
        )))
    }

    /// Removes unfinished folders left by a crash (older than an hour, so a
    /// creation running on another instance is left alone).
    pub fn remove_stale(&self) -> std::io::Result<usize> {
        let mut removed = 0;
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            let stale = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(TMP_PREFIX))
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > STALE_AFTER);
            if stale {
                std::fs::remove_dir_all(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_reserved_once_and_crash_leftovers_go_after_an_hour() {
        let root = tempfile::tempdir().unwrap();
        let lib = Library::new(root.path()).unwrap();
        let (a, tmp_a) = lib.reserve("wc-20261201T000000Z").unwrap();
        let (b, _) = lib.reserve("wc-20261201T000000Z").unwrap();
        assert_eq!(a, "wc-20261201T000000Z");
        assert_eq!(
            b, "wc-20261201T000000Z-2",
            "the first is still being written"
        );
        // A finished snapshot keeps its id taken after its folder is renamed.
        std::fs::rename(&tmp_a, root.path().join(&a)).unwrap();
        let (c, _) = lib.reserve("wc-20261201T000000Z").unwrap();
        assert_eq!(c, "wc-20261201T000000Z-3");
        // Unfinished folders are not listed; young ones survive a cleanup.
        assert!(
            lib.list().unwrap().is_empty(),
            "no manifest, nothing listed"
        );
        assert_eq!(lib.remove_stale().unwrap(), 0);
        let old = std::time::SystemTime::now() - Duration::from_secs(2 * 3600);
        let leftover = root.path().join(format!("{TMP_PREFIX}{b}"));
        std::fs::File::open(&leftover)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(lib.remove_stale().unwrap(), 1);
        assert!(!leftover.exists());
        assert!(root.path().join(format!("{TMP_PREFIX}{c}")).exists());
    }
}

//! The published snapshots. A creation reserves its id in the database,
//! writes every file into a local unfinished folder (`.tmp-<id>`), then
//! puts the files in place, `manifest.json` last: by renaming the folder
//! into the data dir's `snapshots/`, or by uploading them to the bucket,
//! which has no atomic rename. Only then does the snapshot's row say
//! published, and readers find snapshots only through those rows, so
//! whatever is listed is whole.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::Utc;

use super::manifest::{self, Manifest};
use wattcounts_store::objects::Objects;
use wattcounts_store::{SnapshotRow, Store};

pub use wattcounts_rules::snapshot_manifest::Published;

/// A listed row as readers see it: its manifest parsed and checked
/// against the row's id.
fn published(row: SnapshotRow) -> anyhow::Result<Published> {
    let manifest: Manifest = serde_json::from_str(&row.manifest)?;
    anyhow::ensure!(
        manifest.snapshot_id == row.id,
        "the row of snapshot {} holds the manifest of {}",
        row.id,
        manifest.snapshot_id
    );
    Ok(Published {
        manifest_bytes: row.manifest.len() as u64,
        manifest_sha256: row.manifest_sha256,
        manifest,
    })
}

#[derive(Debug, Clone)]
pub struct Library {
    /// Where published files live: `<id>/<file>`.
    objects: Objects,
    /// Where unfinished folders are written (local).
    scratch: PathBuf,
}

/// Unfinished work older than this is from a crashed creation.
const STALE_AFTER: Duration = Duration::from_secs(3600);

pub(super) const TMP_PREFIX: &str = ".tmp-";

impl Library {
    /// Snapshots in a local folder (`<data-dir>/snapshots`), each built
    /// beside its final place and renamed into it.
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        let root = root.into();
        Ok(Library {
            objects: Objects::local(&root)?,
            scratch: root,
        })
    }

    /// Snapshots wherever `objects` is (a bucket), built in `scratch`.
    pub fn with_objects(objects: Objects, scratch: impl Into<PathBuf>) -> std::io::Result<Self> {
        let scratch = scratch.into();
        std::fs::create_dir_all(&scratch)?;
        Ok(Library { objects, scratch })
    }

    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Every published snapshot, newest first. A row whose manifest does
    /// not read is skipped (and logged), not served.
    pub async fn list(&self, store: &dyn Store) -> anyhow::Result<Vec<Published>> {
        Ok(store
            .snapshots()
            .await?
            .into_iter()
            .filter_map(|row| {
                let id = row.id.clone();
                published(row)
                    .map_err(|e| tracing::warn!(snapshot = id, error = %e, "unreadable snapshot skipped"))
                    .ok()
            })
            .collect())
    }

    /// One published snapshot; `latest` names the newest.
    pub async fn get(&self, store: &dyn Store, id: &str) -> anyhow::Result<Option<Published>> {
        let row = if id == "latest" {
            store.snapshot(None).await?
        } else if manifest::valid_id(id) {
            store.snapshot(Some(id)).await?
        } else {
            None
        };
        row.map(published).transpose()
    }

    /// The stored name of a file a snapshot lists (or its manifest); None
    /// for any other name, so a request cannot reach outside the snapshot.
    pub fn file(&self, p: &Published, name: &str) -> Option<String> {
        let listed = name == manifest::FILE_NAME || p.manifest.file(name).is_some();
        (listed && manifest::valid_id(&p.manifest.snapshot_id))
            .then(|| format!("{}/{name}", p.manifest.snapshot_id))
    }

    /// Reserves a fresh id based on `base` (adding `-2`, `-3`, … if taken)
    /// in the database, so instances cannot reserve the same one, and makes
    /// its unfinished folder.
    pub(super) async fn reserve(
        &self,
        store: &dyn Store,
        base: &str,
    ) -> anyhow::Result<(String, PathBuf)> {
        for n in 1..1000 {
            let id = if n == 1 {
                base.to_string()
            } else {
                format!("{base}-{n}")
            };
            if !store.reserve_snapshot(&id, &Utc::now()).await? {
                continue;
            }
            let tmp = self.scratch.join(format!("{TMP_PREFIX}{id}"));
            if tmp.exists() {
                std::fs::remove_dir_all(&tmp)?;
            }
            std::fs::create_dir_all(&tmp)?;
            return Ok((id, tmp));
        }
        anyhow::bail!("no free snapshot id after {base}-999")
    }

    /// Puts a finished folder's files in place, manifest.json last, then
    /// marks the snapshot published.
    pub(super) async fn publish(
        &self,
        store: &dyn Store,
        id: &str,
        tmp: &Path,
    ) -> anyhow::Result<Published> {
        let manifest_bytes = std::fs::read(tmp.join(manifest::FILE_NAME))?;
        match self.objects.local_path(id) {
            Some(dir) => {
                // One rename puts the whole folder in place.
                std::fs::rename(tmp, &dir)?;
                wattcounts_store::objects::sync_dir(&self.scratch);
            }
            None => {
                let mut names: Vec<String> = std::fs::read_dir(tmp)?
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect::<std::io::Result<_>>()?;
                names.retain(|n| n != manifest::FILE_NAME);
                names.sort();
                names.push(manifest::FILE_NAME.to_string());
                for name in names {
                    self.objects
                        .put_file(&format!("{id}/{name}"), &tmp.join(&name))
                        .await
                        .map_err(|e| {
                            anyhow::anyhow!(
                                "uploading {name} to {}/{id}: {e}",
                                self.objects.describe()
                            )
                        })?;
                }
                std::fs::remove_dir_all(tmp)?;
            }
        }
        let manifest_text = String::from_utf8(manifest_bytes)?;
        let manifest: Manifest = serde_json::from_str(&manifest_text)?;
        let row = SnapshotRow {
            id: id.to_string(),
            created_at: manifest.created_at.clone(),
            manifest_sha256: wattcounts_rules::digest::sha256_hex(manifest_text.as_bytes()),
            manifest: manifest_text,
        };
        store.publish_snapshot(&row, &Utc::now()).await?;
        published(row)
    }

    /// Takes away what a failed creation wrote, and its reservation.
    pub(super) async fn abandon(&self, store: &dyn Store, id: &str, tmp: &Path) {
        let _ = std::fs::remove_dir_all(tmp);
        if let Err(e) = self.remove_files(id).await {
            tracing::warn!(snapshot = id, error = %e, "files of a failed snapshot left behind");
        }
        if let Err(e) = store.drop_snapshot_reservation(id).await {
            tracing::warn!(snapshot = id, error = %e, "reservation of a failed snapshot left behind");
        }
    }

    async fn remove_files(&self, id: &str) -> std::io::Result<()> {
        for f in self.objects.list(id).await? {
            self.objects.delete(&f.name).await?;
        }
        if let Some(dir) = self.objects.local_path(id) {
            match std::fs::remove_dir(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Removes what crashed creations left (older than an hour, so one
    /// running on another instance is left alone): unfinished folders
    /// here, and reservations never published with any files they put in
    /// place. Returns how many creations were cleaned up.
    pub async fn remove_stale(&self, store: &dyn Store) -> anyhow::Result<usize> {
        let mut removed = 0;
        for entry in std::fs::read_dir(&self.scratch)? {
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
        let before = Utc::now() - chrono::Duration::from_std(STALE_AFTER)?;
        for id in store.stale_snapshot_reservations(&before).await? {
            self.remove_files(&id).await?;
            store.drop_snapshot_reservation(&id).await?;
            removed += 1;
        }
        Ok(removed)
    }

    /// Lists snapshots that a local folder holds but the database does not
    /// (published before snapshots were listed from the database). Returns
    /// how many were added.
    pub async fn import_folders(&self, store: &dyn Store) -> anyhow::Result<usize> {
        let Some(root) = self.objects.local_path("") else {
            return Ok(0);
        };
        let mut added = 0;
        for entry in std::fs::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(id) = name.to_str() else { continue };
            if !manifest::valid_id(id) || store.snapshot(Some(id)).await?.is_some() {
                continue;
            }
            let bytes = match std::fs::read(entry.path().join(manifest::FILE_NAME)) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let text = String::from_utf8(bytes)?;
            let manifest: Manifest = serde_json::from_str(&text)?;
            anyhow::ensure!(
                manifest.snapshot_id == id,
                "folder {id} holds the manifest of {}",
                manifest.snapshot_id
            );
            if !store.reserve_snapshot(id, &Utc::now()).await? {
                continue;
            }
            let row = SnapshotRow {
                id: id.to_string(),
                created_at: manifest.created_at,
                manifest_sha256: wattcounts_rules::digest::sha256_hex(text.as_bytes()),
                manifest: text,
            };
            store.publish_snapshot(&row, &Utc::now()).await?;
            added += 1;
        }
        Ok(added)
    }
}

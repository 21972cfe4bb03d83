//! `db audit-bundles`: every stored bundle read again under today's
//! unpacking rules (one gzip member, nothing after the tar, and the rest
//! of the unpacker's), so a bundle accepted before a rule existed is found.
//! Nothing is changed: what to do with a finding is a maintainer's call.

use anyhow::Context;
use uuid::Uuid;

use super::Service;
use wattcounts_rules::bundle::unpack;
use wattcounts_store::blobs::BlobStore;

/// One stored bundle that the unpacker refuses today.
#[derive(Debug, Clone)]
pub struct BundleFinding {
    pub blob_path: String,
    /// The submission stored with these bytes (content-addressed: one).
    pub submission: Option<Uuid>,
    /// The rule it breaks, e.g. `bundle_trailing_data`.
    pub code: &'static str,
    /// The refusal with its place (file, byte offset).
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub struct BundleAudit {
    pub checked: usize,
    pub bytes: u64,
    pub findings: Vec<BundleFinding>,
}

impl Service {
    /// Reads every stored bundle (one at a time: memory stays at one
    /// bundle) and lists those the unpacker refuses. `progress` hears one
    /// line per 100 bundles.
    pub async fn audit_bundles(
        &self,
        mut progress: impl FnMut(&str),
    ) -> anyhow::Result<BundleAudit> {
        let mut paths = self.store.blob_paths().await?;
        paths.sort();
        let total = paths.len();
        let mut audit = BundleAudit::default();
        for (i, path) in paths.into_iter().enumerate() {
            let blobs = self.blobs().clone();
            let read = path.clone();
            let (len, refused) =
                tokio::task::spawn_blocking(move || check_one(&blobs, &read)).await??;
            audit.checked += 1;
            audit.bytes += len;
            if let Some(r) = refused {
                let digest = path
                    .rsplit('/')
                    .next()
                    .and_then(|name| name.strip_suffix(".tar.gz"))
                    .unwrap_or_default();
                let submission = self.store.submission_by_digest(digest).await?;
                let place: Vec<String> = r.details.iter().map(|d| d.to_string()).collect();
                audit.findings.push(BundleFinding {
                    blob_path: path,
                    submission,
                    code: r.code,
                    message: if place.is_empty() {
                        r.message
                    } else {
                        format!("{} ({})", r.message, place.join("; "))
                    },
                });
            }
            if (i + 1) % 100 == 0 || i + 1 == total {
                progress(&format!(
                    "checked {}/{total} stored bundles, {} refused",
                    i + 1,
                    audit.findings.len()
                ));
            }
        }
        Ok(audit)
    }
}

/// The bundle's size and, if the unpacker refuses it, why (a blocking
/// thread's call).
fn check_one(
    blobs: &BlobStore,
    path: &str,
) -> anyhow::Result<(u64, Option<wattcounts_rules::rejection::Rejection>)> {
    let bytes = blobs
        .read(path)
        .with_context(|| format!("reading the stored bundle {path}"))?;
    Ok((bytes.len() as u64, unpack::check_stored(&bytes).err()))
}

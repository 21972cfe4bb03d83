//! `db rebuild`: recompute every derived table from the stored
//! submissions. Protocols and run-content digests that were never recorded
//! (submissions stored before they existed), and runs an older energy rule
//! derived, are derived again from the stored bundles, each checked against
//! its sha256 first.

use std::collections::HashMap;

use anyhow::Context;

use super::Service;
use wattcounts_store::RebuildReport;

impl Service {
    /// Whether some stored submission lacks what the read model needs
    /// (a deployment that has just migrated).
    pub async fn needs_rebuild(&self) -> anyhow::Result<bool> {
        Ok(!self.store.submissions_to_derive().await?.is_empty()
            || self.store.read_model_outdated().await?)
    }

    /// Derives what is missing from the stored bundles, then rebuilds the
    /// read model in one transaction. `progress` hears one line per step.
    pub async fn rebuild(&self, mut progress: impl FnMut(&str)) -> anyhow::Result<RebuildReport> {
        let started = std::time::Instant::now();
        let missing = self.store.submissions_to_derive().await?;
        let mut derived = HashMap::new();
        let total = missing.len();
        // Compiled once for every bundle, not once per bundle.
        let schema = std::sync::Arc::new(wattcounts_rules::bundle::manifest::ManifestSchema::new());
        for (i, rec) in missing.into_iter().enumerate() {
            let schema = schema.clone();
            let blobs = self.blobs().clone();
            let limits = self.config().unpack;
            let path = rec.blob_path.clone();
            let want = rec.bundle_sha256.clone();
            let id = rec.id;
            let derivation = tokio::task::spawn_blocking(move || {
                let bytes = blobs
                    .read(&path)
                    .with_context(|| format!("reading the stored bundle of {id} ({path})"))?;
                let got = wattcounts_rules::digest::sha256_hex(&bytes);
                anyhow::ensure!(
                    got == want,
                    "the stored bundle of {id} has sha256 {got}, the database says {want}"
                );
                crate::analysis::derive_stored(&bytes, &schema, &limits).map_err(|r| {
                    anyhow::anyhow!(
                        "bundle of {id}: {}{}",
                        r.message,
                        wattcounts_rules::bundle::unpack::audit_hint(&r)
                    )
                })
            })
            .await??;
            derived.insert(id, derivation);
            if (i + 1) % 100 == 0 || i + 1 == total {
                progress(&format!(
                    "derived protocol, content digest and metrics ({}) of {}/{total} stored bundles",
                    wattcounts_rules::derived::ENERGY_RULE,
                    i + 1
                ));
            }
        }
        progress("rebuilding groups and counters in one transaction");
        let report = self.store.rebuild_read_model(&derived).await?;
        self.changed();
        crate::telemetry::rebuild(started.elapsed());
        Ok(report)
    }
}

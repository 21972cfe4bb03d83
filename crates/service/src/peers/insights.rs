//! What a peer release says within itself: the newer GPU against the older
//! one per model, and the size exponent of its dense models.

use std::sync::Arc;

use wattcounts_rules::peer::{PeerConfig, PeerQuery, PeerReleaseRecord, SourceInfo};

use crate::views::ViewError;
use crate::{Service, ServiceError};

/// Every configuration of a release, task by task (bounded by the
/// release's size: v3 holds 565).
const RELEASE_ROWS_CAP: u32 = 100_000;

/// What a peer release says, within itself: the newer GPU against the
/// older one per model, and the size exponent of its dense models.
#[derive(Debug, Clone)]
pub struct PeerInsightsView {
    pub info: &'static SourceInfo,
    pub release: PeerReleaseRecord,
    pub insights: Arc<wattcounts_analytics::peer_insights::PeerInsights>,
}

impl Service {
    /// Every configuration of a release, task by task (a release is a few
    /// hundred rows; the cap bounds a malformed one).
    pub(super) async fn release_configs(
        &self,
        release: &PeerReleaseRecord,
    ) -> Result<Vec<PeerConfig>, ServiceError> {
        let mut configs = Vec::new();
        for task in &release.facets.tasks {
            let page = self
                .store
                .peer_configurations(&PeerQuery {
                    release_id: release.id,
                    task: Some(task.value.clone()),
                    limit: RELEASE_ROWS_CAP,
                    ..Default::default()
                })
                .await?;
            configs.extend(page.rows);
        }
        Ok(configs)
    }

    /// The insights of a peer origin's newest release.
    pub async fn peer_insights(&self, slug: &str) -> Result<PeerInsightsView, ViewError> {
        let (info, release, _) = self.peer_release(slug, None).await?;
        // A release never changes: its insights are read and computed once
        // (56,500 rows took 0.77 s a request before this cache).
        if let Some(done) = self.peer_insights.read().await.get(&release.id) {
            return Ok(PeerInsightsView {
                info,
                insights: done.clone(),
                release,
            });
        }
        let configs = self.release_configs(&release).await?;
        // The older board is the reference: GPUs by catalogue release date.
        let mut gpus: Vec<(String, String)> = release
            .facets
            .gpus
            .iter()
            .map(|g| {
                let date = wattcounts_rules::catalog::gpu_by_nvml_name(&g.label)
                    .map(|s| s.release_date.clone())
                    .unwrap_or_default();
                (date, g.value.clone())
            })
            .collect();
        gpus.sort();
        let insights = match (gpus.first(), gpus.last()) {
            (Some(a), Some(b)) if a.1 != b.1 => {
                wattcounts_analytics::peer_insights::peer_insights(&configs, &a.1, &b.1)
            }
            _ => wattcounts_analytics::peer_insights::PeerInsights {
                savings: Vec::new(),
                exponents: wattcounts_analytics::peer_insights::size_exponents(&configs),
            },
        };
        let insights = Arc::new(insights);
        self.peer_insights
            .write()
            .await
            .insert(release.id, insights.clone());
        Ok(PeerInsightsView {
            info,
            release,
            insights,
        })
    }
}

//! The estimator judged on a peer's real measurements, and the peer-protocol
//! estimator fitted on the same rows: computed once per release, in the
//! background.

use std::sync::Arc;

use wattcounts_rules::peer::{PeerSource, SourceInfo};

use crate::{Service, ServiceError};

/// The estimator judged on a peer's real measurements: the newest
/// release's table, computed once per release.
#[derive(Debug, Clone)]
pub struct RealHardwareValidation {
    pub info: &'static SourceInfo,
    pub release_id: i64,
    pub release_label: String,
    pub rows: usize,
    pub models: usize,
    pub seconds: f64,
    pub lines: Vec<wattcounts_analytics::estimator::peer::PeerLine>,
    /// Why the table is empty: a release too large for the background job.
    pub why_not: Option<String>,
    /// The same rows fitted per task, answering under the peer's protocol
    /// (`crate::peer_estimates`); None with `why_not`.
    pub estimator: Option<Arc<wattcounts_analytics::estimator::peer::PeerEstimator>>,
}

/// The most rows the background job scores: leave-one-LLM-out fits once
/// per LLM on all the others, so its cost grows with rows × LLMs (v3: 565
/// rows, 27 LLMs, 1.9 s). A larger release is named, not scored.
pub const VALIDATION_MAX_ROWS: usize = 10_000;

/// The peer whose rows the estimator is judged on.
const VALIDATED_ON: PeerSource = PeerSource::MlEnergyV3;

impl Service {
    /// The table for the newest v3 release, if it has been computed.
    pub async fn real_hardware_validation(&self) -> Option<Arc<RealHardwareValidation>> {
        self.peer_validation.read().await.clone()
    }

    /// Computes the table when the newest v3 release has none yet (after
    /// an import, and at start). A second call for the same release does
    /// nothing but read the release list. True when it swapped a table in
    /// (and so bumped the data version once).
    pub async fn refresh_real_hardware_validation(
        &self,
        settings: wattcounts_analytics::estimator::Settings,
    ) -> Result<bool, ServiceError> {
        let Some(release) = self
            .peer_releases()
            .await?
            .into_iter()
            .find(|r| r.source == VALIDATED_ON)
        else {
            return Ok(false);
        };
        if self
            .peer_validation
            .read()
            .await
            .as_ref()
            .is_some_and(|v| v.release_id == release.id)
        {
            return Ok(false);
        }
        let label = release.label.clone();
        let id = release.id;
        if release.configurations as usize > VALIDATION_MAX_ROWS {
            *self.peer_validation.write().await = Some(Arc::new(RealHardwareValidation {
                info: VALIDATED_ON.info(),
                release_id: id,
                rows: release.configurations as usize,
                models: release.facets.models.len(),
                why_not: Some(format!(
                    "release {label} holds {} configurations, above the {VALIDATION_MAX_ROWS} the background job scores (examples/peer_estimator_bench scores any folder)",
                    release.configurations
                )),
                release_label: label,
                seconds: 0.0,
                lines: Vec::new(),
                estimator: None,
            }));
            self.changed();
            return Ok(true);
        }
        let configs = self.release_configs(&release).await?;
        let computed = tokio::task::spawn_blocking(move || {
            use wattcounts_analytics::estimator::peer::{peer_rows, validate_and_fit};
            let start = std::time::Instant::now();
            let rows = peer_rows(&configs);
            let mut models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
            models.sort_unstable();
            models.dedup();
            let models = models.len();
            let count = rows.len();
            let (lines, estimator) = validate_and_fit(rows, &settings)?;
            let seconds = start.elapsed().as_secs_f64();
            Ok::<_, wattcounts_analytics::estimator::EstimatorError>(RealHardwareValidation {
                info: VALIDATED_ON.info(),
                release_id: id,
                release_label: label,
                rows: count,
                models,
                seconds,
                lines,
                why_not: None,
                estimator: Some(Arc::new(estimator)),
            })
        })
        .await
        .map_err(|e| ServiceError {
            kind: crate::ErrorKind::Internal,
            message: format!("real-hardware validation stopped: {e}"),
        })?
        .map_err(|e| ServiceError {
            kind: crate::ErrorKind::Internal,
            message: format!("real-hardware validation: {e}"),
        })?;
        tracing::info!(
            release = %computed.release_label,
            rows = computed.rows,
            seconds = computed.seconds,
            "estimator validated on ML.ENERGY v3"
        );
        *self.peer_validation.write().await = Some(Arc::new(computed));
        self.changed();
        Ok(true)
    }
}

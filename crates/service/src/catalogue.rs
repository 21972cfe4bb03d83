//! The GPU catalogue as this deployment knows it: the rows shipped in
//! `crates/rules/catalog/gpus.csv` plus the GPUs maintainers added (stored
//! with their source, one log leaf each), and what an addition does to the
//! submissions that waited for it: each is judged again by every check,
//! now with the GPU's figures, and moves by a logged decision that says
//! why. A stored verdict never changes without such a leaf.

use crate::error::ServiceError;
use chrono::Utc;
use uuid::Uuid;

use super::Service;
use wattcounts_rules::catalog::{self, GpuSpec};
use wattcounts_rules::domain::Status;
use wattcounts_rules::handles::DEMO_HANDLE;
use wattcounts_store::{Actor, Decided};

/// A GPU a maintainer added (the store's row, named here so readers of
/// the service need no store type).
pub use wattcounts_rules::catalog::CatalogueAddition as Addition;

#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// The figures break the catalogue's plausibility rules; each problem
    /// names its field and figure.
    #[error("the GPU's figures are not plausible: {}", .0.join("; "))]
    Implausible(Vec<String>),
    /// The catalogue has a GPU of that name already.
    #[error("the catalogue already has '{0}'")]
    Exists(String),
    #[error(transparent)]
    Store(#[from] ServiceError),
    #[error("{0}")]
    Internal(String),
}

crate::error::store_error_into!(CatalogueError);

/// One waiting submission judged again.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Rejudged {
    pub submission_id: Uuid,
    pub from: Status,
    pub to: Status,
}

/// What adding a GPU did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct GpuAdded {
    pub addition: Addition,
    /// Submissions that waited on this GPU, each judged again.
    pub rejudged: Vec<Rejudged>,
}

impl Service {
    /// Makes the stored additions part of the catalogue every lookup
    /// reads (at start, and on an instance that did not make them).
    pub async fn load_catalogue_additions(&self) -> Result<usize, ServiceError> {
        let added = self.store.catalogue_additions().await?;
        let specs: Vec<GpuSpec> = added.into_iter().map(|a| a.spec).collect();
        catalog::install_additions(&specs);
        Ok(specs.len())
    }

    /// Every GPU maintainers added, oldest first.
    pub async fn catalogue_additions(&self) -> Result<Vec<Addition>, ServiceError> {
        self.store
            .catalogue_additions()
            .await
            .map_err(ServiceError::from)
    }

    /// Adds `spec` to the catalogue for `actor` (with `reason`), then
    /// judges again every submission that waited in review on that GPU.
    pub async fn add_gpu(
        &self,
        mut spec: GpuSpec,
        actor: &str,
        reason: &str,
    ) -> Result<GpuAdded, CatalogueError> {
        spec.id = catalog::gpu_id(&spec.nvml_name);
        if catalog::gpu_by_nvml_name(&spec.nvml_name).is_some()
            || catalog::gpu_by_id(&spec.id).is_some()
        {
            return Err(CatalogueError::Exists(spec.nvml_name));
        }
        let problems = catalog::plausibility_problems(&spec);
        if !problems.is_empty() {
            return Err(CatalogueError::Implausible(problems));
        }
        let by = Actor {
            name: actor.to_string(),
            at: Utc::now(),
            reason: reason.to_string(),
        };
        let Some(addition) = self.store.add_catalogue_gpu(&spec, &by).await? else {
            return Err(CatalogueError::Exists(spec.nvml_name));
        };
        self.load_catalogue_additions().await?;
        self.changed();
        let rejudged = self.rejudge_waiting_on(&addition).await?;
        Ok(GpuAdded { addition, rejudged })
    }

    /// Judges again each submission that waits in review on the GPU just
    /// added: the stored bundle through the same analysis and checks as at
    /// ingest, now that the catalogue has the GPU's TDP and idle power.
    async fn rejudge_waiting_on(&self, added: &Addition) -> Result<Vec<Rejudged>, CatalogueError> {
        let mut out = Vec::new();
        for rec in self.store.waiting_on_gpu(&added.spec.nvml_name).await? {
            let blobs = self.blobs().clone();
            let schema = self.ingestor.schema.clone();
            let config = self.config().clone();
            let path = rec.blob_path.clone();
            let id = rec.id;
            let received_at = rec.received_at;
            let analysis = tokio::task::spawn_blocking(move || {
                let bytes = blobs
                    .read(&path)
                    .map_err(|e| format!("reading the stored bundle of {id}: {e}"))?;
                let mut t = crate::analysis::StageTimings::default();
                crate::analysis::analyse(&bytes, &schema, &config, received_at, &mut t).map_err(
                    |r| {
                        format!(
                            "the stored bundle of {id} no longer analyses: {}",
                            r.message
                        )
                    },
                )
            })
            .await
            .map_err(|e| CatalogueError::Internal(e.to_string()))?
            .map_err(CatalogueError::Internal)?;
            let Some(gpu) = analysis.gpu else {
                return Err(CatalogueError::Internal(format!(
                    "submission {id}: '{}' is still not in the catalogue",
                    analysis.manifest.system.gpu.name
                )));
            };
            let mut analysis = analysis;
            let own = std::mem::take(&mut analysis.checks);
            let rejected = std::mem::take(&mut analysis.rejected_configurations);
            let (checks, to) = self
                .ingestor
                .judge(own, rejected, &analysis, rec.handle == DEMO_HANDLE)
                .await?;
            let problems: Vec<&str> = checks
                .iter()
                .filter(|c| c.is_problem() && !c.rejects_configuration)
                .map(|c| c.id.as_str())
                .collect();
            let by = Actor {
                name: added.actor.clone(),
                at: Utc::now(),
                reason: format!(
                    "catalogue gained '{}' (version {}): judged again with its figures; {}",
                    added.spec.nvml_name,
                    added.version,
                    if problems.is_empty() {
                        "every check passes".to_string()
                    } else {
                        format!("still to look at: {}", problems.join(", "))
                    }
                ),
            };
            match self.store.rejudge(id, &gpu.id, &checks, to, &by).await? {
                Decided::Done(from) => out.push(Rejudged {
                    submission_id: id,
                    from,
                    to,
                }),
                // A maintainer decided it meanwhile: their verdict stands.
                Decided::WrongStatus(_) | Decided::NotFound => {}
            }
        }
        if !out.is_empty() {
            self.changed();
        }
        Ok(out)
    }
}

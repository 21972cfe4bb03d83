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
    #[error("the figures are not plausible: {}", .0.join("; "))]
    Implausible(Vec<String>),
    /// The catalogue has a GPU or model of that name already.
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

/// A model a maintainer added.
pub use wattcounts_rules::catalog::CatalogueModelAddition as ModelAddition;

/// What adding a model did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct ModelAdded {
    pub addition: ModelAddition,
    /// Submissions that waited on this model, each judged again.
    pub rejudged: Vec<Rejudged>,
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
        let models: Vec<catalog::ModelSpec> = self
            .store
            .catalogue_models()
            .await?
            .into_iter()
            .map(|a| a.spec)
            .collect();
        catalog::install_model_additions(&models);
        Ok(specs.len() + models.len())
    }

    /// Every model maintainers added, oldest first.
    pub async fn catalogue_models(&self) -> Result<Vec<ModelAddition>, ServiceError> {
        self.store
            .catalogue_models()
            .await
            .map_err(ServiceError::from)
    }

    /// Adds model `id` to the catalogue from its own config.json (`config`,
    /// the file's bytes; `revision` the repo's commit when known), for
    /// `actor` with `reason`: its figures by the one formula
    /// ([`wattcounts_rules::model_config`]), held to the plausibility
    /// ranges, stored with their provenance and a log leaf. Then every
    /// submission waiting in review on the model is judged again.
    pub async fn add_model(
        &self,
        id: &str,
        config: &[u8],
        revision: Option<&str>,
        actor: &str,
        reason: &str,
    ) -> Result<ModelAdded, CatalogueError> {
        if catalog::model_by_id(id).is_some() {
            return Err(CatalogueError::Exists(id.to_string()));
        }
        let parsed: serde_json::Value = serde_json::from_slice(config).map_err(|e| {
            CatalogueError::Implausible(vec![format!("config.json is not JSON: {e}")])
        })?;
        let figures = wattcounts_rules::model_config::figures(&parsed)
            .map_err(|e| CatalogueError::Implausible(vec![e.to_string()]))?;
        let spec = catalog::ModelSpec::from_figures(id, &figures);
        let problems = catalog::model_plausibility_problems(&spec);
        if !problems.is_empty() {
            return Err(CatalogueError::Implausible(problems));
        }
        let provenance = catalog::ModelProvenance {
            repo: id.to_string(),
            revision: revision.map(str::to_string),
            config_sha256: wattcounts_rules::digest::sha256_hex(config),
            precision: figures.precision.name.clone(),
        };
        let by = Actor {
            name: actor.to_string(),
            at: Utc::now(),
            reason: reason.to_string(),
        };
        let Some(addition) = self
            .store
            .add_catalogue_model(&spec, &provenance, &by)
            .await?
        else {
            return Err(CatalogueError::Exists(id.to_string()));
        };
        self.load_catalogue_additions().await?;
        self.changed();
        let waiting = self.store.waiting_on_model(id).await?;
        let what = format!("model '{id}' (version {})", addition.version);
        let rejudged = self.rejudge(waiting, &what, &addition.actor).await?;
        Ok(ModelAdded { addition, rejudged })
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
        let waiting = self.store.waiting_on_gpu(&addition.spec.nvml_name).await?;
        let what = format!(
            "'{}' (version {})",
            addition.spec.nvml_name, addition.version
        );
        let rejudged = self.rejudge(waiting, &what, &addition.actor).await?;
        Ok(GpuAdded { addition, rejudged })
    }

    /// Judges again each submission that waited in review on what the
    /// catalogue just gained (`what`, a GPU or a model, added by `actor`):
    /// the stored bundle through the same analysis and checks as at
    /// ingest, now with the new figures.
    async fn rejudge(
        &self,
        waiting: Vec<wattcounts_rules::domain::SubmissionRecord>,
        what: &str,
        actor: &str,
    ) -> Result<Vec<Rejudged>, CatalogueError> {
        let mut out = Vec::new();
        for rec in waiting {
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
            // Still waiting on its GPU too (a model was added): it is judged
            // again when the GPU is.
            let Some(gpu) = analysis.gpu else {
                continue;
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
                name: actor.to_string(),
                at: Utc::now(),
                reason: format!(
                    "catalogue gained {what}: judged again with its figures; {}",
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

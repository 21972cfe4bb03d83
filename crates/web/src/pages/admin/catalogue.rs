//! The GPU catalogue over HTTP: anyone reads it (every GPU with its
//! figures and source, and what maintainers added); a maintainer adds a
//! GPU the shipped catalogue lacks, which judges again the submissions that
//! waited for it.

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Maintainer;
use crate::error::{ApiError, ErrorBody};
use crate::AppState;
use wattcounts_rules::catalog::{self, GpuSpec};
use wattcounts_rules::rejection::Detail;
use wattcounts_service::catalogue::{CatalogueError, GpuAdded};

impl From<CatalogueError> for ApiError {
    fn from(e: CatalogueError) -> Self {
        match e {
            CatalogueError::Implausible(problems) => {
                let mut err = ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "implausible_gpu",
                    format!(
                        "the GPU's figures are not plausible: {}",
                        problems.join("; ")
                    ),
                );
                err.details = problems
                    .iter()
                    .map(|p| {
                        let field = p.split_whitespace().next().unwrap_or_default();
                        Detail::new(p.clone()).pointer(format!("/gpu/{field}"))
                    })
                    .collect();
                err
            }
            CatalogueError::Exists(name) => ApiError::new(
                StatusCode::CONFLICT,
                "gpu_exists",
                format!("the catalogue already has '{name}' (GET /api/v1/catalogue/gpus lists it)"),
            ),
            CatalogueError::Store(s) => s.into(),
            CatalogueError::Internal(m) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", m)
            }
        }
    }
}

/// The whole catalogue as this deployment judges bundles by it.
#[derive(Serialize, ToSchema)]
pub struct Catalogue {
    /// Every GPU: the shipped rows, then maintainers' additions.
    pub gpus: Vec<GpuSpec>,
    /// Rows shipped with this release (crates/rules/catalog/gpus.csv).
    pub shipped: usize,
    /// What maintainers added, with who, when and why; oldest first.
    pub additions: Vec<wattcounts_service::catalogue::Addition>,
}

#[utoipa::path(get, path = "/api/v1/catalogue/gpus", tag = "gpus",
    summary = "Every GPU the checks know, with its figures and their source",
    responses((status = 200, body = Catalogue)))]
pub async fn gpus(State(s): State<AppState>) -> Result<Response, ApiError> {
    let additions = s.service.catalogue_additions().await?;
    Ok(Json(Catalogue {
        gpus: catalog::gpus().to_vec(),
        shipped: catalog::shipped().len(),
        additions,
    })
    .into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct GpuAddBody {
    /// The GPU: its NVML name as nvidia-smi prints it and every figure of
    /// a catalogue row, with `source` (the datasheet or spec page). `id`
    /// is made from the name.
    pub gpu: GpuSpec,
    /// Why, for the log (e.g. the issue that asked for it).
    pub reason: String,
}

#[utoipa::path(post, path = "/api/v1/admin/catalogue/gpus", tag = "maintainers",
    summary = "Add a GPU to the catalogue; submissions waiting on it are judged again",
    request_body = GpuAddBody,
    security(("maintainer" = [])),
    responses((status = 201, description = "Added (a log leaf), with the submissions judged again", body = GpuAdded),
        (status = 400, description = "The body is not the shape asked for", body = ErrorBody),
        (status = 401, description = "No or a wrong maintainer token", body = ErrorBody),
        (status = 409, description = "The catalogue has that GPU already", body = ErrorBody),
        (status = 422, description = "No reason, or implausible figures (each named with its field)", body = ErrorBody)))]
pub async fn add_gpu(
    State(s): State<AppState>,
    m: Maintainer,
    body: Result<Json<GpuAddBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(ApiError::bad_json)?;
    let by = wattcounts_service::moderation::actor(&m.name, &body.reason)?;
    let added = s.service.add_gpu(body.gpu, &by.name, &by.reason).await?;
    Ok((StatusCode::CREATED, Json(added)).into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct ModelAddBody {
    /// The model's Hugging Face id, ORG/NAME.
    pub id: String,
    /// The model's config.json, the file's text as it is (its SHA-256 is
    /// recorded with the figures).
    pub config: String,
    /// The repo's revision (commit) the config is of, when known.
    #[serde(default)]
    pub revision: Option<String>,
    /// Why, for the log (e.g. the issue or the submission that asked).
    pub reason: String,
}

/// A model addition's refusals, in the model's words.
fn model_error(e: CatalogueError) -> ApiError {
    match e {
        CatalogueError::Implausible(problems) => {
            let mut err = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "implausible_model",
                format!(
                    "the model's config.json gives no plausible figures: {}",
                    problems.join("; ")
                ),
            );
            err.details = problems
                .iter()
                .map(|p| Detail::new(p.clone()).file("config.json"))
                .collect();
            err
        }
        CatalogueError::Exists(id) => ApiError::new(
            StatusCode::CONFLICT,
            "model_exists",
            format!("the catalogue already has '{id}'"),
        ),
        other => other.into(),
    }
}

#[utoipa::path(post, path = "/api/v1/admin/catalogue/models", tag = "maintainers",
    summary = "Add a model to the catalogue from its config.json; submissions waiting on it are judged again",
    request_body = ModelAddBody,
    security(("maintainer" = [])),
    responses((status = 201, description = "Added (a log leaf), with the submissions judged again", body = wattcounts_service::catalogue::ModelAdded),
        (status = 400, description = "The body is not the shape asked for", body = ErrorBody),
        (status = 401, description = "No or a wrong maintainer token", body = ErrorBody),
        (status = 409, description = "The catalogue has that model already", body = ErrorBody),
        (status = 422, description = "No reason, or a config.json that gives no plausible figures (each named)", body = ErrorBody)))]
pub async fn add_model(
    State(s): State<AppState>,
    m: Maintainer,
    body: Result<Json<ModelAddBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(ApiError::bad_json)?;
    let by = wattcounts_service::moderation::actor(&m.name, &body.reason)?;
    let added = s
        .service
        .add_model(
            body.id.trim(),
            body.config.as_bytes(),
            body.revision.as_deref(),
            &by.name,
            &by.reason,
        )
        .await
        .map_err(model_error)?;
    Ok((StatusCode::CREATED, Json(added)).into_response())
}

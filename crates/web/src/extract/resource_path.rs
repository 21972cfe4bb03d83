//! The resources a path names under one route. A model id holds a slash
//! (`meta-llama/Llama-3.1-8B-Instruct`), so `/api/v1/models/{*id}` also
//! carries the model's CSV and its estimates; `/api/v1/gpus/{id}` carries
//! the GPU's CSV. The extractors here say which, as a typed value, so no
//! handler strips a suffix from a path.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;

/// What a model path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelResource {
    /// `/api/v1/models/{id}`: the model's answer (JSON).
    Answer,
    /// `/api/v1/models/{id}.csv`: its measured rows.
    Csv,
    /// `/api/v1/models/{id}/estimates`: GPUs nobody measured (JSON).
    Estimates,
    /// `/api/v1/models/{id}/estimates.csv`: the same as CSV.
    EstimatesCsv,
}

/// A model id and the resource of it the path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPath {
    pub id: String,
    pub resource: ModelResource,
}

impl ModelPath {
    /// Reads the catch-all part of the path; the longer suffix is tried
    /// first (`/estimates.csv` before `.csv`). No catalogue model id ends
    /// in one of these suffixes, so none is mistaken for a resource.
    pub fn parse(rest: &str) -> ModelPath {
        let resources = [
            ("/estimates.csv", ModelResource::EstimatesCsv),
            ("/estimates", ModelResource::Estimates),
            (".csv", ModelResource::Csv),
        ];
        for (suffix, resource) in resources {
            if let Some(id) = rest.strip_suffix(suffix) {
                return ModelPath {
                    id: id.to_string(),
                    resource,
                };
            }
        }
        ModelPath {
            id: rest.to_string(),
            resource: ModelResource::Answer,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ModelPath {
    type Rejection = PathRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PathRejection> {
        let Path(rest) = Path::<String>::from_request_parts(parts, state).await?;
        Ok(ModelPath::parse(&rest))
    }
}

/// A GPU id and whether the path asks for its CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPath {
    pub id: String,
    pub csv: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for GpuPath {
    type Rejection = PathRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PathRejection> {
        let Path(id) = Path::<String>::from_request_parts(parts, state).await?;
        Ok(match id.strip_suffix(".csv") {
            Some(gpu) => GpuPath {
                id: gpu.to_string(),
                csv: true,
            },
            None => GpuPath { id, csv: false },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_path_names_its_resource_by_the_longest_suffix() {
        let p = |s: &str| ModelPath::parse(s);
        assert_eq!(
            p("meta-llama/Llama-3.1-8B-Instruct"),
            ModelPath {
                id: "meta-llama/Llama-3.1-8B-Instruct".into(),
                resource: ModelResource::Answer
            }
        );
        assert_eq!(p("Qwen/Qwen2.5-7B.csv").resource, ModelResource::Csv);
        assert_eq!(p("Qwen/Qwen2.5-7B.csv").id, "Qwen/Qwen2.5-7B");
        let e = p("Qwen/Qwen2.5-7B/estimates.csv");
        assert_eq!(
            (e.id.as_str(), e.resource),
            ("Qwen/Qwen2.5-7B", ModelResource::EstimatesCsv)
        );
        let e = p("Qwen/Qwen2.5-7B/estimates");
        assert_eq!(
            (e.id.as_str(), e.resource),
            ("Qwen/Qwen2.5-7B", ModelResource::Estimates)
        );
    }
}

//! The pages that answer "which GPU for my model": `/models` (every model
//! with its best GPU per scenario, searchable), `/models/{id}` (verdicts
//! with intervals, the choice under a deadline, energy per request and its
//! footprint), their JSON twins, and `/methodology`, which every verdict
//! links to.

pub mod model;
mod sections;

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, ModelSearchParams, PageParams, Params, ViewParams};
use crate::view::{model_path, view_of, view_params, view_query, View};
use crate::AppState;
use wattcounts_analytics::compare::{BestOf, ModelListing, ScenarioKey};

struct ListingRow {
    model: String,
    link: String,
    size: String,
    params: String,
    gpus: usize,
    /// Per scenario: the best GPU's name, a note (tie, alone), its page.
    best: Vec<(String, String, Option<String>)>,
}

#[derive(Template)]
#[template(path = "models.html")]
struct ModelsPage {
    q: String,
    all_models: Vec<String>,
    scenarios: Vec<String>,
    rows: Vec<ListingRow>,
    total: usize,
    json_link: String,
    view: View,
    layout: crate::layout::Layout,
}

/// The index of one view, and which of its models a case-insensitive
/// search `q` keeps.
async fn listing(
    s: &AppState,
    (search, view): &(ModelSearchParams, ViewParams),
) -> Result<(Vec<ScenarioKey>, Vec<ModelListing>, Vec<bool>, View), ApiError> {
    let q = view_query(view)?;
    let ((keys, listings), board) = s.service.models_view(&q).await?;
    let view = view_of(&board, &q, view);
    let q = given(&search.q)
        .map(|q| q.trim().to_lowercase())
        .unwrap_or_default();
    let kept = listings
        .iter()
        .map(|m| q.is_empty() || m.model.to_lowercase().contains(&q))
        .collect();
    Ok((keys, listings, kept, view))
}

/// A model's page, in the view given by `view_query` (the pickers' and a
/// one-match search's answer).
fn to_model(model: &str, view_query: &str) -> Response {
    let query = if view_query.is_empty() {
        String::new()
    } else {
        format!("?{view_query}")
    };
    Redirect::to(&format!("{}{query}", model_path(model))).into_response()
}

pub async fn models_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<(ModelSearchParams, ViewParams)>,
) -> Result<Response, PageError> {
    // A picked model needs no listing: checked parameters, then its page.
    if let Some(model) = given(&params.0.model).map(str::trim) {
        view_query(&params.1)?;
        return Ok(to_model(model, &view_params(&params.1)));
    }
    let (keys, listings, kept, view) = listing(&s, &params).await?;
    let shown: Vec<&ModelListing> = listings
        .iter()
        .zip(&kept)
        .filter(|(_, k)| **k)
        .map(|(m, _)| m)
        .collect();
    // One model matches the search: its page is the answer.
    if shown.len() == 1 && given(&params.0.q).is_some() {
        return Ok(to_model(&shown[0].model, &view.query));
    }
    let rows = shown
        .iter()
        .map(|m| ListingRow {
            link: format!("{}?{}", model_path(&m.model), view.query),
            model: m.model.clone(),
            size: m.size_class.map_or("–".into(), |c| c.name().to_string()),
            params: m.params_b.map_or("–".into(), |p| format!("{p} B")),
            gpus: m.gpus_measured,
            best: m
                .best
                .iter()
                .map(|b| match b {
                    None => ("–".into(), String::new(), None),
                    Some(b) => (
                        b.gpu_name.clone(),
                        if b.alone {
                            "only GPU measured".into()
                        } else if b.tie {
                            "tie within noise".into()
                        } else {
                            String::new()
                        },
                        wattcounts_rules::catalog::gpu_by_id(&b.gpu_id)
                            .map(|g| format!("/gpus/{}?{}", g.id, view.query)),
                    ),
                })
                .collect(),
        })
        .collect();
    let page = ModelsPage {
        q: params.0.q.clone().unwrap_or_default(),
        all_models: listings.iter().map(|m| m.model.clone()).collect(),
        scenarios: keys.iter().map(|k| k.label()).collect(),
        rows,
        total: listings.len(),
        json_link: format!("/api/v1/models?{}", view.query),
        layout: crate::layout::Layout::of(view.demo),
        view,
    };
    Ok(render(StatusCode::OK, &page))
}

/// `/api/v1/models`.
#[derive(Serialize, ToSchema)]
pub struct ModelIndex {
    /// The view in words.
    pub view: String,
    /// Models in the view before `q` filtered them.
    pub total: usize,
    /// The view's scenarios (`batch`, `server@RATE`), the keys of `best`.
    pub scenarios: Vec<String>,
    pub models: Vec<ModelEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct ModelEntry {
    pub model: String,
    pub size_class: Option<wattcounts_analytics::leaderboard::SizeClass>,
    pub params_b: Option<f64>,
    /// Distinct GPUs that measured it in any scenario.
    pub gpus_measured: usize,
    /// Per scenario that measured it: the GPU with the least energy per token.
    pub best: BTreeMap<String, BestOf>,
}

#[utoipa::path(get, path = "/api/v1/models", tag = "models",
    summary = "Every model of the view with its best GPU per scenario",
    params(ModelSearchParams, ViewParams),
    responses((status = 200, body = ModelIndex)))]
pub async fn models_json(
    State(s): State<AppState>,
    Params(params): Params<(ModelSearchParams, ViewParams)>,
) -> Result<Response, ApiError> {
    let (keys, listings, kept, view) = listing(&s, &params).await?;
    let total = listings.len();
    let models = listings
        .iter()
        .zip(&kept)
        .filter(|(_, k)| **k)
        .map(|(m, _)| ModelEntry {
            model: m.model.clone(),
            size_class: m.size_class,
            params_b: m.params_b,
            gpus_measured: m.gpus_measured,
            best: keys
                .iter()
                .zip(&m.best)
                .filter_map(|(k, b)| Some((k.param(), b.clone()?)))
                .collect(),
        })
        .collect();
    Ok(Json(ModelIndex {
        view: view.note,
        total,
        scenarios: keys.iter().map(|k| k.param()).collect(),
        models,
    })
    .into_response())
}

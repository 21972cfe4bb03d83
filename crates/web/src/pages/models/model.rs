//! `/models/{id}` and its JSON and CSV twins: for one model, the
//! least-energy GPU per scenario with its interval and verdict, the choice
//! under a deadline, energy per 1,000 requests and its footprint.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::sections::*;
use crate::error::{render, ApiError, PageError};
use crate::extract::query::{given, DeadlineParams, PageParams, Params, ViewParams};
use crate::extract::resource_path::{ModelPath, ModelResource};
use crate::view::{entries, model_path, view_of, view_query, View};
use crate::AppState;
use wattcounts_analytics::compare::ModelScenario;
use wattcounts_analytics::deadline::Deadline;

/// The deadlines a reader typed in (`ttft_ms`, `itl_ms`, `min_tok_s`).
pub(crate) fn asked_deadlines(params: &DeadlineParams) -> Result<Vec<Deadline>, ApiError> {
    params
        .named()
        .into_iter()
        .filter_map(|(p, v)| Some((p, given(v)?)))
        .map(|(p, v)| {
            Deadline::parse(p, v).map_err(|why| ApiError::bad_request("bad_parameter", why))
        })
        .collect()
}

pub(crate) async fn model_data(
    s: &AppState,
    id: &str,
    (deadlines, view): &(DeadlineParams, ViewParams),
) -> Result<(Vec<ModelScenario>, View), ApiError> {
    let asked = asked_deadlines(deadlines)?;
    let budget = match given(&deadlines.max_j_per_token) {
        None => None,
        Some(v) => Some(
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|b| b.is_finite() && *b > 0.0)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "bad_parameter",
                        format!(
                            "max_j_per_token='{v}' is not a positive number of joules per token"
                        ),
                    )
                })?,
        ),
    };
    let q = view_query(view)?;
    let (summary, board) = s.service.model_view(&q, id, &asked, budget).await?;
    let view = view_of(&board, &q, view);
    let summary = summary.ok_or_else(|| {
        ApiError::not_found(format!(
            "no accepted data for model '{id}' in this view ({}); see /models for the models measured",
            view.note
        ))
    })?;
    Ok((summary, view))
}

pub async fn model_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
    PageParams(params): PageParams<(DeadlineParams, ViewParams)>,
) -> Result<Response, PageError> {
    let (summary, view) = model_data(&s, &id, &params).await?;
    let sections = summary
        .iter()
        .map(|m| {
            section(
                &id,
                m,
                &s.footprint,
                &view.query,
                params.0.reference.as_deref(),
            )
        })
        .collect();
    let facts =
        wattcounts_rules::catalog::model_by_id(&id).map_or("parameters unknown".into(), |m| {
            let moe = if m.active_params_b < m.params_b || m.experts > 0 {
                format!(
                    " ({} B active per token, {} experts)",
                    m.active_params_b, m.experts
                )
            } else {
                String::new()
            };
            format!(
                "{} B parameters{moe}, weights in {}, {} layers, size class {}",
                m.params_b,
                m.precision.to_ascii_uppercase(),
                m.layers,
                wattcounts_analytics::leaderboard::SizeClass::of_model(&id)
                    .map_or("–", |c| c.name())
            )
        });
    let field = |v: &Option<String>| v.clone().unwrap_or_default();
    let picked = field(&params.0.reference);
    let mut references: Vec<(String, String, bool)> = Vec::new();
    for p in summary.iter().flat_map(|m| &m.points) {
        if !references.iter().any(|(id, _, _)| *id == p.gpu_id) {
            references.push((p.gpu_id.clone(), p.gpu_name.clone(), p.gpu_id == picked));
        }
    }
    let estimates = crate::pages::estimate::unmeasured_section(&s, &id);
    let (also_measured, _) = crate::pages::peers::model_notes::model_notes(&s, &id).await?;
    Ok(render(
        StatusCode::OK,
        &ModelPage {
            feed_link: crate::pages::feeds::model_feed_path(&id),
            json_link: format!("/api/v1{}?{}", model_path(&id), view.query),
            csv_link: crate::view::csv_twin(&format!("/api/v1{}?{}", model_path(&id), view.query)),
            leaderboard_link: format!(
                "/leaderboard?model={}&{}",
                crate::view::url_encode(&id),
                view.query
            ),
            model: id,
            facts,
            sections,
            ttft_ms: field(&params.0.ttft_ms),
            itl_ms: field(&params.0.itl_ms),
            min_tok_s: field(&params.0.min_tok_s),
            max_j_per_token: field(&params.0.max_j_per_token),
            references,
            estimates,
            also_measured,
            footprint: s.footprint.describe(),
            layout: crate::layout::Layout::of(view.demo),
            view,
        },
    ))
}

/// `/api/v1/models/{id}`.
#[derive(Serialize, ToSchema)]
pub struct ModelAnswer {
    pub model: String,
    /// The view in words.
    pub view: String,
    /// What the gCO₂e figures assume.
    pub footprint: wattcounts_analytics::units::Footprint,
    /// Per scenario: every GPU's point, the least-energy verdict and the
    /// deadline choices.
    pub scenarios: Vec<ModelScenario>,
    /// Per scenario, in the same order: each point's energy per 1,000
    /// requests (server scenarios; null in batch).
    pub per_1000_requests: Vec<Vec<PerThousand>>,
    /// The same model in published peer datasets: another protocol, never
    /// comparable figure by figure with `scenarios`.
    pub also_measured_by: Vec<crate::pages::peers::model_notes::PeerModelJson>,
}

#[derive(Serialize, ToSchema)]
pub struct PerThousand {
    pub gpu_id: String,
    pub wh_per_1000_requests: Option<wattcounts_analytics::verdict::Estimate>,
    pub g_co2e_per_1000_requests: Option<wattcounts_analytics::verdict::Estimate>,
}

/// The model's measured rows in the view, every scenario, as the
/// leaderboard CSV writes them (`/api/v1/models/{id}.csv`).
pub(crate) async fn model_rows_csv(
    s: &AppState,
    id: &str,
    view: &ViewParams,
) -> Result<Response, ApiError> {
    let (mut rows, view) = entries(s, view, |q| q.model = Some(id.to_string())).await?;
    if rows.is_empty() {
        return Err(ApiError::not_found(format!(
            "no accepted data for model '{id}' in this view ({}); see /models for the models measured",
            view.note
        )));
    }
    rows.sort_by(|a, b| {
        a.lambda_qps
            .unwrap_or(-1.0)
            .total_cmp(&b.lambda_qps.unwrap_or(-1.0))
            .then(a.energy_per_token_j.total_cmp(&b.energy_per_token_j))
    });
    let name = id.replace('/', "_");
    Ok(crate::view::csv::rows_response(
        &format!("wattcounts-model-{name}.csv"),
        &rows,
        1,
    ))
}

/// Documents `/api/v1/models/{id}.csv`, answered through the catch-all.
#[utoipa::path(get, path = "/api/v1/models/{id}.csv", tag = "models",
    summary = "The model's measured rows in the view, every scenario, as CSV (the leaderboard CSV's columns)",
    params(("id" = String, Path, description = "The model's Hugging Face id (it holds a slash)"), ViewParams),
    responses((status = 200, content_type = "text/csv", body = String),
        (status = 404, description = "No accepted data for the model in this view", body = crate::error::ErrorBody)))]
pub async fn model_csv(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(params): Params<ViewParams>,
) -> Result<Response, ApiError> {
    model_rows_csv(&s, &id, &params).await
}

#[utoipa::path(get, path = "/api/v1/models/{id}", tag = "models",
    summary = "Which GPU uses the least energy for one model, per scenario",
    description = "`id` is the Hugging Face id and holds a `/` (`meta-llama/Llama-3.1-8B-Instruct`), sent as it is. Deadlines (`ttft_ms`, `itl_ms`, `min_tok_s`) add choices marked `custom`.",
    params(("id" = String, Path, description = "The model's Hugging Face id"),
        DeadlineParams, ViewParams),
    responses((status = 200, body = ModelAnswer),
        (status = 404, description = "No accepted data for this model in the view", body = crate::error::ErrorBody)))]
pub async fn model_json(
    State(s): State<AppState>,
    model: ModelPath,
    Params(params): Params<(DeadlineParams, ViewParams)>,
) -> Result<Response, ApiError> {
    // Model ids hold a slash, so the CSV and the estimates of one ride on
    // this route; the extractor says which.
    let id = match model.resource {
        ModelResource::Answer => model.id,
        ModelResource::Csv => return model_rows_csv(&s, &model.id, &params.1).await,
        ModelResource::Estimates => {
            return Ok(crate::pages::estimate::unmeasured_response(
                &s, &model.id, false,
            ))
        }
        ModelResource::EstimatesCsv => {
            return Ok(crate::pages::estimate::unmeasured_response(
                &s, &model.id, true,
            ))
        }
    };
    let (summary, view) = model_data(&s, &id, &params).await?;
    let footprint = s.footprint;
    let per_1000_requests = summary
        .iter()
        .map(|m| {
            m.points
                .iter()
                .map(|p| PerThousand {
                    gpu_id: p.gpu_id.clone(),
                    wh_per_1000_requests: p
                        .energy_per_request
                        .map(wattcounts_analytics::units::wh_per_1000),
                    g_co2e_per_1000_requests: p
                        .energy_per_request
                        .map(|e| footprint.g_co2e_per_1000(e)),
                })
                .collect()
        })
        .collect();
    let (_, also_measured_by) = crate::pages::peers::model_notes::model_notes(&s, &id).await?;
    Ok(Json(ModelAnswer {
        model: id,
        view: view.note,
        footprint,
        scenarios: summary,
        per_1000_requests,
        also_measured_by,
    })
    .into_response())
}

//! `/estimate`: the form (model and GPU pickers from the catalogue,
//! scenario, rate) and its answer as a page, without JavaScript.

use askama::Template;
use axum::extract::State;
use axum::http::header;
use axum::response::Response;

use super::answer::estimate;
use super::estimator::{validation_block, ValidationBlock, DEMO_PHYSICS_NOTE};
use super::question::{gpu_named, parse_question};
use super::*;
use crate::error::{render, PageError};
use crate::extract::query::{given, EstimateParams, PageParams};
use crate::pages::insights::SYNTHETIC_NOTE;
use crate::AppState;
use wattcounts_rules::catalog;

// The form.

struct Choice {
    value: String,
    label: String,
    selected: bool,
}

/// One figure of a result, as the page prints it.
struct Figure {
    name: &'static str,
    point: String,
    interval: String,
    measured: String,
}

#[derive(Template)]
#[template(path = "estimate.html")]
struct EstimatePage {
    models: Vec<Choice>,
    gpus: Vec<Choice>,
    batch: bool,
    rate: String,
    error: Option<String>,
    answer_title: String,
    figures: Vec<Figure>,
    interval_note: String,
    neighbours: Vec<(String, String, String, String, String)>,
    measured_link: Option<String>,
    json_link: String,
    validation: ValidationBlock,
    synthetic_note: &'static str,
    demo_physics_note: &'static str,
    layout: crate::layout::Layout,
}

pub async fn estimate_page(
    State(s): State<AppState>,
    PageParams(p): PageParams<EstimateParams>,
) -> Result<Response, PageError> {
    let view = s.service.estimator();
    let asked =
        given(&p.model).is_some() || given(&p.gpu).is_some() || given(&p.scenario).is_some();
    let chosen_model = given(&p.model).unwrap_or("meta-llama/Llama-3.1-8B-Instruct");
    let chosen_gpu = given(&p.gpu)
        .and_then(gpu_named)
        .map_or("l40s", |g| g.id.as_str());
    let batch = given(&p.scenario).is_none_or(|v| v == "batch");
    let mut page = EstimatePage {
        models: catalog::models()
            .iter()
            .map(|m| Choice {
                value: m.id.clone(),
                label: format!("{} ({} B)", m.id, m.params_b),
                selected: m.id == chosen_model,
            })
            .collect(),
        gpus: catalog::gpus()
            .iter()
            .map(|g| Choice {
                value: g.id.clone(),
                label: g.nvml_name.clone(),
                selected: g.id == chosen_gpu,
            })
            .collect(),
        batch,
        rate: given(&p.rate)
            .map(str::to_string)
            .or_else(|| {
                given(&p.scenario)
                    .and_then(|v| v.strip_prefix("server@"))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "0.33".into()),
        error: None,
        answer_title: String::new(),
        figures: Vec::new(),
        interval_note: String::new(),
        neighbours: Vec::new(),
        measured_link: None,
        json_link: String::new(),
        validation: validation_block(&view),
        synthetic_note: SYNTHETIC_NOTE,
        demo_physics_note: DEMO_PHYSICS_NOTE,
        layout: crate::layout::Layout::of(
            view.current
                .as_ref()
                .is_some_and(|t| t.provenance.origin == "demo"),
        ),
    };
    let mut status = StatusCode::OK;
    if asked {
        let result = match parse_question(&p) {
            Ok(q) => estimate(&s, &q).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(a) => {
                page.json_link = format!(
                    "/api/v1/estimate?model={}&gpu={}&scenario={}",
                    url_encode(&a.model),
                    url_encode(&a.gpu),
                    url_encode(&a.scenario)
                );
                page.answer_title = format!(
                    "Estimate: {} on {}, {}",
                    a.model,
                    a.gpu_name,
                    if a.lambda_qps.is_some() {
                        format!("server at {} req/s", a.lambda_qps.unwrap_or_default())
                    } else {
                        "batch".into()
                    }
                );
                let m = a.measured.as_ref();
                let mut figure = |name: &'static str, b: Option<&Band>, measured: Option<f64>| {
                    if let Some(b) = b {
                        let (point, interval) = band_cells(b);
                        page.figures.push(Figure {
                            name,
                            point,
                            interval,
                            measured: measured.map_or("not measured".into(), sig),
                        });
                    }
                };
                figure(
                    "energy per token (J)",
                    a.energy_per_token_j.as_ref(),
                    m.map(|m| m.energy_per_token_j),
                );
                figure(
                    "energy per request (J)",
                    a.energy_per_request_j.as_ref(),
                    m.and_then(|m| m.energy_per_request_j),
                );
                figure("mean power (W)", Some(&a.power_w), m.map(|m| m.power_w));
                figure(
                    "inter-token latency (s)",
                    Some(&a.itl_s),
                    m.and_then(|m| m.itl_s),
                );
                page.interval_note = format!(
                    "{:.0} % intervals, split-conformal from the {} out-of-fold residuals of {} ({}){}.{}{}",
                    a.level * 100.0,
                    a.interval_from.residuals,
                    a.interval_from.split,
                    a.interval_from.scenario.as_str(),
                    a.interval_from
                        .coverage_achieved
                        .map_or(String::new(), |c| format!(
                            "; validation found {:.0} % of held-out rows inside at 80 %",
                            c * 100.0
                        )),
                    a.energy_per_token_note
                        .as_ref()
                        .map_or(String::new(), |n| format!(" {n}.")),
                    a.caveat
                        .as_ref()
                        .map_or(String::new(), |c| format!(" {c}."))
                );
                page.measured_link = m.map(|m| m.link.clone());
                page.neighbours = a
                    .neighbours
                    .iter()
                    .map(|n| {
                        (
                            n.group.gpu_id.clone(),
                            n.group.model.clone(),
                            n.scenario.clone(),
                            // The figure the estimate leads with: J/token in
                            // batch, J/request in server.
                            match (n.group.lambda_qps, n.group.energy_per_request_j) {
                                (Some(_), Some(r)) => format!("{} J/request", sig(r)),
                                _ => format!("{} J/token", sig(n.group.energy_per_token_j)),
                            },
                            n.link.clone(),
                        )
                    })
                    .collect();
            }
            // "Does not fit" answers the question, on a page of its own
            // (200); a question the estimator cannot take is the error.
            Err(e) if e.code == "does_not_fit" => {
                page.error = Some(format!("it does not fit. {}", e.message));
            }
            Err(e) => {
                status = e.status;
                page.error = Some(format!("{} ({})", e.message, e.code));
            }
        }
    }
    let mut resp = render(status, &page);
    if status == StatusCode::SERVICE_UNAVAILABLE {
        resp.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("5"),
        );
    }
    Ok(resp)
}

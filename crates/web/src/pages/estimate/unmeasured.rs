//! The model page's "GPUs nobody has measured for this model: estimates":
//! one row per catalogue GPU × scenario without a group, an estimate or
//! why none, and its JSON and CSV (`/api/v1/models/{id}/estimates`).

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::*;
use crate::view::model_path;
use crate::AppState;
use wattcounts_rules::catalog;
use wattcounts_rules::spreadsheet::{write_csv, Cell, Column};

// The model page's estimates of the GPUs nobody measured for it.

/// One catalogue GPU × scenario the model has no group for.
#[derive(Serialize, ToSchema)]
pub struct UnmeasuredRow {
    /// Always `estimate`.
    pub kind: &'static str,
    pub gpu_id: String,
    pub gpu_name: String,
    pub scenario: String,
    pub energy_per_token_j: Option<Band>,
    pub energy_per_request_j: Option<Band>,
    pub power_w: Option<Band>,
    pub itl_s: Option<Band>,
    /// Why there is no estimate (`does_not_fit` is an answer too).
    pub refused: Option<String>,
    pub refusal_code: Option<String>,
    pub link: String,
}

/// `/api/v1/models/{id}/estimates`.
#[derive(Serialize, ToSchema)]
pub struct UnmeasuredAnswer {
    pub model: String,
    pub kind: &'static str,
    pub estimator: Option<FitId>,
    /// Why there are no rows, when the estimator cannot answer.
    pub why_empty: Option<String>,
    pub level: f64,
    pub rows: Vec<UnmeasuredRow>,
    pub synthetic: bool,
}

/// Every catalogue GPU × scenario of the fit's data (batch, each measured
/// server rate) that has no group of this model in the fit's rows.
pub(crate) fn unmeasured(view: &EstimatorView, model_id: &str) -> UnmeasuredAnswer {
    let mut out = UnmeasuredAnswer {
        model: model_id.to_string(),
        kind: "estimate",
        estimator: None,
        why_empty: None,
        level: view.rules.level,
        rows: Vec::new(),
        synthetic: false,
    };
    let t = match current(view) {
        Ok(t) => t,
        Err(e) => {
            out.why_empty = Some(e.message);
            return out;
        }
    };
    let Some(model) = catalog::model_by_id(model_id) else {
        out.why_empty = Some(format!(
            "{model_id} is not in the catalogue: the estimator reads its features from there"
        ));
        return out;
    };
    out.synthetic = t.provenance.origin == "demo";
    out.estimator = Some(fit_id(&t, view));
    let mut scenarios: Vec<Option<f64>> = vec![None];
    let mut rates: Vec<f64> = t.rows.iter().filter_map(|r| r.lambda_qps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    scenarios.extend(rates.into_iter().map(Some));
    for lambda in scenarios {
        for g in catalog::gpus() {
            let measured = t
                .rows
                .iter()
                .any(|r| r.gpu_id == g.id && r.model == model.id && r.lambda_qps == lambda);
            if measured {
                continue;
            }
            let scenario = scenario_param(lambda);
            let link = format!(
                "/estimate?model={}&gpu={}&scenario={}",
                url_encode(&model.id),
                url_encode(&g.id),
                url_encode(&scenario)
            );
            let row = match t.answer(g, model, lambda, &view.rules) {
                Ok(a) => UnmeasuredRow {
                    kind: "estimate",
                    gpu_id: g.id.clone(),
                    gpu_name: g.nvml_name.clone(),
                    scenario,
                    energy_per_token_j: a.energy_per_token_j,
                    energy_per_request_j: a.energy_per_request_j,
                    power_w: Some(a.power_w),
                    itl_s: Some(a.itl_s),
                    refused: None,
                    refusal_code: None,
                    link,
                },
                Err(r) => UnmeasuredRow {
                    kind: "estimate",
                    gpu_id: g.id.clone(),
                    gpu_name: g.nvml_name.clone(),
                    scenario,
                    energy_per_token_j: None,
                    energy_per_request_j: None,
                    power_w: None,
                    itl_s: None,
                    refused: Some(r.message().to_string()),
                    refusal_code: Some(r.code().to_string()),
                    link,
                },
            };
            out.rows.push(row);
        }
    }
    out
}

/// One estimate as the CSV writes it, with what the answer holds for all
/// of its rows (the model, the interval's level, the fit, demo or not).
struct EstimateLine<'a> {
    answer: &'a UnmeasuredAnswer,
    row: &'a UnmeasuredRow,
}

/// A band's point, lower or upper end; empty where the band or the end is.
fn band(b: &Option<Band>, end: fn(&Band) -> Option<f64>) -> Cell {
    Cell::Figure(b.as_ref().and_then(end))
}

/// The estimates CSV's columns: one list for the header and the records.
fn csv_columns<'a>() -> Vec<Column<EstimateLine<'a>>> {
    vec![
        Column {
            name: "kind",
            cell: |_, _| Cell::Own("estimate".into()),
        },
        Column {
            name: "model",
            cell: |_, l| Cell::Text(l.answer.model.clone()),
        },
        Column {
            name: "gpu_id",
            cell: |_, l| Cell::Text(l.row.gpu_id.clone()),
        },
        Column {
            name: "gpu_name",
            cell: |_, l| Cell::Text(l.row.gpu_name.clone()),
        },
        Column {
            name: "scenario",
            cell: |_, l| Cell::Text(l.row.scenario.clone()),
        },
        Column {
            name: "energy_per_token_j",
            cell: |_, l| band(&l.row.energy_per_token_j, |b| Some(b.point)),
        },
        Column {
            name: "energy_per_token_lo_j",
            cell: |_, l| band(&l.row.energy_per_token_j, |b| b.lo),
        },
        Column {
            name: "energy_per_token_hi_j",
            cell: |_, l| band(&l.row.energy_per_token_j, |b| b.hi),
        },
        Column {
            name: "energy_per_request_j",
            cell: |_, l| band(&l.row.energy_per_request_j, |b| Some(b.point)),
        },
        Column {
            name: "energy_per_request_lo_j",
            cell: |_, l| band(&l.row.energy_per_request_j, |b| b.lo),
        },
        Column {
            name: "energy_per_request_hi_j",
            cell: |_, l| band(&l.row.energy_per_request_j, |b| b.hi),
        },
        Column {
            name: "power_w",
            cell: |_, l| band(&l.row.power_w, |b| Some(b.point)),
        },
        Column {
            name: "power_lo_w",
            cell: |_, l| band(&l.row.power_w, |b| b.lo),
        },
        Column {
            name: "power_hi_w",
            cell: |_, l| band(&l.row.power_w, |b| b.hi),
        },
        Column {
            name: "itl_s",
            cell: |_, l| band(&l.row.itl_s, |b| Some(b.point)),
        },
        Column {
            name: "itl_lo_s",
            cell: |_, l| band(&l.row.itl_s, |b| b.lo),
        },
        Column {
            name: "itl_hi_s",
            cell: |_, l| band(&l.row.itl_s, |b| b.hi),
        },
        Column {
            name: "level",
            cell: |_, l| Cell::Figure(Some(l.answer.level)),
        },
        Column {
            name: "refusal_code",
            cell: |_, l| Cell::Own(l.row.refusal_code.clone().unwrap_or_default()),
        },
        Column {
            name: "refused",
            cell: |_, l| Cell::Text(l.row.refused.clone().unwrap_or_default()),
        },
        Column {
            name: "estimator_version",
            cell: |_, l| {
                Cell::Own(
                    l.answer
                        .estimator
                        .as_ref()
                        .map(|e| e.version.clone())
                        .unwrap_or_default(),
                )
            },
        },
        Column {
            name: "synthetic",
            cell: |_, l| Cell::Flag(l.answer.synthetic),
        },
    ]
}

pub(crate) fn unmeasured_csv(a: &UnmeasuredAnswer) -> Vec<u8> {
    let lines: Vec<EstimateLine> = a
        .rows
        .iter()
        .map(|row| EstimateLine { answer: a, row })
        .collect();
    write_csv(&csv_columns(), &lines, 1)
}

/// `/api/v1/models/{id}/estimates` and `.csv` (answered through the
/// model catch-all route, since model ids hold a slash).
pub(crate) fn unmeasured_response(s: &AppState, model_id: &str, csv: bool) -> Response {
    let a = unmeasured(&s.service.estimator(), model_id);
    if csv {
        (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"wattcounts-estimates.csv\"",
                ),
            ],
            unmeasured_csv(&a),
        )
            .into_response()
    } else {
        Json(a).into_response()
    }
}

/// The model page's section, as it renders.
pub(crate) struct UnmeasuredSection {
    pub why_empty: Option<String>,
    pub rows: Vec<UnmeasuredLine>,
    /// "198 estimates, 9 refused (6 do not fit)": what the folded table holds.
    pub summary: String,
    pub json_link: String,
    pub csv_link: String,
    pub level: String,
}

/// One row of the model page's estimates table.
pub(crate) struct UnmeasuredLine {
    pub gpu: String,
    pub scenario: String,
    pub ept: String,
    pub epr: String,
    /// Why there is no estimate, in words (a refused row).
    pub why: Option<String>,
    pub link: String,
}

pub(crate) fn unmeasured_section(s: &AppState, model_id: &str) -> UnmeasuredSection {
    let a = unmeasured(&s.service.estimator(), model_id);
    let cell = |b: &Option<Band>| {
        b.as_ref().map(|b| {
            let (p, i) = band_cells(b);
            format!("{p} ({i})")
        })
    };
    let refused = a.rows.iter().filter(|r| r.refused.is_some()).count();
    let no_fit = a
        .rows
        .iter()
        .filter(|r| r.refusal_code.as_deref() == Some("does_not_fit"))
        .count();
    UnmeasuredSection {
        why_empty: a.why_empty.clone(),
        summary: format!(
            "{} estimate{}, {refused} refused ({no_fit} because the model does not fit)",
            a.rows.len() - refused,
            if a.rows.len() - refused == 1 { "" } else { "s" }
        ),
        rows: a
            .rows
            .iter()
            .map(|r| UnmeasuredLine {
                gpu: r.gpu_name.clone(),
                scenario: r.scenario.clone(),
                ept: cell(&r.energy_per_token_j).unwrap_or_else(|| "–".into()),
                epr: cell(&r.energy_per_request_j).unwrap_or_else(|| "–".into()),
                why: r.refused.clone(),
                link: r.link.clone(),
            })
            .collect(),
        json_link: format!("/api/v1{}/estimates", model_path(model_id)),
        csv_link: format!("/api/v1{}/estimates.csv", model_path(model_id)),
        level: format!("{:.0} %", a.level * 100.0),
    }
}

#[utoipa::path(get, path = "/api/v1/models/{id}/estimates", tag = "estimates",
    summary = "Estimates (never measurements) for every catalogue GPU × scenario this model has no group on, or why each is refused",
    params(("id" = String, Path, description = "The model's Hugging Face id (it holds a slash)")),
    responses((status = 200, body = UnmeasuredAnswer)))]
pub async fn model_estimates_json(
    State(s): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    unmeasured_response(&s, &id, false)
}

#[utoipa::path(get, path = "/api/v1/models/{id}/estimates.csv", tag = "estimates",
    summary = "The model's estimates for unmeasured GPUs as CSV, one row per GPU × scenario",
    params(("id" = String, Path, description = "The model's Hugging Face id (it holds a slash)")),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn model_estimates_csv(
    State(s): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    unmeasured_response(&s, &id, true)
}

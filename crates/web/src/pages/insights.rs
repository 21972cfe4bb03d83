//! `/insights`, `/api/v1/insights` and `/api/v1/insights.csv`: the paper's
//! headline findings recomputed from the accepted groups of one view
//! (`wattcounts_analytics::insights`), each with its basis, what it rests on,
//! its interval, a chart and the query that shows the rows behind it.

mod finding_view;

use finding_view::*;

use askama::Template;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::query::{PageParams, Params, ViewParams};
use crate::view::{url_encode, View};
use crate::AppState;
use wattcounts_analytics::insights::{self, Finding};
use wattcounts_rules::domain::Interval;
use wattcounts_rules::spreadsheet::{write_csv, Cell, Column};

/// What a reader of demo findings must know first.
pub const SYNTHETIC_NOTE: &str = "The data in this view are synthetic: the findings exercise the pipeline that computes them, not hardware.";

/// `/api/v1/insights`.
#[derive(Serialize, ToSchema)]
pub struct InsightsAnswer {
    /// The view in words.
    pub view: String,
    /// True when the view is the demo's synthetic data.
    pub synthetic: bool,
    /// The synthetic-data note, on demo data.
    pub note: Option<String>,
    /// Why there are no findings, when there are none.
    pub why_empty: Option<String>,
    pub findings: Vec<Finding>,
}

struct Computed {
    findings: Vec<Finding>,
    view: View,
    /// Per scenario param: every GPU of the scenario, for the compare link.
    gpus: Vec<(String, Vec<String>)>,
}

async fn computed(s: &AppState, params: &ViewParams) -> Result<Computed, ApiError> {
    let q = crate::view::view_query(params)?;
    let (d, board) = s.service.insights_view(&q).await?;
    Ok(Computed {
        findings: d.findings,
        view: crate::view::view_of(&board, &q, params),
        gpus: d.gpus,
    })
}

fn why_empty(rows_empty: bool, view: &View) -> Option<String> {
    rows_empty.then(|| {
        format!(
            "No accepted groups in this view ({}): there is nothing to recompute the findings from.",
            view.note
        )
    })
}

/// The query that shows the rows behind a finding.
pub(super) fn evidence_link(
    f: &Finding,
    gpus: &[(String, Vec<String>)],
    view_query: &str,
) -> String {
    let tail = if view_query.is_empty() {
        String::new()
    } else {
        format!("&{view_query}")
    };
    let scenario = url_encode(&f.scenario);
    if f.basis == insights::VALIDATION {
        return "/api/v1/estimator".into();
    }
    if f.basis == insights::SIZE_SCALING {
        return format!("/leaderboard?scenario={scenario}{tail}");
    }
    let ids = gpus
        .iter()
        .find(|(k, _)| *k == f.scenario)
        .map(|(_, ids)| ids.join(","))
        .unwrap_or_default();
    format!("/compare?gpus={ids}&scenario={scenario}{tail}")
}

#[utoipa::path(get, path = "/api/v1/insights", tag = "insights",
    summary = "The paper's headline findings recomputed from the view's accepted groups",
    params(ViewParams),
    responses((status = 200, body = InsightsAnswer)))]
pub async fn insights_json(
    State(s): State<AppState>,
    Params(params): Params<ViewParams>,
) -> Result<Response, ApiError> {
    let c = computed(&s, &params).await?;
    Ok(Json(InsightsAnswer {
        why_empty: why_empty(c.findings.is_empty(), &c.view),
        synthetic: c.view.demo,
        note: c.view.demo.then(|| SYNTHETIC_NOTE.to_string()),
        view: c.view.note,
        findings: c.findings,
    })
    .into_response())
}

/// One finding as the CSV writes it: the export's `synthetic` flag rides
/// along, since it is the view's, not the finding's.
struct FindingLine<'a> {
    finding: &'a Finding,
    synthetic: bool,
}

/// The insights CSV's columns, each with how a finding fills it (the
/// leaderboard CSV's conventions: numbers as numbers, empty for absent, text
/// cells safe from spreadsheets): one list for the header and the records.
fn csv_columns<'a>() -> Vec<Column<FindingLine<'a>>> {
    fn text(t: &Option<String>) -> Cell {
        Cell::Text(t.clone().unwrap_or_default())
    }
    fn exponent(l: &FindingLine, part: fn(&Interval) -> f64) -> Cell {
        Cell::Figure(l.finding.median_exponent_interval.as_ref().map(part))
    }
    vec![
        Column {
            name: "id",
            cell: |_, l| Cell::Text(l.finding.id.clone()),
        },
        Column {
            name: "scenario",
            cell: |_, l| Cell::Text(l.finding.scenario.clone()),
        },
        Column {
            name: "metric",
            cell: |_, l| Cell::Text(l.finding.metric.clone()),
        },
        Column {
            name: "basis",
            cell: |_, l| Cell::Text(l.finding.basis.clone()),
        },
        Column {
            name: "statement",
            cell: |_, l| Cell::Text(l.finding.statement.clone()),
        },
        Column {
            name: "paper",
            cell: |_, l| text(&l.finding.paper),
        },
        Column {
            name: "method",
            cell: |_, l| Cell::Text(l.finding.method.clone()),
        },
        Column {
            name: "groups",
            cell: |_, l| Cell::Count(l.finding.groups as u64),
        },
        Column {
            name: "models",
            cell: |_, l| Cell::Count(l.finding.models as u64),
        },
        Column {
            name: "gpus",
            cell: |_, l| Cell::Count(l.finding.gpus as u64),
        },
        Column {
            name: "missing",
            cell: |_, l| text(&l.finding.missing),
        },
        Column {
            name: "max_saving_pct",
            cell: |_, l| Cell::Figure(l.finding.max_saving_pct),
        },
        Column {
            name: "max_saving_lo_pct",
            cell: |_, l| Cell::Figure(l.finding.max_saving_interval_pct.map(|r| r.lo)),
        },
        Column {
            name: "max_saving_hi_pct",
            cell: |_, l| Cell::Figure(l.finding.max_saving_interval_pct.map(|r| r.hi)),
        },
        Column {
            name: "median_saving_pct",
            cell: |_, l| Cell::Figure(l.finding.median_saving_pct),
        },
        Column {
            name: "mean_saving_pct",
            cell: |_, l| Cell::Figure(l.finding.mean_saving_pct),
        },
        Column {
            name: "model",
            cell: |_, l| text(&l.finding.model),
        },
        Column {
            name: "best_gpu",
            cell: |_, l| text(&l.finding.best_gpu),
        },
        Column {
            name: "worst_gpu",
            cell: |_, l| text(&l.finding.worst_gpu),
        },
        Column {
            name: "single_gpu",
            cell: |_, l| text(&l.finding.single_gpu),
        },
        Column {
            name: "models_not_run",
            cell: |_, l| Cell::MaybeCount(l.finding.models_not_run.map(|n| n as u64)),
        },
        Column {
            name: "median_exponent",
            cell: |_, l| Cell::Figure(l.finding.median_exponent),
        },
        Column {
            name: "median_exponent_lo",
            cell: |_, l| exponent(l, |i| i.lo),
        },
        Column {
            name: "median_exponent_hi",
            cell: |_, l| exponent(l, |i| i.hi),
        },
        Column {
            name: "median_exponent_confidence",
            cell: |_, l| exponent(l, |i| i.confidence),
        },
        Column {
            name: "exponent_with_kv_ratio",
            cell: |_, l| Cell::Figure(l.finding.exponent_with_kv_ratio),
        },
        Column {
            name: "kv_ratio_coefficient",
            cell: |_, l| Cell::Figure(l.finding.kv_ratio_coefficient),
        },
        Column {
            name: "energy_mdape_pct",
            cell: |_, l| Cell::Figure(l.finding.energy_mdape_pct),
        },
        Column {
            name: "baseline_mdape_pct",
            cell: |_, l| Cell::Figure(l.finding.baseline_mdape_pct),
        },
        Column {
            name: "coverage",
            cell: |_, l| Cell::Figure(l.finding.coverage),
        },
        Column {
            name: "synthetic",
            cell: |_, l| Cell::Flag(l.synthetic),
        },
    ]
}

/// One row per finding.
pub fn to_csv(findings: &[Finding], synthetic: bool) -> Vec<u8> {
    let lines: Vec<FindingLine> = findings
        .iter()
        .map(|finding| FindingLine { finding, synthetic })
        .collect();
    write_csv(&csv_columns(), &lines, 1)
}

#[utoipa::path(get, path = "/api/v1/insights.csv", tag = "insights",
    summary = "The findings as CSV, one row per finding",
    params(ViewParams),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn insights_csv(
    State(s): State<AppState>,
    Params(params): Params<ViewParams>,
) -> Result<Response, ApiError> {
    let c = computed(&s, &params).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"wattcounts-insights.csv\"",
            ),
        ],
        to_csv(&c.findings, c.view.demo),
    )
        .into_response())
}

#[derive(Template)]
#[template(path = "insights.html")]
struct InsightsPage {
    findings: Vec<FindingView>,
    /// (slug, label) per scenario, in the findings' order.
    scenarios: Vec<(String, String)>,
    why_empty: Option<String>,
    synthetic_note: &'static str,
    json_link: String,
    csv_link: String,
    view: View,
    validation: crate::pages::estimate::ValidationBlock,
    demo_physics_note: &'static str,
    /// The estimator judged on ML.ENERGY v3's real measurements.
    real_hardware: Option<RealHardwareBlock>,
    layout: crate::layout::Layout,
}

struct RealHardwareBlock {
    statement: String,
    link: String,
    /// (task, split, method, folds, rows, energy, MoE energy, power, ITL,
    /// r, coverage).
    rows: Vec<[String; 11]>,
}

fn real_hardware_block(v: &wattcounts_service::peers::RealHardwareValidation) -> RealHardwareBlock {
    let a = crate::pages::estimate::real_hardware(v);
    RealHardwareBlock {
        statement: a.statement,
        link: format!("/peers/{}", v.info.slug),
        rows: v
            .lines
            .iter()
            .map(|l| {
                let mut cells = l.cells();
                if l.method != "estimator" {
                    cells[2] = format!("baseline: {}", cells[2]);
                }
                cells
            })
            .collect(),
    }
}

pub async fn insights_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<ViewParams>,
) -> Result<Response, PageError> {
    // A peer origin's insights are its own page: another protocol's
    // figures, read within that dataset alone.
    if let Some(p) = crate::extract::query::given(&params.origin)
        .filter(|o| o.starts_with("peer:"))
        .and_then(wattcounts_rules::peer::PeerSource::parse)
    {
        return crate::pages::peers::insights::peer_insights_response(&s, p.info().slug).await;
    }
    let c = computed(&s, &params).await?;
    let q = if c.view.query.is_empty() {
        String::new()
    } else {
        format!("?{}", c.view.query)
    };
    let mut findings: Vec<FindingView> = c
        .findings
        .iter()
        .map(|f| view_of(f, &c.gpus, &c.view.query))
        .collect();
    let mut scenarios: Vec<(String, String)> = Vec::new();
    for f in &mut findings {
        if scenarios.last().map(|s| &s.0) != Some(&f.scenario_slug) {
            f.first_of_scenario = true;
            scenarios.push((f.scenario_slug.clone(), f.scenario_label.clone()));
        }
    }
    let page = InsightsPage {
        why_empty: why_empty(c.findings.is_empty(), &c.view),
        findings,
        scenarios,
        synthetic_note: SYNTHETIC_NOTE,
        json_link: format!("/api/v1/insights{q}"),
        csv_link: format!("/api/v1/insights.csv{q}"),
        layout: crate::layout::Layout::of(c.view.demo),
        view: c.view,
        validation: crate::pages::estimate::validation_block(&s.service.estimator()),
        demo_physics_note: crate::pages::estimate::DEMO_PHYSICS_NOTE,
        real_hardware: s
            .service
            .real_hardware_validation()
            .await
            .as_deref()
            .map(real_hardware_block),
    };
    Ok(render(StatusCode::OK, &page))
}

//! `/insights`, `/api/v1/insights` and `/api/v1/insights.csv`: the paper's
//! headline findings recomputed from the accepted groups of one view
//! (`wattcounts_analytics::insights`), each with its basis, what it rests on,
//! its interval, a chart and the query that shows the rows behind it.

use askama::Template;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::charts;
use super::csv_export::opt;
use super::error::ApiError;
use super::explore::{entries, View};
use super::pages::{render, url_encode, PageError, VERSION};
use super::params::{PageParams, Params, ViewParams};
use super::AppState;
use wattcounts_analytics::compare::ScenarioKey;
use wattcounts_analytics::insights::{self, Finding, ModelSaving};
use wattcounts_analytics::verdict::{sig, Estimate};
use wattcounts_rules::domain::Interval;
use wattcounts_rules::spreadsheet::text_cell;

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
    let (rows, view) = entries(s, params, |_| {}).await?;
    let gpus = wattcounts_analytics::compare::scenarios(&rows)
        .into_iter()
        .map(|k| {
            let mut ids: Vec<String> = rows
                .iter()
                .filter(|e| k.same(&wattcounts_analytics::compare::key_of(e)))
                .map(|e| e.gpu_id.clone())
                .collect();
            ids.sort();
            ids.dedup();
            (k.param(), ids)
        })
        .collect();
    let mut findings = insights::findings(&rows);
    // The estimator's validation, when its fit is of this very view (the
    // reference protocol of the same origin).
    let reference = params
        .protocol
        .as_deref()
        .is_none_or(|p| p.is_empty() || p == "reference");
    if let Some(t) = s.service.estimator().current {
        if reference && (t.provenance.origin == "demo") == view.demo && !rows.is_empty() {
            let (gpus, models) = t.counts();
            findings.extend(insights::estimator_validation::findings(
                &t.report.lines,
                gpus,
                models,
            ));
        }
    }
    Ok(Computed {
        findings,
        view,
        gpus,
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
fn evidence_link(f: &Finding, gpus: &[(String, Vec<String>)], view_query: &str) -> String {
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

pub const CSV_COLUMNS: &[&str] = &[
    "id",
    "scenario",
    "metric",
    "basis",
    "statement",
    "paper",
    "method",
    "groups",
    "models",
    "gpus",
    "missing",
    "max_saving_pct",
    "max_saving_lo_pct",
    "max_saving_hi_pct",
    "median_saving_pct",
    "mean_saving_pct",
    "model",
    "best_gpu",
    "worst_gpu",
    "single_gpu",
    "models_not_run",
    "median_exponent",
    "median_exponent_lo",
    "median_exponent_hi",
    "median_exponent_confidence",
    "exponent_with_kv_ratio",
    "kv_ratio_coefficient",
    "energy_mdape_pct",
    "baseline_mdape_pct",
    "coverage",
    "synthetic",
];

fn opt_text(v: &Option<String>) -> String {
    v.as_deref().map(text_cell).unwrap_or_default()
}

/// One row per finding, the leaderboard CSV's conventions (numbers as
/// numbers, empty for absent, text cells safe from spreadsheets).
pub fn to_csv(findings: &[Finding], synthetic: bool) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS).expect("write to memory");
    for f in findings {
        let exp: Option<Interval> = f.median_exponent_interval;
        w.write_record([
            text_cell(&f.id),
            text_cell(&f.scenario),
            text_cell(&f.metric),
            text_cell(&f.basis),
            text_cell(&f.statement),
            opt_text(&f.paper),
            text_cell(&f.method),
            f.groups.to_string(),
            f.models.to_string(),
            f.gpus.to_string(),
            opt_text(&f.missing),
            opt(f.max_saving_pct),
            opt(f.max_saving_interval_pct.map(|r| r.lo)),
            opt(f.max_saving_interval_pct.map(|r| r.hi)),
            opt(f.median_saving_pct),
            opt(f.mean_saving_pct),
            opt_text(&f.model),
            opt_text(&f.best_gpu),
            opt_text(&f.worst_gpu),
            opt_text(&f.single_gpu),
            f.models_not_run.map(|n| n.to_string()).unwrap_or_default(),
            opt(f.median_exponent),
            opt(exp.map(|i| i.lo)),
            opt(exp.map(|i| i.hi)),
            opt(exp.map(|i| i.confidence)),
            opt(f.exponent_with_kv_ratio),
            opt(f.kv_ratio_coefficient),
            opt(f.energy_mdape_pct),
            opt(f.baseline_mdape_pct),
            opt(f.coverage),
            synthetic.to_string(),
        ])
        .expect("write to memory");
    }
    w.into_inner().expect("memory")
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

/// How many models a saving chart shows (largest first).
const CHART_ROWS: usize = 12;

struct FindingView {
    anchor: String,
    title: String,
    scenario_slug: String,
    scenario_label: String,
    /// The first finding of its scenario: the page opens a heading.
    first_of_scenario: bool,
    statement: String,
    paper: Option<String>,
    basis: String,
    method: String,
    rests_on: String,
    interval: String,
    chart: String,
    link: String,
    missing: bool,
    table: Vec<(String, String, String)>,
    table_head: (String, String, String),
}

fn saving_chart(f: &Finding, id: &str, title: &str) -> String {
    let items: Vec<(String, Estimate)> = f
        .savings
        .iter()
        .take(CHART_ROWS)
        .map(|s| {
            (
                s.model.clone(),
                Estimate::new(
                    s.saving_pct,
                    Some(Interval {
                        lo: s.interval_pct.lo,
                        hi: s.interval_pct.hi,
                        confidence: 1.0,
                    }),
                ),
            )
        })
        .collect();
    charts::bars(
        id,
        title,
        &format!(
            "One bar per model, the {} largest of {}: the saving in % with the range the two groups' intervals allow.",
            items.len(),
            f.savings.len()
        ),
        "%",
        &items,
    )
}

/// A saving table's rows: the model, its two GPUs joined by `joiner`, the
/// saving with its range.
fn saving_rows<'a>(
    savings: impl Iterator<Item = &'a ModelSaving>,
    joiner: &str,
) -> Vec<(String, String, String)> {
    savings
        .map(|s| {
            (
                s.model.clone(),
                format!("{} {joiner} {}", s.best_gpu, s.other_gpu),
                format!(
                    "{:.1} % ({:.1}–{:.1})",
                    s.saving_pct, s.interval_pct.lo, s.interval_pct.hi
                ),
            )
        })
        .collect()
}

fn view_of(f: &Finding, gpus: &[(String, Vec<String>)], view_query: &str) -> FindingView {
    let anchor = f.id.replace(['@', '.'], "-");
    let key = ScenarioKey::parse(&f.scenario);
    let mut v = FindingView {
        title: String::new(),
        scenario_slug: key.map_or_else(|| f.scenario.clone(), |k| k.slug()),
        scenario_label: key.map_or_else(|| f.scenario.clone(), |k| k.label()),
        first_of_scenario: false,
        statement: f.statement.clone(),
        paper: f.paper.clone(),
        basis: String::new(),
        method: f.method.clone(),
        rests_on: format!("{} groups, {} models, {} GPUs", f.groups, f.models, f.gpus),
        interval: String::new(),
        chart: String::new(),
        link: evidence_link(f, gpus, view_query),
        missing: f.missing.is_some(),
        table: Vec::new(),
        table_head: (String::new(), String::new(), String::new()),
        anchor,
    };
    match f.basis.as_str() {
        insights::BEST_VS_WORST => {
            v.title = "GPU choice: best against worst GPU per model".into();
            v.basis = "For each model measured on two or more GPUs, its lowest-energy GPU against its highest; the median and the largest of those savings over models.".into();
            if let Some(r) = f.max_saving_interval_pct {
                v.interval = format!("largest saving {:.1} % to {:.1} %", r.lo, r.hi);
            }
            if !v.missing {
                v.chart = saving_chart(
                    f,
                    &format!("chart-{}", v.anchor),
                    "Saving of the best GPU against the worst, per model",
                );
            }
            v.table_head = ("model".into(), "best → worst GPU".into(), "saving".into());
            v.table = saving_rows(f.savings.iter(), "→");
        }
        insights::VS_SINGLE_BEST => {
            v.title = "GPU choice: the best GPU per model against one GPU for all".into();
            v.basis = "One GPU for every model (the one best for the most models) against choosing each model's best GPU, over the models that one GPU ran.".into();
            if !v.missing {
                v.chart = saving_chart(
                    f,
                    &format!("chart-{}", v.anchor),
                    "Saving of each model's best GPU against the single best GPU",
                );
            }
            v.table_head = (
                "model".into(),
                "best GPU vs the single one".into(),
                "saving".into(),
            );
            v.table = saving_rows(f.savings.iter().filter(|s| s.saving_pct > 0.0), "vs");
        }
        insights::WINS => {
            v.title = "Which GPU wins".into();
            v.basis = "Per model measured on two or more GPUs, the GPU whose interval separates below every other's; a lowest median within another's interval is a tie, counted apart.".into();
            let all: Vec<(String, Estimate)> = f
                .wins
                .iter()
                .filter(|w| w.size_class == "all")
                .map(|w| (w.gpu_name.clone(), Estimate::new(w.best_for as f64, None)))
                .collect();
            if !all.is_empty() {
                v.chart = charts::bars(
                    &format!("chart-{}", v.anchor),
                    "Models each GPU is best for",
                    "One bar per GPU: how many models it uses the least energy per token for, ties within measurement noise left out.",
                    "models",
                    &all,
                );
            }
            v.table_head = (
                "size class".into(),
                "GPU".into(),
                "best for (ties apart)".into(),
            );
            v.table = f
                .wins
                .iter()
                .map(|w| {
                    (
                        w.size_class.clone(),
                        w.gpu_name.clone(),
                        format!("{} (+{} ties)", w.best_for, w.ties),
                    )
                })
                .chain(f.idle_power.iter().map(|p| {
                    (
                        "loaded idle".into(),
                        p.gpu_name.clone(),
                        format!(
                            "catalogue {} W; measured {}",
                            p.catalogue_idle_w.map_or("–".into(), sig),
                            match (p.measured_w, p.lowest_rate_qps) {
                                (Some(w), Some(r)) => format!("{} W at {r} req/s", sig(w)),
                                _ => "– (no server group)".into(),
                            }
                        ),
                    )
                }))
                .collect();
        }
        insights::VALIDATION => {
            // All three classes under one heading of their own.
            v.scenario_slug = "estimator".into();
            v.scenario_label = "The estimator's validation".into();
            v.title = format!("Energy error for a GPU nobody measured: {}", f.scenario);
            v.basis = "The estimator's out-of-fold energy error for a GPU nobody measured (each GPU left out of the fit in turn), against the better of two TDP baselines; the full table is at the foot of this page.".into();
            if let Some(c) = f.coverage {
                v.interval = format!(
                    "{:.0} % of held-out groups inside their 80 % intervals",
                    c * 100.0
                );
            }
            let items: Vec<(String, Estimate)> = [
                ("estimator", f.energy_mdape_pct),
                ("better TDP baseline", f.baseline_mdape_pct),
            ]
            .into_iter()
            .filter_map(|(name, v)| Some((name.to_string(), Estimate::new(v?, None))))
            .collect();
            if !items.is_empty() && !v.missing {
                v.chart = charts::bars(
                    &format!("chart-{}", v.anchor),
                    "Median energy error leaving one GPU out",
                    "Two bars: the estimator's median absolute percentage error of energy for a GPU left out of the fit, and the better TDP baseline's.",
                    "%",
                    &items,
                );
            }
        }
        _ => {
            v.title = "Size scaling".into();
            v.basis = "Per GPU, the Theil–Sen slope of log energy per token on log parameters over the dense models it measured; the median over GPUs.".into();
            if let Some(i) = f.median_exponent_interval {
                v.interval = format!(
                    "median exponent {:.2} to {:.2} at {:.0} %",
                    i.lo,
                    i.hi,
                    i.confidence * 100.0
                );
            }
            let items: Vec<(String, Estimate)> = f
                .slopes
                .iter()
                .map(|s| {
                    (
                        s.gpu_name.clone(),
                        Estimate::new(s.exponent, Some(s.interval)),
                    )
                })
                .collect();
            if !items.is_empty() {
                v.chart = charts::bars(
                    &format!("chart-{}", v.anchor),
                    "Exponent of parameters per GPU",
                    "One bar per GPU: the slope of log energy per token on log parameters, with its 95 % interval.",
                    "exponent",
                    &items,
                );
            }
            v.table_head = (
                "GPU".into(),
                "models".into(),
                "exponent (95 % interval)".into(),
            );
            v.table = f
                .slopes
                .iter()
                .map(|s| {
                    (
                        s.gpu_name.clone(),
                        s.models.to_string(),
                        format!(
                            "{:.3} ({:.3}–{:.3})",
                            s.exponent, s.interval.lo, s.interval.hi
                        ),
                    )
                })
                .collect();
            if let (Some(e), Some(c)) = (f.exponent_with_kv_ratio, f.kv_ratio_coefficient) {
                v.interval.push_str(&format!(
                    "; with the KV-heads ÷ attention-heads ratio as a second regressor: exponent {e:.2}, ratio coefficient {c:.2} (medians over GPUs)"
                ));
            }
        }
    }
    v
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
    demo: bool,
    validation: super::estimates::ValidationBlock,
    demo_physics_note: &'static str,
    version: &'static str,
}

pub async fn insights_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<ViewParams>,
) -> Result<Response, PageError> {
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
        demo: c.view.demo,
        view: c.view,
        validation: super::estimates::validation_block(&s.service.estimator()),
        demo_physics_note: super::estimates::DEMO_PHYSICS_NOTE,
        version: VERSION,
    };
    Ok(render(StatusCode::OK, &page))
}

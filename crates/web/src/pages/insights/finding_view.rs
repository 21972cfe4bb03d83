//! One finding as the insights page shows it: its statement, basis,
//! figures with intervals, a chart and the link to the rows behind it.

use super::evidence_link;

use crate::view::charts;
use wattcounts_analytics::compare::ScenarioKey;
use wattcounts_analytics::insights::{self, Finding, ModelSaving};
use wattcounts_analytics::verdict::{sig, Estimate};
use wattcounts_rules::domain::Interval;

/// How many models a saving chart shows (largest first).
pub(crate) const CHART_ROWS: usize = 12;

pub(crate) struct FindingView {
    pub(crate) anchor: String,
    pub(crate) title: String,
    pub(crate) scenario_slug: String,
    pub(crate) scenario_label: String,
    /// The first finding of its scenario: the page opens a heading.
    pub(crate) first_of_scenario: bool,
    pub(crate) statement: String,
    pub(crate) paper: Option<String>,
    pub(crate) basis: String,
    pub(crate) method: String,
    pub(crate) rests_on: String,
    pub(crate) interval: String,
    pub(crate) chart: String,
    pub(crate) link: String,
    pub(crate) missing: bool,
    pub(crate) table: Vec<(String, String, String)>,
    pub(crate) table_head: (String, String, String),
}

pub(crate) fn saving_chart(f: &Finding, id: &str, title: &str) -> String {
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
pub(crate) fn saving_rows<'a>(
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

pub(crate) fn view_of(
    f: &Finding,
    gpus: &[(String, Vec<String>)],
    view_query: &str,
) -> FindingView {
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

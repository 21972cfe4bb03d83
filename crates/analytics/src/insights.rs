//! The paper's headline findings, recomputed from the groups of one view
//! (one origin, one protocol: never merged). Pure: leaderboard rows in,
//! findings out; `/insights` and its JSON and CSV twins render these, and
//! `/methodology#findings` says what each one compares.
//!
//! Every figure here is a function of the groups' medians and intervals,
//! the same ones the leaderboard shows: a finding never reads a run.

use serde::Serialize;

use crate::compare::{self, ModelRow, ScenarioKey};
use crate::leaderboard::{LeaderboardRow, SizeClass};
use crate::verdict::{self, Estimate};
use wattcounts_rules::catalog;
use wattcounts_rules::domain::{Interval, Scenario};
use wattcounts_rules::stats;

/// The paper's figures, quoted beside ours (Watt Counts, 2025).
pub const PAPER_GPU_CHOICE: &str =
    "up to 70 % less energy in server and about 20 % in batch, best against worst GPU per model";
pub const PAPER_WINS: &str = "the H100 is best in batch for most models; the L4 and the A30 for small models and in server, for their lower loaded-idle power";
pub const PAPER_SIZE: &str = "energy per token grows about as parameters^0.24";

/// What each finding compares, as the JSON's `basis` says it.
pub const BEST_VS_WORST: &str = "best_vs_worst_per_model";
pub const VS_SINGLE_BEST: &str = "best_per_model_vs_single_best";
pub const WINS: &str = "models_won_per_gpu";
pub const SIZE_SCALING: &str = "log_energy_per_token_on_log_parameters";
pub use estimator_validation::VALIDATION;

pub mod estimator_validation;

/// The level of the slopes' intervals.
pub const SLOPE_LEVEL: f64 = 0.95;
/// Fewest distinct model sizes a slope is fitted on.
pub const MIN_SIZES: usize = 3;

/// A range of percentages (a saving's, from the two groups' intervals).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PctRange {
    pub lo: f64,
    pub hi: f64,
}

/// How many models one GPU is best for, in one size class (`all` for
/// every size).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GpuWins {
    pub size_class: String,
    pub gpu_id: String,
    pub gpu_name: String,
    /// Models it is best for under the verdict rule (its interval
    /// separates from every other GPU's), among those two or more GPUs
    /// measured.
    pub best_for: usize,
    /// Models it has the lowest median for but whose interval overlaps
    /// another GPU's (a tie under the verdict rule): counted apart, never
    /// as wins (`best_for` excludes them).
    pub ties: usize,
}

/// A GPU's loaded-idle power: the catalogue's figure and what its groups
/// at the lowest server rate of the view drew.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct IdlePower {
    pub gpu_id: String,
    pub gpu_name: String,
    pub catalogue_idle_w: Option<f64>,
    /// Median over its models of the mean power at `lowest_rate_qps`.
    pub measured_w: Option<f64>,
    pub lowest_rate_qps: Option<f64>,
}

/// One GPU's slope of log energy per token on log parameters.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GpuSlope {
    pub gpu_id: String,
    pub gpu_name: String,
    /// Theil–Sen: the median of the pairwise slopes.
    pub exponent: f64,
    pub interval: Interval,
    pub models: usize,
}

/// One finding. Which of the optional fields are present depends on
/// `basis`; a finding without enough data carries `missing` instead.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Finding {
    /// Stable: `gpu_choice.best_vs_worst.batch`, …
    pub id: String,
    /// `batch` or `server@RATE`.
    pub scenario: String,
    pub metric: String,
    pub basis: String,
    /// The finding in one sentence, with its number.
    pub statement: String,
    /// The paper's figure for the same basis, when it states one.
    pub paper: Option<String>,
    /// The `/methodology` section that says how it is computed.
    pub method: String,
    /// What it rests on: groups, models and GPUs.
    pub groups: usize,
    pub models: usize,
    pub gpus: usize,
    /// Why there is no number, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_saving_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_saving_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_saving_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_saving_interval_pct: Option<PctRange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_gpu: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_gpu: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub single_gpu: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models_not_run: Option<usize>,
    /// Per model: its saving (best against worst, or best against the
    /// single GPU), largest first; what the chart draws.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub savings: Vec<ModelSaving>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wins: Vec<GpuWins>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub idle_power: Vec<IdlePower>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slopes: Vec<GpuSlope>,
    /// The median of the GPUs' exponents, with the order-statistic
    /// interval over them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_exponent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_exponent_interval: Option<Interval>,
    /// The second fit: least squares of log J/token on log parameters and
    /// the KV-heads ÷ attention-heads ratio, medians over GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exponent_with_kv_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_ratio_coefficient: Option<f64>,
    /// The estimator's validation: its out-of-fold energy MdAPE leaving
    /// each GPU out, the better power baseline's, and the share of
    /// held-out rows inside their 80 % intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_mdape_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_mdape_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
}

/// One model's saving behind a GPU-choice finding.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ModelSaving {
    pub model: String,
    pub best_gpu: String,
    /// The worst GPU, or the single GPU.
    pub other_gpu: String,
    pub saving_pct: f64,
    pub interval_pct: PctRange,
}

impl Finding {
    fn new(id: String, k: &ScenarioKey, basis: &str, method: &str) -> Finding {
        Finding {
            id,
            scenario: k.param(),
            metric: "energy_per_token_j".into(),
            basis: basis.into(),
            statement: String::new(),
            paper: None,
            method: format!("/methodology#{method}"),
            groups: 0,
            models: 0,
            gpus: 0,
            missing: None,
            max_saving_pct: None,
            median_saving_pct: None,
            mean_saving_pct: None,
            max_saving_interval_pct: None,
            model: None,
            best_gpu: None,
            worst_gpu: None,
            single_gpu: None,
            models_not_run: None,
            savings: Vec::new(),
            wins: Vec::new(),
            idle_power: Vec::new(),
            slopes: Vec::new(),
            median_exponent: None,
            median_exponent_interval: None,
            exponent_with_kv_ratio: None,
            kv_ratio_coefficient: None,
            energy_mdape_pct: None,
            baseline_mdape_pct: None,
            coverage: None,
        }
    }

    fn missing(mut self, why: String) -> Finding {
        self.statement = why.clone();
        self.missing = Some(why);
        self
    }
}

/// Every finding of the view: per scenario present (batch first, then
/// server rates ascending), GPU choice on both bases, the wins per GPU
/// and the size scaling.
pub fn findings(entries: &[LeaderboardRow]) -> Vec<Finding> {
    let mut out = Vec::new();
    for k in compare::scenarios(entries) {
        let here: Vec<&LeaderboardRow> = entries
            .iter()
            .filter(|e| k.same(&compare::key_of(e)))
            .collect();
        let mut gpus: Vec<String> = here.iter().map(|e| e.gpu_id.clone()).collect();
        gpus.sort();
        gpus.dedup();
        let table = compare::compare(entries, &gpus, k, None);
        out.push(best_vs_worst(&table, &k));
        out.push(vs_single_best(&table, &k));
        out.push(wins(&table, &k, entries));
        out.push(size_scaling(&here, &k));
    }
    out
}

/// Rows measured by at least two GPUs: the only ones a choice exists for.
fn compared(table: &compare::Comparison) -> Vec<&ModelRow> {
    table.rows.iter().filter(|r| r.best.is_some()).collect()
}

fn estimate(r: &ModelRow, i: usize) -> Option<Estimate> {
    Some(Estimate::new(
        r.energy_per_token_j[i]?,
        r.energy_per_token_interval[i],
    ))
}

/// Groups, models and GPUs behind a set of rows.
fn counts(rows: &[&ModelRow]) -> (usize, usize, usize) {
    let groups = rows
        .iter()
        .map(|r| r.energy_per_token_j.iter().flatten().count())
        .sum();
    let width = rows.first().map_or(0, |r| r.energy_per_token_j.len());
    let gpus = (0..width)
        .filter(|i| rows.iter().any(|r| r.energy_per_token_j[*i].is_some()))
        .count();
    (groups, rows.len(), gpus)
}

fn pct(v: f64) -> String {
    format!("{v:.1} %")
}

fn best_vs_worst(table: &compare::Comparison, k: &ScenarioKey) -> Finding {
    let mut f = Finding::new(
        format!("gpu_choice.best_vs_worst.{}", k.param()),
        k,
        BEST_VS_WORST,
        "findings-gpu-choice",
    );
    f.paper = Some(PAPER_GPU_CHOICE.into());
    let rows = compared(table);
    (f.groups, f.models, f.gpus) = counts(&rows);
    if rows.is_empty() {
        return f.missing(format!(
            "No model was measured on two GPUs in {}: there is no choice to compare.",
            k.label()
        ));
    }
    let name = |i: usize| table.gpus[i].1.clone();
    let mut savings: Vec<ModelSaving> = rows
        .iter()
        .map(|r| {
            let measured =
                (0..r.energy_per_token_j.len()).filter_map(|i| Some((i, estimate(r, i)?)));
            let best = measured
                .clone()
                .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
                .expect("two measured");
            let worst = measured
                .max_by(|a, b| a.1.median.total_cmp(&b.1.median))
                .expect("two measured");
            let s = verdict::saving(&best.1, &worst.1);
            ModelSaving {
                model: r.model.clone(),
                best_gpu: name(best.0),
                other_gpu: name(worst.0),
                saving_pct: s.median_pct,
                interval_pct: PctRange {
                    lo: s.lo_pct,
                    hi: s.hi_pct,
                },
            }
        })
        .collect();
    savings.sort_by(|a, b| {
        b.saving_pct
            .total_cmp(&a.saving_pct)
            .then(a.model.cmp(&b.model))
    });
    let top = savings[0].clone();
    let all: Vec<f64> = savings.iter().map(|s| s.saving_pct).collect();
    f.median_saving_pct = stats::median(all);
    f.max_saving_pct = Some(top.saving_pct);
    f.max_saving_interval_pct = Some(top.interval_pct);
    f.model = Some(top.model.clone());
    f.best_gpu = Some(top.best_gpu.clone());
    f.worst_gpu = Some(top.other_gpu.clone());
    f.statement = format!(
        "In {}, choosing the best GPU for a model instead of the worst saves {} of the energy per token at the median over {} models, and up to {} ({} against {} for {}; {} to {} from the two groups' intervals).",
        k.label(),
        pct(f.median_saving_pct.unwrap_or(0.0)),
        f.models,
        pct(top.saving_pct),
        top.best_gpu,
        top.other_gpu,
        top.model,
        pct(top.interval_pct.lo),
        pct(top.interval_pct.hi),
    );
    f.savings = savings;
    f
}

fn vs_single_best(table: &compare::Comparison, k: &ScenarioKey) -> Finding {
    let mut f = Finding::new(
        format!("gpu_choice.vs_single_best.{}", k.param()),
        k,
        VS_SINGLE_BEST,
        "findings-gpu-choice",
    );
    // compare's headline already names the GPU best for the most models
    // (fewer ties first among equals): the one a buyer of a single GPU
    // would pick.
    let single = table
        .headline
        .best_gpu
        .as_ref()
        .and_then(|(id, _)| table.gpus.iter().position(|g| &g.0 == id));
    let Some(single) = single else {
        return f.missing(format!(
            "No model was measured on two GPUs in {}: no GPU is best for any.",
            k.label()
        ));
    };
    let single_name = table.gpus[single].1.clone();
    // Over every model the single GPU ran, the best GPU for that model
    // (itself, where it is best or alone) against it.
    let ran: Vec<&ModelRow> = table
        .rows
        .iter()
        .filter(|r| r.energy_per_token_j[single].is_some())
        .collect();
    let not_run = table.rows.len() - ran.len();
    (f.groups, f.models, f.gpus) = counts(&ran);
    let mut savings: Vec<ModelSaving> = ran
        .iter()
        .map(|r| {
            let best = r.best.unwrap_or(single);
            let mine = estimate(r, single).expect("ran");
            let s = verdict::saving(&estimate(r, best).expect("measured"), &mine);
            ModelSaving {
                model: r.model.clone(),
                best_gpu: table.gpus[best].1.clone(),
                other_gpu: single_name.clone(),
                saving_pct: if best == single { 0.0 } else { s.median_pct },
                interval_pct: if best == single {
                    PctRange { lo: 0.0, hi: 0.0 }
                } else {
                    PctRange {
                        lo: s.lo_pct,
                        hi: s.hi_pct,
                    }
                },
            }
        })
        .collect();
    savings.sort_by(|a, b| {
        b.saving_pct
            .total_cmp(&a.saving_pct)
            .then(a.model.cmp(&b.model))
    });
    let all: Vec<f64> = savings.iter().map(|s| s.saving_pct).collect();
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    f.single_gpu = Some(single_name.clone());
    f.models_not_run = Some(not_run);
    f.mean_saving_pct = Some(mean);
    f.max_saving_pct = all.first().copied();
    f.model = savings.first().map(|s| s.model.clone());
    f.best_gpu = savings.first().map(|s| s.best_gpu.clone());
    f.statement = format!(
        "In {}, the {} is best for the most models; against it for every model, choosing the best GPU per model saves {} on average over the {} models it ran (up to {}){}.",
        k.label(),
        single_name,
        pct(mean),
        ran.len(),
        pct(f.max_saving_pct.unwrap_or(0.0)),
        if not_run > 0 {
            format!(", and it did not run {not_run} of the {} models at all", table.rows.len())
        } else {
            String::new()
        },
    );
    f.savings = savings;
    f
}

fn wins(table: &compare::Comparison, k: &ScenarioKey, entries: &[LeaderboardRow]) -> Finding {
    let mut f = Finding::new(
        format!("which_gpu_wins.{}", k.param()),
        k,
        WINS,
        "findings-wins",
    );
    f.paper = Some(PAPER_WINS.into());
    let rows = compared(table);
    (f.groups, f.models, f.gpus) = counts(&rows);
    if rows.is_empty() {
        return f.missing(format!(
            "No model was measured on two GPUs in {}: no GPU wins any.",
            k.label()
        ));
    }
    let classes = [("all", None)]
        .into_iter()
        .chain(SizeClass::ALL.iter().map(|(n, c, _)| (*n, Some(*c))));
    for (class, c) in classes {
        let mut per_gpu = vec![(0usize, 0usize); table.gpus.len()];
        for r in rows
            .iter()
            .filter(|r| c.is_none() || SizeClass::of_model(&r.model) == c)
        {
            let b = r.best.expect("compared");
            // The verdict rule: a win only where the best's interval
            // separates from every other GPU's.
            if r.winner.is_none() {
                per_gpu[b].1 += 1;
            } else {
                per_gpu[b].0 += 1;
            }
        }
        let mut these: Vec<GpuWins> = per_gpu
            .iter()
            .enumerate()
            .filter(|(_, (w, t))| w + t > 0)
            .map(|(i, (w, t))| GpuWins {
                size_class: class.into(),
                gpu_id: table.gpus[i].0.clone(),
                gpu_name: table.gpus[i].1.clone(),
                best_for: *w,
                ties: *t,
            })
            .collect();
        these.sort_by(|a, b| b.best_for.cmp(&a.best_for).then(a.gpu_id.cmp(&b.gpu_id)));
        f.wins.extend(these);
    }
    // Loaded-idle power: the catalogue's, and the lowest server rate's.
    let lowest = entries
        .iter()
        .filter(|e| e.scenario == Scenario::Server)
        .filter_map(|e| e.lambda_qps)
        .min_by(f64::total_cmp);
    for (id, name) in &table.gpus {
        let at_lowest: Vec<f64> = entries
            .iter()
            .filter(|e| &e.gpu_id == id && e.lambda_qps.is_some() && e.lambda_qps == lowest)
            .map(|e| e.power_mean_w)
            .collect();
        f.idle_power.push(IdlePower {
            gpu_id: id.clone(),
            gpu_name: name.clone(),
            catalogue_idle_w: catalog::gpu_by_id(id).map(|g| g.idle_w),
            lowest_rate_qps: lowest.filter(|_| !at_lowest.is_empty()),
            measured_w: stats::median(at_lowest),
        });
    }
    // Sorted by clear wins: the first of a class is its leader, if it
    // has any clear win at all.
    let leader = |class: &str| {
        f.wins
            .iter()
            .find(|w| w.size_class == class)
            .filter(|w| w.best_for > 0)
    };
    let ties: usize = f
        .wins
        .iter()
        .filter(|w| w.size_class == "all")
        .map(|w| w.ties)
        .sum();
    let ties_said = if ties > 0 {
        format!("; {ties} of them are ties within measurement noise, counted apart")
    } else {
        String::new()
    };
    f.statement = match leader("all") {
        Some(top) => format!(
            "In {}, the {} uses the least energy per token, its interval clear of every other GPU's, for {} of the {} models measured on two or more GPUs{}{ties_said}.",
            k.label(),
            top.gpu_name,
            top.best_for,
            f.models,
            leader("small")
                .map(|w| format!("; among small models (under 10 B) the {} leads with {}", w.gpu_name, w.best_for))
                .unwrap_or_default(),
        ),
        None => format!(
            "In {}, no GPU's interval clears every other's for any of the {} models measured on two or more GPUs: all are ties within measurement noise, so no GPU wins here.",
            k.label(),
            f.models
        ),
    };
    f
}

fn size_scaling(here: &[&LeaderboardRow], k: &ScenarioKey) -> Finding {
    let mut f = Finding::new(
        format!("size_scaling.{}", k.param()),
        k,
        SIZE_SCALING,
        "findings-size",
    );
    f.paper = Some(PAPER_SIZE.into());
    let mut gpus: Vec<(&str, &str)> = here
        .iter()
        .map(|e| (e.gpu_id.as_str(), e.gpu_name.as_str()))
        .collect();
    gpus.sort();
    gpus.dedup();
    let mut with_kv: Vec<(f64, f64)> = Vec::new();
    let mut used_groups = 0;
    let mut used_models: Vec<&str> = Vec::new();
    for (id, name) in gpus {
        // Dense models of known size only: a mixture of experts reads
        // fewer parameters per token than it holds.
        let points: Vec<(f64, f64, f64, &str)> = here
            .iter()
            .filter(|e| e.gpu_id == id && e.energy_per_token_j > 0.0)
            .filter_map(|e| {
                let m = catalog::model_by_id(&e.model)?;
                (m.active_params_b == m.params_b && m.attention_heads > 0).then(|| {
                    (
                        m.params_b.ln(),
                        e.energy_per_token_j.ln(),
                        f64::from(m.kv_heads) / f64::from(m.attention_heads),
                        e.model.as_str(),
                    )
                })
            })
            .collect();
        let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
        let Some((exponent, interval)) = stats::theil_sen(&xy, SLOPE_LEVEL, MIN_SIZES) else {
            continue;
        };
        used_groups += points.len();
        used_models.extend(points.iter().map(|p| p.3));
        f.slopes.push(GpuSlope {
            gpu_id: id.into(),
            gpu_name: name.into(),
            exponent,
            interval,
            models: points.len(),
        });
        let rows: Vec<[f64; 3]> = points.iter().map(|p| [p.0, p.2, p.1]).collect();
        if let Some(b) = stats::least_squares_2(&rows) {
            with_kv.push(b);
        }
    }
    used_models.sort_unstable();
    used_models.dedup();
    f.groups = used_groups;
    f.models = used_models.len();
    f.gpus = f.slopes.len();
    if f.slopes.is_empty() {
        return f.missing(format!(
            "No GPU measured {MIN_SIZES} or more dense models of different sizes in {}: no slope can be fitted.",
            k.label()
        ));
    }
    let mut exps: Vec<f64> = f.slopes.iter().map(|s| s.exponent).collect();
    exps.sort_by(f64::total_cmp);
    f.median_exponent = Some(stats::percentile_sorted(&exps, 0.5));
    f.median_exponent_interval = stats::median_interval(&exps);
    f.exponent_with_kv_ratio = stats::median(with_kv.iter().map(|b| b.0).collect());
    f.kv_ratio_coefficient = stats::median(with_kv.iter().map(|b| b.1).collect());
    let e = f.median_exponent.expect("slopes");
    f.statement = format!(
        "In {}, energy per token grows as parameters^{:.2} (median over {} GPUs of each GPU's Theil–Sen slope of log J/token on log parameters, over {} models){}.",
        k.label(),
        e,
        f.gpus,
        f.models,
        match f.median_exponent_interval {
            Some(i) if f.gpus > 1 => format!(
                "; the GPUs' slopes put the median between {:.2} and {:.2} at {:.0} % confidence",
                i.lo,
                i.hi,
                i.confidence * 100.0
            ),
            _ => String::new(),
        }
    );
    f
}

#[cfg(test)]
mod tests;

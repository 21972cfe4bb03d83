//! How well the estimator does on rows it did not see, three ways, as
//! WattGPU scores it: grouped 5-fold cross-validation (folds of GPU ×
//! model pairs, so a pair's batch and server rows stay together), leave
//! one GPU out (LOGO: a GPU nobody measured) and leave one LLM out (LOLO:
//! a model nobody measured); and the same rows through three baselines.
//! The out-of-fold log residuals are what the conformal intervals of
//! estimates come from.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::baselines::{load_scaled_power_w, roofline_itl_s, tdp_power_w};
use super::conformal;
use super::features::ScenarioClass;
use super::metrics::{mdape, top1};
use super::{fit, resolved, EstimatorError, Prediction, Settings, TrainingRow};
use wattcounts_rules::stats::{kendall_tau_b, pearson};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    GroupedCv,
    Logo,
    Lolo,
}

impl Split {
    pub const ALL: [Split; 3] = [Split::GroupedCv, Split::Logo, Split::Lolo];
    pub fn as_str(self) -> &'static str {
        match self {
            Split::GroupedCv => "grouped_cv",
            Split::Logo => "logo",
            Split::Lolo => "lolo",
        }
    }
}

/// Folds of grouped cross-validation.
pub const CV_FOLDS: usize = 5;

/// The fold of each row under `split`, and how many folds there are.
pub fn folds(rows: &[TrainingRow], split: Split, seed: u64) -> (Vec<usize>, usize) {
    let key = |r: &TrainingRow| match split {
        Split::GroupedCv => format!("{}\u{0}{}", r.gpu_id, r.model),
        Split::Logo => r.gpu_id.clone(),
        Split::Lolo => r.model.clone(),
    };
    let mut keys: Vec<String> = rows.iter().map(key).collect();
    keys.sort();
    keys.dedup();
    let fold_of_key: Vec<usize> = match split {
        Split::GroupedCv => {
            let mut order: Vec<usize> = (0..keys.len()).collect();
            order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
            let mut f = vec![0; keys.len()];
            for (i, k) in order.into_iter().enumerate() {
                f[k] = i % CV_FOLDS;
            }
            f
        }
        _ => (0..keys.len()).collect(),
    };
    let n = match split {
        Split::GroupedCv => CV_FOLDS.min(keys.len()),
        _ => keys.len(),
    };
    let of = rows
        .iter()
        .map(|r| fold_of_key[keys.binary_search(&key(r)).expect("listed")])
        .collect();
    (of, n)
}

/// Each row's prediction by a fit that never saw its fold.
pub fn out_of_fold(
    rows: &[TrainingRow],
    split: Split,
    settings: &Settings,
) -> Result<(Vec<Prediction>, Vec<usize>), EstimatorError> {
    let (fold, n) = folds(rows, split, settings.seed);
    let mut out: Vec<Option<Prediction>> = vec![None; rows.len()];
    for k in 0..n {
        let train: Vec<TrainingRow> = rows
            .iter()
            .zip(&fold)
            .filter(|(_, f)| **f != k)
            .map(|(r, _)| r.clone())
            .collect();
        if train.is_empty() {
            continue;
        }
        let fitted = fit(&train, settings)?;
        for (i, r) in rows.iter().enumerate().filter(|(i, _)| fold[*i] == k) {
            let (gpu, model) = resolved(r)?;
            out[i] = Some(fitted.predict(gpu, model, r.lambda_qps));
        }
    }
    Ok((
        out.into_iter()
            .map(|p| p.ok_or(EstimatorError::NoRows))
            .collect::<Result<_, _>>()?,
        fold,
    ))
}

/// Scores of one estimator (or baseline) on one scenario class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Scores {
    pub rows: usize,
    pub power_mdape_pct: Option<f64>,
    pub itl_mdape_pct: Option<f64>,
    /// Batch J/token, server J/request.
    pub energy_mdape_pct: Option<f64>,
    pub energy_pearson_r: Option<f64>,
    /// Mean over models (measured on two or more GPUs) of Kendall's τ-b
    /// between the predicted and the measured GPU ranking by energy.
    pub gpu_ranking_tau: Option<f64>,
    /// Mean over GPUs of τ-b of their model ranking.
    pub model_ranking_tau: Option<f64>,
    /// Share of models whose least-energy GPU is predicted right.
    pub top1_share: Option<f64>,
    /// Share of rows inside their 80 % conformal interval (from the other
    /// folds' residuals); the estimator only.
    pub coverage: Option<f64>,
}

/// One line of the validation table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Line {
    pub split: Split,
    pub scenario: ScenarioClass,
    /// `estimator`, `tdp`, `load_scaled_tdp` (both with the roofline ITL).
    pub method: String,
    pub folds: usize,
    pub scores: Scores,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// τ-b per group of rows (by `key`), averaged.
fn ranking_tau(
    rows: &[&TrainingRow],
    predicted: &[f64],
    actual: &[f64],
    key: impl Fn(&TrainingRow) -> &str,
) -> (Option<f64>, Option<f64>) {
    let mut groups: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        groups.entry(key(r)).or_default().push(i);
    }
    let mut taus = Vec::new();
    let mut hits = Vec::new();
    for idx in groups.values().filter(|v| v.len() >= 2) {
        let p: Vec<f64> = idx.iter().map(|i| predicted[*i]).collect();
        let a: Vec<f64> = idx.iter().map(|i| actual[*i]).collect();
        if let Some(t) = kendall_tau_b(&p, &a) {
            taus.push(t);
        }
        if let Some(h) = top1(&p, &a) {
            hits.push(if h { 1.0 } else { 0.0 });
        }
    }
    (mean(&taus), mean(&hits))
}

fn scores(
    rows: &[&TrainingRow],
    power: &[f64],
    itl: &[f64],
    energy: &[f64],
    coverage: Option<f64>,
) -> Scores {
    let actual_power: Vec<f64> = rows.iter().map(|r| r.power_w).collect();
    let actual_itl: Vec<f64> = rows.iter().map(|r| r.itl_s).collect();
    let actual_energy: Vec<f64> = rows
        .iter()
        .map(|r| r.energy().unwrap_or(f64::NAN))
        .collect();
    let (gpu_tau, top1_share) = ranking_tau(rows, energy, &actual_energy, |r| r.model.as_str());
    let (model_tau, _) = ranking_tau(rows, energy, &actual_energy, |r| r.gpu_id.as_str());
    Scores {
        rows: rows.len(),
        power_mdape_pct: mdape(power, &actual_power),
        itl_mdape_pct: mdape(itl, &actual_itl),
        energy_mdape_pct: mdape(energy, &actual_energy),
        energy_pearson_r: pearson(energy, &actual_energy),
        gpu_ranking_tau: gpu_tau,
        model_ranking_tau: model_tau,
        top1_share,
        coverage,
    }
}

/// The level of the intervals validation checks.
pub const LEVEL: f64 = 0.8;

/// The validation table: each split × scenario class, the estimator and
/// both power baselines; and the out-of-fold energy residuals per split
/// and scenario class (what intervals of estimates are built from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub lines: Vec<Line>,
    pub residuals: Vec<Residuals>,
}

/// The out-of-fold log residuals |ln(actual ÷ predicted)| of one split and
/// scenario class, per target: what an estimate's intervals come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Residuals {
    pub split: Split,
    pub scenario: ScenarioClass,
    pub energy: Vec<f64>,
    pub power: Vec<f64>,
    pub itl: Vec<f64>,
}

impl Report {
    /// The residuals of one split and class, if validation had rows there.
    pub fn residuals_of(&self, split: Split, scenario: ScenarioClass) -> Option<&Residuals> {
        self.residuals
            .iter()
            .find(|r| r.split == split && r.scenario == scenario)
    }

    /// The estimator's line of one split and class.
    pub fn line(&self, split: Split, scenario: ScenarioClass) -> Option<&Line> {
        self.lines
            .iter()
            .find(|l| l.split == split && l.scenario == scenario && l.method == "estimator")
    }
}

pub fn validate(rows: &[TrainingRow], settings: &Settings) -> Result<Report, EstimatorError> {
    validate_on(rows, settings, 1)
}

/// [`validate`] with the three splits' fits spread over up to `threads`
/// threads (the result does not depend on how many).
pub fn validate_on(
    rows: &[TrainingRow],
    settings: &Settings,
    threads: usize,
) -> Result<Report, EstimatorError> {
    let rows: Vec<TrainingRow> = rows
        .iter()
        .filter(|r| r.energy().is_some())
        .cloned()
        .collect();
    let mut held_out = Vec::with_capacity(Split::ALL.len());
    for chunk in Split::ALL.chunks(threads.max(1)) {
        let done: Vec<_> = std::thread::scope(|scope| {
            let running: Vec<_> = chunk
                .iter()
                .map(|split| {
                    let rows = &rows;
                    scope.spawn(move || out_of_fold(rows, *split, settings))
                })
                .collect();
            running
                .into_iter()
                .map(|h| h.join().expect("a validation thread panicked"))
                .collect()
        });
        for r in done {
            held_out.push(r?);
        }
    }
    let mut lines = Vec::new();
    let mut all_residuals = Vec::new();
    for (split, (predicted, fold)) in Split::ALL.into_iter().zip(held_out) {
        let n_folds = fold.iter().max().map_or(0, |m| m + 1);
        for class in [
            ScenarioClass::Batch,
            ScenarioClass::ServerLow,
            ScenarioClass::ServerHigh,
        ] {
            let idx: Vec<usize> = (0..rows.len())
                .filter(|i| rows[*i].scenario == class)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let these: Vec<&TrainingRow> = idx.iter().map(|i| &rows[*i]).collect();
            let p: Vec<&Prediction> = idx.iter().map(|i| &predicted[*i]).collect();
            let energy: Vec<f64> = p.iter().map(|x| x.energy().unwrap_or(f64::NAN)).collect();
            let residuals: Vec<f64> = idx
                .iter()
                .zip(&energy)
                .map(|(i, e)| conformal::log_residual(*e, rows[*i].energy().expect("filtered")))
                .collect();
            // Cross-conformal coverage: each row against the quantile of
            // the other folds' residuals.
            let inside: Vec<f64> = idx
                .iter()
                .enumerate()
                .filter_map(|(j, i)| {
                    let others: Vec<f64> = idx
                        .iter()
                        .enumerate()
                        .filter(|(_, o)| fold[**o] != fold[*i])
                        .map(|(k, _)| residuals[k])
                        .collect();
                    let q = conformal::quantile(&others, LEVEL)?;
                    Some(if residuals[j] <= q { 1.0 } else { 0.0 })
                })
                .collect();
            lines.push(Line {
                split,
                scenario: class,
                method: "estimator".into(),
                folds: n_folds,
                scores: scores(
                    &these,
                    &p.iter().map(|x| x.power_w).collect::<Vec<_>>(),
                    &p.iter().map(|x| x.itl_s).collect::<Vec<_>>(),
                    &energy,
                    mean(&inside),
                ),
            });
            all_residuals.push(Residuals {
                split,
                scenario: class,
                energy: residuals,
                power: idx
                    .iter()
                    .zip(&p)
                    .map(|(i, x)| conformal::log_residual(x.power_w, rows[*i].power_w))
                    .collect(),
                itl: idx
                    .iter()
                    .zip(&p)
                    .map(|(i, x)| conformal::log_residual(x.itl_s, rows[*i].itl_s))
                    .collect(),
            });
            for (name, power_of) in [
                ("tdp", tdp_baseline as fn(&TrainingRow) -> f64),
                ("load_scaled_tdp", load_scaled_baseline),
            ] {
                let power: Vec<f64> = these.iter().map(|r| power_of(r)).collect();
                let itl: Vec<f64> = these
                    .iter()
                    .map(|r| {
                        let (g, m) = resolved(r).expect("fitted");
                        roofline_itl_s(g, m, r.scenario)
                    })
                    .collect();
                let energy: Vec<f64> = these
                    .iter()
                    .zip(power.iter().zip(&itl))
                    .map(|(r, (p, i))| match r.lambda_qps {
                        None => p * i,
                        Some(l) => p / l,
                    })
                    .collect();
                lines.push(Line {
                    split,
                    scenario: class,
                    method: name.into(),
                    folds: n_folds,
                    scores: scores(&these, &power, &itl, &energy, None),
                });
            }
        }
    }
    Ok(Report {
        lines,
        residuals: all_residuals,
    })
}

/// The validation table's columns, as pages, the dataset card and the
/// bench print them.
pub const TABLE_HEAD: [&str; 13] = [
    "split",
    "scenario",
    "method",
    "folds",
    "rows",
    "power MdAPE",
    "ITL MdAPE",
    "energy MdAPE",
    "energy r",
    "GPU-ranking τ",
    "model-ranking τ",
    "top-1",
    "80 % coverage",
];

impl Line {
    /// The line's cells under [`TABLE_HEAD`] ("–" where a score has too
    /// few rows to exist).
    pub fn cells(&self) -> [String; 13] {
        let pct = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1} %"));
        let num = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.2}"));
        let share = |v: Option<f64>| v.map_or("–".into(), |v| format!("{:.0} %", v * 100.0));
        let s = &self.scores;
        [
            self.split.as_str().to_string(),
            self.scenario.as_str().to_string(),
            self.method.clone(),
            self.folds.to_string(),
            s.rows.to_string(),
            pct(s.power_mdape_pct),
            pct(s.itl_mdape_pct),
            pct(s.energy_mdape_pct),
            num(s.energy_pearson_r),
            num(s.gpu_ranking_tau),
            num(s.model_ranking_tau),
            share(s.top1_share),
            share(s.coverage),
        ]
    }
}

/// The table as Markdown (the dataset card, the bench).
pub fn markdown(lines: &[Line]) -> String {
    let row = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut out = row(&TABLE_HEAD.map(String::from));
    out.push_str(&row(&TABLE_HEAD.map(|_| "---".to_string())));
    for l in lines {
        out.push_str(&row(&l.cells()));
    }
    out
}

fn tdp_baseline(r: &TrainingRow) -> f64 {
    tdp_power_w(resolved(r).expect("fitted").0)
}

fn load_scaled_baseline(r: &TrainingRow) -> f64 {
    load_scaled_power_w(resolved(r).expect("fitted").0, r.scenario)
}

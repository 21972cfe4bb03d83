//! The estimator scored under ML.ENERGY's protocol: each task on its own,
//! held out by LLM, by family and by batch-size setting, beside the
//! baselines.

use serde::{Deserialize, Serialize};

use super::{held_out, HeldOut, PeerEstimator, PeerRow, Predicted, TaskFit};
use crate::estimator::metrics::{coverage, mdape};
use crate::estimator::{EstimatorError, Settings};
use wattcounts_rules::stats::{pearson, percentile_sorted};

/// Nominal coverage of the intervals the report checks.
pub const INTERVAL_LEVEL: f64 = 0.8;

/// How rows are held out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeerSplit {
    /// Each LLM in turn, trained on the task's other LLMs.
    LeaveOneLlmOut,
    /// Each batch-size setting in turn, trained on the others.
    LeaveOneBatchSizeOut,
    /// Each family in turn ([`PeerRow::family`]: the same organisation,
    /// size, active size and architecture, so Llama 3.1 and 3.3 70B, and a
    /// model's FP8 and BF16 twins, leave together).
    LeaveOneFamilyOut,
}

impl PeerSplit {
    pub const ALL: [PeerSplit; 3] = [
        PeerSplit::LeaveOneLlmOut,
        PeerSplit::LeaveOneFamilyOut,
        PeerSplit::LeaveOneBatchSizeOut,
    ];
    pub(crate) fn key(self, r: &PeerRow) -> String {
        match self {
            PeerSplit::LeaveOneLlmOut => r.model.clone(),
            PeerSplit::LeaveOneBatchSizeOut => format!("{}", r.batch),
            PeerSplit::LeaveOneFamilyOut => r.family(),
        }
    }
    pub fn words(self) -> &'static str {
        match self {
            PeerSplit::LeaveOneLlmOut => "leave one LLM out",
            PeerSplit::LeaveOneBatchSizeOut => "leave one batch size out",
            PeerSplit::LeaveOneFamilyOut => "leave one family out",
        }
    }
}

/// One line of the table: one task, split and method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PeerLine {
    pub task: String,
    pub split: PeerSplit,
    /// `estimator`, `tdp` (power = GPUs × TDP, roofline ITL),
    /// `load_scaled_tdp` (power = GPUs × TDP × the training rows' median
    /// share at that batch setting, roofline ITL).
    pub method: String,
    pub folds: usize,
    pub rows: usize,
    pub energy_mdape_pct: Option<f64>,
    /// The same over the mixture-of-experts rows alone.
    pub moe_energy_mdape_pct: Option<f64>,
    pub power_mdape_pct: Option<f64>,
    /// The baselines' ITL is the roofline's: `itl_mdape_pct` of `tdp` is
    /// the roofline-ITL baseline.
    pub itl_mdape_pct: Option<f64>,
    /// Pearson's r of ln(predicted) and ln(measured) energy per token.
    pub energy_pearson_r_log: Option<f64>,
    /// Share inside the 80 % interval from the other folds' residuals
    /// (estimator only).
    pub coverage: Option<f64>,
}

const METHODS: [&str; 3] = ["estimator", "tdp", "load_scaled_tdp"];

/// Scores one task under one split.
pub fn validate_task(
    rows: &[PeerRow],
    task: &str,
    split: PeerSplit,
    settings: &Settings,
) -> Result<Vec<PeerLine>, EstimatorError> {
    let rows: Vec<&PeerRow> = rows.iter().filter(|r| r.task == task).collect();
    let held = held_out(&rows, split, settings)?;
    Ok(lines_of(&rows, task, split, &held))
}

/// The table's lines of one task and split from its held-out predictions.
fn lines_of(rows: &[&PeerRow], task: &str, split: PeerSplit, held: &HeldOut) -> Vec<PeerLine> {
    let HeldOut {
        fold_of,
        predicted,
        folds,
    } = held;
    let folds = *folds;
    let scored: Vec<usize> = (0..rows.len())
        .filter(|&i| fold_of[i] != usize::MAX)
        .collect();
    let actual = |f: fn(&PeerRow) -> f64| scored.iter().map(|&i| f(rows[i])).collect::<Vec<_>>();
    let (e, p, t) = (
        actual(|r| r.energy_per_token_j),
        actual(|r| r.power_w),
        actual(|r| r.itl_s),
    );
    // Interval half-width for a row: the 80th percentile of |ln error|
    // over the rows of the other folds (no row sees its own residual).
    let log_err: Vec<f64> = scored
        .iter()
        .map(|&i| {
            (predicted[i][0].energy / rows[i].energy_per_token_j)
                .ln()
                .abs()
        })
        .collect();
    let intervals: Vec<(f64, f64)> = scored
        .iter()
        .map(|&i| {
            let mut others: Vec<f64> = scored
                .iter()
                .zip(&log_err)
                .filter(|(j, _)| fold_of[**j] != fold_of[i])
                .map(|(_, e)| *e)
                .collect();
            others.sort_by(f64::total_cmp);
            let q = if others.is_empty() {
                0.0
            } else {
                percentile_sorted(&others, INTERVAL_LEVEL)
            };
            let point = predicted[i][0].energy;
            (point * (-q).exp(), point * q.exp())
        })
        .collect();
    METHODS
        .iter()
        .enumerate()
        .map(|(m, method)| {
            let pick = |f: fn(&Predicted) -> f64| {
                scored
                    .iter()
                    .map(|&i| f(&predicted[i][m]))
                    .collect::<Vec<_>>()
            };
            let pe = pick(|x| x.energy);
            let moe: Vec<usize> = (0..scored.len())
                .filter(|&k| rows[scored[k]].architecture == 1.0)
                .collect();
            let of = |v: &[f64]| moe.iter().map(|&k| v[k]).collect::<Vec<_>>();
            let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
            PeerLine {
                task: task.to_string(),
                split,
                method: method.to_string(),
                folds,
                rows: scored.len(),
                energy_mdape_pct: mdape(&pe, &e),
                moe_energy_mdape_pct: mdape(&of(&pe), &of(&e)),
                power_mdape_pct: mdape(&pick(|x| x.power_w), &p),
                itl_mdape_pct: mdape(&pick(|x| x.itl_s), &t),
                energy_pearson_r_log: pearson(&ln(&pe), &ln(&e)),
                coverage: (m == 0).then(|| coverage(&intervals, &e)).flatten(),
            }
        })
        .collect()
}

/// The whole table: every task the rows hold, both splits.
pub fn validate(rows: &[PeerRow], settings: &Settings) -> Result<Vec<PeerLine>, EstimatorError> {
    let mut tasks: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut lines = Vec::new();
    for task in tasks {
        for split in PeerSplit::ALL {
            lines.extend(validate_task(rows, task, split, settings)?);
        }
    }
    Ok(lines)
}

/// The whole table and the estimator that answers under the protocol,
/// from one held-out pass per task and split: the answers' intervals are
/// the table's leave-one-LLM-out errors, not a second pass over them.
pub fn validate_and_fit(
    rows: Vec<PeerRow>,
    settings: &Settings,
) -> Result<(Vec<PeerLine>, PeerEstimator), EstimatorError> {
    let mut names: Vec<String> = rows.iter().map(|r| r.task.clone()).collect();
    names.sort();
    names.dedup();
    let mut lines = Vec::new();
    let mut fits = Vec::new();
    for task in &names {
        let of: Vec<&PeerRow> = rows.iter().filter(|r| &r.task == task).collect();
        for split in PeerSplit::ALL {
            let held = held_out(&of, split, settings)?;
            lines.extend(lines_of(&of, task, split, &held));
            if split == PeerSplit::LeaveOneLlmOut {
                fits.extend(TaskFit::of(task, &of, &held, settings)?);
            }
        }
    }
    Ok((lines, PeerEstimator::of(rows, fits)))
}

impl PeerLine {
    /// The line as a table shows it: task, split, method, folds, rows,
    /// energy (all rows, then mixtures of experts), power and ITL MdAPE, r
    /// and coverage.
    pub fn cells(&self) -> [String; 11] {
        let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1} %"));
        [
            self.task.clone(),
            self.split.words().into(),
            match self.method.as_str() {
                "tdp" => "TDP power, roofline ITL",
                "load_scaled_tdp" => "load-scaled TDP power, roofline ITL",
                other => other,
            }
            .into(),
            self.folds.to_string(),
            self.rows.to_string(),
            pct(self.energy_mdape_pct),
            pct(self.moe_energy_mdape_pct),
            pct(self.power_mdape_pct),
            pct(self.itl_mdape_pct),
            self.energy_pearson_r_log
                .map_or("–".into(), |r| format!("{r:.3}")),
            self.coverage
                .map_or("–".into(), |c| format!("{:.0} %", c * 100.0)),
        ]
    }
}

/// The table as Markdown (the bench and the note print it).
pub fn markdown(lines: &[PeerLine]) -> String {
    let mut out = String::from(
        "| task | split | method | folds | rows | energy MdAPE | MoE energy MdAPE | power MdAPE | ITL MdAPE | r (ln energy) | coverage (80 %) |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for l in lines {
        out.push_str(&format!("| {} |\n", l.cells().join(" | ")));
    }
    out
}

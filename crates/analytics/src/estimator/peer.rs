//! The estimator's physics judged on real hardware (issue #39): the same
//! two gradient-boosted models as the Watt Counts fit (mean power ÷ TDP,
//! ln ITL), fitted per origin on that origin's own rows with its own load
//! variable. For ML.ENERGY v3 the load is the batch-size setting
//! (`max_num_seqs`), the hardware is a GPU count with its parallelism, and
//! energy per token follows as power × ITL ÷ the running batch:
//!
//!   J/token = P̂ × ITL̂ ÷ (max_num_seqs × f)
//!
//! where f, the tokens per step a running batch delivers per sequence
//! (prefill steps and a batch not quite full make it < 1), is the median
//! of P × ITL ÷ (max_num_seqs × J/token) over the training rows (0.94 on
//! v3's 565). Validation is per task (a task is its own workload):
//! leave-one-LLM-out and leave-one-batch-size-out, against the TDP,
//! load-scaled TDP and roofline-ITL baselines. Estimates never enter a
//! measured table; this module only scores.

use serde::{Deserialize, Serialize};

use super::metrics::{coverage, mdape};
use super::{trained, BoosterSettings, EstimatorError, Settings};
use wattcounts_rules::catalog::{self, GpuSpec};
use wattcounts_rules::peer::PeerConfig;
use wattcounts_rules::stats::{pearson, percentile_sorted};

/// Nominal coverage of the intervals the report checks.
pub const INTERVAL_LEVEL: f64 = 0.8;

/// One published configuration as the estimator reads it.
#[derive(Debug, Clone)]
pub struct PeerRow {
    pub task: String,
    pub model: String,
    pub gpu: &'static GpuSpec,
    pub num_gpus: f64,
    pub tensor_parallel: f64,
    pub expert_parallel: f64,
    pub batch: f64,
    /// Bytes per weight: bfloat16 2, fp8 1, mxfp4 0.5.
    pub weight_bytes: f64,
    pub total_params_b: f64,
    pub active_params_b: f64,
    /// Dense 0, MoE 1, hybrid (Mamba-Transformer) 2.
    pub architecture: f64,
    /// Over all GPUs.
    pub power_w: f64,
    pub itl_s: f64,
    pub energy_per_token_j: f64,
}

fn weight_bytes(precision: &str) -> Option<f64> {
    match precision {
        "bfloat16" | "float16" | "fp16" | "bf16" => Some(2.0),
        "fp8" | "float8" => Some(1.0),
        "mxfp4" | "fp4" | "nvfp4" => Some(0.5),
        _ => None,
    }
}

fn architecture(name: &str) -> f64 {
    let n = name.to_ascii_lowercase();
    if n.contains("moe") {
        1.0
    } else if n.contains("mamba") || n.contains("hybrid") {
        2.0
    } else {
        0.0
    }
}

/// The rows the estimator can read: a catalogue GPU, a known precision,
/// parameters, power and median ITL (v3's; v2 publishes no power).
pub fn peer_rows(configs: &[PeerConfig]) -> Vec<PeerRow> {
    configs
        .iter()
        .filter_map(|c| {
            Some(PeerRow {
                task: c.task.clone(),
                model: c.model_id.clone(),
                gpu: catalog::gpu_by_nvml_name(&c.gpu_name)?,
                num_gpus: f64::from(c.num_gpus),
                tensor_parallel: f64::from(c.tensor_parallel),
                expert_parallel: f64::from(c.expert_parallel),
                batch: f64::from(c.max_num_seqs),
                weight_bytes: weight_bytes(&c.weight_precision)?,
                total_params_b: c.total_params_billions?,
                active_params_b: c.activated_params_billions?,
                architecture: architecture(&c.architecture),
                power_w: c.avg_power_watts?,
                itl_s: c.median_itl_ms? / 1000.0,
                energy_per_token_j: c.energy_per_token_joules,
            })
        })
        .collect()
}

impl PeerRow {
    /// The weights one step reads per GPU, seconds at full bandwidth.
    fn weight_read_s(&self) -> f64 {
        self.active_params_b * 1e9 * self.weight_bytes
            / (self.num_gpus * self.gpu.memory_bandwidth_gb_s * 1e9)
    }
    /// One step's matrix work per GPU, seconds at the tensor peak.
    fn compute_s(&self) -> f64 {
        2.0 * self.active_params_b * 1e9 * self.batch
            / (self.num_gpus * self.gpu.tensor_tflops * 1e12)
    }
    fn tdp_w(&self) -> f64 {
        self.num_gpus * self.gpu.tdp_w
    }
    /// Shared by both models: the load, the hardware and the model.
    fn features(&self) -> Vec<f64> {
        vec![
            self.batch.ln(),
            self.num_gpus,
            self.tensor_parallel,
            self.expert_parallel,
            self.total_params_b.ln(),
            self.active_params_b.ln(),
            self.weight_bytes,
            self.architecture,
            self.gpu.tdp_w,
            self.gpu.memory_bandwidth_gb_s,
            self.gpu.tensor_tflops,
            self.gpu.memory_gb,
            self.weight_read_s().ln(),
            self.compute_s().ln(),
        ]
    }
    /// The roofline's ITL: a step takes the longer of reading the weights
    /// and doing the batch's matrix work.
    pub fn roofline_itl_s(&self) -> f64 {
        self.weight_read_s().max(self.compute_s())
    }
}

/// The names of [`PeerRow::features`], in order.
pub const FEATURES: &[&str] = &[
    "ln_batch_size_setting",
    "num_gpus",
    "tensor_parallel",
    "expert_parallel",
    "ln_total_params",
    "ln_active_params",
    "weight_bytes",
    "architecture",
    "tdp_w",
    "memory_bandwidth_gb_s",
    "tensor_tflops",
    "memory_gb",
    "ln_weight_read_s",
    "ln_compute_s",
];

/// Tokens per step per running sequence, from training rows.
fn step_yield(rows: &[&PeerRow]) -> f64 {
    let mut v: Vec<f64> = rows
        .iter()
        .map(|r| r.power_w * r.itl_s / (r.batch * r.energy_per_token_j))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        1.0
    } else {
        percentile_sorted(&v, 0.5)
    }
}

/// One row's predictions by each method.
#[derive(Debug, Clone, Copy, Default)]
struct Predicted {
    power_w: f64,
    itl_s: f64,
    energy: f64,
}

/// Fits on `train` and predicts `test` by the estimator and the three
/// baselines: [estimator, tdp, load-scaled tdp] (both baselines with the
/// roofline ITL, which is the roofline baseline's own ITL).
fn fold(
    train: &[&PeerRow],
    test: &[&PeerRow],
    power: &BoosterSettings,
    itl: &BoosterSettings,
    seed: u64,
) -> Result<Vec<[Predicted; 3]>, EstimatorError> {
    if train.is_empty() {
        return Err(EstimatorError::NoRows);
    }
    let x: Vec<Vec<f64>> = train.iter().map(|r| r.features()).collect();
    let share: Vec<f64> = train.iter().map(|r| r.power_w / r.tdp_w()).collect();
    let log_itl: Vec<f64> = train.iter().map(|r| r.itl_s.ln()).collect();
    let p = trained(&x, &share, power, seed)?;
    let i = trained(&x, &log_itl, itl, seed)?;
    let f = step_yield(train);
    // Load-scaled TDP: the training rows' median share at the same batch
    // setting (all training rows where none has it).
    let share_at = |batch: f64| {
        let mut v: Vec<f64> = train
            .iter()
            .filter(|r| r.batch == batch)
            .map(|r| r.power_w / r.tdp_w())
            .collect();
        if v.is_empty() {
            v = share.clone();
        }
        v.sort_by(f64::total_cmp);
        percentile_sorted(&v, 0.5)
    };
    let tx: Vec<Vec<f64>> = test.iter().map(|r| r.features()).collect();
    let data = super::column_major(&tx);
    let m = forust_ml::Matrix::new(&data, tx.len(), tx[0].len());
    let ps = p.predict(&m, false);
    let is = i.predict(&m, false);
    Ok(test
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let energy = |power_w: f64, itl_s: f64| power_w * itl_s / (r.batch * f);
            let est_p = ps[k].max(0.01) * r.tdp_w();
            let est_i = is[k].exp();
            let roof = r.roofline_itl_s();
            let scaled = share_at(r.batch) * r.tdp_w();
            [
                Predicted {
                    power_w: est_p,
                    itl_s: est_i,
                    energy: energy(est_p, est_i),
                },
                Predicted {
                    power_w: r.tdp_w(),
                    itl_s: roof,
                    energy: energy(r.tdp_w(), roof),
                },
                Predicted {
                    power_w: scaled,
                    itl_s: roof,
                    energy: energy(scaled, roof),
                },
            ]
        })
        .collect())
}

/// How rows are held out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeerSplit {
    /// Each LLM in turn, trained on the task's other LLMs.
    LeaveOneLlmOut,
    /// Each batch-size setting in turn, trained on the others.
    LeaveOneBatchSizeOut,
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
    let key = |r: &PeerRow| match split {
        PeerSplit::LeaveOneLlmOut => r.model.clone(),
        PeerSplit::LeaveOneBatchSizeOut => format!("{}", r.batch),
    };
    let mut keys: Vec<String> = rows.iter().map(|r| key(r)).collect();
    keys.sort();
    keys.dedup();
    // Per row, its fold and each method's prediction.
    let mut fold_of = vec![usize::MAX; rows.len()];
    let mut predicted = vec![[Predicted::default(); 3]; rows.len()];
    let mut folds = 0;
    for (f, k) in keys.iter().enumerate() {
        let test_idx: Vec<usize> = (0..rows.len()).filter(|&i| &key(rows[i]) == k).collect();
        let train: Vec<&PeerRow> = (0..rows.len())
            .filter(|&i| &key(rows[i]) != k)
            .map(|i| rows[i])
            .collect();
        if train.is_empty() {
            continue;
        }
        let test: Vec<&PeerRow> = test_idx.iter().map(|&i| rows[i]).collect();
        let out = fold(&train, &test, &settings.power, &settings.itl, settings.seed)?;
        for (j, &i) in test_idx.iter().enumerate() {
            fold_of[i] = f;
            predicted[i] = out[j];
        }
        folds += 1;
    }
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
    Ok(METHODS
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
            let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
            PeerLine {
                task: task.to_string(),
                split,
                method: method.to_string(),
                folds,
                rows: scored.len(),
                energy_mdape_pct: mdape(&pe, &e),
                power_mdape_pct: mdape(&pick(|x| x.power_w), &p),
                itl_mdape_pct: mdape(&pick(|x| x.itl_s), &t),
                energy_pearson_r_log: pearson(&ln(&pe), &ln(&e)),
                coverage: (m == 0).then(|| coverage(&intervals, &e)).flatten(),
            }
        })
        .collect())
}

/// The whole table: every task the rows hold, both splits.
pub fn validate(rows: &[PeerRow], settings: &Settings) -> Result<Vec<PeerLine>, EstimatorError> {
    let mut tasks: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut lines = Vec::new();
    for task in tasks {
        for split in [PeerSplit::LeaveOneLlmOut, PeerSplit::LeaveOneBatchSizeOut] {
            lines.extend(validate_task(rows, task, split, settings)?);
        }
    }
    Ok(lines)
}

impl PeerLine {
    /// The line as a table shows it: task, split, method, folds, rows,
    /// energy, power and ITL MdAPE, r and coverage.
    pub fn cells(&self) -> [String; 10] {
        let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1} %"));
        [
            self.task.clone(),
            match self.split {
                PeerSplit::LeaveOneLlmOut => "leave one LLM out",
                PeerSplit::LeaveOneBatchSizeOut => "leave one batch size out",
            }
            .into(),
            match self.method.as_str() {
                "tdp" => "TDP power, roofline ITL",
                "load_scaled_tdp" => "load-scaled TDP power, roofline ITL",
                other => other,
            }
            .into(),
            self.folds.to_string(),
            self.rows.to_string(),
            pct(self.energy_mdape_pct),
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
        "| task | split | method | folds | rows | energy MdAPE | power MdAPE | ITL MdAPE | r (ln energy) | coverage (80 %) |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for l in lines {
        out.push_str(&format!("| {} |\n", l.cells().join(" | ")));
    }
    out
}

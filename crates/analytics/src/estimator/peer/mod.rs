//! The estimator on real hardware (issues #39, #54): gradient-boosted
//! trees fitted per origin on that origin's own rows with its own load
//! variable. For ML.ENERGY v3 the load is the batch-size setting
//! (`max_num_seqs`), the hardware a GPU count with its parallelism. Each
//! target is a ratio to physics the row keeps of its own ([`Fitted`]):
//! power ÷ (GPUs × TDP), ITL ÷ the roofline step, and J/token ÷ (GPUs ×
//! TDP × roofline step ÷ cap). The baselines' energy is P × ITL ÷ (cap ×
//! f), f being the tokens per step a running batch delivers per sequence
//! (the training rows' median, 0.94 on v3's 565). Validation is per task
//! (a task is its own workload): leave one LLM, family or batch-size
//! setting out, against the TDP, load-scaled TDP and roofline-ITL
//! baselines ([`validation`]); [`answer`] answers under the protocol.

mod answer;
#[cfg(test)]
mod tests;
mod validation;

pub use answer::*;
pub use validation::*;

use super::{trained, EstimatorError, Settings};
use wattcounts_rules::catalog::{self, GpuSpec};
use wattcounts_rules::peer::PeerConfig;
use wattcounts_rules::stats::percentile_sorted;

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
    /// How many times its active weights a step of a mixture of experts
    /// reads: its running sequences route to more experts than one token
    /// does. With a share s = active ÷ total of the weights chosen per
    /// token, B sequences touch 1 − (1 − s)^B of the routed weights (the
    /// expert count is not published, so s stands for k ÷ E). 1 for a
    /// dense model.
    fn expert_spread(&self) -> f64 {
        if self.architecture != 1.0 || self.total_params_b <= self.active_params_b {
            return 1.0;
        }
        let s = self.active_params_b / self.total_params_b;
        let touched = 1.0 - (1.0 - s).powf(self.batch);
        (self.active_params_b + (self.total_params_b - self.active_params_b) * touched)
            / self.active_params_b
    }
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
            self.expert_spread().ln(),
            (self.active_params_b / self.total_params_b).ln(),
        ]
    }
    /// The family a family-out split holds out together: organisation,
    /// total and active size and architecture.
    pub fn family(&self) -> String {
        let org = self.model.split('/').next().unwrap_or_default();
        format!(
            "{org}|{}|{}|{}",
            self.total_params_b, self.active_params_b, self.architecture
        )
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
    "ln_expert_spread",
    "ln_active_share",
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

/// The boosters fitted on one task's rows: what an estimate under the
/// peer's protocol is read from. Each target is a ratio to the physics a
/// held-out model keeps of its own, so the trees learn only how far real
/// steps fall from it: power as a share of the GPUs' TDP, ITL as a
/// multiple of the roofline's step time, and energy per token as a
/// multiple of GPUs × TDP × roofline step ÷ cap (ln). Energy is learnt
/// directly rather than as P̂ × ITL̂ ÷ (cap × f), which compounds the two
/// models' errors (v3's lm-arena-chat leave-one-LLM-out: 11.6 % against
/// 14.4 %, 11.2 % with the active share; docs/performance.md), so the
/// three figures of an answer need not multiply out exactly.
pub struct Fitted {
    power: forust_ml::GradientBooster,
    itl: forust_ml::GradientBooster,
    energy: forust_ml::GradientBooster,
    step_yield: f64,
}

impl Fitted {
    pub fn fit(train: &[&PeerRow], settings: &Settings) -> Result<Fitted, EstimatorError> {
        if train.is_empty() {
            return Err(EstimatorError::NoRows);
        }
        let x: Vec<Vec<f64>> = train.iter().map(|r| r.features()).collect();
        let share: Vec<f64> = train.iter().map(|r| r.power_w / r.tdp_w()).collect();
        let itl_ratio: Vec<f64> = train
            .iter()
            .map(|r| (r.itl_s / r.roofline_itl_s()).ln())
            .collect();
        let energy_ratio: Vec<f64> = train
            .iter()
            .map(|r| (r.energy_per_token_j * r.batch / (r.tdp_w() * r.roofline_itl_s())).ln())
            .collect();
        Ok(Fitted {
            power: trained(&x, &share, &settings.power, settings.seed)?,
            itl: trained(&x, &itl_ratio, &settings.itl, settings.seed)?,
            // The power model's knobs (depth 6, L2 150, 200 trees).
            energy: trained(&x, &energy_ratio, &settings.power, settings.seed)?,
            step_yield: step_yield(train),
        })
    }

    /// Power over all GPUs, ITL and J/token for each row (its measured
    /// figures unread).
    fn predict(&self, rows: &[&PeerRow]) -> Vec<Predicted> {
        if rows.is_empty() {
            return Vec::new();
        }
        let x: Vec<Vec<f64>> = rows.iter().map(|r| r.features()).collect();
        let data = super::column_major(&x);
        let m = forust_ml::Matrix::new(&data, x.len(), x[0].len());
        let ps = self.power.predict(&m, false);
        let is = self.itl.predict(&m, false);
        let es = self.energy.predict(&m, false);
        rows.iter()
            .enumerate()
            .map(|(k, r)| Predicted {
                power_w: ps[k].max(0.01) * r.tdp_w(),
                itl_s: is[k].exp() * r.roofline_itl_s(),
                energy: es[k].exp() * r.tdp_w() * r.roofline_itl_s() / r.batch,
            })
            .collect()
    }
}

/// Fits on `train` and predicts `test` by the estimator and the two
/// baselines: [estimator, tdp, load-scaled tdp] (both baselines with the
/// roofline ITL, which is the roofline baseline's own ITL).
fn fold(
    train: &[&PeerRow],
    test: &[&PeerRow],
    settings: &Settings,
) -> Result<Vec<[Predicted; 3]>, EstimatorError> {
    let fitted = Fitted::fit(train, settings)?;
    let f = fitted.step_yield;
    let share: Vec<f64> = train.iter().map(|r| r.power_w / r.tdp_w()).collect();
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
    Ok(test
        .iter()
        .zip(fitted.predict(test))
        .map(|(r, est)| {
            let energy = |power_w: f64, itl_s: f64| power_w * itl_s / (r.batch * f);
            let roof = r.roofline_itl_s();
            let scaled = share_at(r.batch) * r.tdp_w();
            [
                est,
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

/// Every row predicted by a fit that did not see its fold.
pub(crate) struct HeldOut {
    /// Per row, its fold (`usize::MAX`: never predicted, its fold being
    /// all the rows).
    fold_of: Vec<usize>,
    /// Per row, [estimator, tdp, load-scaled tdp].
    predicted: Vec<[Predicted; 3]>,
    folds: usize,
}

impl HeldOut {
    /// |ln(estimate ÷ published)| of each predicted row's energy.
    pub(crate) fn log_errors(&self, rows: &[&PeerRow]) -> Vec<f64> {
        (0..rows.len())
            .filter(|&i| self.fold_of[i] != usize::MAX)
            .map(|i| {
                (self.predicted[i][0].energy / rows[i].energy_per_token_j)
                    .ln()
                    .abs()
            })
            .collect()
    }
}

pub(crate) fn held_out(
    rows: &[&PeerRow],
    split: PeerSplit,
    settings: &Settings,
) -> Result<HeldOut, EstimatorError> {
    let key = |r: &PeerRow| split.key(r);
    let mut keys: Vec<String> = rows.iter().map(|r| key(r)).collect();
    keys.sort();
    keys.dedup();
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
        let out = fold(&train, &test, settings)?;
        for (j, &i) in test_idx.iter().enumerate() {
            fold_of[i] = f;
            predicted[i] = out[j];
        }
        folds += 1;
    }
    Ok(HeldOut {
        fold_of,
        predicted,
        folds,
    })
}

//! Estimates under a peer's protocol (issue #54): the two boosters fitted
//! on one task of the peer's rows answer for a configuration the peer did
//! not publish (a model, GPU, GPU count, parallelism and batch-size
//! setting), in that protocol's own units and never beside a Watt Counts
//! figure. The interval is the 80th percentile of the task's
//! leave-one-LLM-out errors, the split a new model faces.

use serde::Serialize;

use super::{
    architecture, held_out, weight_bytes, Fitted, HeldOut, PeerRow, PeerSplit, INTERVAL_LEVEL,
};
use crate::estimator::metrics::mdape;
use crate::estimator::{EstimatorError, Settings};
use wattcounts_rules::catalog::{self, GpuSpec};
use wattcounts_rules::stats::percentile_sorted;

/// How far outside the published batch settings, active sizes and GPU
/// counts an answer may reach (a factor either way).
pub const PEER_DOMAIN_FACTOR: f64 = 2.0;

/// One configuration to estimate.
#[derive(Debug, Clone)]
pub struct PeerQuestion {
    pub task: String,
    pub model: String,
    pub gpu: &'static GpuSpec,
    pub num_gpus: u32,
    /// Defaults: dense and hybrid models split tensors over all GPUs;
    /// mixtures of experts split experts (the peer's own practice).
    pub tensor_parallel: Option<u32>,
    pub expert_parallel: Option<u32>,
    pub max_num_seqs: u32,
    /// `bfloat16`, `fp8`, `mxfp4`…; default: the peer's for that model,
    /// else bfloat16 (said so in the answer).
    pub weight_precision: Option<String>,
}

/// What the estimate took the model to be, and from where.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PeerModelFacts {
    pub total_params_b: f64,
    pub active_params_b: f64,
    pub weight_precision: String,
    /// `dense`, `moe` or `hybrid`.
    pub architecture: String,
    /// `peer data` (the peer published this model) or `catalogue`.
    pub source: String,
    /// Whether the precision was assumed (neither stated nor published).
    pub precision_assumed: bool,
}

/// A figure the peer published for exactly this configuration.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PeerPublished {
    pub energy_per_token_j: f64,
    pub power_w: f64,
    pub itl_s: f64,
}

/// An estimate in the peer's protocol.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PeerEstimate {
    pub task: String,
    pub model: String,
    pub facts: PeerModelFacts,
    pub gpu: String,
    pub gpu_name: String,
    pub num_gpus: u32,
    pub tensor_parallel: u32,
    pub expert_parallel: u32,
    pub max_num_seqs: u32,
    pub energy_per_token_j: f64,
    /// The interval at `level`, from the task's leave-one-LLM-out errors.
    pub energy_per_token_lo: f64,
    pub energy_per_token_hi: f64,
    pub level: f64,
    /// Over all GPUs.
    pub power_w: f64,
    /// Median inter-token latency, seconds.
    pub itl_s: f64,
    /// The roofline's step time the ITL is learnt against.
    pub roofline_itl_s: f64,
    /// The task's leave-one-LLM-out energy MdAPE, and over how many rows.
    pub validation_mdape_pct: Option<f64>,
    pub validation_rows: usize,
    /// The peer's own figure when it published this configuration.
    pub published: Option<PeerPublished>,
}

/// Why a question gets no estimate: a stable code and a sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRefusal {
    pub code: &'static str,
    pub message: String,
}

fn refuse(code: &'static str, message: String) -> PeerRefusal {
    PeerRefusal { code, message }
}

/// One task's fit and the domain it was fitted on.
pub(crate) struct TaskFit {
    task: String,
    fitted: Fitted,
    /// 80th percentile of |ln error| under leave-one-LLM-out.
    half_width_ln: f64,
    mdape_pct: Option<f64>,
    rows: usize,
    batch: (f64, f64),
    gpus: (f64, f64),
    active: (f64, f64),
}

impl TaskFit {
    /// `task`'s rows (`of`) fitted, with the interval and error of their
    /// leave-one-LLM-out predictions `held`; None when none was predicted
    /// (a task of one LLM).
    pub(crate) fn of(
        task: &str,
        of: &[&PeerRow],
        held: &HeldOut,
        settings: &Settings,
    ) -> Result<Option<TaskFit>, EstimatorError> {
        let mut errors = held.log_errors(of);
        errors.sort_by(f64::total_cmp);
        if errors.is_empty() {
            return Ok(None);
        }
        let (est, published): (Vec<f64>, Vec<f64>) = (0..of.len())
            .filter(|&i| held.fold_of[i] != usize::MAX)
            .map(|i| (held.predicted[i][0].energy, of[i].energy_per_token_j))
            .unzip();
        let span = |f: fn(&PeerRow) -> f64| crate::estimator::index::range(of.iter().map(|r| f(r)));
        Ok(Some(TaskFit {
            fitted: Fitted::fit(of, settings)?,
            half_width_ln: percentile_sorted(&errors, INTERVAL_LEVEL),
            mdape_pct: mdape(&est, &published),
            rows: of.len(),
            batch: span(|r| r.batch),
            gpus: span(|r| r.num_gpus),
            active: span(|r| r.active_params_b),
            task: task.to_string(),
        }))
    }
}

/// The peer's rows fitted per task, ready to answer.
pub struct PeerEstimator {
    rows: Vec<PeerRow>,
    tasks: Vec<TaskFit>,
}

impl PeerEstimator {
    /// Fits every task of `rows` (and scores it leave-one-LLM-out for the
    /// interval): seconds, so the service does it in the background.
    pub fn fit(rows: Vec<PeerRow>, settings: &Settings) -> Result<PeerEstimator, EstimatorError> {
        let mut names: Vec<String> = rows.iter().map(|r| r.task.clone()).collect();
        names.sort();
        names.dedup();
        let mut tasks = Vec::new();
        for task in &names {
            let of: Vec<&PeerRow> = rows.iter().filter(|r| &r.task == task).collect();
            let held = held_out(&of, PeerSplit::LeaveOneLlmOut, settings)?;
            tasks.extend(TaskFit::of(task, &of, &held, settings)?);
        }
        Ok(PeerEstimator::of(rows, tasks))
    }

    pub(crate) fn of(rows: Vec<PeerRow>, tasks: Vec<TaskFit>) -> PeerEstimator {
        PeerEstimator { rows, tasks }
    }

    /// The tasks it answers for, sorted.
    pub fn tasks(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.task.as_str()).collect()
    }

    /// The models it knows by name: the peer's, sorted.
    pub fn peer_models(&self) -> Vec<&str> {
        let mut m: Vec<&str> = self.rows.iter().map(|r| r.model.as_str()).collect();
        m.sort_unstable();
        m.dedup();
        m
    }

    fn facts(&self, q: &PeerQuestion) -> Result<PeerModelFacts, PeerRefusal> {
        let published: Vec<&PeerRow> = self.rows.iter().filter(|r| r.model == q.model).collect();
        let stated = q.weight_precision.as_deref().filter(|p| !p.is_empty());
        if let Some(p) = stated {
            weight_bytes(p).ok_or_else(|| {
                refuse(
                    "unknown_precision",
                    format!("weight_precision = {p}: not one of bfloat16, float16, fp8, mxfp4"),
                )
            })?;
        }
        let words = |a: f64| match a as u8 {
            1 => "moe",
            2 => "hybrid",
            _ => "dense",
        };
        if let Some(r) = published
            .iter()
            .find(|r| stated.is_none_or(|p| weight_bytes(p) == Some(r.weight_bytes)))
            .or(published.first())
        {
            let precision = stated.map(str::to_string).unwrap_or_else(|| {
                match r.weight_bytes {
                    b if b >= 2.0 => "bfloat16",
                    b if b >= 1.0 => "fp8",
                    _ => "mxfp4",
                }
                .to_string()
            });
            return Ok(PeerModelFacts {
                total_params_b: r.total_params_b,
                active_params_b: r.active_params_b,
                weight_precision: precision,
                architecture: words(r.architecture).into(),
                source: "peer data".into(),
                precision_assumed: false,
            });
        }
        let m = catalog::model_by_id(&q.model).ok_or_else(|| {
            refuse(
                "unknown_model",
                format!(
                    "model = {}: neither in this peer's data nor in the catalogue (a maintainer adds it with `wattcounts admin model add`)",
                    q.model
                ),
            )
        })?;
        let kind = if m.active_params_b < m.params_b {
            "moe"
        } else if m.model_type.contains("mamba") || m.model_type == "nemotron_h" {
            "hybrid"
        } else {
            "dense"
        };
        Ok(PeerModelFacts {
            total_params_b: m.params_b,
            active_params_b: m.active_params_b,
            weight_precision: stated.unwrap_or("bfloat16").to_string(),
            architecture: kind.into(),
            source: "catalogue".into(),
            precision_assumed: stated.is_none(),
        })
    }

    /// The estimate of one configuration, or why none.
    pub fn answer(&self, q: &PeerQuestion) -> Result<PeerEstimate, PeerRefusal> {
        let t = self
            .tasks
            .iter()
            .find(|t| t.task == q.task)
            .ok_or_else(|| {
                refuse(
                    "unknown_task",
                    format!(
                        "task = {}: this peer's tasks are {}",
                        q.task,
                        self.tasks().join(", ")
                    ),
                )
            })?;
        let facts = self.facts(q)?;
        let bytes = weight_bytes(&facts.weight_precision).unwrap_or(2.0);
        let gpu = q.gpu;
        if !(gpu.tensor_tflops > 0.0 && gpu.memory_bandwidth_gb_s > 0.0) {
            return Err(refuse(
                "gpu_figures_missing",
                format!(
                    "gpu = {}: the catalogue has no tensor peak or memory bandwidth for it",
                    gpu.id
                ),
            ));
        }
        let n = f64::from(q.num_gpus.max(1));
        let weights_gb = facts.total_params_b * bytes;
        if weights_gb > n * gpu.memory_gb {
            return Err(refuse(
                "does_not_fit",
                format!(
                    "{} at {} is {weights_gb:.0} GB of weights; {} × {} holds {:.0} GB",
                    q.model,
                    facts.weight_precision,
                    q.num_gpus,
                    gpu.id,
                    n * gpu.memory_gb
                ),
            ));
        }
        let f = PEER_DOMAIN_FACTOR;
        let batch = f64::from(q.max_num_seqs);
        let outside = |name: &str, v: f64, (lo, hi): (f64, f64)| {
            (v < lo / f || v > hi * f).then(|| {
                refuse(
                    "outside_domain",
                    format!(
                        "{name} = {v}: the {} rows of task {} reach {lo} to {hi}, and an answer goes at most a factor of {f} beyond",
                        t.rows, t.task
                    ),
                )
            })
        };
        if let Some(r) = outside("max_num_seqs", batch, t.batch)
            .or_else(|| outside("num_gpus", n, t.gpus))
            .or_else(|| outside("active parameters (B)", facts.active_params_b, t.active))
        {
            return Err(r);
        }
        let moe = facts.architecture == "moe";
        let tp = q
            .tensor_parallel
            .unwrap_or(if moe { 1 } else { q.num_gpus });
        let ep = q
            .expert_parallel
            .unwrap_or(if moe { q.num_gpus } else { 1 });
        let row = PeerRow {
            task: q.task.clone(),
            model: q.model.clone(),
            gpu,
            num_gpus: n,
            tensor_parallel: f64::from(tp),
            expert_parallel: f64::from(ep),
            batch,
            weight_bytes: bytes,
            total_params_b: facts.total_params_b,
            active_params_b: facts.active_params_b,
            architecture: architecture(&facts.architecture),
            power_w: f64::NAN,
            itl_s: f64::NAN,
            energy_per_token_j: f64::NAN,
        };
        let p = t.fitted.predict(&[&row])[0];
        let published = self
            .rows
            .iter()
            .find(|r| {
                r.task == row.task
                    && r.model == row.model
                    && std::ptr::eq(r.gpu, gpu)
                    && r.num_gpus == n
                    && r.batch == batch
                    && r.weight_bytes == bytes
                    && r.tensor_parallel == row.tensor_parallel
                    && r.expert_parallel == row.expert_parallel
            })
            .map(|r| PeerPublished {
                energy_per_token_j: r.energy_per_token_j,
                power_w: r.power_w,
                itl_s: r.itl_s,
            });
        Ok(PeerEstimate {
            task: t.task.clone(),
            model: q.model.clone(),
            facts,
            gpu: gpu.id.clone(),
            gpu_name: gpu.nvml_name.clone(),
            num_gpus: q.num_gpus,
            tensor_parallel: tp,
            expert_parallel: ep,
            max_num_seqs: q.max_num_seqs,
            energy_per_token_j: p.energy,
            energy_per_token_lo: p.energy * (-t.half_width_ln).exp(),
            energy_per_token_hi: p.energy * t.half_width_ln.exp(),
            level: INTERVAL_LEVEL,
            power_w: p.power_w,
            itl_s: p.itl_s,
            roofline_itl_s: row.roofline_itl_s(),
            validation_mdape_pct: t.mdape_pct,
            validation_rows: t.rows,
            published,
        })
    }
}

impl std::fmt::Debug for PeerEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerEstimator")
            .field("rows", &self.rows.len())
            .field("tasks", &self.tasks())
            .finish()
    }
}

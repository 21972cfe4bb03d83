//! What the estimator knows of a GPU × model × scenario: the catalogue's
//! features as WattGPU uses them. Two sets: the power model's, and the
//! ITL model's, which adds what decides the compute side of a token.

use std::sync::OnceLock;

use wattcounts_rules::catalog::{GpuSpec, ModelSpec};

/// The scenario as WattGPU's trees see it: a category, never the rate
/// (two reference rates would make a continuous λ one split). The rate
/// enters only the energy formula.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioClass {
    Batch,
    /// Server below 0.2 req/s.
    ServerLow,
    /// Server at 0.2 req/s and above.
    ServerHigh,
}

/// The rate that splits the two server classes, req/s.
pub const SERVER_HIGH_FROM_QPS: f64 = 0.2;

impl ScenarioClass {
    pub fn of(lambda_qps: Option<f64>) -> ScenarioClass {
        match lambda_qps {
            None => ScenarioClass::Batch,
            Some(l) if l < SERVER_HIGH_FROM_QPS => ScenarioClass::ServerLow,
            Some(_) => ScenarioClass::ServerHigh,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioClass::Batch => "batch",
            ScenarioClass::ServerLow => "server_low",
            ScenarioClass::ServerHigh => "server_high",
        }
    }
    /// The category as a tree reads it.
    fn code(self) -> f64 {
        match self {
            ScenarioClass::Batch => 0.0,
            ScenarioClass::ServerLow => 1.0,
            ScenarioClass::ServerHigh => 2.0,
        }
    }
}

/// The power model's features, in the order [`power_features`] gives them.
pub const POWER_FEATURES: &[&str] = &[
    "scenario",
    "log_params",
    "model_type",
    "kv_heads",
    "layers",
    "memory_bandwidth_gb_s",
    "boost_over_base_clock",
    "transistor_count_m",
    "base_clock_mhz",
    "release_year",
    "weight_read_time_s",
    "idle_share",
    "log_active_params",
    "experts",
];

/// The ITL model's: the power model's and these.
pub const ITL_EXTRA_FEATURES: &[&str] = &[
    "params_b",
    "hidden_size",
    "attention_heads",
    "memory_gb",
    "memory_type",
    "fp16_tflops",
    "compute_time_per_token_s",
];

/// A category as a number: its place in the sorted list of the
/// catalogue's values (stable for one catalogue; a value it does not know
/// gets one past the end).
fn category(value: &str, known: &[String]) -> f64 {
    known.iter().position(|k| k == value).unwrap_or(known.len()) as f64
}

/// The catalogue's values of one category, sorted, listed once (features
/// are computed per training row and per estimate).
fn sorted_once(
    cell: &'static OnceLock<Vec<String>>,
    values: impl FnOnce() -> Vec<String>,
) -> &'static [String] {
    cell.get_or_init(|| {
        let mut v = values();
        v.sort();
        v.dedup();
        v
    })
}

fn model_types() -> &'static [String] {
    static CELL: OnceLock<Vec<String>> = OnceLock::new();
    sorted_once(&CELL, || {
        wattcounts_rules::catalog::models()
            .iter()
            .map(|m| m.model_type.clone())
            .collect()
    })
}

fn memory_types() -> &'static [String] {
    static CELL: OnceLock<Vec<String>> = OnceLock::new();
    sorted_once(&CELL, || {
        wattcounts_rules::catalog::gpus()
            .iter()
            .map(|g| g.memory_type.clone())
            .collect()
    })
}

/// Seconds to read the weights once, at the checkpoint's own precision
/// (BF16: two bytes per parameter; a 4-bit AWQ checkpoint half a byte).
pub fn weight_read_time_s(gpu: &GpuSpec, model: &ModelSpec) -> f64 {
    model.weight_bits / 8.0 * model.params_b / gpu.memory_bandwidth_gb_s
}

/// Seconds of FP16 compute for one token (two FLOPs per active
/// parameter: a mixture of experts computes with its routed share only).
pub fn compute_time_per_token_s(gpu: &GpuSpec, model: &ModelSpec) -> f64 {
    2.0 * model.active_params_b / (gpu.fp16_tflops * 1000.0)
}

/// The power model's features; `idle_share` off makes that column a
/// constant (the same width either way).
pub fn power_features(
    gpu: &GpuSpec,
    model: &ModelSpec,
    scenario: ScenarioClass,
    idle_share: bool,
) -> Vec<f64> {
    vec![
        scenario.code(),
        model.params_b.ln(),
        category(&model.model_type, model_types()),
        f64::from(model.kv_heads),
        f64::from(model.layers),
        gpu.memory_bandwidth_gb_s,
        gpu.boost_clock_mhz / gpu.base_clock_mhz,
        gpu.transistor_count_m,
        gpu.base_clock_mhz,
        gpu.release_year,
        weight_read_time_s(gpu, model),
        // Not WattGPU's: the catalogue's loaded-idle power over TDP. At
        // low load a board draws mostly this; the bench's LOGO tables
        // with and without it are in the README.
        if idle_share {
            gpu.idle_w / gpu.tdp_w
        } else {
            0.0
        },
        // Not WattGPU's either: what sets a mixture of experts apart (a
        // dense model has active = total and no experts).
        model.active_params_b.ln(),
        f64::from(model.experts),
    ]
}

pub fn itl_features(
    gpu: &GpuSpec,
    model: &ModelSpec,
    scenario: ScenarioClass,
    idle_share: bool,
) -> Vec<f64> {
    let mut f = power_features(gpu, model, scenario, idle_share);
    f.extend([
        model.params_b,
        f64::from(model.hidden_size),
        f64::from(model.attention_heads),
        gpu.memory_gb,
        category(&gpu.memory_type, memory_types()),
        gpu.fp16_tflops,
        compute_time_per_token_s(gpu, model),
    ]);
    f
}

//! Training rows from a physics unlike the demo generator's, for the
//! estimator's tests and `examples/estimator_bench.rs`: power share and
//! ITL as power laws of bandwidth, FLOPS and parameters (no constant read
//! from `synth`), idle power 30 % off the catalogue's, ±2 % noise; 8 GPUs
//! × 11 models × 3 scenarios where the weights fit. Not a model of any
//! GPU: a yardstick the estimator was not built from.

use rand::{Rng, SeedableRng};

use wattcounts_analytics::estimator::features::ScenarioClass;
use wattcounts_analytics::estimator::TrainingRow;
use wattcounts_rules::catalog;

pub const GPUS: [&str; 8] = [
    "t4",
    "l4",
    "a30",
    "rtx-4090",
    "a100-sxm4-40gb",
    "l40s",
    "h100-pcie",
    "h200",
];
/// The interior GPU the done-when leaves out entirely.
pub const INTERIOR: &str = "a100-sxm4-40gb";
pub const MODELS: [&str; 11] = [
    "Qwen/Qwen2.5-0.5B-Instruct",
    "Qwen/Qwen2.5-1.5B-Instruct",
    "google/gemma-2-2b-it",
    "Qwen/Qwen2.5-3B-Instruct",
    "microsoft/Phi-3-mini-4k-instruct",
    "01-ai/Yi-1.5-6B-Chat",
    "Qwen/Qwen2.5-7B-Instruct",
    "meta-llama/Llama-3.1-8B-Instruct",
    "google/gemma-3-12b-it",
    "microsoft/phi-4",
    "mistralai/Mistral-Small-24B-Instruct-2501",
];
pub const RATES: [Option<f64>; 3] = [None, Some(0.1), Some(0.5)];

/// A physics unlike the demo's.
pub fn other_physics(gpus: &[&str], seed: u64) -> Vec<TrainingRow> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for g in gpus {
        let gpu = catalog::gpu_by_id(g).unwrap();
        for m in MODELS {
            let model = catalog::model_by_id(m).unwrap();
            // Only what fits in memory (weights and a little cache).
            if 2.0 * model.params_b * 1.2 > gpu.memory_gb {
                continue;
            }
            for rate in RATES {
                let class = ScenarioClass::of(rate);
                let idle = gpu.idle_w * 0.7;
                let load = match class {
                    ScenarioClass::Batch => 0.8,
                    ScenarioClass::ServerLow => 0.12,
                    ScenarioClass::ServerHigh => 0.35,
                };
                let share = (load
                    * (gpu.memory_bandwidth_gb_s / 1000.0).powf(-0.12)
                    * (model.params_b / 4.0).powf(0.08))
                .min(0.97);
                let noise = |rng: &mut rand::rngs::StdRng| 1.0 + rng.gen_range(-0.02..0.02);
                let power_w = (idle + share * (gpu.tdp_w - idle)) * noise(&mut rng);
                // Decode steps: memory-bound alone, more compute-bound
                // in a full batch, each its own power law.
                let itl_s = match class {
                    ScenarioClass::Batch => {
                        4e-5 * (model.params_b / 4.0).powf(0.6)
                            * (1000.0 / gpu.memory_bandwidth_gb_s).powf(0.4)
                            * (50.0 / gpu.fp16_tflops.max(1.0)).powf(0.35)
                    }
                    ScenarioClass::ServerLow | ScenarioClass::ServerHigh => {
                        let step = 1.3e-3
                            * (model.params_b / 4.0).powf(0.85)
                            * (1000.0 / gpu.memory_bandwidth_gb_s).powf(0.75)
                            * (50.0 / gpu.fp16_tflops.max(1.0)).powf(0.15);
                        step * if class == ScenarioClass::ServerLow {
                            1.1
                        } else {
                            1.4
                        }
                    }
                } * noise(&mut rng);
                let tokens = 180.0;
                out.push(TrainingRow {
                    gpu_id: g.to_string(),
                    model: m.to_string(),
                    scenario: class,
                    lambda_qps: rate,
                    power_w,
                    itl_s,
                    energy_per_token_j: match rate {
                        None => power_w * itl_s,
                        Some(l) => power_w / l / tokens,
                    },
                    energy_per_request_j: rate.map(|l| power_w / l),
                });
            }
        }
    }
    out
}

//! The physical model behind synthetic runs (see the module docs of `synth`).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::options::Physics;
use wattcounts_rules::catalog::{GpuSpec, ModelSpec};

pub const SAMPLE_PERIOD_S: f64 = 0.1;
const STEP_OVERHEAD_S: f64 = 0.004;

use wattcounts_rules::memory_fit::{
    kv_bytes_per_token, usable_memory_b as usable_memory, BYTES_PER_PARAM, MIN_KV_TOKENS,
    RUNTIME_RESERVE_B,
};

/// The demo reproduces the paper's runs, which loaded every model at 16
/// bits whatever its checkpoint: weights are two bytes a parameter here,
/// so a catalogue model's stated precision (an MXFP4 or AWQ checkpoint)
/// never changes which pairs the demo measures or what they draw.
fn weight_bytes(model: &ModelSpec) -> f64 {
    model.params_b * 1e9 * BYTES_PER_PARAM
}

/// Whether the demo runs the pair: 16-bit weights, the reserve and a
/// minimal KV cache fit the harness's share of memory.
pub fn fits(gpu: &GpuSpec, model: &ModelSpec) -> bool {
    let free = usable_memory(gpu) - weight_bytes(model) - RUNTIME_RESERVE_B;
    free > 0.0 && free / kv_bytes_per_token(model) >= MIN_KV_TOKENS
}

/// Derived per-pair constants.
#[derive(Debug, Clone)]
pub struct Engine {
    pub idle_w: f64,
    pub tdp_w: f64,
    bandwidth: f64,
    flops: f64,
    weights: f64,
    active_weights: f64,
    active_params: f64,
    kv_per_token: f64,
    pub kv_capacity_tokens: f64,
    pub memory_used_mb: f64,
    physics: Physics,
    step_overhead_s: f64,
}

impl Engine {
    pub fn new(gpu: &GpuSpec, model: &ModelSpec, physics: Physics) -> Self {
        let weights = weight_bytes(model);
        let kv = kv_bytes_per_token(model);
        let usable = usable_memory(gpu);
        let (idle_w, bandwidth, flops, step_overhead_s) = match physics {
            Physics::Demo => (
                gpu.idle_w,
                gpu.memory_bandwidth_gb_s * 1e9 * 0.75,
                gpu.tensor_tflops * 1e12 * 0.35,
                STEP_OVERHEAD_S,
            ),
            // Fast memory is used less efficiently, slow compute more.
            Physics::Other => (
                gpu.idle_w * 0.7,
                gpu.memory_bandwidth_gb_s
                    * 1e9
                    * 0.9
                    * (gpu.memory_bandwidth_gb_s / 300.0).powf(-0.12),
                gpu.fp16_tflops * 1e12 * 0.8 * (gpu.fp16_tflops / 20.0).powf(-0.2),
                0.006,
            ),
        };
        Engine {
            idle_w,
            tdp_w: gpu.tdp_w,
            bandwidth,
            flops,
            physics,
            step_overhead_s,
            weights,
            active_weights: model.active_params_b * 1e9 * BYTES_PER_PARAM,
            active_params: model.active_params_b * 1e9,
            kv_per_token: kv,
            kv_capacity_tokens: ((usable - weights - RUNTIME_RESERVE_B) / kv).max(0.0),
            // vLLM reserves its whole share of memory up front.
            memory_used_mb: usable / 1e6 + 480.0,
        }
    }

    /// Seconds for one decode step with `n` running sequences of average
    /// context `ctx`, and the share of it that is compute.
    pub fn step(&self, n: f64, ctx: f64) -> (f64, f64) {
        // A mixture of experts touches more experts as the batch grows.
        let touched =
            self.active_weights + (self.weights - self.active_weights) * (n / 16.0).min(1.0);
        let memory = (touched + n * ctx * self.kv_per_token) / self.bandwidth;
        let compute = 2.0 * self.active_params * n / self.flops;
        let t = memory.max(compute) + 0.25 * memory.min(compute) + self.step_overhead_s;
        (t, compute / t)
    }

    pub fn prefill_s(&self, tokens: f64) -> f64 {
        2.0 * self.active_params * tokens / self.flops + self.active_weights / self.bandwidth
    }

    /// Board power while stepping with the given compute share.
    pub fn busy_power(&self, compute_share: f64) -> f64 {
        let share = compute_share.clamp(0.0, 1.0);
        match self.physics {
            Physics::Demo => {
                let load = 0.5 + 0.45 * share;
                self.idle_w + (0.96 * self.tdp_w - self.idle_w) * load
            }
            Physics::Other => {
                let load = 0.35 + 0.6 * share.powf(0.6);
                self.idle_w + (0.9 * self.tdp_w - self.idle_w) * load
            }
        }
    }
}

/// Deterministic random source for one (seed, label) pair, so parts can be
/// generated in any order or in parallel with the same result.
pub fn rng_for(seed: u64, label: &str) -> StdRng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in label.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    StdRng::seed_from_u64(h)
}

pub fn normal(rng: &mut StdRng, mean: f64, sd: f64) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen();
    mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

pub fn exponential(rng: &mut StdRng, rate: f64) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    -u.ln() / rate
}

/// SQuAD-like prompt length and a response length capped at `max_tokens`.
pub fn request_lengths(rng: &mut StdRng, max_tokens: u32) -> (u32, u32) {
    let prompt = normal(rng, 185.0, 45.0).clamp(40.0, 700.0) as u32;
    let gen = (normal(rng, 5.05, 0.55).exp()).clamp(2.0, max_tokens as f64) as u32;
    (prompt, gen)
}

/// Temperature and power-trace state of one GPU across iterations.
#[derive(Debug, Clone)]
pub struct Thermal {
    pub temp_c: f64,
    ambient_c: f64,
}

impl Thermal {
    pub fn new(rng: &mut StdRng) -> Self {
        Thermal {
            temp_c: normal(rng, 36.0, 3.0),
            ambient_c: 28.0,
        }
    }

    /// Cool-down before a measured iteration: the harness waits for a calm,
    /// cool GPU (≤ 65 °C).
    pub fn cool_down(&mut self, rng: &mut StdRng) {
        let target = normal(rng, 38.0, 3.0).clamp(30.0, 60.0);
        self.temp_c = self.temp_c.min(target).max(self.ambient_c + 2.0);
    }

    /// Advances one sample period at `power_w`; returns the sample as read
    /// (leakage grows power ~0.1 %/°C above 40 °C; NVML noise ~1.5 %).
    pub fn sample(&mut self, rng: &mut StdRng, power_w: f64, tdp_w: f64) -> (f64, f64) {
        let steady = self.ambient_c + 8.0 + 50.0 * (power_w / tdp_w);
        self.temp_c += (steady - self.temp_c) * (SAMPLE_PERIOD_S / 60.0);
        let leak = 1.0 + 0.001 * (self.temp_c - 40.0).max(0.0);
        let p = (power_w * leak * (1.0 + normal(rng, 0.0, 0.015))).max(1.0);
        (p, self.temp_c)
    }
}

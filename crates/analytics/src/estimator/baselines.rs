//! What an estimate must beat to be worth showing: the board's TDP as its
//! power, the TDP scaled by a typical load, and the roofline's ITL (the
//! weights read once per step, shared by a batch of 256 in batch runs,
//! by one request in server runs).

use super::features::{weight_read_time_s, ScenarioClass};
use wattcounts_rules::catalog::{GpuSpec, ModelSpec};

/// Power = TDP, watts.
pub fn tdp_power_w(gpu: &GpuSpec) -> f64 {
    gpu.tdp_w
}

/// The load share ρ of the load-scaled baseline.
pub fn load_share(scenario: ScenarioClass) -> f64 {
    match scenario {
        ScenarioClass::Batch => 0.9,
        ScenarioClass::ServerLow => 0.2,
        ScenarioClass::ServerHigh => 0.6,
    }
}

/// Power = ρ × TDP, watts.
pub fn load_scaled_power_w(gpu: &GpuSpec, scenario: ScenarioClass) -> f64 {
    load_share(scenario) * gpu.tdp_w
}

/// Requests sharing one read of the weights in the roofline baseline.
pub fn roofline_batch(scenario: ScenarioClass) -> f64 {
    match scenario {
        ScenarioClass::Batch => 256.0,
        ScenarioClass::ServerLow | ScenarioClass::ServerHigh => 1.0,
    }
}

/// ITL = weight bytes ÷ bandwidth ÷ the requests sharing the read, seconds.
pub fn roofline_itl_s(gpu: &GpuSpec, model: &ModelSpec, scenario: ScenarioClass) -> f64 {
    weight_read_time_s(gpu, model) / roofline_batch(scenario)
}

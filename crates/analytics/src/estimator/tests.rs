//! The estimator on a physics it was not built from: power share and ITL
//! as power laws of bandwidth, FLOPS and parameters unlike the demo
//! generator's (no constant is read from it), idle power 30 % off the
//! catalogue's, and noise; 8 GPUs × 6 models × 3 scenarios.

use super::features::{ITL_EXTRA_FEATURES, POWER_FEATURES};
use super::*;

#[test]
fn features_of_a100_40gb_with_llama_8b_by_hand() {
    let gpu = catalog::gpu_by_id("a100-sxm4-40gb").unwrap();
    let model = catalog::model_by_id("meta-llama/Llama-3.1-8B-Instruct").unwrap();
    let f = power_features(gpu, model, ScenarioClass::Batch, true);
    assert_eq!(f.len(), POWER_FEATURES.len());
    let at = |name: &str, f: &[f64]| {
        let all: Vec<&str> = POWER_FEATURES
            .iter()
            .chain(ITL_EXTRA_FEATURES)
            .copied()
            .collect();
        f[all.iter().position(|n| *n == name).unwrap()]
    };
    assert_eq!(at("scenario", &f), 0.0);
    assert!((at("log_params", &f) - 8.03f64.ln()).abs() < 1e-12);
    assert_eq!(at("kv_heads", &f), 8.0);
    assert_eq!(at("layers", &f), 32.0);
    assert_eq!(at("memory_bandwidth_gb_s", &f), 1560.0);
    // 1410 ÷ 1095 MHz.
    assert!((at("boost_over_base_clock", &f) - 1.287_671_232_876_712_4).abs() < 1e-12);
    assert_eq!(at("transistor_count_m", &f), 54200.0);
    assert_eq!(at("base_clock_mhz", &f), 1095.0);
    assert_eq!(at("release_year", &f), 2020.0);
    // 2 bytes × 8.03e9 ÷ 1560e9 B/s = 0.010294871… s.
    assert!((at("weight_read_time_s", &f) - 0.010_294_871_794_871_795).abs() < 1e-15);
    // 52 W loaded idle ÷ 400 W TDP; off, a constant.
    assert_eq!(at("idle_share", &f), 0.13);
    let off = power_features(gpu, model, ScenarioClass::Batch, false);
    assert_eq!(at("idle_share", &off), 0.0);
    assert_eq!(off.len(), f.len());
    let g = itl_features(gpu, model, ScenarioClass::ServerHigh, true);
    assert_eq!(g.len(), POWER_FEATURES.len() + ITL_EXTRA_FEATURES.len());
    assert_eq!(at("scenario", &g), 2.0);
    assert_eq!(at("params_b", &g), 8.03);
    assert_eq!(at("hidden_size", &g), 4096.0);
    assert_eq!(at("attention_heads", &g), 32.0);
    assert_eq!(at("memory_gb", &g), 40.0);
    assert!((at("fp16_tflops", &g) - 77.97).abs() < 1e-12);
    // 2 × 8.03e9 FLOP ÷ 77.97e12 FLOP/s = 0.000205976… s.
    assert!((at("compute_time_per_token_s", &g) - 2.0 * 8.03 / 77_970.0).abs() < 1e-15);
    assert_eq!(ScenarioClass::of(None), ScenarioClass::Batch);
    assert_eq!(ScenarioClass::of(Some(0.1999)), ScenarioClass::ServerLow);
    assert_eq!(ScenarioClass::of(Some(0.2)), ScenarioClass::ServerHigh);
}

#[test]
fn baselines_by_hand() {
    let gpu = catalog::gpu_by_id("a100-sxm4-40gb").unwrap();
    let model = catalog::model_by_id("meta-llama/Llama-3.1-8B-Instruct").unwrap();
    assert_eq!(baselines::tdp_power_w(gpu), 400.0);
    assert_eq!(
        baselines::load_scaled_power_w(gpu, ScenarioClass::Batch),
        360.0
    );
    assert_eq!(
        baselines::load_scaled_power_w(gpu, ScenarioClass::ServerLow),
        80.0
    );
    assert_eq!(
        baselines::load_scaled_power_w(gpu, ScenarioClass::ServerHigh),
        240.0
    );
    let w = 2.0 * 8.03 / 1560.0;
    assert!(
        (baselines::roofline_itl_s(gpu, model, ScenarioClass::Batch) - w / 256.0).abs() < 1e-15
    );
    assert!((baselines::roofline_itl_s(gpu, model, ScenarioClass::ServerLow) - w).abs() < 1e-15);
}

//! Whether a model can be served on a GPU at all, by the harness's rule:
//! the weights (BF16), the runtime's reserve and a minimal KV cache must
//! fit in the share of memory the harness gives vLLM. The demo generator
//! uses it to decide which pairs it measures; the estimator uses it to
//! refuse pairs that would not run ("does not fit" is an answer).

use crate::catalog::{GpuSpec, ModelSpec};

/// BF16 / FP16: two bytes per value (the KV cache; weights go by the
/// model's own precision).
pub const BYTES_PER_PARAM: f64 = 2.0;
/// Activations, CUDA graphs and allocator slack, bytes.
pub const RUNTIME_RESERVE_B: f64 = 1.5e9;
/// The smallest KV cache the harness can run with, tokens (its context
/// length of 1,024 for four sequences).
pub const MIN_KV_TOKENS: f64 = 4096.0;

/// The share of memory the harness sets as `gpu_memory_utilization`:
/// 0.8 below 20 GB, else 0.9.
pub fn memory_share(gpu: &GpuSpec) -> f64 {
    if gpu.memory_gb < 20.0 {
        0.8
    } else {
        0.9
    }
}

/// Bytes vLLM may use on the GPU.
pub fn usable_memory_b(gpu: &GpuSpec) -> f64 {
    gpu.memory_gb * 1e9 * memory_share(gpu)
}

/// The weights at the model's own precision (a 4-bit AWQ checkpoint
/// holds a quarter of its BF16 twin's bytes).
pub fn weight_bytes(model: &ModelSpec) -> f64 {
    model.params_b * 1e9 * model.weight_bits / 8.0
}

/// The weights' precision as a refusal names it: a 16-bit checkpoint runs
/// as FP16 on boards without BF16 (Pascal, Volta, Turing).
pub fn weights_label(gpu: &GpuSpec, model: &ModelSpec) -> String {
    let no_bf16 = matches!(gpu.architecture.as_str(), "Pascal" | "Volta" | "Turing");
    match model.precision.as_str() {
        "bf16" if no_bf16 => "FP16".into(),
        p => p.to_ascii_uppercase(),
    }
}

pub fn kv_bytes_per_token(model: &ModelSpec) -> f64 {
    let head_dim = model.hidden_size as f64 / model.attention_heads as f64;
    2.0 * model.layers as f64 * model.kv_heads as f64 * head_dim * BYTES_PER_PARAM
}

/// KV-cache tokens left after the weights and the reserve (0 when even
/// the weights do not fit).
pub fn kv_capacity_tokens(gpu: &GpuSpec, model: &ModelSpec) -> f64 {
    ((usable_memory_b(gpu) - weight_bytes(model) - RUNTIME_RESERVE_B) / kv_bytes_per_token(model))
        .max(0.0)
}

/// Whether the model's weights and a minimal KV cache fit the GPU.
pub fn fits(gpu: &GpuSpec, model: &ModelSpec) -> bool {
    let free = usable_memory_b(gpu) - weight_bytes(model) - RUNTIME_RESERVE_B;
    free > 0.0 && free / kv_bytes_per_token(model) >= MIN_KV_TOKENS
}

/// Why a pair does not fit, with the figures, for a refusal.
pub fn why_not(gpu: &GpuSpec, model: &ModelSpec) -> Option<String> {
    if fits(gpu, model) {
        return None;
    }
    Some(format!(
        "{} needs {:.1} GB of {} weights plus a {:.1} GB reserve and a KV cache of at least {} tokens; {} gives vLLM {:.1} GB ({:.0} % of {:.0} GB), room for {:.0} KV tokens",
        model.id,
        weight_bytes(model) / 1e9,
        weights_label(gpu, model),
        RUNTIME_RESERVE_B / 1e9,
        MIN_KV_TOKENS,
        gpu.nvml_name,
        usable_memory_b(gpu) / 1e9,
        memory_share(gpu) * 100.0,
        gpu.memory_gb,
        kv_capacity_tokens(gpu, model)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    #[test]
    fn a_27b_model_does_not_fit_40_gb_and_an_8b_one_does() {
        let a100 = catalog::gpu_by_id("a100-sxm4-40gb").unwrap();
        let big = catalog::models()
            .iter()
            .find(|m| m.params_b > 25.0 && m.params_b == m.active_params_b)
            .unwrap();
        let small = catalog::models()
            .iter()
            .find(|m| m.params_b < 9.0 && m.params_b > 7.0)
            .unwrap();
        assert!(!fits(a100, big));
        let why = why_not(a100, big).unwrap();
        assert!(
            why.contains("GB of BF16 weights") && why.contains("90 % of 40 GB"),
            "{why}"
        );
        assert!(fits(a100, small));
        assert_eq!(why_not(a100, small), None);
        // 40 GB × 0.9 = 36 GB; 8 B parameters × 2 bytes = 16 GB.
        assert_eq!(usable_memory_b(a100), 36e9);
    }

    #[test]
    fn the_kv_cache_and_the_share_by_hand() {
        let a100 = catalog::gpu_by_id("a100-sxm4-40gb").unwrap();
        let llama = catalog::model_by_id("meta-llama/Llama-3.1-8B-Instruct").unwrap();
        // 2 (K and V) × 32 layers × 8 KV heads × (4096 ÷ 32) × 2 bytes.
        assert_eq!(kv_bytes_per_token(llama), 131_072.0);
        assert!((weight_bytes(llama) - 16.06e9).abs() < 1.0);
        // (36 GB − 16.06 GB − 1.5 GB) ÷ 131,072 B.
        let tokens = kv_capacity_tokens(a100, llama);
        assert!((tokens - 18.44e9 / 131_072.0).abs() < 1e-6, "{tokens}");
        // The share: 0.8 below 20 GB, 0.9 from 20 GB on.
        let mut gpu = a100.clone();
        gpu.memory_gb = 20.0;
        assert_eq!(memory_share(&gpu), 0.9);
        gpu.memory_gb = 19.9;
        assert_eq!(memory_share(&gpu), 0.8);
        // A GPU whose free memory holds just under, then just over, the
        // 4,096-token minimum cache: the weights alone are not enough.
        let needed = weight_bytes(llama) + RUNTIME_RESERVE_B + MIN_KV_TOKENS * 131_072.0;
        gpu.memory_gb = (needed - 1e6) / 0.9 / 1e9;
        assert!(!fits(&gpu, llama));
        assert!(why_not(&gpu, llama)
            .unwrap()
            .contains("room for 4088 KV tokens"));
        gpu.memory_gb = (needed + 1e6) / 0.9 / 1e9;
        assert!(fits(&gpu, llama));
        // Weights beyond the share: no cache at all, not a negative one.
        gpu.memory_gb = 10.0;
        assert_eq!(kv_capacity_tokens(&gpu, llama), 0.0);
        assert!(!fits(&gpu, llama));
    }
}

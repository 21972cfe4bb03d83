//! GPU and model catalogues shipped in the crate (from the WattGPU data
//! release, Apache-2.0; see catalog/). Parsed once on first use.

use std::sync::OnceLock;

const GPU_CSV: &str = include_str!("../catalog/gpu_features.csv");
const MODEL_CSV: &str = include_str!("../catalog/model_features.csv");

/// SHA-256 of both catalogue files: what a stored estimator fit's features
/// were read from (a corrected TDP makes older fits stale).
pub fn digest() -> &'static str {
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIGEST
        .get_or_init(|| crate::digest::sha256_hex(format!("{GPU_CSV}\u{0}{MODEL_CSV}").as_bytes()))
}

#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// Stable URL-safe id, e.g. `h100-pcie`.
    pub id: String,
    /// NVML product name, e.g. `NVIDIA H100 PCIe`.
    pub nvml_name: String,
    pub architecture: String,
    pub release_date: String,
    pub tdp_w: f64,
    pub memory_gb: f64,
    pub memory_bandwidth_gb_s: f64,
    pub tensor_tflops: f64,
    /// Half-precision (FP16) throughput without tensor cores, TFLOPS, as
    /// the catalogue states it (the estimator's compute feature).
    pub fp16_tflops: f64,
    pub base_clock_mhz: f64,
    pub boost_clock_mhz: f64,
    pub release_year: f64,
    /// Millions of transistors.
    pub transistor_count_m: f64,
    /// HBM2e, GDDR6X, ...
    pub memory_type: String,
    /// Board power with a model loaded and no work, watts. Estimates from
    /// public measurements; the catalogue CSV does not carry it.
    pub idle_w: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// Hugging Face id, e.g. `meta-llama/Llama-3.1-8B-Instruct`.
    pub id: String,
    pub params_b: f64,
    /// Parameters active per token (mixture-of-experts models use fewer).
    pub active_params_b: f64,
    pub layers: u32,
    pub hidden_size: u32,
    pub attention_heads: u32,
    pub kv_heads: u32,
    pub model_type: String,
}

/// Loaded-idle power per NVML name (W).
const IDLE_W: &[(&str, f64)] = &[
    ("NVIDIA A30", 33.0),
    ("NVIDIA H200", 80.0),
    ("NVIDIA A100-SXM4-40GB", 52.0),
    ("NVIDIA L40S", 38.0),
    ("NVIDIA H100 PCIe", 55.0),
    ("NVIDIA H100 NVL", 62.0),
    ("Tesla V100-SXM2-32GB", 42.0),
    ("NVIDIA L4", 24.0),
    ("NVIDIA GeForce RTX 3090", 44.0),
    ("Tesla T4", 28.0),
    ("NVIDIA GeForce RTX 4090", 38.0),
];

pub fn gpu_id(nvml_name: &str) -> String {
    let lower = nvml_name.to_ascii_lowercase();
    let stripped = lower
        .trim_start_matches("nvidia ")
        .trim_start_matches("geforce ")
        .trim_start_matches("tesla ");
    let mut id = String::new();
    for c in stripped.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c);
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    id.trim_matches('-').to_string()
}

fn rows(text: &str) -> (Vec<&str>, Vec<Vec<&str>>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap_or_default().split(';').collect();
    let body = lines.map(|l| l.split(';').collect()).collect();
    (header, body)
}

fn col(header: &[&str], name: &str) -> usize {
    header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("catalogue column {name} missing"))
}

fn num(row: &[&str], i: usize) -> f64 {
    row.get(i)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

pub fn gpus() -> &'static [GpuSpec] {
    static GPUS: OnceLock<Vec<GpuSpec>> = OnceLock::new();
    GPUS.get_or_init(|| {
        let (h, body) = rows(GPU_CSV);
        let (name, arch, rel, tdp, mem, bw, tf) = (
            col(&h, "gpu_type"),
            col(&h, "architecture"),
            col(&h, "release_date"),
            col(&h, "thermal_design_power_w"),
            col(&h, "memory_size_gb"),
            col(&h, "memory_bandwidth_gb_s"),
            col(&h, "tensor_tflops"),
        );
        let (fp16, base, boost, year, transistors, mem_type) = (
            col(&h, "half_float_performance_gflop_s"),
            col(&h, "base_clock_mhz"),
            col(&h, "boost_clock_mhz"),
            col(&h, "release_year"),
            col(&h, "transistor_count_m"),
            col(&h, "memory_type"),
        );
        body.iter()
            .map(|r| {
                let nvml = r[name].to_string();
                let tdp_w = num(r, tdp);
                GpuSpec {
                    id: gpu_id(&nvml),
                    idle_w: IDLE_W
                        .iter()
                        .find(|(n, _)| *n == nvml)
                        .map_or(tdp_w * 0.15, |(_, w)| *w),
                    nvml_name: nvml,
                    architecture: r[arch].to_string(),
                    release_date: r[rel].to_string(),
                    tdp_w,
                    memory_gb: num(r, mem),
                    memory_bandwidth_gb_s: num(r, bw),
                    tensor_tflops: num(r, tf),
                    fp16_tflops: num(r, fp16) / 1000.0,
                    base_clock_mhz: num(r, base),
                    boost_clock_mhz: num(r, boost),
                    release_year: num(r, year),
                    transistor_count_m: num(r, transistors),
                    memory_type: r[mem_type].to_string(),
                }
            })
            .collect()
    })
}

pub fn models() -> &'static [ModelSpec] {
    static MODELS: OnceLock<Vec<ModelSpec>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let (h, body) = rows(MODEL_CSV);
        let (name, params, active, layers, hidden, heads, kv, mtype) = (
            col(&h, "model_name"),
            col(&h, "total_b_params"),
            col(&h, "active_b_params"),
            col(&h, "num_layers"),
            col(&h, "hidden_size"),
            col(&h, "num_attention_heads"),
            col(&h, "num_key_value_heads"),
            col(&h, "model_type"),
        );
        body.iter()
            .map(|r| {
                let params_b = num(r, params);
                let heads_n = num(r, heads) as u32;
                let kv_n = num(r, kv) as u32;
                let active_b = num(r, active);
                ModelSpec {
                    id: r[name].to_string(),
                    params_b,
                    active_params_b: if active_b > 0.0 { active_b } else { params_b },
                    layers: num(r, layers) as u32,
                    hidden_size: num(r, hidden) as u32,
                    // Attention-free models (Mamba) have no heads: treat
                    // them as one tiny head so KV sizing stays finite.
                    attention_heads: heads_n.max(1),
                    kv_heads: if kv_n == 0 { heads_n.max(1) } else { kv_n },
                    model_type: r[mtype].to_string(),
                }
            })
            .collect()
    })
}

pub fn gpu_by_nvml_name(name: &str) -> Option<&'static GpuSpec> {
    gpus().iter().find(|g| g.nvml_name == name)
}

pub fn gpu_by_id(id: &str) -> Option<&'static GpuSpec> {
    gpus().iter().find(|g| g.id == id)
}

pub fn model_by_id(id: &str) -> Option<&'static ModelSpec> {
    models().iter().find(|m| m.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogues_load() {
        assert_eq!(gpus().len(), 11);
        assert_eq!(models().len(), 51);
        let h100 = gpu_by_nvml_name("NVIDIA H100 PCIe").unwrap();
        assert_eq!(h100.id, "h100-pcie");
        assert_eq!(h100.tdp_w, 350.0);
        assert_eq!(gpu_by_nvml_name("Tesla T4").unwrap().id, "t4");
        assert_eq!(
            gpu_by_nvml_name("NVIDIA GeForce RTX 4090").unwrap().id,
            "rtx-4090"
        );
        let llama = model_by_id("meta-llama/Llama-3.1-8B-Instruct").unwrap();
        assert_eq!(llama.params_b, 8.03);
        assert_eq!(llama.kv_heads, 8);
        let ids: std::collections::HashSet<_> = gpus().iter().map(|g| &g.id).collect();
        assert_eq!(ids.len(), 11, "gpu ids are unique");
    }
}

//! GPU and model catalogues shipped in the crate (see catalog/README.md):
//! `gpus.csv`, every NVIDIA GPU a community is likely to own, each row with
//! its source (the paper's eleven copied from the WattGPU data release);
//! `model_features.csv` from the WattGPU release (Apache-2.0). Parsed once
//! on first use.

use std::sync::OnceLock;

const GPU_CSV: &str = include_str!("../../catalog/gpus.csv");
const MODEL_CSV: &str = include_str!("../../catalog/model_features.csv");

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
    /// Board power with a model loaded and no work, watts.
    pub idle_w: f64,
    /// Where `idle_w` comes from: `wattgpu` (the paper's GPUs), `measured`
    /// (a published measurement named in `source`) or `tdp_share_0.15`.
    pub idle_basis: String,
    /// SXM, PCIe, NVL, Superchip, Workstation or Consumer.
    pub form_factor: String,
    /// Memory interface width, bits.
    pub memory_bus_bits: f64,
    /// The datasheet or spec-database page the figures come from.
    pub source: String,
}

impl GpuSpec {
    /// One of the GPUs the Watt Counts paper measured (the demo's GPUs).
    pub fn in_paper(&self) -> bool {
        self.idle_basis == "wattgpu"
    }
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
        let text = |r: &[&str], name: &str| r[col(&h, name)].trim().to_string();
        let n = |r: &[&str], name: &str| num(r, col(&h, name));
        body.iter()
            .map(|r| {
                let nvml = text(r, "nvml_name");
                GpuSpec {
                    id: gpu_id(&nvml),
                    nvml_name: nvml,
                    architecture: text(r, "architecture"),
                    release_date: text(r, "release_date"),
                    tdp_w: n(r, "tdp_w"),
                    memory_gb: n(r, "memory_gb"),
                    memory_bandwidth_gb_s: n(r, "memory_bandwidth_gb_s"),
                    tensor_tflops: n(r, "tensor_tflops"),
                    fp16_tflops: n(r, "fp16_tflops"),
                    base_clock_mhz: n(r, "base_clock_mhz"),
                    boost_clock_mhz: n(r, "boost_clock_mhz"),
                    release_year: n(r, "release_year"),
                    transistor_count_m: n(r, "transistor_count_m"),
                    memory_type: text(r, "memory_type"),
                    idle_w: n(r, "idle_w"),
                    idle_basis: text(r, "idle_basis"),
                    form_factor: text(r, "form_factor"),
                    memory_bus_bits: n(r, "memory_bus_bits"),
                    source: text(r, "source"),
                }
            })
            .collect()
    })
}

/// The GPUs the Watt Counts paper measured, in catalogue order.
pub fn paper_gpus() -> impl Iterator<Item = &'static GpuSpec> {
    gpus().iter().filter(|g| g.in_paper())
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
mod tests;

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

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct GpuSpec {
    /// Stable URL-safe id, e.g. `h100-pcie` (made from the NVML name).
    #[serde(default)]
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

    /// Whether `idle_w` is a guess (15 % of TDP) rather than measured.
    /// Measured loaded idles run from 8 % (RTX 4090) to 40 % (T4) of TDP,
    /// so a limit resting on the guess can only warn.
    pub fn idle_is_guessed(&self) -> bool {
        self.idle_basis == "tdp_share_0.15"
    }

    /// Where `idle_w` comes from, in words: measured, or guessed.
    pub fn idle_basis_words(&self) -> String {
        match self.idle_basis.as_str() {
            "wattgpu" => "measured (the WattGPU release)".into(),
            "measured" => "measured (a published measurement, see source)".into(),
            "tdp_share_0.15" => format!("guessed: 15 % of its {:.0} W TDP", self.tdp_w),
            other => format!("basis '{other}'"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
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
    /// Routed experts of a mixture of experts; 0 for a dense model.
    #[serde(default)]
    pub experts: u32,
    /// The weights' precision as its config.json states it (`bf16`,
    /// `fp16`, `fp8`, `mxfp4`, `awq-int4`, …): part of what was measured.
    #[serde(default = "bf16")]
    pub precision: String,
    /// Bits per weight at that precision (16, 8, 4.25 for MXFP4, 4 …).
    #[serde(default = "sixteen")]
    pub weight_bits: f64,
}

fn bf16() -> String {
    "bf16".into()
}

fn sixteen() -> f64 {
    16.0
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

/// The shipped catalogue plus the GPUs maintainers added (see
/// [`install_additions`]); the shipped list until any is installed.
pub fn gpus() -> &'static [GpuSpec] {
    let added = *ADDED.read().unwrap_or_else(|e| e.into_inner());
    added.unwrap_or_else(shipped)
}

/// Shipped catalogue plus additions, once any addition is installed.
static ADDED: std::sync::RwLock<Option<&'static [GpuSpec]>> = std::sync::RwLock::new(None);

/// Makes `additions` (GPUs maintainers added, stored in the database) part
/// of the catalogue every lookup reads, after the shipped rows and those
/// installed before; a name the catalogue has already is ignored. Additions
/// are append-only (a maintainer adds, nobody removes), so installing is a
/// union: a reload never drops a GPU another caller installed (two services
/// in one process, as the tests run them, each keep theirs). Additions are
/// rare (a GPU a community starts to own), so each call keeps its list for
/// the life of the process rather than reference-counting every lookup.
pub fn install_additions(additions: &[GpuSpec]) {
    // Nothing new (the common case when instances poll): keep the list.
    if additions
        .iter()
        .all(|g| gpu_by_nvml_name(&g.nvml_name).is_some())
    {
        return;
    }
    // Read and replace under one lock, so two installs at once both land.
    let mut slot = ADDED.write().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<GpuSpec> = slot.unwrap_or_else(shipped).to_vec();
    for g in additions {
        if !all
            .iter()
            .any(|k| k.nvml_name == g.nvml_name || k.id == g.id)
        {
            all.push(g.clone());
        }
    }
    *slot = Some(Box::leak(all.into_boxed_slice()));
}

/// The catalogue shipped in `gpus.csv`.
pub fn shipped() -> &'static [GpuSpec] {
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

/// Per-pin data rate, Gbit/s, each memory type reaches on shipping boards
/// (JEDEC and vendor ranges; the T4's GDDR6 runs at 10).
pub fn pin_rate_range(memory_type: &str) -> Option<(f64, f64)> {
    Some(match memory_type {
        "HBM2" => (1.4, 2.6),
        "HBM2e" => (2.4, 3.7),
        "HBM3" => (4.0, 6.5),
        "HBM3e" => (6.0, 9.8),
        "GDDR5" => (5.0, 9.0),
        "GDDR6" => (10.0, 20.5),
        "GDDR6X" => (19.0, 23.5),
        "GDDR7" => (27.0, 32.0),
        _ => return None,
    })
}

/// Most board power a form factor carries, W (SXM modules up to B200's
/// 1,000 W; a PCIe or workstation card up to 600 W on one 16-pin plug).
pub fn tdp_ceiling(form_factor: &str) -> Option<f64> {
    Some(match form_factor {
        "SXM" | "Superchip" => 1200.0,
        "PCIe" | "NVL" | "Workstation" | "Consumer" => 600.0,
        _ => return None,
    })
}

/// What is implausible about a catalogue row, each as one sentence naming
/// the field and figure: NVML's name form, units and ranges, bandwidth
/// against the memory type, TDP against the form factor. Empty when the
/// row is plausible. Every shipped row and every maintainer's addition is
/// held to it.
pub fn plausibility_problems(g: &GpuSpec) -> Vec<String> {
    let mut bad = Vec::new();
    let n = &g.nvml_name;
    let prefix_ok = ["NVIDIA ", "Tesla ", "Quadro "]
        .iter()
        .any(|p| n.starts_with(p));
    if !prefix_ok || n.trim() != n || n.contains("  ") || n.chars().any(char::is_control) {
        bad.push(format!(
            "nvml_name '{n}' is not an NVML product name (it starts with NVIDIA, Tesla or Quadro, as nvidia-smi prints it)"
        ));
    }
    if (g.form_factor == "Consumer") != n.starts_with("NVIDIA GeForce RTX ") {
        bad.push(format!(
            "form_factor {} against the name: GeForce RTX cards are Consumer, no other card is",
            g.form_factor
        ));
    }
    match tdp_ceiling(&g.form_factor) {
        None => bad.push(format!(
            "form_factor '{}' is not one of SXM, PCIe, NVL, Superchip, Workstation, Consumer",
            g.form_factor
        )),
        Some(max) if !(40.0..=max).contains(&g.tdp_w) => bad.push(format!(
            "tdp_w {} W lies outside 40–{max} W for a {} board",
            g.tdp_w, g.form_factor
        )),
        _ => {}
    }
    if !(g.idle_w > 0.03 * g.tdp_w && g.idle_w < 0.45 * g.tdp_w) {
        bad.push(format!(
            "idle_w {} W is not between 3 % and 45 % of tdp_w {} W",
            g.idle_w, g.tdp_w
        ));
    }
    if !["wattgpu", "measured", "tdp_share_0.15"].contains(&g.idle_basis.as_str()) {
        bad.push(format!(
            "idle_basis '{}' is not one of wattgpu, measured, tdp_share_0.15",
            g.idle_basis
        ));
    }
    match pin_rate_range(&g.memory_type) {
        None => bad.push(format!(
            "memory_type '{}' is not one of HBM2, HBM2e, HBM3, HBM3e, GDDR5, GDDR6, GDDR6X, GDDR7",
            g.memory_type
        )),
        Some((lo, hi)) => {
            let rate = g.memory_bandwidth_gb_s * 8.0 / g.memory_bus_bits;
            if !(lo..=hi).contains(&rate) {
                bad.push(format!(
                    "memory_bandwidth_gb_s {} on memory_bus_bits {} is {rate:.2} Gbit/s a pin, outside {lo}–{hi} for {}",
                    g.memory_bandwidth_gb_s, g.memory_bus_bits, g.memory_type
                ));
            }
        }
    }
    if !(4.0..=200.0).contains(&g.memory_gb) {
        bad.push(format!("memory_gb {} lies outside 4–200", g.memory_gb));
    }
    if !(g.fp16_tflops > 1.0 && g.fp16_tflops < 2500.0) {
        bad.push(format!("fp16_tflops {} lies outside 1–2500", g.fp16_tflops));
    }
    if !(g.tensor_tflops > 10.0 && g.tensor_tflops < 2500.0) {
        bad.push(format!(
            "tensor_tflops {} lies outside 10–2500",
            g.tensor_tflops
        ));
    }
    if !(300.0..=3000.0).contains(&g.base_clock_mhz) || g.boost_clock_mhz < g.base_clock_mhz {
        bad.push(format!(
            "base_clock_mhz {} / boost_clock_mhz {}: base within 300–3000 MHz, boost at least base",
            g.base_clock_mhz, g.boost_clock_mhz
        ));
    }
    if !(5_000.0..=250_000.0).contains(&g.transistor_count_m) {
        bad.push(format!(
            "transistor_count_m {} lies outside 5,000–250,000 (millions)",
            g.transistor_count_m
        ));
    }
    let year: f64 = g
        .release_date
        .get(..4)
        .and_then(|y| y.parse().ok())
        .unwrap_or(0.0);
    let date_ok = chrono::NaiveDate::parse_from_str(&g.release_date, "%Y-%m-%d").is_ok();
    if !date_ok || year != g.release_year || !(2017.0..=2030.0).contains(&year) {
        bad.push(format!(
            "release_date '{}' (YYYY-MM-DD, 2017–2030) and release_year {} disagree",
            g.release_date, g.release_year
        ));
    }
    if !g.source.starts_with("https://") || g.source.chars().any(char::is_whitespace) {
        bad.push(format!(
            "source '{}' is not an https:// address of the datasheet or spec page",
            g.source
        ));
    }
    if g.id != gpu_id(n) {
        bad.push(format!(
            "id '{}' is not the one the name gives ('{}')",
            g.id,
            gpu_id(n)
        ));
    }
    bad
}

/// The GPUs the Watt Counts paper measured, in catalogue order.
pub fn paper_gpus() -> impl Iterator<Item = &'static GpuSpec> {
    gpus().iter().filter(|g| g.in_paper())
}

/// The shipped models plus those maintainers added (see
/// [`install_model_additions`]).
pub fn models() -> &'static [ModelSpec] {
    let added = *ADDED_MODELS.read().unwrap_or_else(|e| e.into_inner());
    added.unwrap_or_else(shipped_models)
}

/// Shipped models plus additions, once any addition is installed.
static ADDED_MODELS: std::sync::RwLock<Option<&'static [ModelSpec]>> = std::sync::RwLock::new(None);

/// Makes `additions` (models maintainers added from their config.json)
/// part of the catalogue every lookup reads; a union, as for GPUs
/// ([`install_additions`] says why).
pub fn install_model_additions(additions: &[ModelSpec]) {
    if additions.iter().all(|m| model_by_id(&m.id).is_some()) {
        return;
    }
    let mut slot = ADDED_MODELS.write().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<ModelSpec> = slot.unwrap_or_else(shipped_models).to_vec();
    for m in additions {
        if !all.iter().any(|k| k.id == m.id) {
            all.push(m.clone());
        }
    }
    *slot = Some(Box::leak(all.into_boxed_slice()));
}

impl ModelSpec {
    /// A catalogue row from the figures of the model's config.json.
    pub fn from_figures(id: &str, f: &crate::model_config::ModelFigures) -> ModelSpec {
        ModelSpec {
            id: id.to_string(),
            params_b: f.total_params / 1e9,
            active_params_b: f.active_params / 1e9,
            layers: f.layers as u32,
            hidden_size: f.hidden_size as u32,
            attention_heads: (f.attention_heads as u32).max(1),
            kv_heads: if f.kv_heads == 0 {
                (f.attention_heads as u32).max(1)
            } else {
                f.kv_heads as u32
            },
            model_type: f.model_type.clone(),
            experts: f.experts.as_ref().map_or(0, |e| e.routed as u32),
            precision: f.precision.name.clone(),
            weight_bits: f.precision.bits,
        }
    }
}

/// What makes a model's figures implausible (the ranges `admin gpu add`
/// holds GPUs to have their twin here): each problem names its field and
/// figure. Empty when the row may join the catalogue.
pub fn model_plausibility_problems(m: &ModelSpec) -> Vec<String> {
    let mut bad = Vec::new();
    let id_ok = m.id.split('/').count() == 2
        && m.id.split('/').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
    if !id_ok {
        bad.push(format!(
            "id '{}' is not a Hugging Face repo id (ORG/NAME of letters, digits, - _ .)",
            m.id
        ));
    }
    if !(0.001..=2000.0).contains(&m.params_b) {
        bad.push(format!(
            "{} B parameters is outside 0.001–2,000 B",
            m.params_b
        ));
    }
    if !(m.active_params_b > 0.0 && m.active_params_b <= m.params_b * 1.000_001) {
        bad.push(format!(
            "{} B active parameters is not within the {} B total",
            m.active_params_b, m.params_b
        ));
    }
    if !(1..=1000).contains(&m.layers) {
        bad.push(format!("{} layers is outside 1–1,000", m.layers));
    }
    if !(64..=65_536).contains(&m.hidden_size) {
        bad.push(format!(
            "hidden size {} is outside 64–65,536",
            m.hidden_size
        ));
    }
    if m.kv_heads > m.attention_heads {
        bad.push(format!(
            "{} KV heads is more than its {} attention heads",
            m.kv_heads, m.attention_heads
        ));
    }
    bad
}

/// The models shipped in `model_features.csv`.
pub fn shipped_models() -> &'static [ModelSpec] {
    static MODELS: OnceLock<Vec<ModelSpec>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let (h, body) = rows(MODEL_CSV);
        // The config keys a routed-expert count goes by, per family.
        let expert_cols: Vec<usize> = ["num_local_experts", "num_experts", "n_routed_experts"]
            .iter()
            .map(|c| col(&h, c))
            .collect();
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
        // Each row's precision, read as a bundled config.json's is.
        let precisions: std::collections::HashMap<String, crate::model_config::Precision> =
            crate::model_config::catalogue_configs()
                .into_iter()
                .map(|(id, _, c)| (id, crate::model_config::precision(&c)))
                .collect();
        body.iter()
            .map(|r| {
                let precision =
                    precisions
                        .get(r[name])
                        .cloned()
                        .unwrap_or(crate::model_config::Precision {
                            name: bf16(),
                            bits: sixteen(),
                        });
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
                    experts: expert_cols
                        .iter()
                        .map(|&c| num(r, c))
                        .find(|v| *v > 0.0)
                        .unwrap_or(0.0) as u32,
                    precision: precision.name,
                    weight_bits: precision.bits,
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

/// A GPU a maintainer added to the catalogue.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct CatalogueAddition {
    /// 1 for the first addition, then one more for each.
    pub version: i64,
    pub spec: GpuSpec,
    pub added_at: String,
    pub actor: String,
    pub reason: String,
}

/// Where an added model's figures come from: its config.json.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ModelProvenance {
    /// The Hugging Face repo the config is of.
    pub repo: String,
    /// The repo's revision (a commit hash), when known.
    pub revision: Option<String>,
    /// SHA-256 of the config.json bytes the figures were derived from.
    pub config_sha256: String,
    /// The weights' precision the config states (`bf16`, `awq-int4`, …).
    pub precision: String,
}

/// A model a maintainer added to the catalogue.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct CatalogueModelAddition {
    pub version: i64,
    pub spec: ModelSpec,
    pub provenance: ModelProvenance,
    pub added_at: String,
    pub actor: String,
    pub reason: String,
}

#[cfg(test)]
mod tests;

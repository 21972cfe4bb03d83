//! A model's figures from its own Hugging Face `config.json` (issue #54):
//! the one formula the service derives parameters, shape and precision
//! by, for any decoder-only model the community runs, catalogued or not.
//!
//! Parameters are counted as the model's weight matrices hold them:
//! - embeddings `V × h`, and the output head `V × h` again unless
//!   `tie_word_embeddings` (transformers' default is tied); GPT-2's learned
//!   positions `n_positions × h`;
//! - per layer, attention `h × (H + 2·KV) × d` for Q, K, V and `H·d × h`
//!   for O (d the head size, `head_dim` or `h ÷ H`);
//! - per layer, the MLP: three `h × I` matrices where it is gated (SwiGLU
//!   and its kin: Llama, Qwen, Mistral, Gemma, Phi-3, …), two where it is
//!   not (GPT-2, GPT-J, GPT-NeoX, Phi-2, Nemotron's squared ReLU);
//! - a mixture of experts replaces a layer's MLP by `E` experts of
//!   `moe_intermediate_size` (or `intermediate_size`), a router `h × E`,
//!   and its shared experts; `first_k_dense_replace` layers stay dense. The
//!   active parameters count `k` routed experts (`num_experts_per_tok`)
//!   instead of `E`;
//! - a Mamba layer (Falcon-Mamba) holds its in- and out-projections
//!   `3 × h × I`, and `x_proj`, `dt_proj`, the convolution and `A`, `D`.
//!
//! Biases and norms are left out (under 0.1 % of any catalogue model). A
//! multimodal config counts its `text_config` (the language model; a
//! vision tower is not what generates tokens). Layer patterns this formula
//! does not know (Nemotron-H's hybrid `hybrid_override_pattern`) are an
//! error that says so, never a guess.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a config says of a mixture of experts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Experts {
    /// Routed experts per MoE layer.
    pub routed: u64,
    /// Routed experts each token passes through.
    pub per_token: u64,
    /// Shared experts every token passes through (of the expert size).
    pub shared: u64,
    /// Width of one expert's MLP.
    pub intermediate_size: u64,
}

/// How the weights are stored, as `torch_dtype` and `quantization_config`
/// say: `bf16`, `fp16`, `fp32`, `fp8`, `mxfp4`, `awq-int4`, `gptq-int4`,
/// `bnb-int8`, `bnb-nf4`, …, with the bits a weight takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Precision {
    pub name: String,
    pub bits: f64,
}

/// A model's figures, from its config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ModelFigures {
    pub model_type: String,
    pub layers: u64,
    pub hidden_size: u64,
    pub attention_heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub intermediate_size: u64,
    pub vocab_size: u64,
    /// The longest context the config states, when it states one.
    pub context_length: Option<u64>,
    pub tied_embeddings: bool,
    pub experts: Option<Experts>,
    /// Every weight, in parameters.
    pub total_params: f64,
    /// The weights a token passes through (the total, without experts).
    pub active_params: f64,
    pub precision: Precision,
}

impl ModelFigures {
    /// The weights' bytes at their precision (parameters × bits ÷ 8).
    pub fn weight_bytes(&self) -> f64 {
        self.total_params * self.precision.bits / 8.0
    }
}

/// Why a config gives no figures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("config.json has no {0} (nor any of its other names)")]
    Missing(&'static str),
    #[error("config.json {field} is {value}, which no model has")]
    Implausible { field: &'static str, value: String },
    #[error("config.json describes {0}, which this formula does not count (docs/model-figures.md says what it counts)")]
    Unsupported(String),
}

/// MLPs of two matrices (no gate).
const UNGATED: &[&str] = &[
    "gpt2",
    "gptj",
    "gpt_neox",
    "phi",
    "nemotron",
    "gpt_bigcode",
    "opt",
    "bloom",
    "falcon",
    "starcoder2",
];

fn num(c: &Value, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| match c.get(*n) {
        Some(Value::Number(x)) => x.as_f64(),
        _ => None,
    })
}

fn whole(c: &Value, field: &'static str, names: &[&str]) -> Result<u64, ConfigError> {
    let v = num(c, names).ok_or(ConfigError::Missing(field))?;
    if !(v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v < 1e9) {
        return Err(ConfigError::Implausible {
            field,
            value: v.to_string(),
        });
    }
    Ok(v as u64)
}

fn optional(c: &Value, names: &[&str]) -> Option<u64> {
    num(c, names)
        .filter(|v| *v >= 1.0 && v.fract() == 0.0 && *v < 1e9)
        .map(|v| v as u64)
}

/// The precision `quantization_config` or `torch_dtype` (or `dtype`) names.
pub fn precision(c: &Value) -> Precision {
    let p = |name: &str, bits: f64| Precision {
        name: name.into(),
        bits,
    };
    if let Some(q) = c.get("quantization_config").filter(|q| q.is_object()) {
        let method = q
            .get("quant_method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let bits = num(q, &["bits", "w_bit", "weight_bits"]);
        match method.as_str() {
            "awq" | "gptq" | "compressed-tensors" if bits.is_some() => {
                let b = bits.unwrap_or(4.0);
                return p(&format!("{method}-int{b}"), b);
            }
            "awq" | "gptq" => return p(&format!("{method}-int4"), 4.0),
            "fp8" | "fbgemm_fp8" => return p("fp8", 8.0),
            "mxfp4" => return p("mxfp4", 4.25),
            "bitsandbytes" => {
                let four = q.get("load_in_4bit").and_then(Value::as_bool) == Some(true);
                return if four {
                    let kind = q
                        .get("bnb_4bit_quant_type")
                        .and_then(Value::as_str)
                        .unwrap_or("nf4");
                    p(&format!("bnb-{kind}"), 4.0)
                } else {
                    p("bnb-int8", 8.0)
                };
            }
            _ => {}
        }
    }
    let dtype = ["torch_dtype", "dtype"]
        .iter()
        .find_map(|k| c.get(*k).and_then(Value::as_str))
        .unwrap_or("bfloat16");
    match dtype {
        "float32" => p("fp32", 32.0),
        "float16" => p("fp16", 16.0),
        _ => p("bf16", 16.0),
    }
}

/// The figures of the model `config` (a parsed config.json) describes.
pub fn figures(config: &Value) -> Result<ModelFigures, ConfigError> {
    let model_type = config
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    // A multimodal model's language part.
    let c = config
        .get("text_config")
        .filter(|t| t.is_object() && t.get("hidden_size").is_some())
        .unwrap_or(config);
    if c.get("hybrid_override_pattern").is_some() || c.get("layers_block_type").is_some() {
        return Err(ConfigError::Unsupported(format!(
            "hybrid layers of Mamba, attention and experts ({model_type})"
        )));
    }
    let h = whole(c, "hidden_size", &["hidden_size", "n_embd", "d_model"])?;
    let layers = whole(
        c,
        "num_hidden_layers",
        &["num_hidden_layers", "n_layer", "num_layers"],
    )?;
    let vocab = whole(c, "vocab_size", &["vocab_size"])?;
    let mamba = model_type.contains("mamba") || c.get("state_size").is_some();
    let intermediate = optional(c, &["intermediate_size", "n_inner", "ffn_hidden_size"])
        .unwrap_or(if mamba { 2 * h } else { 4 * h });
    let (heads, kv_heads, head_dim) = if mamba {
        (0, 0, 0)
    } else {
        let heads = whole(
            c,
            "num_attention_heads",
            &["num_attention_heads", "n_head", "num_heads"],
        )?;
        let kv = if c.get("multi_query").and_then(Value::as_bool) == Some(true) {
            1
        } else {
            optional(c, &["num_key_value_heads", "num_kv_heads"]).unwrap_or(heads)
        };
        let d = optional(c, &["head_dim"]).unwrap_or(h / heads);
        (heads, kv, d)
    };
    let tied = c
        .get("tie_word_embeddings")
        .or_else(|| config.get("tie_word_embeddings"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let (hf, vf) = (h as f64, vocab as f64);
    let mut embeddings = vf * hf * if tied { 1.0 } else { 2.0 };
    if model_type == "gpt2" {
        embeddings += optional(c, &["n_positions"]).unwrap_or(1024) as f64 * hf;
    }
    let attention =
        hf * (heads + 2 * kv_heads) as f64 * head_dim as f64 + (heads * head_dim) as f64 * hf;
    let matrices = if UNGATED.contains(&model_type.as_str()) {
        2.0
    } else {
        3.0
    };
    let mlp = |width: u64| matrices * hf * width as f64;
    let experts = num(c, &["num_local_experts", "num_experts", "n_routed_experts"])
        .filter(|e| *e > 1.0)
        .map(|e| Experts {
            routed: e as u64,
            per_token: optional(c, &["num_experts_per_tok", "experts_per_token", "moe_topk"])
                .unwrap_or(1),
            shared: optional(c, &["n_shared_experts"]).unwrap_or(0),
            intermediate_size: optional(c, &["moe_intermediate_size"]).unwrap_or(intermediate),
        });
    let (per_layer_total, per_layer_active, dense_layers) = if mamba {
        // in_proj (h → 2I), out_proj (I → h), x_proj (I → r + 2N),
        // dt_proj (r → I), the convolution (I × k), A (I × N) and D (I).
        let i = intermediate as f64;
        let n = optional(c, &["state_size"]).unwrap_or(16) as f64;
        let r = optional(c, &["time_step_rank"]).unwrap_or((h as f64 / 16.0).ceil() as u64) as f64;
        let k = optional(c, &["conv_kernel"]).unwrap_or(4) as f64;
        let layer = 3.0 * hf * i + i * (r + 2.0 * n) + r * i + i * k + i * n + i;
        (layer, layer, 0)
    } else if let Some(e) = &experts {
        let shared_width = optional(c, &["shared_expert_intermediate_size"]);
        let shared =
            e.shared as f64 * mlp(e.intermediate_size) + shared_width.map_or(0.0, |w| mlp(w) + hf);
        let router = hf * e.routed as f64;
        let total = attention + e.routed as f64 * mlp(e.intermediate_size) + shared + router;
        let active = attention + e.per_token as f64 * mlp(e.intermediate_size) + shared + router;
        let dense = optional(c, &["first_k_dense_replace"])
            .unwrap_or(0)
            .min(layers);
        (total, active, dense)
    } else {
        let layer = attention + mlp(intermediate);
        (layer, layer, 0)
    };
    let dense = dense_layers as f64 * (attention + mlp(intermediate));
    let sparse = (layers - dense_layers) as f64;
    let total = embeddings + dense + sparse * per_layer_total;
    let active = embeddings + dense + sparse * per_layer_active;
    Ok(ModelFigures {
        model_type,
        layers,
        hidden_size: h,
        attention_heads: heads,
        kv_heads,
        head_dim,
        intermediate_size: intermediate,
        vocab_size: vocab,
        context_length: optional(
            c,
            &[
                "max_position_embeddings",
                "n_positions",
                "max_sequence_length",
                "seq_length",
            ],
        ),
        tied_embeddings: tied,
        experts,
        total_params: total,
        active_params: active,
        precision: precision(config),
    })
}

/// A model's config.json as a bundle carries it, with what it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct BundledModel {
    pub id: String,
    pub revision: Option<String>,
    pub config_sha256: String,
    pub figures: Result<ModelFigures, ConfigError>,
    /// The checkpoint's byte total, from its model.safetensors.index.json
    /// (`metadata.total_size`) when the bundle carries one, or why that
    /// file states none.
    pub weights_total_bytes: Option<Result<u64, String>>,
}

impl BundledModel {
    /// Reads the config's bytes (JSON, then the formula).
    pub fn read(id: &str, revision: Option<String>, config_sha256: String, bytes: &[u8]) -> Self {
        let figures = match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => figures(&v),
            Err(e) => Err(ConfigError::Unsupported(format!(
                "a config.json that is not JSON ({e})"
            ))),
        };
        BundledModel {
            id: id.to_string(),
            revision,
            config_sha256,
            figures,
            weights_total_bytes: None,
        }
    }

    /// The byte total a model.safetensors.index.json states
    /// (`metadata.total_size`), or why it states none.
    pub fn index_total(bytes: &[u8]) -> Result<u64, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
        v.pointer("/metadata/total_size")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .ok_or_else(|| "no positive metadata.total_size".to_string())
    }
}

/// How far the formula's weight bytes may lie from a checkpoint's stated
/// byte total before the config is taken to describe another checkpoint:
/// the total also counts quantization scales and zero points (a few % for
/// 4-bit AWQ/GPTQ) and any tensor the formula leaves out (biases, norms).
pub const WEIGHTS_TOTAL_TOLERANCE: f64 = 0.10;

/// Each catalogue model as the config.json its row was flattened from
/// (`catalog/model_features.csv`, the WattGPU release: numbers as
/// numbers, TRUE/FALSE as booleans, a text config's Python dict as JSON),
/// with the parameter count its publisher states: (id, stated, config).
pub fn catalogue_configs() -> Vec<(String, f64, Value)> {
    let mut r = csv::ReaderBuilder::new()
        .delimiter(b';')
        .from_reader(include_str!("../catalog/model_features.csv").as_bytes());
    let header = r.headers().expect("the catalogue's header").clone();
    r.records()
        .map(|row| {
            let row = row.expect("a catalogue row");
            let mut m = serde_json::Map::new();
            for (k, v) in header.iter().zip(row.iter()) {
                let v = v.trim();
                if v.is_empty() || v == "N/A" {
                    continue;
                }
                let value = if let Ok(x) = v.parse::<f64>() {
                    serde_json::json!(x)
                } else if v == "TRUE" || v == "FALSE" {
                    Value::Bool(v == "TRUE")
                } else if k == "text_config" || k == "quantization_config" {
                    let text = v
                        .replace('\'', "\"")
                        .replace("True", "true")
                        .replace("False", "false")
                        .replace("None", "null");
                    serde_json::from_str(&text).unwrap_or(Value::Null)
                } else {
                    Value::String(v.to_string())
                };
                m.insert(k.to_string(), value);
            }
            let id = m["model_name"].as_str().unwrap_or_default().to_string();
            let stated = m["total_b_params"].as_f64().unwrap_or(0.0) * 1e9;
            (id, stated, Value::Object(m))
        })
        .collect()
}

#[cfg(test)]
mod tests;

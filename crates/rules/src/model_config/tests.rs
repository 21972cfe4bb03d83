//! The formula against hand-worked configs, and against every catalogue
//! model: each row of `catalog/model_features.csv` holds its config.json's
//! fields (as the WattGPU release flattened them) beside the parameter
//! count its publisher states.

use serde_json::{json, Value};

use super::*;

/// Llama-3.1-8B-Instruct's config.json (its shape fields).
fn llama_8b() -> Value {
    json!({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 128256, "tie_word_embeddings": false,
        "max_position_embeddings": 131072, "torch_dtype": "bfloat16"
    })
}

#[test]
fn llama_3_1_8b_by_hand() {
    // Embeddings and head, untied: 2 × 128,256 × 4,096 = 1,050,673,152.
    // A layer: Q, K, V 4,096 × (32 + 2 × 8) × 128 = 25,165,824, O 4,096 ×
    // 4,096 = 16,777,216; MLP 3 × 4,096 × 14,336 = 176,160,768; together
    // 218,103,808, × 32 = 6,979,321,856. Total 8,029,995,008 (Meta states
    // 8.03 B; the 266,240 norm weights are the difference).
    let f = figures(&llama_8b()).unwrap();
    assert_eq!(f.total_params, 8_029_995_008.0);
    assert_eq!(f.active_params, f.total_params);
    assert_eq!(
        (
            f.layers,
            f.hidden_size,
            f.attention_heads,
            f.kv_heads,
            f.head_dim
        ),
        (32, 4096, 32, 8, 128)
    );
    assert_eq!(f.context_length, Some(131_072));
    assert_eq!(
        f.precision,
        Precision {
            name: "bf16".into(),
            bits: 16.0
        }
    );
    // 16-bit weights: 2 bytes a parameter.
    assert_eq!(f.weight_bytes(), 16_059_990_016.0);
}

#[test]
fn a_mixture_of_experts_by_hand() {
    // Two layers, h = 8, 4 heads of 2 (KV 2), vocab 10, tied; 4 experts of
    // width 6, 2 a token, one shared expert of that width.
    // Embeddings 10 × 8 = 80. Attention 8 × (4 + 4) × 2 + 8 × 8 = 192.
    // An expert 3 × 8 × 6 = 144; router 8 × 4 = 32.
    // Total: 80 + 2 × (192 + 4 × 144 + 144 + 32) = 80 + 2 × 944 = 1,968.
    // Active: 80 + 2 × (192 + 2 × 144 + 144 + 32) = 80 + 2 × 656 = 1,392.
    let c = json!({
        "model_type": "toy_moe", "hidden_size": 8, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 2,
        "vocab_size": 10, "intermediate_size": 6, "num_local_experts": 4,
        "num_experts_per_tok": 2, "n_shared_experts": 1
    });
    let f = figures(&c).unwrap();
    assert_eq!((f.total_params, f.active_params), (1968.0, 1392.0));
    let e = f.experts.unwrap();
    assert_eq!(
        (e.routed, e.per_token, e.shared, e.intermediate_size),
        (4, 2, 1, 6)
    );
    // The first layer dense (first_k_dense_replace 1, MLP 3 × 8 × 6 = 144):
    // 80 + (192 + 144) + (192 + 4 × 144 + 144 + 32) = 1,360.
    let mut c = c;
    c["first_k_dense_replace"] = json!(1);
    assert_eq!(figures(&c).unwrap().total_params, 1360.0);
}

#[test]
fn precision_from_quantization_and_dtype() {
    let with = |q: Value| {
        let mut c = llama_8b();
        c["quantization_config"] = q;
        precision(&c)
    };
    assert_eq!(
        with(json!({"quant_method": "awq", "bits": 4})).name,
        "awq-int4"
    );
    assert_eq!(with(json!({"quant_method": "gptq", "bits": 8})).bits, 8.0);
    assert_eq!(with(json!({"quant_method": "fp8"})).name, "fp8");
    assert_eq!(with(json!({"quant_method": "mxfp4"})).name, "mxfp4");
    assert_eq!(
        with(json!({"quant_method": "bitsandbytes", "load_in_4bit": true})).name,
        "bnb-nf4"
    );
    assert_eq!(
        with(json!({"quant_method": "bitsandbytes", "load_in_8bit": true})).name,
        "bnb-int8"
    );
    let mut c = llama_8b();
    c["torch_dtype"] = json!("float16");
    assert_eq!(precision(&c).name, "fp16");
}

#[test]
fn what_the_formula_cannot_count_is_said() {
    let mut c = llama_8b();
    c["hybrid_override_pattern"] = json!("M-M*");
    assert!(matches!(figures(&c), Err(ConfigError::Unsupported(_))));
    let mut c = llama_8b();
    c.as_object_mut().unwrap().remove("hidden_size");
    assert_eq!(figures(&c), Err(ConfigError::Missing("hidden_size")));
    let mut c = llama_8b();
    c["num_hidden_layers"] = json!(-3);
    assert!(matches!(
        figures(&c),
        Err(ConfigError::Implausible {
            field: "num_hidden_layers",
            ..
        })
    ));
}

/// Catalogue figures the formula misses by more than 2 %, with why. Each
/// is a publisher's rounded or family figure, or a shape the formula
/// leaves out; the table in docs/model-figures.md has every row.
const APART: &[(&str, &str)] = &[
    (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "hybrid Mamba and attention layers: not counted (an error that says so)",
    ),
    (
        "nvidia/AceMath-7B-Instruct",
        "the catalogue rounds Qwen2.5-7B's 7.62 B to 7.0",
    ),
    (
        "nvidia/AceMath-1.5B-Instruct",
        "the catalogue rounds 1.54 B to 1.5",
    ),
    (
        "internlm/internlm2-7b",
        "the catalogue rounds 7.74 B to 7.0",
    ),
    (
        "tiiuae/Falcon3-Mamba-7B-Instruct",
        "the catalogue rounds 7.27 B to 7.0",
    ),
    (
        "ibm-granite/granite-3.0-2b-instruct",
        "the family's name: the model holds 2.53 B",
    ),
    (
        "ibm-granite/granite-3.0-8b-instruct",
        "the family's name: 8.17 B",
    ),
    (
        "ibm-granite/granite-3.1-3b-a800m-instruct",
        "the family's name: 3.30 B",
    ),
    (
        "nvidia/Llama-3.1-Minitron-4B-Width-Base",
        "the name says 4 B, the catalogue 5.0; the model holds 4.51 B",
    ),
    (
        "tiiuae/Falcon3-3B-Instruct",
        "the catalogue rounds 3.23 B to 3.0",
    ),
    (
        "mistralai/Mistral-Small-Instruct-2409",
        "the catalogue rounds 22.2 B to 24",
    ),
    ("Qwen/Qwen3-14B", "the catalogue rounds 14.8 B to 14"),
    (
        "nvidia/Mistral-NeMo-Minitron-8B-Instruct",
        "the catalogue rounds 8.41 B to 8.0",
    ),
    (
        "openai/gpt-oss-20b",
        "the catalogue says 22 B; the BF16 twin's row says 21 (the formula: 20.9)",
    ),
    (
        "google/gemma-3-27b-it",
        "the catalogue rounds 28.3 B (language model) to 27",
    ),
    (
        "google/gemma-3-12b-it",
        "the catalogue rounds 11.6 B (language model) to 12",
    ),
    (
        "allenai/OLMo-2-1124-7B-Instruct",
        "the catalogue rounds 7.30 B to 7.0",
    ),
    (
        "mlabonne/AlphaMonarch-7B",
        "a Mistral-7B merge, 7.24 B, catalogued as 7.0",
    ),
    (
        "mlabonne/NeuralBeagle14-7B",
        "a Mistral-7B merge, 7.24 B, catalogued as 7.0",
    ),
    (
        "berkeley-nest/Starling-LM-7B-alpha",
        "a Mistral-7B fine-tune, 7.24 B, catalogued as 7.0",
    ),
    ("microsoft/phi-2", "the catalogue rounds 2.78 B to 2.7"),
    (
        "EleutherAI/gpt-neox-20b",
        "the catalogue rounds 20.6 B to 20",
    ),
    (
        "deepseek-ai/deepseek-moe-16b-base",
        "the catalogue rounds 16.4 B to 16",
    ),
    (
        "nvidia/Nemotron-Mini-4B-Instruct",
        "the catalogue rounds 4.19 B to 4.0",
    ),
    (
        "allenai/OLMo-2-1124-13B-Instruct",
        "the catalogue rounds 13.7 B to 14",
    ),
];

#[test]
fn every_catalogue_model_within_2_percent_or_its_reason_named() {
    let (mut within, mut apart, mut unexplained) = (Vec::new(), Vec::new(), Vec::new());
    for (id, stated, c) in catalogue_configs() {
        let gap = figures(&c).map(|f| (f.total_params / stated - 1.0) * 100.0);
        match gap {
            Ok(g) if g.abs() <= 2.0 => within.push(id),
            other => {
                if !APART.iter().any(|(m, _)| *m == id) {
                    unexplained.push(format!("{id}: {other:?} % from the catalogue's {stated}"));
                }
                apart.push(id);
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "no reason named for: {unexplained:#?}"
    );
    assert_eq!(within.len() + apart.len(), 51);
    // Every reason still applies (a reason for a model now within 2 % is stale).
    let stale: Vec<&str> = APART
        .iter()
        .filter(|(m, _)| !apart.iter().any(|a| a == m))
        .map(|(m, _)| *m)
        .collect();
    assert!(
        stale.is_empty(),
        "within 2 % now, drop their reasons: {stale:?}"
    );
    // 51 rows: 26 within 2 %, 25 apart, each with its reason above.
    assert_eq!((within.len(), apart.len()), (26, 25), "{within:?}");
}

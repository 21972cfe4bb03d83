//! The ML.ENERGY Leaderboard v2 as published in `ml-energy/leaderboard-v2`,
//! folder `data/llm_text_generation/`: per task a `models.json` (nickname,
//! parameters) and one file per configuration,
//! `<task>/<GPU>/<org>/<model>/bs<N>+tp<T>+pp<P>.json`, holding `Model`,
//! `GPU`, `TP`, `PP`, `Energy/req (J)`, `Avg TPOT (s)`, `Token tput
//! (tok/s)`, `Avg Output Tokens`, `Avg BS (reqs)` and `Max BS (reqs)`.
//! v2 publishes no power and no ITL percentiles: those stay empty, and
//! energy per token is the file's energy per request ÷ its output tokens
//! (said so wherever it is shown).

use super::{
    load_file, Fields, PeerConfig, PeerError, PeerFolder, PeerRelease, PeerSource, SourceInfo,
};
use crate::catalog;

pub const INFO: SourceInfo = SourceInfo {
    origin: "peer:mlenergy-v2",
    slug: "mlenergy-v2",
    name: "ML.ENERGY Leaderboard v2",
    repository: "https://github.com/ml-energy/leaderboard-v2",
    path: "data/llm_text_generation",
    homepage: "https://ml.energy/leaderboard",
    licence: "Apache-2.0 (LICENSE) or non-commercial (docs/about.md): disputed",
    licence_statement: "The repository's LICENSE file is the Apache License 2.0; its docs/about.md, section License, says: \"This leaderboard is a research preview intended for non-commercial use only.\" Both statements are carried with the data; the operator decides whether to import it.",
    citation: "Jae-Won Chung, Jeff J. Ma, Ruofan Wu, Jiachen Liu, Oh Jun Kweon, Yuxuan Xia, Zhiyu Wu, Mosharaf Chowdhury. The ML.ENERGY Benchmark: Toward Automated Inference Energy Measurement and Optimization. NeurIPS Datasets and Benchmarks, 2025.",
    protocol: "ML.ENERGY Leaderboard v2: vLLM serving each task's request set (chat, code) at a batch-size cap, with tensor and pipeline parallelism; one published figure set per configuration (GPU energy per request, average time per output token, token throughput, output length, running batch). No power and no latency percentiles are published; energy per token is energy per request / output tokens.",
    load_variable: "Max BS (the batch-size cap)",
};

/// The publisher's GPU names (the files' `GPU` field) and the catalogue
/// GPU each is: the NVML names themselves.
pub const GPUS: [(&str, &str); 2] = [
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
];

/// `bs128+tp4+pp1.json` → (128, 4, 1).
fn setting(name: &str) -> Option<(u32, u32, u32)> {
    let stem = name.strip_suffix(".json")?;
    let mut parts = stem.split('+');
    let num = |p: Option<&str>, prefix: &str| p?.strip_prefix(prefix)?.parse::<u32>().ok();
    let out = (
        num(parts.next(), "bs")?,
        num(parts.next(), "tp")?,
        num(parts.next(), "pp")?,
    );
    parts.next().is_none().then_some(out)
}

pub fn read(folder: &mut dyn PeerFolder) -> Result<PeerRelease, PeerError> {
    let listed = folder.list().map_err(|e| PeerError {
        file: ".".into(),
        pointer: String::new(),
        rule: format!("cannot be listed: {e}"),
    })?;
    let mut files = Vec::new();
    let mut configs = Vec::new();
    let mut skipped = Vec::new();
    // Tasks: the folders holding a models.json.
    let tasks: Vec<String> = listed
        .iter()
        .filter_map(|p| p.strip_suffix("/models.json"))
        .filter(|t| !t.contains('/'))
        .map(str::to_string)
        .collect();
    if tasks.is_empty() {
        return Err(PeerError {
            file: "<task>/models.json".into(),
            pointer: String::new(),
            rule: "no task folder with a models.json: give the data/llm_text_generation folder"
                .into(),
        });
    }
    for task in &tasks {
        let path = format!("{task}/models.json");
        let models = super::models_json(folder, &path, &mut files)?;
        let prefix = format!("{task}/");
        for p in listed
            .iter()
            .filter(|p| p.starts_with(&prefix) && p.ends_with(".json"))
        {
            let rest = &p[prefix.len()..];
            if rest == "models.json" {
                continue;
            }
            let parts: Vec<&str> = rest.split('/').collect();
            let Some((bs, tp, pp)) = parts
                .last()
                .and_then(|n| setting(n))
                .filter(|_| parts.len() == 4)
            else {
                skipped.push(format!(
                    "{p}: not <GPU>/<org>/<model>/bs<N>+tp<T>+pp<P>.json"
                ));
                continue;
            };
            let doc = load_file(folder, p, &mut files)?;
            let at = Fields {
                file: p,
                pointer: String::new(),
                value: &doc,
            };
            let model_id = at.str("Model")?;
            // The file's `Model` is the model; its folder is the id, or the
            // id with a suffix (v2 has `Mixtral-8x22B-Instruct-v0.1-pp1/`).
            let (org, name) = model_id.split_once('/').unwrap_or(("", &model_id));
            let folder_ok = parts[1] == org
                && (parts[2] == name
                    || parts[2]
                        .strip_prefix(name)
                        .is_some_and(|s| s.starts_with('-')));
            if !folder_ok {
                return Err(at.err(
                    "Model",
                    format!("{model_id} where the path names {}/{}", parts[1], parts[2]),
                ));
            }
            let (nickname, params) = models.get(&model_id).cloned().ok_or_else(|| {
                at.err("Model", format!("{model_id} is not in {task}/models.json"))
            })?;
            let gpu = at.str("GPU")?;
            let gpu_name = GPUS
                .iter()
                .find(|(published, _)| *published == gpu)
                .map(|(_, n)| *n)
                .ok_or_else(|| {
                    at.err(
                        "GPU",
                        format!(
                            "unknown GPU {gpu:?}: this importer reads {}",
                            GPUS.iter().map(|g| g.0).collect::<Vec<_>>().join(", ")
                        ),
                    )
                })?;
            catalog::gpu_by_nvml_name(gpu_name).ok_or_else(|| {
                at.err(
                    "GPU",
                    format!("{gpu_name} is missing from the GPU catalogue"),
                )
            })?;
            let (t, p_) = (at.count("TP", 1, 64)?, at.count("PP", 1, 64)?);
            if (t, p_) != (tp, pp) {
                return Err(at.err(
                    "TP",
                    format!("TP {t} and PP {p_} where the file name says tp{tp}+pp{pp}"),
                ));
            }
            let max_bs = at.count("Max BS (reqs)", 1, 65_536)?;
            // Pipeline stages each hold a batch: v2's pp2 files say
            // bs1024 with Max BS 2048.
            if max_bs != bs && max_bs != bs * pp {
                return Err(at.err(
                    "Max BS (reqs)",
                    format!(
                        "{max_bs} where the file name says bs{bs} (x pp{pp} = {})",
                        bs * pp
                    ),
                ));
            }
            let per_request = at.num("Energy/req (J)", f64::MIN_POSITIVE, 1e7, "J")?;
            let tokens = at.num("Avg Output Tokens", 1.0, 1e6, "tokens")?;
            let per_token = per_request / tokens;
            if !(1e-4..=100.0).contains(&per_token) {
                return Err(at.err(
                    "Energy/req (J)",
                    format!("out of range: {per_token} J per output token (energy per request / output tokens) is outside [0.0001, 100] J"),
                ));
            }
            let tpot_s = at.num("Avg TPOT (s)", f64::MIN_POSITIVE, 60.0, "s")?;
            let avg_batch = at.num("Avg BS (reqs)", f64::MIN_POSITIVE, 65_536.0, "requests")?;
            if avg_batch > f64::from(max_bs) * 1.0001 {
                return Err(at.err(
                    "Avg BS (reqs)",
                    format!("{avg_batch} is above Max BS {max_bs}"),
                ));
            }
            configs.push(PeerConfig {
                file: p.clone(),
                pointer: String::new(),
                task: task.clone(),
                task_name: task.clone(),
                model_id,
                nickname,
                architecture: String::new(),
                total_params_billions: Some(params),
                activated_params_billions: None,
                weight_precision: String::new(),
                gpu_model: gpu,
                gpu_name: gpu_name.into(),
                num_gpus: tp * pp,
                max_num_seqs: bs,
                tensor_parallel: tp,
                pipeline_parallel: pp,
                expert_parallel: 1,
                data_parallel: 1,
                avg_batch_size: Some(avg_batch),
                avg_power_watts: None,
                energy_per_token_joules: per_token,
                energy_per_request_joules: per_request,
                output_throughput_tokens_per_sec: at.num(
                    "Token tput (tok/s)",
                    f64::MIN_POSITIVE,
                    1e7,
                    "tokens/s",
                )?,
                avg_output_len: tokens,
                mean_itl_ms: Some(tpot_s * 1000.0),
                median_itl_ms: None,
                p90_itl_ms: None,
                p95_itl_ms: None,
                p99_itl_ms: None,
            });
        }
    }
    for p in &listed {
        let top = p.split('/').next().unwrap_or_default();
        if !tasks.iter().any(|t| t == top) {
            skipped.push(format!("{p}: outside the task folders"));
        }
    }
    let mut release = PeerRelease {
        source: PeerSource::MlEnergyV2,
        label: String::new(),
        files,
        configs,
        skipped,
        statements: Vec::new(),
    };
    // v2 states no date or version: its files' digest names the release.
    release.label = format!("files {}", &release.files_sha256()[..12]);
    Ok(release)
}

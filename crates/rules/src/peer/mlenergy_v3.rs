//! The ML.ENERGY Leaderboard v3 as published in `ml-energy/leaderboard`,
//! folder `public/data/`: `index.json` (the tasks by architecture, the
//! models, `last_updated`) and `tasks/<task>.json` (`configurations[]`,
//! one per model x GPU x GPU count x `max_num_seqs` x precision x
//! parallelism, each a single published figure set). Only the LLM text
//! generation tasks (`architectures.llm`) are read: the multimodal and
//! diffusion tasks measure other things (per image, per video) and are
//! listed as skipped.

use std::collections::BTreeSet;

use super::{
    check_config, load_file, Fields, PeerConfig, PeerError, PeerFolder, PeerRelease, PeerSource,
    SourceInfo,
};
use crate::catalog;

pub const INFO: SourceInfo = SourceInfo {
    origin: "peer:mlenergy-v3",
    slug: "mlenergy-v3",
    name: "ML.ENERGY Leaderboard v3",
    repository: "https://github.com/ml-energy/leaderboard",
    path: "public/data",
    homepage: "https://ml.energy/leaderboard",
    licence: "Apache-2.0",
    licence_statement: "The ML.ENERGY Benchmark V3 dataset card (github.com/ml-energy/data, data_publishing/DATASET_CARD.md, section License) states Apache-2.0, with the licence text in data_publishing/LICENSE; the leaderboard site's footer states Apache 2.0. The leaderboard repository itself ships no licence file.",
    citation: "Jae-Won Chung, Jeff J. Ma, Ruofan Wu, Jiachen Liu, Oh Jun Kweon, Yuxuan Xia, Zhiyu Wu, Mosharaf Chowdhury. The ML.ENERGY Benchmark: Toward Automated Inference Energy Measurement and Optimization. NeurIPS Datasets and Benchmarks, 2025.",
    protocol: "ML.ENERGY Benchmark v3: vLLM serving a fixed request set per task (GPQA Diamond, LM Arena chat, Sourcegraph fill-in-the-middle) at a batch-size cap (max_num_seqs); one published figure set per configuration (GPU energy per output token and per request, average GPU power over all GPUs used, output throughput, inter-token latency percentiles).",
    load_variable: "max_num_seqs (the batch-size cap)",
};

/// The publisher's GPU names and the catalogue GPU each is read as. The
/// v3 files say only "H100" and "B200"; the ML.ENERGY v2 files name the
/// same H100 by its NVML name, `H100 80GB HBM3` (the SXM board), and the
/// catalogue has one B200.
pub const GPUS: [(&str, &str); 2] = [("H100", "NVIDIA H100 80GB HBM3"), ("B200", "NVIDIA B200")];

pub fn read(load: &mut dyn PeerFolder) -> Result<PeerRelease, PeerError> {
    let mut files = Vec::new();
    let index = load_file(load, "index.json", &mut files)?;
    let top = Fields {
        file: "index.json",
        pointer: String::new(),
        value: &index,
    };
    let label = top.str("last_updated")?;
    let arch = index
        .get("architectures")
        .and_then(|a| a.as_object())
        .ok_or_else(|| top.err("architectures", "missing (an object of task lists)"))?;
    let task_list = |name: &str| -> Result<Vec<String>, PeerError> {
        match arch.get(name) {
            None => Ok(Vec::new()),
            Some(v) => v
                .as_array()
                .ok_or_else(|| {
                    top.err(
                        &format!("architectures/{name}"),
                        "a list of tasks is wanted",
                    )
                })?
                .iter()
                .map(|t| {
                    t.as_str().map(str::to_string).ok_or_else(|| {
                        top.err(&format!("architectures/{name}"), "task names are strings")
                    })
                })
                .collect(),
        }
    };
    let llm = task_list("llm")?;
    if llm.is_empty() {
        return Err(top.err("architectures/llm", "missing or empty: no LLM task to read"));
    }
    let models: BTreeSet<&str> = index
        .get("models")
        .and_then(|m| m.as_object())
        .ok_or_else(|| top.err("models", "missing (an object keyed by model id)"))?
        .keys()
        .map(String::as_str)
        .collect();
    let mut skipped = Vec::new();
    for (name, _) in arch.iter().filter(|(k, _)| k.as_str() != "llm") {
        let tasks = task_list(name)?;
        if !tasks.is_empty() {
            skipped.push(format!(
                "{name} tasks not read ({}): they measure per image, video or multimodal request, not LLM text generation",
                tasks.join(", ")
            ));
        }
    }

    let mut configs = Vec::new();
    for task in &llm {
        if task.contains(['/', '\\']) || task.starts_with('.') {
            return Err(top.err(
                "architectures/llm",
                format!("task name {task:?} is not a plain file name"),
            ));
        }
        let path = format!("tasks/{task}.json");
        let doc = load_file(load, &path, &mut files)?;
        let head = Fields {
            file: &path,
            pointer: String::new(),
            value: &doc,
        };
        let stated = head.str("task")?;
        if &stated != task {
            return Err(head.err(
                "task",
                format!("{stated:?} where index.json lists {task:?}"),
            ));
        }
        let task_name = head.str("task_display_name")?;
        let list = doc
            .get("configurations")
            .and_then(|c| c.as_array())
            .ok_or_else(|| head.err("configurations", "missing (a list)"))?;
        for (i, value) in list.iter().enumerate() {
            let at = Fields {
                file: &path,
                pointer: format!("/configurations/{i}"),
                value,
            };
            let c = config(&at, task, &task_name)?;
            if !models.contains(c.model_id.as_str()) {
                return Err(at.err(
                    "model_id",
                    format!("{} is not among index.json's models", c.model_id),
                ));
            }
            configs.push(c);
        }
    }
    Ok(PeerRelease {
        source: PeerSource::MlEnergyV3,
        label,
        files,
        configs,
        skipped,
        statements: Vec::new(),
    })
}

fn config(at: &Fields<'_>, task: &str, task_name: &str) -> Result<PeerConfig, PeerError> {
    let pos = f64::MIN_POSITIVE;
    let gpu_model = at.str("gpu_model")?;
    let gpu_name = GPUS
        .iter()
        .find(|(published, _)| *published == gpu_model)
        .map(|(_, name)| *name)
        .ok_or_else(|| {
            at.err(
                "gpu_model",
                format!(
                    "unknown GPU {gpu_model:?}: this importer reads {} (add the GPU to the catalogue and to mlenergy_v3::GPUS, with its source)",
                    GPUS.iter().map(|g| g.0).collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
    let tdp_w = catalog::gpu_by_nvml_name(gpu_name)
        .map(|g| g.tdp_w)
        .ok_or_else(|| {
            at.err(
                "gpu_model",
                format!("{gpu_name} is missing from the GPU catalogue"),
            )
        })?;
    let c = PeerConfig {
        file: at.file.into(),
        pointer: at.pointer.clone(),
        task: task.into(),
        task_name: task_name.into(),
        model_id: at.str("model_id")?,
        nickname: at.str("nickname")?,
        architecture: at.str("architecture")?,
        total_params_billions: Some(at.num(
            "total_params_billions",
            pos,
            100_000.0,
            "B parameters",
        )?),
        activated_params_billions: Some(at.num(
            "activated_params_billions",
            pos,
            100_000.0,
            "B parameters",
        )?),
        weight_precision: at.str("weight_precision")?,
        gpu_model,
        gpu_name: gpu_name.into(),
        num_gpus: at.count("num_gpus", 1, 64)?,
        max_num_seqs: at.count("max_num_seqs", 1, 65_536)?,
        tensor_parallel: at.count("tensor_parallel", 1, 64)?,
        pipeline_parallel: 1,
        expert_parallel: at.count("expert_parallel", 1, 64)?,
        data_parallel: at.count("data_parallel", 1, 64)?,
        avg_batch_size: Some(at.num("avg_batch_size", pos, 65_536.0, "requests")?),
        avg_power_watts: Some(at.num("avg_power_watts", pos, 100_000.0, "W")?),
        // 0.1 mJ .. 100 J per token: a figure in mJ or kJ falls outside.
        energy_per_token_joules: at.num("energy_per_token_joules", 1e-4, 100.0, "J")?,
        energy_per_request_joules: at.num("energy_per_request_joules", pos, 1e7, "J")?,
        output_throughput_tokens_per_sec: at.num(
            "output_throughput_tokens_per_sec",
            pos,
            1e7,
            "tokens/s",
        )?,
        avg_output_len: at.num("avg_output_len", 1.0, 1e6, "tokens")?,
        mean_itl_ms: None,
        // 60 s between two tokens is a stalled run, or seconds read as ms.
        median_itl_ms: Some(at.num("median_itl_ms", pos, 60_000.0, "ms")?),
        p90_itl_ms: Some(at.num("p90_itl_ms", pos, 60_000.0, "ms")?),
        p95_itl_ms: Some(at.num("p95_itl_ms", pos, 60_000.0, "ms")?),
        p99_itl_ms: Some(at.num("p99_itl_ms", pos, 60_000.0, "ms")?),
    };
    check_config(&c, tdp_w, at)?;
    Ok(c)
}

//! The first ML.ENERGY LLM leaderboard (2023, "legacy"), as kept in
//! `ml-energy/leaderboard-v2`, folder `data/legacy/`: `schema.yaml` (the
//! GPUs and tasks), `models.json` (nickname, parameters) and one
//! `<GPU>_<task>_benchmark.csv` per GPU × task with the columns
//! `model,throughput,response_length,latency,energy` (tokens/s, tokens per
//! response, s per response, J per response). The protocol, from the
//! leaderboard's own LEADERBOARD.md of the time: batch size 1, FP16,
//! PyTorch through FastChat, on one GPU (models of at most 13 B parameters;
//! distributed inference was "upcoming"). Energy per token is energy per
//! response ÷ response length, said so wherever it is shown.
//!
//! The files name a GPU only by its family ("A100", "V100"); the catalogue
//! has several boards of each, with TDPs from 250 to 400 W. The operator
//! states which board each family was (`--gpu A100=NVIDIA A100-SXM4-40GB`);
//! a statement becomes part of the release's identity and its label, so
//! another statement is another release, never a silent relabelling. A
//! family the catalogue holds once (A40) needs none. The protocol ran each
//! model on one GPU in FP16, so a board whose memory cannot hold a row's
//! model's weights (a 13 B model needs 26 GB; a V100 16GB board has 16)
//! cannot be the board measured, and is refused by file and row.

use std::collections::{BTreeMap, BTreeSet};

use super::{PeerConfig, PeerError, PeerFolder, PeerRelease, PeerSource, SourceInfo};
use crate::catalog;
use crate::memory_fit::BYTES_PER_PARAM;

pub const INFO: SourceInfo = SourceInfo {
    origin: "peer:mlenergy-v1",
    slug: "mlenergy-v1",
    name: "ML.ENERGY Leaderboard v1 (2023, legacy)",
    repository: "https://github.com/ml-energy/leaderboard-v2",
    path: "data/legacy",
    homepage: "https://ml.energy/leaderboard",
    licence: "Apache-2.0 (LICENSE) or non-commercial (LEADERBOARD.md): disputed",
    licence_statement: "The repository's LICENSE file is the Apache License 2.0; the v1 leaderboard's LEADERBOARD.md, section License, said: \"This leaderboard is a research preview intended for non-commercial use only.\" Both statements are carried with the data; the operator decides whether to import it.",
    citation: "ML.ENERGY Leaderboard (legacy LLM leaderboard, 2023), data/legacy of github.com/ml-energy/leaderboard-v2; GPU energy measured with Zeus (Jie You, Jae-Won Chung, Mosharaf Chowdhury. Zeus: Understanding and Optimizing GPU Energy Consumption of DNN Training. NSDI 2023).",
    protocol: "ML.ENERGY Leaderboard v1 (2023): each model answers about 3,000 ShareGPT prompts one at a time (batch size 1, FP16, PyTorch 2.0.1 through FastChat, temperature 0.7) on one GPU, its energy measured with Zeus; published per model × task × GPU: average GPU energy per response, tokens per second, seconds per response and response length. No power, latency percentiles or GPU board are published; energy per token is energy per response / response length.",
    load_variable: "none (batch size 1 throughout)",
};

/// The file's columns, in order.
const COLUMNS: [&str; 5] = [
    "model",
    "throughput",
    "response_length",
    "latency",
    "energy",
];

/// The catalogue boards a published family name can be.
pub fn candidates(family: &str) -> Vec<&'static str> {
    catalog::gpus()
        .iter()
        .filter(|g| {
            g.nvml_name
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == family)
        })
        .map(|g| g.nvml_name.as_str())
        .collect()
}

/// The board each family is read as: the operator's statement, else the
/// catalogue's only board of that family.
fn board(
    family: &str,
    stated: &BTreeMap<String, String>,
    file: &str,
) -> Result<&'static str, PeerError> {
    let err = |rule: String| PeerError {
        file: file.into(),
        pointer: String::new(),
        rule,
    };
    let found = candidates(family);
    match stated.get(family) {
        Some(name) => found.iter().copied().find(|c| c == name).ok_or_else(|| {
            err(format!(
                "--gpu {family}={name}: not a catalogue {family} (the catalogue's: {})",
                found.join(", ")
            ))
        }),
        None if found.len() == 1 => Ok(found[0]),
        None if found.is_empty() => Err(err(format!(
            "the GPU {family:?} is not in the catalogue (add it with `wattcounts admin gpu add`, with its sources)"
        ))),
        None => Err(err(format!(
            "the files name the GPU only as {family:?}, which the catalogue holds as {} boards with different TDPs; state which one was measured: --gpu {family}=<one of: {}>",
            found.len(),
            found.join(", ")
        ))),
    }
}

/// The board a family's files are read as, with what the row checks need
/// of it.
struct Board<'a> {
    /// As the files name it (`V100`).
    family: &'a str,
    /// The catalogue board (`Tesla V100-SXM2-32GB`).
    name: &'static str,
    tdp_w: f64,
    memory_gb: f64,
    /// The operator's statement, not the catalogue's only board.
    stated: bool,
}

impl Board<'_> {
    /// Why this board cannot have held `model_id`'s FP16 weights (v1 ran
    /// every model on one GPU), or None when it can. The weights alone are
    /// counted, in the catalogue's decimal GB as `memory_fit` counts them:
    /// any runtime reserve or KV cache only adds to what is needed.
    fn cannot_hold(&self, model_id: &str, params_b: f64) -> Option<String> {
        let per_param = BYTES_PER_PARAM;
        let needed = params_b * 1e9 * per_param;
        // A board added without its memory cannot refute anything.
        let known = self.memory_gb > 0.0;
        if !known || needed <= self.memory_gb * 1e9 {
            return None;
        }
        let said = if self.stated {
            format!(
                "--gpu {}={}, the operator's statement",
                self.family, self.name
            )
        } else {
            format!("the catalogue's only {}", self.family)
        };
        Some(format!(
            "{model_id} ({params_b} B parameters) needs {needed:.0} bytes ({:.1} GB) of FP16 weights ({params_b} B x {per_param} bytes), more than the {} GB of the {} ({said}): v1 ran each model on one GPU, so this board cannot be the one measured",
            needed / 1e9,
            self.memory_gb,
            self.name
        ))
    }
}

/// `schema.yaml`'s two lists.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Schema {
    gpu: Vec<String>,
    task: Vec<String>,
}

/// Reads the legacy folder; `stated` maps a published family ("A100") to
/// the catalogue board the operator says it was.
pub fn read(
    folder: &mut dyn PeerFolder,
    stated: &BTreeMap<String, String>,
) -> Result<PeerRelease, PeerError> {
    let listed = folder.list().map_err(|e| PeerError {
        file: ".".into(),
        pointer: String::new(),
        rule: format!("cannot be listed: {e}"),
    })?;
    let mut files = Vec::new();
    let schema_bytes = super::read_file(folder, "schema.yaml", &mut files)?;
    let schema: Schema = serde_yaml_ng::from_slice(&schema_bytes).map_err(|e| PeerError {
        file: "schema.yaml".into(),
        pointer: String::new(),
        rule: format!("the lists gpu: [...] and task: [...] are wanted: {e}"),
    })?;
    let models = super::models_json(folder, "models.json", &mut files)?;
    for family in stated.keys() {
        if !schema.gpu.contains(family) {
            return Err(PeerError {
                file: "schema.yaml".into(),
                pointer: "/gpu".into(),
                rule: format!(
                    "--gpu {family}=…: the files name no GPU {family:?} (they name {})",
                    schema.gpu.join(", ")
                ),
            });
        }
    }

    let mut configs = Vec::new();
    let mut read_paths = BTreeSet::new();
    let mut boards = Vec::new();
    for family in &schema.gpu {
        let mut board_of_family = None;
        for task in &schema.task {
            let path = format!("{family}_{task}_benchmark.csv");
            // As the leaderboard's own reader: a GPU × task not measured
            // has no file.
            if !listed.contains(&path) {
                continue;
            }
            let gpu_name = match board_of_family {
                Some(b) => b,
                None => {
                    let b = board(family, stated, &path)?;
                    boards.push((family.clone(), b, stated.contains_key(family)));
                    board_of_family = Some(b);
                    b
                }
            };
            let spec = catalog::gpu_by_nvml_name(gpu_name).expect("a candidate is a catalogue GPU");
            let gpu = Board {
                family: family.as_str(),
                name: gpu_name,
                tdp_w: spec.tdp_w,
                memory_gb: spec.memory_gb,
                stated: stated.contains_key(family),
            };
            let bytes = super::read_file(folder, &path, &mut files)?;
            read_paths.insert(path.clone());
            read_csv(&path, &bytes, task, &gpu, &models, &mut configs)?;
        }
    }
    if configs.is_empty() {
        return Err(PeerError {
            file: "<GPU>_<task>_benchmark.csv".into(),
            pointer: String::new(),
            rule:
                "no benchmark file for any GPU × task of schema.yaml: give the data/legacy folder"
                    .into(),
        });
    }
    let mut skipped = Vec::new();
    for p in &listed {
        if read_paths.contains(p) || p == "schema.yaml" || p == "models.json" {
            continue;
        }
        skipped.push(if p == "score.csv" {
            "score.csv: NLP accuracy (ARC, HellaSwag, TruthfulQA), not an energy figure".to_string()
        } else {
            format!("{p}: not a benchmark file of schema.yaml's GPUs × tasks")
        });
    }
    let statements: Vec<String> = boards
        .iter()
        .filter(|(_, _, said)| *said)
        .map(|(family, board, _)| format!("{family} = {board} (the operator's statement)"))
        .collect();
    let mut release = PeerRelease {
        source: PeerSource::MlEnergyV1,
        label: String::new(),
        files,
        configs,
        skipped,
        statements,
    };
    // v1 states no date or version: its files' digest (with the operator's
    // statements) names the release, and the label says how each GPU is read.
    let gpus: Vec<String> = boards
        .iter()
        .map(|(family, board, said)| {
            format!(
                "{family} read as {board}{}",
                if *said { " (operator's statement)" } else { "" }
            )
        })
        .collect();
    release.label = format!(
        "files {}; {}",
        &release.files_sha256()[..12],
        gpus.join(", ")
    );
    Ok(release)
}

fn read_csv(
    path: &str,
    bytes: &[u8],
    task: &str,
    gpu: &Board<'_>,
    models: &BTreeMap<String, (String, f64)>,
    configs: &mut Vec<PeerConfig>,
) -> Result<(), PeerError> {
    let at = |row: usize, column: &str, rule: String| PeerError {
        file: path.into(),
        pointer: if column.is_empty() {
            format!("row {row}")
        } else {
            format!("row {row} column {column}")
        },
        rule,
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| at(1, "", format!("not CSV: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    if header != COLUMNS {
        return Err(at(
            1,
            "",
            format!(
                "the header {} is wanted, found {}",
                COLUMNS.join(","),
                header.join(",")
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, record) in reader.records().enumerate() {
        // Row 1 is the header.
        let row = i + 2;
        let record = record.map_err(|e| at(row, "", format!("not CSV: {e}")))?;
        if record.len() != COLUMNS.len() {
            return Err(at(
                row,
                "",
                format!(
                    "{} cells where the header has {}",
                    record.len(),
                    COLUMNS.len()
                ),
            ));
        }
        let num = |col: usize, lo: f64, hi: f64, unit: &str| -> Result<f64, PeerError> {
            let cell = record[col].trim();
            let x: f64 = cell.parse().map_err(|_| {
                at(
                    row,
                    COLUMNS[col],
                    format!("a number is wanted, found {cell:?}"),
                )
            })?;
            if !x.is_finite() || x < lo || x > hi {
                return Err(at(
                    row,
                    COLUMNS[col],
                    format!("out of range: {x} {unit} is outside [{lo}, {hi}] {unit}"),
                ));
            }
            Ok(x)
        };
        let model_id = record[0].trim().to_string();
        let Some((nickname, params)) = models.get(&model_id) else {
            return Err(at(
                row,
                "model",
                format!("{model_id:?} is not in models.json"),
            ));
        };
        if !seen.insert(model_id.clone()) {
            return Err(at(
                row,
                "model",
                format!("{model_id} appears twice in the file"),
            ));
        }
        if let Some(why) = gpu.cannot_hold(&model_id, *params) {
            return Err(at(row, "model", why));
        }
        let pos = f64::MIN_POSITIVE;
        let throughput = num(1, pos, 1e5, "tokens/s")?;
        let length = num(2, 1.0, 1e5, "tokens")?;
        let latency = num(3, pos, 3600.0, "s")?;
        let energy = num(4, pos, 1e6, "J")?;
        let per_token = energy / length;
        if !(1e-4..=100.0).contains(&per_token) {
            return Err(at(
                row,
                "energy",
                format!("out of range: {per_token} J per token (energy / response_length) is outside [0.0001, 100] J"),
            ));
        }
        // A unit slip (kJ for J, ms for s) shows as a power no single GPU
        // draws: energy per response / seconds per response.
        let watts = energy / latency;
        if watts > 1.2 * gpu.tdp_w {
            return Err(at(
                row,
                "energy",
                format!(
                    "out of range: {energy} J over {latency} s per response is {watts:.1} W, above 1.2 x the {} W TDP of the {}",
                    gpu.tdp_w, gpu.name
                ),
            ));
        }
        configs.push(PeerConfig {
            file: path.into(),
            pointer: format!("row {row}"),
            task: task.into(),
            task_name: task.into(),
            model_id,
            nickname: nickname.clone(),
            architecture: String::new(),
            total_params_billions: Some(*params),
            activated_params_billions: None,
            weight_precision: "fp16".into(),
            gpu_model: gpu.family.into(),
            gpu_name: gpu.name.into(),
            num_gpus: 1,
            max_num_seqs: 1,
            tensor_parallel: 1,
            pipeline_parallel: 1,
            expert_parallel: 1,
            data_parallel: 1,
            avg_batch_size: Some(1.0),
            avg_power_watts: None,
            energy_per_token_joules: per_token,
            energy_per_request_joules: energy,
            output_throughput_tokens_per_sec: throughput,
            avg_output_len: length,
            mean_itl_ms: None,
            median_itl_ms: None,
            p90_itl_ms: None,
            p95_itl_ms: None,
            p99_itl_ms: None,
        });
    }
    Ok(())
}

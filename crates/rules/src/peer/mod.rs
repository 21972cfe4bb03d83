//! Published measurements of other benchmarks, read from their own files
//! (issue #39): what a peer release is, the figures of one published
//! configuration, and the rules a figure must meet before it is stored.
//! A peer's figures are its own protocol's: they are stored and shown as
//! an origin of their own (`peer:<name>`) and never join a Watt Counts
//! group. Reading goes through a [`PeerFolder`] (list, path → bytes), so
//! this module opens no file: the service reads a folder, the tests and
//! the demo pass bytes.

pub mod mlenergy_v1;
pub mod mlenergy_v2;
pub mod mlenergy_v3;

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;

/// A published dataset this service can import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PeerSource {
    MlEnergyV3,
    MlEnergyV2,
    MlEnergyV1,
}

/// The operator's statements: a published GPU name → the catalogue GPU
/// (its NVML name) it was.
pub type GpuStatements = std::collections::BTreeMap<String, String>;

/// Where a release's files are read from.
pub trait PeerFolder {
    /// A file's bytes, by its path relative to the published folder.
    fn read(&mut self, path: &str) -> Result<Vec<u8>, String>;
    /// Every file's path ('/'-separated, relative), sorted.
    fn list(&mut self) -> Result<Vec<String>, String>;
}

/// A published folder held in memory (the shipped copy, the tests').
pub struct FilesInMemory(pub std::collections::BTreeMap<String, Vec<u8>>);

impl PeerFolder for FilesInMemory {
    fn read(&mut self, path: &str) -> Result<Vec<u8>, String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| "no such file".to_string())
    }
    fn list(&mut self) -> Result<Vec<String>, String> {
        Ok(self.0.keys().cloned().collect())
    }
}

/// What readers are told about a peer source: where it is published, under
/// which terms, and what its protocol measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceInfo {
    /// The origin its rows carry, e.g. `peer:mlenergy-v3`.
    pub origin: &'static str,
    /// The name used in commands and URLs (`mlenergy-v3`).
    pub slug: &'static str,
    pub name: &'static str,
    pub repository: &'static str,
    /// The folder of the repository the importer reads.
    pub path: &'static str,
    /// Where readers browse it.
    pub homepage: &'static str,
    /// SPDX id of the terms the publisher states.
    pub licence: &'static str,
    /// Where those terms are stated, in the publisher's words.
    pub licence_statement: &'static str,
    pub citation: &'static str,
    /// What one configuration is, in the publisher's protocol.
    pub protocol: &'static str,
    /// The variable the publisher sweeps (the load axis).
    pub load_variable: &'static str,
}

impl PeerSource {
    pub const ALL: [PeerSource; 3] = [
        PeerSource::MlEnergyV3,
        PeerSource::MlEnergyV2,
        PeerSource::MlEnergyV1,
    ];

    pub fn info(self) -> &'static SourceInfo {
        match self {
            PeerSource::MlEnergyV3 => &mlenergy_v3::INFO,
            PeerSource::MlEnergyV2 => &mlenergy_v2::INFO,
            PeerSource::MlEnergyV1 => &mlenergy_v1::INFO,
        }
    }

    pub fn origin(self) -> &'static str {
        self.info().origin
    }

    /// By origin (`peer:mlenergy-v3`) or slug (`mlenergy-v3`).
    pub fn parse(s: &str) -> Option<PeerSource> {
        PeerSource::ALL
            .into_iter()
            .find(|p| p.info().origin == s || p.info().slug == s)
    }

    /// Reads a release from its published folder.
    pub fn read(self, folder: &mut dyn PeerFolder) -> Result<PeerRelease, PeerError> {
        self.read_stated(folder, &GpuStatements::new())
    }

    /// Reads a release, with the operator's statements of which catalogue
    /// GPU a published GPU name is (only v1 names GPUs by family alone).
    pub fn read_stated(
        self,
        folder: &mut dyn PeerFolder,
        stated: &GpuStatements,
    ) -> Result<PeerRelease, PeerError> {
        if self != PeerSource::MlEnergyV1 && !stated.is_empty() {
            return Err(PeerError {
                file: "--gpu".into(),
                pointer: String::new(),
                rule: format!(
                    "{} names each GPU itself; --gpu is for mlenergy-v1, whose files name only the family",
                    self.info().slug
                ),
            });
        }
        match self {
            PeerSource::MlEnergyV3 => mlenergy_v3::read(folder),
            PeerSource::MlEnergyV2 => mlenergy_v2::read(folder),
            PeerSource::MlEnergyV1 => mlenergy_v1::read(folder, stated),
        }
    }
}

/// One file read, with its digest, so a reader can check the import
/// against the publisher's own copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerFile {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

/// One published configuration, with the publisher's figures as published
/// (units in the field names). `file` and `pointer` say where it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PeerConfig {
    pub file: String,
    /// JSON pointer of the configuration in `file`.
    pub pointer: String,
    pub task: String,
    pub task_name: String,
    pub model_id: String,
    pub nickname: String,
    /// Empty where the publisher does not state it (v2).
    pub architecture: String,
    pub total_params_billions: Option<f64>,
    pub activated_params_billions: Option<f64>,
    /// Empty where the publisher does not state it (v2).
    pub weight_precision: String,
    /// The GPU as the publisher names it (`H100`).
    pub gpu_model: String,
    /// The catalogue GPU it is read as (`NVIDIA H100 80GB HBM3`).
    pub gpu_name: String,
    pub num_gpus: u32,
    /// The batch-size setting (vLLM `max_num_seqs`): the load variable.
    pub max_num_seqs: u32,
    pub tensor_parallel: u32,
    pub pipeline_parallel: u32,
    pub expert_parallel: u32,
    pub data_parallel: u32,
    pub avg_batch_size: Option<f64>,
    /// Over all `num_gpus` GPUs; v2 publishes none.
    pub avg_power_watts: Option<f64>,
    /// v2: its energy per request / its output tokens.
    pub energy_per_token_joules: f64,
    pub energy_per_request_joules: f64,
    pub output_throughput_tokens_per_sec: f64,
    pub avg_output_len: f64,
    /// v2's average time per output token; v3 publishes percentiles.
    pub mean_itl_ms: Option<f64>,
    pub median_itl_ms: Option<f64>,
    pub p90_itl_ms: Option<f64>,
    pub p95_itl_ms: Option<f64>,
    pub p99_itl_ms: Option<f64>,
}

/// Everything one import read.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRelease {
    pub source: PeerSource,
    /// The release's own date or version, as the files state it.
    pub label: String,
    pub files: Vec<PeerFile>,
    pub configs: Vec<PeerConfig>,
    /// What the files hold that this importer does not read, and why.
    pub skipped: Vec<String>,
    /// What the operator stated that the files do not say (v1's GPU
    /// boards), part of the release's identity.
    pub statements: Vec<String>,
}

impl PeerRelease {
    /// The release's identity: SHA-256 over `path\tsha256\n` of every file
    /// read, sorted by path, then `statement\t<text>\n` of each operator's
    /// statement. The same files (and statements) give the same digest, so
    /// a re-import is recognised whatever the folder's name or the date,
    /// and the same files read under another statement are another release.
    pub fn files_sha256(&self) -> String {
        digest_of(&self.files, &self.statements)
    }
}

impl PeerRelease {
    /// What a release holds, counted once at import (a release never
    /// changes), so a page's filters cost one row, not a scan.
    pub fn facets(&self) -> PeerFacets {
        use std::collections::BTreeMap;
        let count = |key: &dyn Fn(&PeerConfig) -> (String, String)| {
            let mut m: BTreeMap<String, (String, u64)> = BTreeMap::new();
            for c in &self.configs {
                let (value, label) = key(c);
                m.entry(value).or_insert((label, 0)).1 += 1;
            }
            m.into_iter()
                .map(|(value, (label, n))| Facet { value, label, n })
                .collect()
        };
        PeerFacets {
            tasks: count(&|c| (c.task.clone(), c.task_name.clone())),
            gpus: count(&|c| (c.gpu_model.clone(), c.gpu_name.clone())),
            models: count(&|c| (c.model_id.clone(), c.nickname.clone())),
        }
    }
}

/// One value of a filter, its label and how many configurations have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Facet {
    pub value: String,
    pub label: String,
    pub n: u64,
}

/// A release's tasks, GPUs (as published, labelled with the catalogue
/// name) and models.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PeerFacets {
    pub tasks: Vec<Facet>,
    pub gpus: Vec<Facet>,
    pub models: Vec<Facet>,
}

/// What the operator states about an import, beside what the files say.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerProvenance {
    /// The commit or date of the files, as the operator states it.
    pub source_ref: String,
    pub retrieved_at: chrono::DateTime<chrono::Utc>,
    pub imported_at: chrono::DateTime<chrono::Utc>,
    /// The licence's text, as shipped beside the files.
    pub licence_text: String,
    pub actor: String,
}

/// A stored release, as readers are told of it.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerReleaseRecord {
    pub id: i64,
    pub source: PeerSource,
    pub label: String,
    pub files_sha256: String,
    pub source_repository: String,
    pub source_path: String,
    pub source_ref: String,
    pub licence: String,
    pub licence_text: String,
    pub skipped: Vec<String>,
    pub facets: PeerFacets,
    pub retrieved_at: chrono::DateTime<chrono::Utc>,
    pub imported_at: chrono::DateTime<chrono::Utc>,
    pub actor: String,
    pub configurations: u64,
    pub log_index: Option<u64>,
}

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerImportOutcome {
    Stored {
        release_id: i64,
        log_index: u64,
    },
    /// The same files are stored already: nothing changed.
    Unchanged {
        release_id: i64,
    },
}

/// The order of a peer table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeerSort {
    #[default]
    EnergyPerToken,
    EnergyPerRequest,
    Throughput,
    MedianItl,
    Power,
    BatchSize,
}

impl PeerSort {
    pub const ALL: [PeerSort; 6] = [
        PeerSort::EnergyPerToken,
        PeerSort::EnergyPerRequest,
        PeerSort::Throughput,
        PeerSort::MedianItl,
        PeerSort::Power,
        PeerSort::BatchSize,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            PeerSort::EnergyPerToken => "energy_per_token",
            PeerSort::EnergyPerRequest => "energy_per_request",
            PeerSort::Throughput => "throughput",
            PeerSort::MedianItl => "median_itl",
            PeerSort::Power => "power",
            PeerSort::BatchSize => "batch_size",
        }
    }
    pub fn parse(s: &str) -> Option<PeerSort> {
        PeerSort::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One page of one release's configurations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerQuery {
    pub release_id: i64,
    pub task: Option<String>,
    pub gpu_model: Option<String>,
    pub model_id: Option<String>,
    pub sort: PeerSort,
    pub limit: u32,
    pub offset: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerPage {
    pub rows: Vec<PeerConfig>,
    /// Rows matching the filters, on every page.
    pub total: u64,
}

pub fn files_sha256(files: &[PeerFile]) -> String {
    digest_of(files, &[])
}

/// SHA-256 over `path\tsha256\n` of every file, sorted by path, then
/// `statement\t<text>\n` of each operator's statement.
fn digest_of(files: &[PeerFile], statements: &[String]) -> String {
    let mut lines: Vec<String> = files
        .iter()
        .map(|f| format!("{}\t{}\n", f.path, f.sha256))
        .collect();
    lines.sort();
    lines.extend(statements.iter().map(|s| format!("statement\t{s}\n")));
    sha256_hex(lines.concat().as_bytes())
}

/// Why a release cannot be read: the file, the JSON pointer and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerError {
    pub file: String,
    pub pointer: String,
    pub rule: String,
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}: {}", self.file, self.rule)
        } else {
            write!(f, "{} {}: {}", self.file, self.pointer, self.rule)
        }
    }
}

impl std::error::Error for PeerError {}

/// Reads one file through the loader and records its digest.
pub(crate) fn read_file(
    folder: &mut dyn PeerFolder,
    path: &str,
    files: &mut Vec<PeerFile>,
) -> Result<Vec<u8>, PeerError> {
    let bytes = folder.read(path).map_err(|e| PeerError {
        file: path.into(),
        pointer: String::new(),
        rule: format!("cannot be read: {e}"),
    })?;
    files.push(PeerFile {
        path: path.into(),
        sha256: sha256_hex(&bytes),
        bytes: bytes.len() as u64,
    });
    Ok(bytes)
}

/// [`read_file`], parsed as JSON.
pub(crate) fn load_file(
    folder: &mut dyn PeerFolder,
    path: &str,
    files: &mut Vec<PeerFile>,
) -> Result<serde_json::Value, PeerError> {
    let bytes = read_file(folder, path, files)?;
    serde_json::from_slice(&bytes).map_err(|e| PeerError {
        file: path.into(),
        pointer: String::new(),
        rule: format!("not JSON: {e}"),
    })
}

/// A `models.json` as both ML.ENERGY leaderboards (v1 and v2) publish it:
/// model id → (nickname, parameters in billions).
pub(crate) fn models_json(
    folder: &mut dyn PeerFolder,
    path: &str,
    files: &mut Vec<PeerFile>,
) -> Result<std::collections::BTreeMap<String, (String, f64)>, PeerError> {
    let doc = load_file(folder, path, files)?;
    doc.as_object()
        .ok_or_else(|| PeerError {
            file: path.into(),
            pointer: String::new(),
            rule: "an object keyed by model id is wanted".into(),
        })?
        .iter()
        .map(|(id, v)| {
            let at = Fields {
                file: path,
                pointer: format!("/{}", id.replace('~', "~0").replace('/', "~1")),
                value: v,
            };
            Ok((
                id.clone(),
                (
                    at.str("nickname")?,
                    at.num("params", 0.01, 100_000.0, "B parameters")?,
                ),
            ))
        })
        .collect()
}

/// A JSON object's fields, read with errors that name the file and the
/// pointer of the field.
pub(crate) struct Fields<'a> {
    pub file: &'a str,
    pub pointer: String,
    pub value: &'a serde_json::Value,
}

impl<'a> Fields<'a> {
    pub fn err(&self, key: &str, rule: impl Into<String>) -> PeerError {
        PeerError {
            file: self.file.into(),
            pointer: if key.is_empty() {
                self.pointer.clone()
            } else {
                format!(
                    "{}/{}",
                    self.pointer,
                    key.replace('~', "~0").replace('/', "~1")
                )
            },
            rule: rule.into(),
        }
    }

    fn get(&self, key: &str) -> Result<&'a serde_json::Value, PeerError> {
        match self.value.get(key) {
            Some(v) if !v.is_null() => Ok(v),
            _ => Err(self.err(key, "missing")),
        }
    }

    pub fn str(&self, key: &str) -> Result<String, PeerError> {
        match self.get(key)? {
            serde_json::Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
            serde_json::Value::String(_) => Err(self.err(key, "empty")),
            other => Err(self.err(key, format!("a string is wanted, found {other}"))),
        }
    }

    /// A finite number in `[lo, hi]`, with its unit named in the error.
    pub fn num(&self, key: &str, lo: f64, hi: f64, unit: &str) -> Result<f64, PeerError> {
        let v = self.get(key)?;
        let x = v
            .as_f64()
            .ok_or_else(|| self.err(key, format!("a number is wanted, found {v}")))?;
        if !(lo..=hi).contains(&x) {
            return Err(self.err(
                key,
                format!("out of range: {x} {unit} is outside [{lo}, {hi}] {unit}"),
            ));
        }
        Ok(x)
    }

    /// A whole number in `[lo, hi]`.
    pub fn count(&self, key: &str, lo: u32, hi: u32) -> Result<u32, PeerError> {
        let v = self.get(key)?;
        let x = v
            .as_u64()
            .ok_or_else(|| self.err(key, format!("a whole number is wanted, found {v}")))?;
        if x < u64::from(lo) || x > u64::from(hi) {
            return Err(self.err(key, format!("out of range: {x} is outside [{lo}, {hi}]")));
        }
        Ok(x as u32)
    }
}

/// Cross-field rules every published configuration must meet, whatever
/// its source: a unit slip (W for kW, ms for s, J per request for J per
/// token) breaks one of them. `tdp_w` is the catalogue TDP of one GPU.
pub(crate) fn check_config(c: &PeerConfig, tdp_w: f64, at: &Fields<'_>) -> Result<(), PeerError> {
    // v3's figures: v2 publishes neither power nor percentiles.
    let (Some(power), Some(median), Some(p90), Some(p95), Some(p99), Some(avg_batch)) = (
        c.avg_power_watts,
        c.median_itl_ms,
        c.p90_itl_ms,
        c.p95_itl_ms,
        c.p99_itl_ms,
        c.avg_batch_size,
    ) else {
        return Err(at.err(
            "",
            "power, ITL percentiles and the running batch are wanted",
        ));
    };
    let per_gpu = power / f64::from(c.num_gpus);
    // 1.2 x TDP: boards briefly exceed TDP, averages over a run do not.
    if per_gpu > 1.2 * tdp_w {
        return Err(at.err(
            "avg_power_watts",
            format!(
                "out of range: {:.1} W per GPU over {} GPUs is above 1.2 x the {} TDP of {tdp_w} W",
                per_gpu, c.num_gpus, c.gpu_name
            ),
        ));
    }
    // Energy per token is power over throughput (J = W x s); published
    // figures agree to float rounding, 1 % allows for a rounded copy.
    let implied = power / c.output_throughput_tokens_per_sec;
    if (c.energy_per_token_joules / implied - 1.0).abs() > 0.01 {
        return Err(at.err(
            "energy_per_token_joules",
            format!(
                "disagrees with avg_power_watts / output_throughput_tokens_per_sec: {} J vs {:.6} J",
                c.energy_per_token_joules, implied
            ),
        ));
    }
    let implied = c.energy_per_token_joules * c.avg_output_len;
    if (c.energy_per_request_joules / implied - 1.0).abs() > 0.01 {
        return Err(at.err(
            "energy_per_request_joules",
            format!(
                "disagrees with energy_per_token_joules x avg_output_len: {} J vs {:.3} J",
                c.energy_per_request_joules, implied
            ),
        ));
    }
    if !(median <= p90 && p90 <= p95 && p95 <= p99) {
        return Err(at.err(
            "p90_itl_ms",
            format!(
                "percentiles out of order: median {median} <= p90 {p90} <= p95 {p95} <= p99 {p99} ms is wanted"
            ),
        ));
    }
    // A running batch never exceeds its cap (a little float slack).
    if avg_batch > f64::from(c.max_num_seqs) * 1.0001 {
        return Err(at.err(
            "avg_batch_size",
            format!("{avg_batch} is above max_num_seqs {}", c.max_num_seqs),
        ));
    }
    if let (Some(active), Some(total)) = (c.activated_params_billions, c.total_params_billions) {
        if active > total * 1.0001 {
            return Err(at.err(
                "activated_params_billions",
                format!("{active} B activated is more than the {total} B total"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

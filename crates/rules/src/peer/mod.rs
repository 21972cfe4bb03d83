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
mod read;

pub(crate) use read::{check_config, digest_of, load_file, models_json, read_file, Fields};
pub use read::{files_sha256, PeerError};

use serde::{Deserialize, Serialize};

/// Declares [`PeerSource`] from one list, each variant with the module
/// that reads it: the enum, `ALL` and `info` are written from that list,
/// so a new source cannot be left out of `ALL` (issue #56).
macro_rules! peer_sources {
    ($($variant:ident => $module:ident),+ $(,)?) => {
        /// A published dataset this service can import.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum PeerSource {
            $($variant),+
        }

        impl PeerSource {
            /// Every source, newest first.
            pub const ALL: [PeerSource; [$(stringify!($variant)),+].len()] =
                [$(PeerSource::$variant),+];

            pub fn info(self) -> &'static SourceInfo {
                match self {
                    $(PeerSource::$variant => &$module::INFO),+
                }
            }
        }
    };
}

peer_sources! {
    MlEnergyV3 => mlenergy_v3,
    MlEnergyV2 => mlenergy_v2,
    MlEnergyV1 => mlenergy_v1,
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

#[cfg(test)]
mod tests;

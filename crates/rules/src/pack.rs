//! `wattcounts pack`: a harness run folder (read by the submitter crate) plus a manifest, as one
//! deterministic `.tar.gz` (sorted entries, fixed mtimes, owners and modes),
//! so only the manifest's `submission_id` and `created_at` differ between
//! two packs of the same folder.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

use crate::bundle::manifest::{
    self, Attestation, FileEntry, Gpu, Harness, Manifest, RunInfo, Submitter, System,
};
use crate::bundle::{system_info, MANIFEST_NAME};

/// What the submitter says about the run, beyond the folder itself.
#[derive(Debug, Clone)]
pub struct PackInput {
    pub run_name: String,
    pub files: Vec<(String, Vec<u8>)>,
    pub config_file: String,
    pub config_yaml: String,
    pub handle: String,
    pub key_fingerprint: String,
    pub audience: String,
    pub harness_commit: String,
    pub vllm_version: Option<String>,
    pub declare_power_limit: bool,
    /// When it was packed: the caller's clock (this crate reads none).
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Each model's config.json the caller found: (id, revision, bytes).
    /// Shipped under `model-configs/ID/config.json` and named in the
    /// manifest's `models`.
    pub model_configs: Vec<(String, Option<String>, Vec<u8>)>,
    /// Each model's model.safetensors.index.json the caller found beside
    /// its config: (id, bytes). Shipped under
    /// `model-configs/ID/model.safetensors.index.json`.
    pub weights_indexes: Vec<(String, Vec<u8>)>,
}

pub struct Packed {
    pub bytes: Vec<u8>,
    pub manifest: Manifest,
}

/// Fixed mtime for every entry (2024-01-01T00:00:00Z).
const FIXED_MTIME: u64 = 1_704_067_200;

pub fn build_manifest(input: &PackInput) -> anyhow::Result<Manifest> {
    let info_bytes = input
        .files
        .iter()
        .find(|(p, _)| p == system_info::FILE_NAME)
        .map(|(_, d)| d)
        .with_context(|| format!("the run folder has no {}", system_info::FILE_NAME))?;
    let info = system_info::parse(&String::from_utf8_lossy(info_bytes));
    let gpu_name = info.gpu_name.clone().with_context(|| {
        format!(
            "{} has no 'Product Name' line from nvidia-smi -q",
            system_info::FILE_NAME
        )
    })?;
    let power_limit_w = info
        .power_limit_w
        .context("system_info.txt has no power limit (nvidia-smi -q 'Current Power Limit')")?;
    let default_power_limit_w = info.default_power_limit_w.unwrap_or(power_limit_w);

    let config: serde_json::Value = serde_yaml_ng::from_str(&input.config_yaml)
        .with_context(|| format!("{} is not valid YAML", input.config_file))?;
    let serde_json::Value::Object(config) = config else {
        bail!("{} must be a YAML mapping of settings", input.config_file);
    };

    let mut software = BTreeMap::new();
    software.insert(
        "wattcounts".to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
    );
    if let Some(v) = &input.vllm_version {
        software.insert("vllm".to_string(), v.clone());
    }
    let files = all_files(input)
        .iter()
        .map(|(path, data)| FileEntry {
            path: path.clone(),
            bytes: data.len() as u64,
            sha256: hex::encode(Sha256::digest(data)),
        })
        .collect();
    Ok(Manifest {
        schema_version: manifest::SCHEMA_VERSION,
        submission_id: uuid::Uuid::new_v4(),
        created_at: input
            .created_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        audience: input.audience.trim_end_matches('/').to_string(),
        submitter: Submitter {
            handle: input.handle.clone(),
            key_fingerprint: input.key_fingerprint.clone(),
        },
        run: RunInfo {
            name: input.run_name.clone(),
            protocol_version: None,
            precision: None,
        },
        harness: Harness {
            name: "sw-energy-benchmark".into(),
            commit: input.harness_commit.clone(),
            config_file: input.config_file.clone(),
            config,
        },
        system: System {
            gpu: Gpu {
                name: gpu_name,
                count: info.gpu_count.unwrap_or(1),
                driver_version: info
                    .driver_version
                    .clone()
                    .unwrap_or_else(|| "unknown".into()),
                cuda_version: info.cuda_version.clone(),
                power_limit_w,
                default_power_limit_w,
                power_limit_declared: input.declare_power_limit,
            },
            cpu: info.cpu_model.clone().unwrap_or_else(|| "unknown".into()),
            memory_gib: info.memory_gib.unwrap_or(0.0),
        },
        software,
        attestation: Attestation {
            unaltered: true,
            publish: true,
            licence: manifest::DATASET_LICENCE.into(),
        },
        files,
        models: input
            .model_configs
            .iter()
            .map(|(id, revision, data)| {
                let index = input.weights_indexes.iter().find(|(m, _)| m == id);
                manifest::ManifestModel {
                    id: id.clone(),
                    revision: revision.clone(),
                    config: manifest::model_config_path(id),
                    config_sha256: hex::encode(Sha256::digest(data)),
                    weights_index: index.map(|_| manifest::weights_index_path(id)),
                    weights_index_sha256: index.map(|(_, b)| hex::encode(Sha256::digest(b))),
                }
            })
            .collect(),
    })
}

/// The run folder's files and the models' configs, as the bundle holds them.
fn all_files(input: &PackInput) -> Vec<(String, Vec<u8>)> {
    let mut all = input.files.clone();
    for (id, _, data) in &input.model_configs {
        all.push((manifest::model_config_path(id), data.clone()));
        if let Some((_, index)) = input.weights_indexes.iter().find(|(m, _)| m == id) {
            all.push((manifest::weights_index_path(id), index.clone()));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

pub fn pack(input: &PackInput) -> anyhow::Result<Packed> {
    let manifest = build_manifest(input)?;
    let json = serde_json::to_vec_pretty(&manifest)?;
    let bytes = archive(&json, &all_files(input))?;
    Ok(Packed { bytes, manifest })
}

/// The deterministic archive: manifest first, then files in path order.
pub fn archive(manifest_json: &[u8], files: &[(String, Vec<u8>)]) -> anyhow::Result<Vec<u8>> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(6));
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    append(&mut tar, MANIFEST_NAME, manifest_json)?;
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, data) in sorted {
        append(&mut tar, path, data)?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    Ok(gz.finish()?)
}

fn append<W: Write>(tar: &mut tar::Builder<W>, path: &str, data: &[u8]) -> anyhow::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_mtime(FIXED_MTIME);
    h.set_uid(0);
    h.set_gid(0);
    h.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut h, path, data)?;
    Ok(())
}

//! Which protocol a bundle's runs followed, derived from what the bundle
//! carries. Pure: the manifest and parsed rows in, a [`Protocol`] or a
//! rejection out. Rows of one bundle that disagree (two prompt counts, two
//! `max_tokens`) cannot be one protocol and are refused.

use sha2::{Digest, Sha256};

use crate::bundle::harness::{sampling_param, IterationRow};
use crate::bundle::manifest::Manifest;
use crate::bundle::MANIFEST_NAME;
use crate::catalog::GpuSpec;
use crate::domain::{Protocol, Scenario};
use crate::rejection::{Detail, Rejection};

/// The precision the harness picks: fp16 where bf16 is missing (V100, T4).
fn harness_precision(gpu_name: &str) -> &'static str {
    let n = gpu_name.to_ascii_lowercase();
    if n.contains("v100") || n.contains("t4") {
        "fp16"
    } else {
        "bf16"
    }
}

/// One value that every row must share; the first row that differs is named.
struct Agreed<T> {
    column: &'static str,
    first: Option<(T, String, u64)>,
}

impl<T: PartialEq + std::fmt::Display + Clone> Agreed<T> {
    fn new(column: &'static str) -> Self {
        Agreed {
            column,
            first: None,
        }
    }
    fn see(&mut self, v: T, r: &IterationRow) -> Result<(), Rejection> {
        match &self.first {
            None => {
                self.first = Some((v, r.file.clone(), r.line));
                Ok(())
            }
            Some((f, file, line)) if *f != v => Err(Rejection::invalid(
                "protocol_inconsistent",
                format!(
                    "the bundle mixes protocols: {} is {v} in {} row {} but {f} in {file} row {line}; one bundle must follow one protocol",
                    self.column, r.file, r.line
                ),
            )
            .with(
                Detail::new(format!("{} {v}, expected {f} as in {file} row {line}", self.column))
                    .file(&r.file)
                    .row(r.line)
                    .column(self.column),
            )),
            Some(_) => Ok(()),
        }
    }
    fn value(self) -> Option<T> {
        self.first.map(|(v, _, _)| v)
    }
}

/// A `sampling_params` field as a number, or a rejection naming the cell.
fn number<T: std::str::FromStr>(r: &IterationRow, key: &str) -> Result<Option<T>, Rejection> {
    match sampling_param(&r.sampling_params, key) {
        None | Some("None") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            Rejection::invalid(
                "protocol_unreadable",
                format!("{key}='{v}' in sampling_params is not a number"),
            )
            .with(
                Detail::new(format!("{key}={v}"))
                    .file(&r.file)
                    .row(r.line)
                    .column("sampling_params"),
            )
        }),
    }
}

pub fn derive(
    manifest: &Manifest,
    rows: &[IterationRow],
    gpu: Option<&GpuSpec>,
) -> Result<Protocol, Rejection> {
    let mut prompts = Agreed::new("queries_submitted");
    let mut max_tokens = Agreed::<u64>::new("max_tokens");
    let mut temperature = Agreed::<f64>::new("temperature");
    let mut has_server = false;
    for r in rows {
        match r.scenario {
            Scenario::Batch => prompts.see(r.queries_submitted, r)?,
            Scenario::Server => has_server = true,
        }
        if let Some(m) = number(r, "max_tokens")? {
            max_tokens.see(m, r)?;
        }
        if let Some(t) = number::<f64>(r, "temperature")? {
            // -0.0 and 0.0 are one protocol.
            temperature.see(t + 0.0, r)?;
        }
    }
    let cfg = manifest.harness_config();
    let context_length = manifest
        .harness
        .config
        .get("CONTEXT_LENGTH")
        .and_then(|v| v.as_u64());
    let gpu_name = gpu.map_or(manifest.system.gpu.name.as_str(), |g| g.nvml_name.as_str());
    let precision = match manifest.run.precision.as_deref() {
        None => "harness".to_string(),
        Some(p) if p == harness_precision(gpu_name) => "harness".to_string(),
        Some(p) => p.to_string(),
    };
    if let Some(v) = &manifest.run.protocol_version {
        if v.trim().is_empty() {
            return Err(
                Rejection::invalid("protocol_unreadable", "run.protocol_version is empty").with(
                    Detail::new("empty")
                        .file(MANIFEST_NAME)
                        .pointer("/run/protocol_version"),
                ),
            );
        }
    }
    Ok(Protocol {
        version: manifest
            .run
            .protocol_version
            .clone()
            .unwrap_or_else(|| "1".into()),
        batch_prompts: prompts.value(),
        server_duration_s: has_server.then_some(cfg.max_test_duration),
        max_tokens: max_tokens.value(),
        temperature: temperature.value(),
        context_length,
        precision,
    })
}

/// The digest of a run's content: every harness file's path and sha256
/// (the manifest's verified file list), sorted; the manifest itself, which
/// changes with every pack, is left out. The same run packed twice has one
/// content digest whatever its `submission_id`.
pub fn content_digest(manifest: &Manifest) -> String {
    let mut files: Vec<(&str, &str)> = manifest
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    files.sort_unstable();
    let mut h = Sha256::new();
    for (path, sha) in files {
        h.update(path.as_bytes());
        h.update(b"\0");
        h.update(sha.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

//! The bundle manifest (`wattcounts.json`): its typed form and validation
//! against `schemas/manifest.v1.schema.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{strict_json, MANIFEST_NAME};
use crate::rejection::{Detail, Rejection};

pub const SCHEMA_VERSION: u64 = 1;
pub const SCHEMA_TEXT: &str = include_str!("../../../../schemas/manifest.v1.schema.json");
/// Licence the dataset is published under; the attestation names it.
pub const DATASET_LICENCE: &str = "CC-BY-4.0";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub schema_version: u64,
    pub submission_id: Uuid,
    pub created_at: String,
    pub audience: String,
    pub submitter: Submitter,
    pub run: RunInfo,
    pub harness: Harness,
    pub system: System,
    pub software: BTreeMap<String, String>,
    pub attestation: Attestation,
    pub files: Vec<FileEntry>,
    /// Each model's own config.json that `pack` found (in the Hugging Face
    /// cache the harness used, or given with `--model-config`), shipped as
    /// a file under [`MODEL_CONFIG_DIR`] and listed in `files` too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ManifestModel>,
}

/// Where a bundle holds its models' config.json files: `model-configs/ORG/NAME/config.json`.
pub const MODEL_CONFIG_DIR: &str = "model-configs/";

/// The path of model `id`'s config.json in a bundle.
pub fn model_config_path(id: &str) -> String {
    format!("{MODEL_CONFIG_DIR}{id}/config.json")
}

/// The path of model `id`'s model.safetensors.index.json in a bundle.
pub fn weights_index_path(id: &str) -> String {
    format!("{MODEL_CONFIG_DIR}{id}/model.safetensors.index.json")
}

/// One model's config.json in the bundle.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestModel {
    /// The Hugging Face id the harness ran (its CSVs' `model` column).
    pub id: String,
    /// The repo's revision (commit) the config is of, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Its path in the bundle ([`model_config_path`]).
    pub config: String,
    /// SHA-256 of the config's bytes.
    pub config_sha256: String,
    /// Its model.safetensors.index.json, when the cache had one
    /// ([`weights_index_path`]): the checkpoint's byte total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_index_sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Submitter {
    pub handle: String,
    pub key_fingerprint: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub name: String,
    /// The harness protocol version, where a harness states it; absent
    /// means the paper's protocol ("1").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The weights' precision (bf16, fp16, ...), where it differs from the
    /// harness's rule or the submitter states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Harness {
    pub name: String,
    pub commit: String,
    pub config_file: String,
    /// The YAML config as-is (validated keys are read through [`HarnessConfig`]).
    pub config: serde_json::Map<String, Value>,
}

/// The config keys the service relies on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HarnessConfig {
    #[serde(rename = "ITERATIONS")]
    pub iterations: u32,
    #[serde(rename = "MAX_TEST_DURATION")]
    pub max_test_duration: f64,
    #[serde(rename = "LAMBDA_QPS_ARRAY")]
    pub lambda_qps_array: Vec<f64>,
    #[serde(rename = "LLM_MODELS")]
    pub llm_models: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct System {
    pub gpu: Gpu,
    pub cpu: String,
    pub memory_gib: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Gpu {
    pub name: String,
    pub count: u32,
    pub driver_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    pub power_limit_w: f64,
    pub default_power_limit_w: f64,
    pub power_limit_declared: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Attestation {
    pub unaltered: bool,
    pub publish: bool,
    pub licence: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

impl Manifest {
    pub fn harness_config(&self) -> HarnessConfig {
        // The schema guarantees these keys and types, so this cannot fail
        // on a validated manifest.
        serde_json::from_value(Value::Object(self.harness.config.clone()))
            .expect("validated manifest has a harness config")
    }
}

/// Largest integer a JSON number carries exactly in every reader (2^53 − 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The first string holding a control character (NUL and the like; tab
/// and newline are no part of any manifest field either) or integer past
/// ±(2^53 − 1), which JavaScript and many JSON readers would round.
fn first_bad_value(v: &Value, pointer: &mut String) -> Option<Detail> {
    let here = |msg: String, pointer: &str| {
        Some(
            Detail::new(msg)
                .file(MANIFEST_NAME)
                .pointer(if pointer.is_empty() { "/" } else { pointer }),
        )
    };
    match v {
        Value::String(s) => s.chars().find(|c| c.is_control()).and_then(|c| {
            here(
                format!("a string holds the control character U+{:04X}", c as u32),
                pointer,
            )
        }),
        Value::Number(n) => {
            // Integers past u64 reach us as whole floats: the same problem.
            let big = n.as_u64().is_some_and(|u| u > MAX_SAFE_INTEGER)
                || n.as_i64()
                    .is_some_and(|i| i.unsigned_abs() > MAX_SAFE_INTEGER)
                || n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER as f64);
            big.then(|| {
                here(
                    format!("the integer {n} is beyond ±(2^53 − 1) and would be rounded"),
                    pointer,
                )
            })
            .flatten()
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let len = pointer.len();
            pointer.push_str(&format!("/{i}"));
            let found = first_bad_value(item, pointer);
            pointer.truncate(len);
            found
        }),
        Value::Object(map) => map.iter().find_map(|(k, item)| {
            let len = pointer.len();
            pointer.push('/');
            pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
            let found = if k.chars().any(char::is_control) {
                here("a key holds a control character".into(), pointer)
            } else {
                first_bad_value(item, pointer)
            };
            pointer.truncate(len);
            found
        }),
        _ => None,
    }
}

/// The compiled schema; build it once at start-up.
pub struct ManifestSchema {
    validator: jsonschema::Validator,
}

impl Default for ManifestSchema {
    fn default() -> Self {
        Self::new()
    }
}

impl ManifestSchema {
    pub fn new() -> Self {
        let schema: Value = serde_json::from_str(SCHEMA_TEXT).expect("bundled schema is JSON");
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .expect("bundled schema compiles");
        ManifestSchema { validator }
    }

    /// Parses and validates manifest bytes. Every problem names the JSON
    /// pointer it is about.
    pub fn parse(&self, bytes: &[u8]) -> Result<Manifest, Rejection> {
        let value = strict_json::parse(bytes).map_err(|e| {
            let code = if e.pointer.is_some() {
                "manifest_duplicate_key"
            } else {
                "manifest_not_json"
            };
            let mut d = Detail::new(e.message.clone()).file(MANIFEST_NAME);
            if let Some(p) = e.pointer {
                d = d.pointer(p);
            }
            Rejection::invalid(code, format!("{MANIFEST_NAME} is not valid JSON")).with(d)
        })?;
        if let Some(d) = first_bad_value(&value, &mut String::new()) {
            return Err(Rejection::invalid(
                "manifest_bad_value",
                format!("{MANIFEST_NAME}: {}", d.message),
            )
            .with(d));
        }
        // Versions first: a newer manifest fails the v1 schema in many
        // places, and one clear message beats twenty confusing ones.
        match value.get("schema_version") {
            Some(v) if v.as_u64() == Some(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(Rejection::invalid(
                    "unsupported_schema_version",
                    format!("schema_version {v} is not supported; this service reads version {SCHEMA_VERSION}"),
                )
                .with(
                    Detail::new(format!("expected {SCHEMA_VERSION}, found {v}"))
                        .file(MANIFEST_NAME)
                        .pointer("/schema_version"),
                ))
            }
            None => {}
        }
        let details: Vec<Detail> = self
            .validator
            .iter_errors(&value)
            .take(50)
            .map(|e| {
                Detail::new(e.to_string())
                    .file(MANIFEST_NAME)
                    .pointer(e.instance_path().to_string())
            })
            .collect();
        if !details.is_empty() {
            return Err(Rejection::invalid(
                "manifest_schema",
                format!(
                    "{MANIFEST_NAME} does not match the manifest schema ({} problem{})",
                    details.len(),
                    if details.len() == 1 { "" } else { "s" }
                ),
            )
            .with_all(details));
        }
        serde_json::from_value(value).map_err(|e| {
            Rejection::invalid("manifest_schema", "manifest does not fit its schema")
                .with(Detail::new(e.to_string()).file(MANIFEST_NAME))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(json: &str) -> Option<(String, String)> {
        let v: Value = serde_json::from_str(json).unwrap();
        first_bad_value(&v, &mut String::new()).map(|d| (d.pointer.unwrap(), d.message))
    }

    #[test]
    fn control_characters_are_found_where_they_are() {
        assert_eq!(
            bad(r#"{"a": {"b": ["ok", "tab\tfree?"]}}"#).unwrap().0,
            "/a/b/1"
        );
        assert_eq!(
            bad(r#"{"a": {"b": ["ok", "x\u0000y"]}}"#),
            Some((
                "/a/b/1".into(),
                "a string holds the control character U+0000".into()
            ))
        );
        // Keys: escaped as RFC 6901 says (~ → ~0, / → ~1), and checked too.
        assert_eq!(bad(r#"{"x/y~": "\u0007"}"#).unwrap().0, "/x~1y~0");
        assert_eq!(
            bad(r#"{"k\u0001": 1}"#),
            Some(("/k\u{1}".into(), "a key holds a control character".into()))
        );
        assert_eq!(bad(r#"{"a": ["fine", 1, 2.5, true, null]}"#), None);
    }

    #[test]
    fn integers_past_2_53_are_refused() {
        // 2^53 − 1 is the largest integer every reader keeps exactly.
        assert_eq!(bad("9007199254740991"), None);
        assert_eq!(bad("-9007199254740991"), None);
        assert_eq!(bad(r#"[9007199254740992]"#).unwrap().0, "/0");
        assert_eq!(bad("-9007199254740992").unwrap().0, "/");
        // Past u64: a whole float, the same problem; a fraction is fine.
        assert!(bad("100000000000000000000").is_some());
        assert_eq!(bad("12345.5"), None);
        assert_eq!(
            bad("9007199254740992").unwrap().1,
            "the integer 9007199254740992 is beyond ±(2^53 − 1) and would be rounded"
        );
    }

    #[test]
    fn another_schema_version_is_named_before_the_schema_is_checked() {
        let schema = ManifestSchema::new();
        let err = schema.parse(br#"{"schema_version": 2}"#).unwrap_err();
        assert_eq!(err.code, "unsupported_schema_version");
        assert_eq!(err.details[0].pointer.as_deref(), Some("/schema_version"));
        let err = schema.parse(br#"{"schema_version": 1}"#).unwrap_err();
        assert_eq!(err.code, "manifest_schema");
        let err = schema
            .parse(br#"{"schema_version": 1, "x": "\u0000"}"#)
            .unwrap_err();
        assert_eq!(err.code, "manifest_bad_value");
    }
}

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
    // The models' configs are not the run: the same run packed with or
    // without them is one run.
    let mut files: Vec<(&str, &str)> = manifest
        .files
        .iter()
        .filter(|f| {
            !f.path
                .starts_with(crate::bundle::manifest::MODEL_CONFIG_DIR)
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::manifest::FileEntry;
    use crate::checks::test_support::{manifest, row_of};

    const SAMPLING: &str = "SamplingParams(n=1, temperature=0.0, max_tokens=256)";

    /// A row of `scenario` on `line` with these sampling params and, for
    /// batch, `prompts` submitted.
    fn row(scenario: Scenario, line: u64, sampling: &str, prompts: u64) -> IterationRow {
        let mut r = row_of(scenario, 1.0, &[50.0], &[40.0], 10);
        r.line = line;
        r.sampling_params = sampling.into();
        r.queries_submitted = prompts;
        r
    }

    fn refused(m: &Manifest, rows: &[IterationRow]) -> Rejection {
        derive(m, rows, None).expect_err("refused")
    }

    #[test]
    fn a_bundle_of_both_scenarios_states_every_field() {
        // The L4 manifest: MAX_TEST_DURATION 300, no CONTEXT_LENGTH, no
        // precision or protocol version stated.
        let rows = [
            row(Scenario::Batch, 2, SAMPLING, 1000),
            row(Scenario::Server, 3, SAMPLING, 7),
        ];
        let p = derive(&manifest(), &rows, None).unwrap();
        assert_eq!(
            p,
            Protocol {
                version: "1".into(),
                batch_prompts: Some(1000),
                server_duration_s: Some(300.0),
                max_tokens: Some(256),
                temperature: Some(0.0),
                context_length: None,
                precision: "harness".into(),
            }
        );
        // One scenario only: the other's field is not stated.
        let batch = derive(&manifest(), &rows[..1], None).unwrap();
        assert_eq!(
            (batch.batch_prompts, batch.server_duration_s),
            (Some(1000), None)
        );
        let server = derive(&manifest(), &rows[1..], None).unwrap();
        assert_eq!(
            (server.batch_prompts, server.server_duration_s),
            (None, Some(300.0))
        );
        // Sampling params that say nothing, or None, state nothing.
        let bare = derive(&manifest(), &[row(Scenario::Batch, 2, "", 1000)], None).unwrap();
        assert_eq!((bare.max_tokens, bare.temperature), (None, None));
        let none = "SamplingParams(temperature=None, max_tokens=None)";
        let none = derive(&manifest(), &[row(Scenario::Batch, 2, none, 1000)], None).unwrap();
        assert_eq!((none.max_tokens, none.temperature), (None, None));
    }

    #[test]
    fn rows_that_disagree_are_refused_naming_both() {
        let m = manifest();
        let file = "m/llm_batch_optimized_results.csv";
        let r = refused(
            &m,
            &[
                row(Scenario::Batch, 2, SAMPLING, 1000),
                row(Scenario::Batch, 3, SAMPLING, 500),
            ],
        );
        assert_eq!(r.code, "protocol_inconsistent");
        assert_eq!(
            r.message,
            format!("the bundle mixes protocols: queries_submitted is 500 in {file} row 3 but 1000 in {file} row 2; one bundle must follow one protocol")
        );
        let d = &r.details[0];
        assert_eq!(
            (d.file.as_deref(), d.row, d.column.as_deref()),
            (Some(file), Some(3), Some("queries_submitted"))
        );
        // Server rows carry no prompt count to agree on.
        assert!(derive(
            &m,
            &[
                row(Scenario::Server, 2, SAMPLING, 1),
                row(Scenario::Server, 3, SAMPLING, 9)
            ],
            None
        )
        .is_ok());
        let other = "SamplingParams(n=1, temperature=0.0, max_tokens=512)";
        let r = refused(
            &m,
            &[
                row(Scenario::Batch, 2, SAMPLING, 1000),
                row(Scenario::Server, 3, other, 1),
            ],
        );
        assert!(
            r.message
                .contains("max_tokens is 512 in m/llm_server_optimized_results.csv row 3 but 256"),
            "{}",
            r.message
        );
        let warm = "SamplingParams(n=1, temperature=0.7, max_tokens=256)";
        let r = refused(
            &m,
            &[
                row(Scenario::Batch, 2, SAMPLING, 1000),
                row(Scenario::Batch, 3, warm, 1000),
            ],
        );
        assert!(r.message.contains("temperature is 0.7"), "{}", r.message);
        // -0.0 and 0.0 are one temperature.
        let minus = "SamplingParams(n=1, temperature=-0.0, max_tokens=256)";
        let p = derive(
            &m,
            &[
                row(Scenario::Batch, 2, minus, 1000),
                row(Scenario::Batch, 3, SAMPLING, 1000),
            ],
            None,
        )
        .unwrap();
        assert!(p.temperature.unwrap().is_sign_positive());
    }

    #[test]
    fn an_unreadable_field_names_its_cell() {
        let bad = "SamplingParams(n=1, temperature=0.0, max_tokens=lots)";
        let r = refused(&manifest(), &[row(Scenario::Batch, 4, bad, 1000)]);
        assert_eq!(r.code, "protocol_unreadable");
        assert_eq!(
            r.message,
            "max_tokens='lots' in sampling_params is not a number"
        );
        let d = &r.details[0];
        assert_eq!(
            (d.row, d.column.as_deref()),
            (Some(4), Some("sampling_params"))
        );
        let mut m = manifest();
        m.run.protocol_version = Some("  ".into());
        let r = refused(&m, &[row(Scenario::Batch, 2, SAMPLING, 1000)]);
        assert_eq!(
            (r.code, r.message.as_str()),
            ("protocol_unreadable", "run.protocol_version is empty")
        );
        assert_eq!(
            r.details[0].pointer.as_deref(),
            Some("/run/protocol_version")
        );
        m.run.protocol_version = Some("2".into());
        m.harness
            .config
            .insert("CONTEXT_LENGTH".into(), 1024.into());
        let p = derive(&m, &[row(Scenario::Batch, 2, SAMPLING, 1000)], None).unwrap();
        assert_eq!((p.version.as_str(), p.context_length), ("2", Some(1024)));
    }

    #[test]
    fn precision_is_the_harness_s_unless_it_differs() {
        let rows = [row(Scenario::Batch, 2, SAMPLING, 1000)];
        let with = |gpu_name: &str, precision: Option<&str>, spec: Option<&GpuSpec>| {
            let mut m = manifest();
            m.system.gpu.name = gpu_name.into();
            m.run.precision = precision.map(str::to_string);
            derive(&m, &rows, spec).unwrap().precision
        };
        assert_eq!(with("NVIDIA L4", None, None), "harness");
        assert_eq!(with("NVIDIA L4", Some("bf16"), None), "harness");
        assert_eq!(with("NVIDIA L4", Some("fp16"), None), "fp16");
        // fp16 is the harness's own on a V100 and a T4 (no bf16 there).
        assert_eq!(with("Tesla T4", Some("fp16"), None), "harness");
        assert_eq!(with("Tesla V100-SXM2-32GB", Some("fp16"), None), "harness");
        assert_eq!(with("Tesla T4", Some("bf16"), None), "bf16");
        // The catalogue's GPU, where known, decides over the manifest's text.
        let t4 = crate::catalog::gpu_by_id("t4").unwrap();
        assert_eq!(with("NVIDIA L4", Some("fp16"), Some(t4)), "harness");
    }

    #[test]
    fn the_content_digest_is_over_sorted_paths_and_digests() {
        let entry = |path: &str, sha: &str| FileEntry {
            path: path.into(),
            bytes: 1,
            sha256: sha.into(),
        };
        let (a, b) = ("11".repeat(32), "22".repeat(32));
        let mut m = manifest();
        m.files = vec![entry("b.csv", &b), entry("a.csv", &a)];
        // sha256 of "a.csv\0" a "\n" "b.csv\0" b "\n", worked out with
        // Python's hashlib.
        let want = "8a6b32875a0b19252a1bbba37c14bdbe6a06320e290d99335432c971bf09a020";
        assert_eq!(content_digest(&m), want);
        m.files.reverse();
        assert_eq!(content_digest(&m), want);
        m.files[0].sha256 = "33".repeat(32);
        assert_ne!(content_digest(&m), want);
    }
}

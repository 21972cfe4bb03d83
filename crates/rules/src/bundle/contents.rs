//! The rules on what a bundle holds, once its archive is open: it names
//! this service as its audience, its manifest lists exactly the files in
//! it with their sizes and digests, each results CSV is one model's, each
//! details file counts the requests its results file does, it holds
//! results at all, each model it names comes with its config (and weights
//! index) under the digest the manifest gives, and every figure derived
//! from it is a finite number. Each is a pure function with the file, the
//! JSON pointer or the CSV row and column in its refusal; the service only
//! streams the archive and calls them in order.

use std::collections::{HashMap, HashSet};

use super::harness::{self, DetailCounts, FileKind, IterationRow};
use super::manifest::{Manifest, MODEL_CONFIG_DIR};
use super::{system_info, MANIFEST_NAME};
use crate::derived::{self, ConfigurationMetrics, IterationMetrics};
use crate::digest::sha256_hex;
use crate::model_config::BundledModel;
use crate::rejection::{Detail, Rejection};

/// What an archive file is read as (everything else is only digested).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParsedAs {
    /// A harness CSV directly inside a model folder.
    Harness(FileKind),
    SystemInfo,
    /// A model's config.json (`model-configs/ORG/NAME/config.json`), or its
    /// model.safetensors.index.json beside it.
    ModelConfig,
}

/// How the file at `path` is read, if at all.
pub fn parsed_as(path: &str) -> Option<ParsedAs> {
    if path == system_info::FILE_NAME {
        return Some(ParsedAs::SystemInfo);
    }
    if path.starts_with(MODEL_CONFIG_DIR)
        && (path.ends_with("/config.json") || path.ends_with("/model.safetensors.index.json"))
    {
        return Some(ParsedAs::ModelConfig);
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    match harness::classify(name) {
        Some(kind) if path.matches('/').count() == 1 => Some(ParsedAs::Harness(kind)),
        _ => None,
    }
}

/// The entries held in memory: the manifest and those [`parsed_as`]
/// names. Everything else is only digested as it streams past.
pub fn is_parsed(path: &str) -> bool {
    path == MANIFEST_NAME || parsed_as(path).is_some()
}

/// The manifest's bytes, which every bundle holds at its root.
pub fn manifest_present(bytes: Option<Vec<u8>>) -> Result<Vec<u8>, Rejection> {
    bytes.ok_or_else(|| {
        Rejection::invalid(
            "manifest_missing",
            format!("the bundle has no {MANIFEST_NAME} at its root; make bundles with `wattcounts pack`"),
        )
    })
}

/// The bundle was packed for this service (`public_url`), trailing slashes
/// aside: a bundle signed for another service is not replayed here.
pub fn check_audience(m: &Manifest, public_url: &str) -> Result<(), Rejection> {
    let want = public_url.trim_end_matches('/');
    if m.audience.trim_end_matches('/') == want {
        return Ok(());
    }
    Err(Rejection::forbidden(
        "audience_mismatch",
        format!("this bundle was packed for {} but this service is {want}; pack it again with --audience {want}", m.audience),
    )
    .with(Detail::new(format!("expected {want}, found {}", m.audience)).file(MANIFEST_NAME).pointer("/audience")))
}

/// The manifest names the key that signed the bundle (`signer`) and that
/// key's owner (`owner`, handles compared case aside): a bundle cannot
/// claim another submitter's name or key.
pub fn check_signer(m: &Manifest, signer: &str, owner: &str) -> Result<(), Rejection> {
    if m.submitter.key_fingerprint != signer {
        return Err(Rejection::forbidden(
            "key_mismatch",
            format!(
                "the manifest names key {} but the bundle was signed with {signer}",
                m.submitter.key_fingerprint
            ),
        )
        .with(
            Detail::new("submitter key differs from the signing key")
                .file(MANIFEST_NAME)
                .pointer("/submitter/key_fingerprint"),
        ));
    }
    if !m.submitter.handle.eq_ignore_ascii_case(owner) {
        return Err(Rejection::forbidden(
            "handle_mismatch",
            format!(
                "the manifest names submitter '{}' but the signing key belongs to '{owner}'",
                m.submitter.handle
            ),
        )
        .with(
            Detail::new("handle differs from the key's owner")
                .file(MANIFEST_NAME)
                .pointer("/submitter/handle"),
        ));
    }
    Ok(())
}

/// Every archive file is listed, every listed file is present.
pub fn check_file_list(m: &Manifest, paths: &[String]) -> Result<(), Rejection> {
    let mut listed = HashSet::new();
    for (i, f) in m.files.iter().enumerate() {
        if !listed.insert(f.path.as_str()) {
            return Err(Rejection::invalid(
                "manifest_duplicate_path",
                format!("{} is listed twice in the manifest", f.path),
            )
            .with(
                Detail::new("listed twice")
                    .file(MANIFEST_NAME)
                    .pointer(format!("/files/{i}/path")),
            ));
        }
    }
    let present: HashSet<&str> = paths.iter().map(String::as_str).collect();
    let extra: Vec<&str> = present
        .iter()
        .filter(|p| !listed.contains(*p))
        .copied()
        .collect();
    if !extra.is_empty() {
        let mut extra = extra;
        extra.sort_unstable();
        return Err(Rejection::invalid(
            "file_not_in_manifest",
            format!(
                "{} file(s) in the bundle are not listed in the manifest",
                extra.len()
            ),
        )
        .with_all(
            extra
                .iter()
                .map(|p| Detail::new("present in the archive, absent from /files").file(*p)),
        ));
    }
    let missing: Vec<(usize, &str)> = m
        .files
        .iter()
        .enumerate()
        .filter(|(_, f)| !present.contains(f.path.as_str()))
        .map(|(i, f)| (i, f.path.as_str()))
        .collect();
    if !missing.is_empty() {
        return Err(Rejection::invalid(
            "file_missing",
            format!(
                "{} file(s) listed in the manifest are not in the bundle",
                missing.len()
            ),
        )
        .with_all(missing.iter().map(|(i, p)| {
            Detail::new("listed in /files, absent from the archive")
                .file(*p)
                .pointer(format!("/files/{i}"))
        })));
    }
    Ok(())
}

/// An archive file as it streamed past: its path, size and SHA-256.
#[derive(Debug, Clone, Copy)]
pub struct FileSeen<'a> {
    pub path: &'a str,
    pub size: u64,
    pub sha256: &'a str,
}

/// Each file has the size and the SHA-256 its manifest entry gives (the
/// file list was checked first: every file has an entry).
pub fn check_sizes_and_digests(m: &Manifest, files: &[FileSeen<'_>]) -> Result<(), Rejection> {
    let by_path: HashMap<&str, (usize, &super::manifest::FileEntry)> = m
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), (i, f)))
        .collect();
    for p in files {
        let Some(&(i, f)) = by_path.get(p.path) else {
            return Err(Rejection::invalid(
                "file_not_in_manifest",
                format!("{} is in the bundle but not listed in the manifest", p.path),
            )
            .with(Detail::new("present in the archive, absent from /files").file(p.path)));
        };
        if f.bytes != p.size {
            return Err(Rejection::invalid(
                "size_mismatch",
                format!(
                    "{} has {} bytes, the manifest says {}",
                    p.path, p.size, f.bytes
                ),
            )
            .with(
                Detail::new(format!("expected {} bytes, found {}", f.bytes, p.size))
                    .file(p.path)
                    .pointer(format!("/files/{i}/bytes")),
            ));
        }
        if p.sha256 != f.sha256 {
            return Err(Rejection::invalid(
                "digest_mismatch",
                format!("{} does not match its sha256 in the manifest", p.path),
            )
            .with(
                Detail::new(format!("expected sha256 {}, found {}", f.sha256, p.sha256))
                    .file(p.path)
                    .pointer(format!("/files/{i}/sha256")),
            ));
        }
    }
    Ok(())
}

/// A results CSV holds one model's rows (its folder's).
pub fn check_one_model(path: &str, rows: &[IterationRow]) -> Result<(), Rejection> {
    let Some(first) = rows.first().map(|r| &r.model) else {
        return Ok(());
    };
    match rows.iter().find(|x| &x.model != first) {
        None => Ok(()),
        Some(other) => Err(Rejection::invalid(
            "csv_mixed_models",
            format!("{path} mixes models '{first}' and '{}'", other.model),
        )
        .with(
            Detail::new(format!(
                "model '{}' differs from '{first}' in row {}",
                other.model, other.line
            ))
            .file(path)
            .row(other.line)
            .column("model"),
        )),
    }
}

/// The bundle holds harness results at all.
pub fn check_results_present(rows: &[IterationRow]) -> Result<(), Rejection> {
    if !rows.is_empty() {
        return Ok(());
    }
    Err(Rejection::invalid(
        "no_results",
        "the bundle holds no harness results (<model folder>/llm_batch_optimized_results.csv or llm_server_optimized_results.csv)",
    ))
}

/// Each details file must hold one row per request of the results file
/// beside it (successes, or successes and failures).
pub fn check_details(
    rows: &[IterationRow],
    details: &[(String, DetailCounts)],
) -> Result<(), Rejection> {
    for (path, d) in details {
        let (folder, file) = path.rsplit_once('/').unwrap_or(("", path));
        let results_name = match harness::classify(file) {
            Some(FileKind::Details(harness::Scenario::Batch)) => harness::BATCH_RESULTS,
            _ => harness::SERVER_RESULTS,
        };
        let results_path = format!("{folder}/{results_name}");
        let mine: Vec<&IterationRow> = rows.iter().filter(|r| r.file == results_path).collect();
        if mine.is_empty() {
            continue;
        }
        for r in mine {
            let found = d
                .requests
                .get(&harness::iteration_key(r.iteration, r.lambda_qps))
                .copied()
                .unwrap_or(0);
            if found != r.requests_ok && found != r.requests_ok + r.requests_failed {
                let what = match r.lambda_qps {
                    Some(l) => format!("iteration {} at {l} req/s", r.iteration),
                    None => format!("iteration {}", r.iteration),
                };
                return Err(Rejection::invalid(
                    "details_mismatch",
                    format!("{path} has {found} request rows for {what}, but {results_path} counts {} successful requests", r.requests_ok),
                )
                .with(Detail::new(format!("{found} detail rows, {} requests in results", r.requests_ok)).file(path.as_str()))
                .with(Detail::new("request_success_total").file(results_path.as_str()).row(r.line).column("request_success_total")));
            }
        }
    }
    Ok(())
}

/// Rows in the order ingest stores their runs: model, scenario, rate, iteration.
pub fn sort_rows(rows: &mut [IterationRow]) {
    rows.sort_by(|a, b| {
        (
            a.model.as_str(),
            a.scenario.as_str(),
            a.lambda_qps.map(f64::to_bits),
            a.iteration,
        )
            .cmp(&(
                b.model.as_str(),
                b.scenario.as_str(),
                b.lambda_qps.map(f64::to_bits),
                b.iteration,
            ))
    });
}

/// Each model the manifest names, with its config read: the config (and
/// the weights index it names) must be in the bundle under the digest the
/// manifest gives. `configs` holds the bundle's model-config files by path.
pub fn bundled_models(
    m: &Manifest,
    configs: &HashMap<String, Vec<u8>>,
) -> Result<Vec<BundledModel>, Rejection> {
    let mut bundled_models = Vec::new();
    for (i, model) in m.models.iter().enumerate() {
        let Some(bytes) = configs.get(&model.config) else {
            return Err(Rejection::invalid(
                "model_config_missing",
                format!(
                    "{MANIFEST_NAME} /models/{i} names {} for {}, which the bundle does not hold as a model config (model-configs/ORG/NAME/config.json)",
                    model.config, model.id
                ),
            )
            .with(Detail::new(format!("no {}", model.config)).file(MANIFEST_NAME).pointer(format!("/models/{i}/config"))));
        };
        let sha = sha256_hex(bytes);
        if sha != model.config_sha256 {
            return Err(Rejection::invalid(
                "digest_mismatch",
                format!(
                    "{} does not match its config_sha256 in the manifest",
                    model.config
                ),
            )
            .with(
                Detail::new(format!(
                    "expected sha256 {}, found {sha}",
                    model.config_sha256
                ))
                .file(&model.config)
                .pointer(format!("/models/{i}/config_sha256")),
            ));
        }
        let mut bundled = BundledModel::read(&model.id, model.revision.clone(), sha, bytes);
        if let Some(path) = &model.weights_index {
            let pointer = format!("/models/{i}/weights_index");
            let index = configs.get(path).ok_or_else(|| {
                Rejection::invalid(
                    "model_config_missing",
                    format!("{MANIFEST_NAME} /models/{i} names {path} for {}, which the bundle does not hold", model.id),
                )
                .with(Detail::new(format!("no {path}")).file(MANIFEST_NAME).pointer(&pointer))
            })?;
            let sha = sha256_hex(index);
            if model.weights_index_sha256.as_deref() != Some(sha.as_str()) {
                return Err(Rejection::invalid(
                    "digest_mismatch",
                    format!("{path} does not match its weights_index_sha256 in the manifest"),
                )
                .with(
                    Detail::new(format!("found sha256 {sha}"))
                        .file(path)
                        .pointer(format!("/models/{i}/weights_index_sha256")),
                ));
            }
            // An index without a byte total is judged by the checks (a
            // warning), not refused: the run stands on its config.
            bundled.weights_total_bytes = Some(BundledModel::index_total(index));
        }
        bundled_models.push(bundled);
    }
    Ok(bundled_models)
}

/// Every run's figures are finite: finite but huge samples can overflow a
/// mean or a spread, and such a figure cannot be stored, compared or
/// written as JSON. `runs` are `rows` derived, in the same order.
pub fn check_runs_finite(
    rows: &[IterationRow],
    runs: &[IterationMetrics],
) -> Result<(), Rejection> {
    for (row, run) in rows.iter().zip(runs) {
        if let Some(field) = derived::first_non_finite(run) {
            return Err(Rejection::invalid(
                "figure_not_finite",
                format!(
                    "{} row {}: {field} computes to a non-finite number (are the power samples plausible watts?)",
                    row.file, row.line
                ),
            )
            .with(
                Detail::new(format!("{field} is not finite"))
                    .file(&row.file)
                    .row(row.line)
                    .column("gpu_0_power_draw_watts"),
            ));
        }
    }
    Ok(())
}

/// Every configuration's spreads are finite, and there is a configuration
/// at all (one needs an iteration that generated tokens).
pub fn check_configurations(configurations: &[ConfigurationMetrics]) -> Result<(), Rejection> {
    if let Some((c, field)) = configurations
        .iter()
        .find_map(|c| derived::first_non_finite_spread(c).map(|f| (c, f)))
    {
        return Err(Rejection::invalid(
            "figure_not_finite",
            format!(
                "{} {} {}: the spread of {field} over iterations is not a finite number",
                c.model,
                c.scenario.as_str(),
                c.lambda_qps
                    .map(|l| format!("at {l} req/s"))
                    .unwrap_or_default()
            ),
        ));
    }
    if configurations.is_empty() {
        return Err(Rejection::invalid(
            "no_tokens",
            "no iteration in the bundle generated any tokens; there is nothing to measure",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

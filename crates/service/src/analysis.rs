//! Everything between a bundle's raw bytes and its derived metrics, before
//! anything is stored: safe unpack → manifest schema → audience → file list
//! and digests → harness CSVs → derived metrics → the checks that need only
//! the bundle. Bytes in, an [`Analysis`] or a [`Rejection`] out, with no
//! store: ingest adds the signature, the store and the peer checks. It is
//! here, not in wattcounts-rules, because it parses files in parallel on
//! rayon's pool and times its stages for the ingest benchmark; every rule
//! it applies is a wattcounts-rules function.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use wattcounts_rules::bundle::harness::{self, DetailCounts, FileKind, IterationRow};
use wattcounts_rules::bundle::manifest::{Manifest, ManifestSchema};
use wattcounts_rules::bundle::system_info::{self, SystemInfo};
use wattcounts_rules::bundle::unpack::{self, ArchiveEntry, UnpackLimits};
use wattcounts_rules::bundle::MANIFEST_NAME;
use wattcounts_rules::checks::{self, CheckInput, CheckOutcome, CheckResult, Thresholds};
use wattcounts_rules::derived::{self, ConfigurationMetrics, IterationMetrics, StoredDerivation};
use wattcounts_rules::digest::sha256_hex;
use wattcounts_rules::model_config::BundledModel;
use wattcounts_rules::rejection::{Detail, Rejection};

/// What the analysis is held to: the audience bundles must name, the
/// unpack limits and the checks' thresholds.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// The service's public origin; bundles must name it as `audience`.
    pub public_url: String,
    pub unpack: UnpackLimits,
    pub thresholds: Thresholds,
}

/// Wall time of each stage, for the ingest benchmark.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageTimings {
    pub hash: Duration,
    pub verify: Duration,
    pub decompress: Duration,
    pub parse: Duration,
    pub derive: Duration,
    /// Reproducibility and plausibility checks, peers lookup included.
    pub checks: Duration,
    pub store: Duration,
    /// Bytes of the unpacked archive (for throughput figures).
    pub unpacked_bytes: u64,
}

impl StageTimings {
    pub fn add(&mut self, o: &StageTimings) {
        self.hash += o.hash;
        self.verify += o.verify;
        self.decompress += o.decompress;
        self.parse += o.parse;
        self.derive += o.derive;
        self.checks += o.checks;
        self.store += o.store;
        self.unpacked_bytes += o.unpacked_bytes;
    }
    pub fn total(&self) -> Duration {
        self.hash
            + self.verify
            + self.decompress
            + self.parse
            + self.derive
            + self.checks
            + self.store
    }
}

/// What a valid bundle holds, before it is stored.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub manifest: Manifest,
    pub runs: Vec<IterationMetrics>,
    pub configurations: Vec<ConfigurationMetrics>,
    /// Every check that needs only the bundle, on the configurations kept.
    pub checks: Vec<CheckResult>,
    /// Configurations that broke a hard rule on their own while others in
    /// the bundle did not: left out of `runs` and `configurations`, each
    /// with its failing results. Empty when every configuration fails (the
    /// bundle is rejected whole) or none does.
    pub rejected_configurations: Vec<checks::RejectedConfiguration>,
    /// The catalogue GPU the manifest names, if the catalogue has it.
    pub gpu: Option<&'static wattcounts_rules::catalog::GpuSpec>,
    /// The protocol the runs followed.
    pub protocol: wattcounts_rules::domain::Protocol,
    /// The digest of the harness files (everything but the manifest).
    pub content_sha256: String,
    /// The models' config.json files the bundle carries, read.
    pub bundled_models: Vec<BundledModel>,
}

/// The protocol, run-content digest and metrics of a bundle stored earlier
/// (for `db rebuild`): the manifest and the results CSVs, nothing else. The
/// bundle passed every rule when it was stored, so no rule is run again.
pub fn derive_stored(
    bundle: &[u8],
    schema: &ManifestSchema,
    limits: &UnpackLimits,
) -> Result<StoredDerivation, Rejection> {
    let mut manifest_bytes = None;
    let mut rows = Vec::new();
    let mut failure = None;
    unpack::unpack_each(bundle, limits, |e| {
        if e.path == MANIFEST_NAME {
            manifest_bytes = Some(e.data);
            return;
        }
        let name = e.path.rsplit('/').next().unwrap_or(&e.path);
        if let Some(FileKind::Results(s)) = harness::classify(name) {
            match harness::parse_results(&e.path, &e.data, s) {
                Ok(r) => rows.extend(r),
                Err(r) => failure = Some(r),
            }
        }
    })?;
    if let Some(r) = failure {
        return Err(r);
    }
    let manifest_bytes = manifest_bytes.ok_or_else(|| {
        Rejection::invalid("manifest_missing", "the stored bundle has no manifest")
    })?;
    let manifest = schema.parse(&manifest_bytes)?;
    let gpu = wattcounts_rules::catalog::gpu_by_nvml_name(&manifest.system.gpu.name);
    let protocol = wattcounts_rules::protocol::derive(&manifest, &rows, gpu)?;
    sort_rows(&mut rows);
    let runs: Vec<IterationMetrics> = rows.iter().map(derived::derive).collect();
    let configurations = derived::aggregate(&runs);
    Ok(StoredDerivation {
        protocol,
        content_sha256: wattcounts_rules::protocol::content_digest(&manifest),
        runs,
        configurations,
    })
}

/// Rows in the order ingest stores their runs: model, scenario, rate, iteration.
fn sort_rows(rows: &mut [IterationRow]) {
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

/// Everything between the raw bytes and the derived metrics. Pure: bytes in,
/// data or a rejection out.
pub fn analyse(
    bundle: &[u8],
    schema: &ManifestSchema,
    cfg: &IngestConfig,
    received_at: chrono::DateTime<chrono::Utc>,
    t: &mut StageTimings,
) -> Result<Analysis, Rejection> {
    analyse_stream(bundle, bundle.len() as u64, schema, cfg, received_at, t)
}

/// Bytes of parsed entries waiting for, or in, a worker at once: the
/// inflating thread waits beyond it, so a fast inflate cannot pile up a
/// bundle's worth of CSVs in memory ahead of slower parsing.
const IN_FLIGHT_BYTES: u64 = 64 << 20;

/// [`analyse`] over a stream (`compressed_len` bytes of tar.gz): only the
/// manifest and the files that are parsed are held, the rest are digested
/// as they stream past.
pub fn analyse_stream(
    source: impl std::io::BufRead,
    compressed_len: u64,
    schema: &ManifestSchema,
    cfg: &IngestConfig,
    received_at: chrono::DateTime<chrono::Utc>,
    t: &mut StageTimings,
) -> Result<Analysis, Rejection> {
    // Inflate on this thread while the pool digests and parses each file
    // as soon as it is out of the archive.
    let start = Instant::now();
    let processed = std::sync::Mutex::new(Vec::new());
    let in_flight = InFlight::default();
    let mut manifest_bytes = None;
    let mut paths = Vec::new();
    let mut unpacked = 0u64;
    let mut inflated_at = start.elapsed();
    rayon::in_place_scope(|scope| {
        let r = unpack::unpack_stream(source, compressed_len, &cfg.unpack, is_parsed, |e| {
            unpacked += e.size;
            if e.path == MANIFEST_NAME {
                manifest_bytes = Some(e.data);
                return;
            }
            paths.push(e.path.clone());
            let held = e.data.len() as u64;
            in_flight.take(held);
            let (processed, in_flight) = (&processed, &in_flight);
            scope.spawn(move |_| {
                let p = process_file(e);
                in_flight.give_back(held);
                processed.lock().expect("no panics while holding").push(p);
            });
        });
        inflated_at = start.elapsed();
        r
    })?;
    // Parsing that outlasted the inflating counts as parsing.
    let parse_tail = start.elapsed() - inflated_at;
    t.decompress = inflated_at;
    t.unpacked_bytes = unpacked;

    let start = Instant::now() - parse_tail;
    let manifest_bytes = manifest_bytes.ok_or_else(|| {
        Rejection::invalid(
            "manifest_missing",
            format!("the bundle has no {MANIFEST_NAME} at its root; make bundles with `wattcounts pack`"),
        )
    })?;
    let manifest = schema.parse(&manifest_bytes)?;
    let want = cfg.public_url.trim_end_matches('/');
    if manifest.audience.trim_end_matches('/') != want {
        return Err(Rejection::forbidden(
            "audience_mismatch",
            format!("this bundle was packed for {} but this service is {want}; pack it again with --audience {want}", manifest.audience),
        )
        .with(Detail::new(format!("expected {want}, found {}", manifest.audience)).file(MANIFEST_NAME).pointer("/audience")));
    }
    check_file_list(&manifest, &paths)?;
    let mut processed = processed.into_inner().expect("no panics while holding");
    processed.sort_by(|a, b| a.path.cmp(&b.path));
    let parsed = check_files(processed, &manifest)?;
    t.parse = start.elapsed();

    let start = Instant::now();
    let runs: Vec<IterationMetrics> = parsed.rows.iter().map(derived::derive).collect();
    // Finite but huge samples can overflow a mean or a spread: such a
    // figure cannot be stored, compared or written as JSON.
    for (row, run) in parsed.rows.iter().zip(&runs) {
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
    let configurations = derived::aggregate(&runs);
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
    t.derive = start.elapsed();
    if configurations.is_empty() {
        return Err(Rejection::invalid(
            "no_tokens",
            "no iteration in the bundle generated any tokens; there is nothing to measure",
        ));
    }

    let start = Instant::now();
    let gpu = wattcounts_rules::catalog::gpu_by_nvml_name(&manifest.system.gpu.name);
    let protocol = wattcounts_rules::protocol::derive(&manifest, &parsed.rows, gpu)?;
    let content_sha256 = wattcounts_rules::protocol::content_digest(&manifest);
    let (checks, apart) = {
        let input = CheckInput {
            manifest: &manifest,
            received_at,
            bundled_models: &parsed.bundled_models,
            system_info: parsed.system_info.as_ref(),
            gpu,
            rows: &parsed.rows,
            runs: &runs,
            configurations: &configurations,
        };
        let checks = checks::evaluate(&input, &cfg.thresholds);
        // A hard failure: is it one configuration's (a model that crashed
        // part-way, say) or the bundle's? Only then is each judged alone.
        let apart = checks
            .iter()
            .any(|c| c.outcome == CheckOutcome::Fail)
            .then(|| set_apart(&input, &cfg.thresholds))
            .flatten();
        (checks, apart)
    };
    let (checks, runs, configurations, rejected) = match apart {
        Some(k) => (k.checks, k.runs, k.configurations, k.rejected),
        None => (checks, runs, configurations, Vec::new()),
    };
    t.checks = start.elapsed();
    Ok(Analysis {
        manifest,
        runs,
        configurations,
        checks,
        rejected_configurations: rejected,
        gpu,
        protocol,
        content_sha256,
        bundled_models: parsed.bundled_models,
    })
}

/// What a bundle keeps when some of its configurations are set apart.
struct Kept {
    /// The bundle's checks on the configurations kept.
    checks: Vec<CheckResult>,
    runs: Vec<IterationMetrics>,
    configurations: Vec<ConfigurationMetrics>,
    rejected: Vec<checks::RejectedConfiguration>,
}

/// What a bundle with a hard failure keeps when only some configurations
/// break rules on their own. `None` when the bundle is judged whole: every
/// configuration fails, a failure is not one a configuration can carry
/// alone, or the rest still fails.
fn set_apart(input: &CheckInput, t: &Thresholds) -> Option<Kept> {
    let rejected = checks::rejected_configurations(input, t)?;
    if rejected.is_empty() || rejected.len() == input.configurations.len() {
        return None;
    }
    let kept = |model: &str, s, l| !rejected.iter().any(|r| r.configuration.is_of(model, s, l));
    let rows: Vec<IterationRow> = input
        .rows
        .iter()
        .filter(|r| kept(&r.model, r.scenario, r.lambda_qps))
        .cloned()
        .collect();
    let runs: Vec<IterationMetrics> = input
        .runs
        .iter()
        .filter(|r| kept(&r.model, r.scenario, r.lambda_qps))
        .cloned()
        .collect();
    let configurations: Vec<ConfigurationMetrics> = input
        .configurations
        .iter()
        .filter(|c| kept(&c.model, c.scenario, c.lambda_qps))
        .cloned()
        .collect();
    let checks = checks::evaluate(
        &CheckInput {
            rows: &rows,
            runs: &runs,
            configurations: &configurations,
            ..*input
        },
        t,
    );
    if checks.iter().any(|c| c.outcome == CheckOutcome::Fail) {
        return None;
    }
    Some(Kept {
        checks,
        runs,
        configurations,
        rejected,
    })
}

/// Every archive file is listed, every listed file is present.
fn check_file_list(m: &Manifest, paths: &[String]) -> Result<(), Rejection> {
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

struct Parsed {
    rows: Vec<IterationRow>,
    system_info: Option<SystemInfo>,
    /// The manifest's `models`, each config read.
    bundled_models: Vec<BundledModel>,
}

enum FileOutcome {
    Other,
    ModelConfig(Vec<u8>),
    SystemInfo(SystemInfo),
    Results(Vec<IterationRow>),
    Details(DetailCounts),
}

/// One archive file, digested and (if it is a harness CSV) parsed.
struct Processed {
    path: String,
    size: u64,
    sha256: String,
    outcome: Result<FileOutcome, Rejection>,
}

/// What analysis reads an archive file as.
enum ParsedAs {
    /// A harness CSV directly inside a model folder.
    Harness(FileKind),
    SystemInfo,
    /// A model's config.json (`model-configs/ORG/NAME/config.json`), or its
    /// model.safetensors.index.json beside it.
    ModelConfig,
}

fn parsed_as(path: &str) -> Option<ParsedAs> {
    if path == system_info::FILE_NAME {
        return Some(ParsedAs::SystemInfo);
    }
    if path.starts_with(wattcounts_rules::bundle::manifest::MODEL_CONFIG_DIR)
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
fn is_parsed(path: &str) -> bool {
    path == MANIFEST_NAME || parsed_as(path).is_some()
}

/// A byte budget the inflating thread waits on (see [`IN_FLIGHT_BYTES`]).
#[derive(Default)]
struct InFlight {
    held: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

impl InFlight {
    fn take(&self, bytes: u64) {
        let mut held = self.held.lock().expect("no panics while holding");
        // One entry larger than the budget still goes, alone.
        while *held > 0 && *held + bytes > IN_FLIGHT_BYTES {
            held = self.freed.wait(held).expect("no panics while holding");
        }
        *held += bytes;
    }
    fn give_back(&self, bytes: u64) {
        *self.held.lock().expect("no panics while holding") -= bytes;
        self.freed.notify_all();
    }
}

fn process_file(e: ArchiveEntry) -> Processed {
    let outcome = match parsed_as(&e.path) {
        Some(ParsedAs::Harness(FileKind::Results(s))) => {
            harness::parse_results(&e.path, &e.data, s).map(FileOutcome::Results)
        }
        Some(ParsedAs::Harness(FileKind::Details(s))) => {
            harness::parse_details(&e.path, &e.data, s).map(FileOutcome::Details)
        }
        Some(ParsedAs::SystemInfo) => Ok(FileOutcome::SystemInfo(system_info::parse(
            &String::from_utf8_lossy(&e.data),
        ))),
        Some(ParsedAs::ModelConfig) => Ok(FileOutcome::ModelConfig(e.data.clone())),
        None => Ok(FileOutcome::Other),
    };
    Processed {
        sha256: e.streamed_sha256.unwrap_or_else(|| sha256_hex(&e.data)),
        size: e.size,
        path: e.path,
        outcome,
    }
}

/// Sizes and digests against the manifest first, then what parsing found.
fn check_files(processed: Vec<Processed>, m: &Manifest) -> Result<Parsed, Rejection> {
    let by_path: HashMap<&str, (usize, &wattcounts_rules::bundle::manifest::FileEntry)> = m
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), (i, f)))
        .collect();
    for p in &processed {
        let (i, f) = by_path[p.path.as_str()];
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
                    .file(&p.path)
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
                    .file(&p.path)
                    .pointer(format!("/files/{i}/sha256")),
            ));
        }
    }
    let outcomes: Vec<(String, FileOutcome)> = processed
        .into_iter()
        .map(|p| p.outcome.map(|o| (p.path, o)))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    let mut system_info = None;
    let mut details: Vec<(String, DetailCounts)> = Vec::new();
    let mut configs: HashMap<String, Vec<u8>> = HashMap::new();
    for (path, o) in outcomes {
        match o {
            FileOutcome::ModelConfig(bytes) => {
                configs.insert(path, bytes);
            }
            FileOutcome::Details(d) => details.push((path, d)),
            FileOutcome::Results(r) => {
                let first = &r[0].model;
                if let Some(other) = r.iter().find(|x| &x.model != first) {
                    return Err(Rejection::invalid(
                        "csv_mixed_models",
                        format!("{path} mixes models '{first}' and '{}'", other.model),
                    )
                    .with(
                        Detail::new(format!(
                            "model '{}' differs from '{first}' in row 2",
                            other.model
                        ))
                        .file(&path)
                        .row(other.line)
                        .column("model"),
                    ));
                }
                rows.extend(r)
            }
            FileOutcome::SystemInfo(i) => system_info = Some(i),
            FileOutcome::Other => {}
        }
    }
    check_details(&rows, &details)?;
    if rows.is_empty() {
        return Err(Rejection::invalid(
            "no_results",
            "the bundle holds no harness results (<model folder>/llm_batch_optimized_results.csv or llm_server_optimized_results.csv)",
        ));
    }
    // A stable order regardless of thread scheduling.
    sort_rows(&mut rows);
    // Each model the manifest names with its config (the file is listed,
    // so its digest was checked above).
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
    Ok(Parsed {
        rows,
        system_info,
        bundled_models,
    })
}

/// Each details file must hold one row per request of the results file
/// beside it (successes, or successes and failures).
fn check_details(
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

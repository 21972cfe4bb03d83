//! Everything between a bundle's raw bytes and its derived metrics, before
//! anything is stored: safe unpack → manifest schema → audience → file list
//! and digests → harness CSVs → derived metrics → the checks that need only
//! the bundle. Bytes in, an [`Analysis`] or a [`Rejection`] out, with no
//! store: ingest adds the signature, the store and the peer checks. It is
//! here, not in wattcounts-rules, because it parses files in parallel on
//! rayon's pool and times its stages for the ingest benchmark; every rule
//! it applies is a wattcounts-rules function (`bundle::contents` for what
//! the bundle holds, `checks` for what its figures say).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use wattcounts_rules::bundle::contents::{self, FileSeen, ParsedAs};
use wattcounts_rules::bundle::harness::{self, DetailCounts, FileKind, IterationRow};
use wattcounts_rules::bundle::manifest::{Manifest, ManifestSchema};
use wattcounts_rules::bundle::system_info::{self, SystemInfo};
use wattcounts_rules::bundle::unpack::{self, ArchiveEntry, UnpackLimits};
use wattcounts_rules::bundle::MANIFEST_NAME;
use wattcounts_rules::checks::{self, CheckInput, CheckOutcome, CheckResult, Thresholds};
use wattcounts_rules::derived::{self, ConfigurationMetrics, IterationMetrics, StoredDerivation};
use wattcounts_rules::digest::sha256_hex;
use wattcounts_rules::model_config::BundledModel;
use wattcounts_rules::rejection::Rejection;

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
    contents::sort_rows(&mut rows);
    let runs: Vec<IterationMetrics> = rows.iter().map(derived::derive).collect();
    let configurations = derived::aggregate(&runs);
    Ok(StoredDerivation {
        protocol,
        content_sha256: wattcounts_rules::protocol::content_digest(&manifest),
        runs,
        configurations,
    })
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
        let r = unpack::unpack_stream(
            source,
            compressed_len,
            &cfg.unpack,
            contents::is_parsed,
            |e| {
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
            },
        );
        inflated_at = start.elapsed();
        r
    })?;
    // Parsing that outlasted the inflating counts as parsing.
    let parse_tail = start.elapsed() - inflated_at;
    t.decompress = inflated_at;
    t.unpacked_bytes = unpacked;

    let start = Instant::now() - parse_tail;
    let manifest = schema.parse(&contents::manifest_present(manifest_bytes)?)?;
    contents::check_audience(&manifest, &cfg.public_url)?;
    contents::check_file_list(&manifest, &paths)?;
    let mut processed = processed.into_inner().expect("no panics while holding");
    processed.sort_by(|a, b| a.path.cmp(&b.path));
    let parsed = check_files(processed, &manifest)?;
    t.parse = start.elapsed();

    let start = Instant::now();
    let runs: Vec<IterationMetrics> = parsed.rows.iter().map(derived::derive).collect();
    contents::check_runs_finite(&parsed.rows, &runs)?;
    let configurations = derived::aggregate(&runs);
    t.derive = start.elapsed();
    contents::check_configurations(&configurations)?;

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
            .then(|| checks::set_apart(&input, &cfg.thresholds))
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
    let outcome = match contents::parsed_as(&e.path) {
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
    let seen: Vec<FileSeen<'_>> = processed
        .iter()
        .map(|p| FileSeen {
            path: &p.path,
            size: p.size,
            sha256: &p.sha256,
        })
        .collect();
    contents::check_sizes_and_digests(m, &seen)?;
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
                contents::check_one_model(&path, &r)?;
                rows.extend(r)
            }
            FileOutcome::SystemInfo(i) => system_info = Some(i),
            FileOutcome::Other => {}
        }
    }
    contents::check_details(&rows, &details)?;
    contents::check_results_present(&rows)?;
    // A stable order regardless of thread scheduling.
    contents::sort_rows(&mut rows);
    Ok(Parsed {
        rows,
        system_info,
        bundled_models: contents::bundled_models(m, &configs)?,
    })
}

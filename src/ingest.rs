//! The submission pipeline, stage by stage:
//! sha256 of the exact bytes → replay lookup → signature against a
//! registered key → safe unpack → manifest schema → audience → file list and
//! digests → harness CSVs → derived metrics → one transaction + blob.
//!
//! Each stage is a plain function; this module only strings them together
//! and talks to the store. It knows nothing of HTTP.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::bundle::harness::{self, DetailCounts, FileKind, IterationRow};
use crate::bundle::manifest::{Manifest, ManifestSchema};
use crate::bundle::system_info::{self, SystemInfo};
use crate::bundle::unpack::{self, Entry, UnpackLimits};
use crate::bundle::MANIFEST_NAME;
use crate::checks::{self, CheckInput, CheckResult, Thresholds};
use crate::derived::{self, ConfigurationMetrics, IterationMetrics};
use crate::digest::sha256_hex;
use crate::receipt::Receipt;
use crate::rejection::{Detail, RejectKind, Rejection};
use crate::signing;
use crate::store::blobs::{BlobStore, StagedBundle};
use crate::store::receipt::{self as stored_receipt, Stored};
use crate::store::{InsertOutcome, NewSubmission, Store, StoreError};

/// The handle the service registers for its own synthetic demo data.
pub const DEMO_HANDLE: &str = "demo";

#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// The service's public origin; bundles must name it as `audience`.
    pub public_url: String,
    pub unpack: UnpackLimits,
    pub thresholds: Thresholds,
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{0}")]
    Rejected(Rejection),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<Rejection> for IngestError {
    fn from(r: Rejection) -> Self {
        IngestError::Rejected(r)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Stored now.
    Created,
    /// These bytes were stored before; same receipt, nothing new stored.
    Replayed,
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
    /// Every check that needs only the bundle.
    pub checks: Vec<CheckResult>,
    /// The catalogue GPU the manifest names, if the catalogue has it.
    pub gpu: Option<&'static crate::catalog::GpuSpec>,
    /// The protocol the runs followed.
    pub protocol: crate::domain::Protocol,
    /// The digest of the harness files (everything but the manifest).
    pub content_sha256: String,
}

pub struct Ingestor {
    store: Arc<dyn Store>,
    pub blobs: BlobStore,
    schema: Arc<ManifestSchema>,
    pub config: IngestConfig,
    /// Submissions per signing key (and the other request limits).
    pub limits: crate::limits::RateLimits,
}

impl Ingestor {
    pub fn new(
        store: Arc<dyn Store>,
        blobs: BlobStore,
        config: IngestConfig,
        limits: crate::limits::RateLimits,
    ) -> Self {
        Ingestor {
            store,
            blobs,
            schema: Arc::new(ManifestSchema::new()),
            config,
            limits,
        }
    }

    pub async fn receipt(&self, id: uuid::Uuid) -> Result<Option<Receipt>, StoreError> {
        let Some(rec) = self.store.submission(id).await? else {
            return Ok(None);
        };
        let configurations = self.store.configurations(id).await?;
        let checks = self.store.check_results(id).await?;
        let moderation = self.store.moderation_events(id).await?;
        Ok(Some(stored_receipt::build(Stored {
            record: rec,
            configurations,
            checks,
            moderation,
        })))
    }

    /// The stored receipt of these bytes, if they were stored already.
    pub async fn known(&self, sha256_hex: &str) -> Result<Option<(Outcome, Receipt)>, IngestError> {
        match self.store.submission_by_digest(sha256_hex).await? {
            Some(id) => self.existing(id).await.map(Some),
            None => Ok(None),
        }
    }

    async fn existing(&self, id: uuid::Uuid) -> Result<(Outcome, Receipt), IngestError> {
        let r = self
            .receipt(id)
            .await?
            .ok_or_else(|| IngestError::Internal(format!("submission {id} vanished")))?;
        Ok((Outcome::Replayed, r))
    }

    /// Ingests a bundle already streamed to a staging file (digested on
    /// the way) with its signature: nothing but the signature and the
    /// entries that are parsed is ever held in memory.
    pub async fn submit_staged(
        &self,
        bundle: StagedBundle,
        signature: Vec<u8>,
        t: &mut StageTimings,
    ) -> Result<(Outcome, Receipt), IngestError> {
        let digest = bundle.sha256_hex.clone();

        // The same bytes again: the same receipt, nothing new stored.
        if let Some(id) = self.store.submission_by_digest(&digest).await? {
            return self.existing(id).await;
        }

        let start = Instant::now();
        let sig = signing::parse_signature(&signature, signing::SUBMISSION_NAMESPACE, "signature")?;
        let fingerprint = signing::signer_fingerprint(&sig);
        self.limits
            .count(
                &*self.store,
                crate::limits::Action::Submit,
                crate::limits::Subject::Key(&fingerprint),
            )
            .await?;
        let key = self.store.key_by_fingerprint(&fingerprint).await?.ok_or_else(|| {
            Rejection::forbidden(
                "unknown_key",
                format!("no registered submitter has the key {fingerprint}; register it first (wattcounts register)"),
            )
            .with(Detail::new(format!("signing key {fingerprint}")).file("signature"))
        })?;
        let now = Utc::now();
        if let Some(revoked) = key.revoked_at.filter(|r| *r <= now) {
            return Err(Rejection::forbidden(
                "key_revoked",
                format!(
                    "the key {fingerprint} was revoked at {}; sign with a current key",
                    crate::store::ts(&revoked)
                ),
            )
            .into());
        }
        if key.submitter_suspended_at.is_some() {
            return Err(Rejection::forbidden(
                "submitter_suspended",
                format!(
                    "submitter '{}' is suspended; contact the maintainers",
                    key.handle
                ),
            )
            .into());
        }
        let public = signing::parse_stored_key(&key.public_key)?;
        // Checked against the digests taken while the body streamed in,
        // before a byte of the archive is inflated.
        signing::verify_digests(
            &public,
            signing::SUBMISSION_NAMESPACE,
            &bundle.digests,
            &sig,
            "signature",
        )?;
        t.verify = start.elapsed();

        let bundle_bytes = bundle.len;
        // The staged file goes to disk while the analysis reads it (from
        // the page cache).
        let bundle = Arc::new(bundle);
        let synced = {
            let b = bundle.clone();
            blocking(move || b.sync())
        };
        let analysed = {
            let cfg = self.config.clone();
            let schema = self.schema.clone();
            let bundle = bundle.clone();
            blocking(move || {
                let mut local = StageTimings::default();
                let r = bundle
                    .open()
                    .map_err(|e| IngestError::Internal(format!("reading the staged bundle: {e}")))
                    .map(|f| {
                        let source = std::io::BufReader::with_capacity(256 * 1024, f);
                        analyse_stream(source, bundle.len, &schema, &cfg, &mut local)
                    });
                (r, local)
            })
        };
        let (synced, analysed) = tokio::join!(synced, analysed);
        synced?.map_err(|e| IngestError::Internal(format!("flushing the staged bundle: {e}")))?;
        let bundle = Arc::into_inner(bundle).expect("the workers are done with it");
        let analysis = {
            let (r, local) = analysed?;
            t.decompress = local.decompress;
            t.parse = local.parse;
            t.derive = local.derive;
            t.checks = local.checks;
            t.unpacked_bytes = local.unpacked_bytes;
            r??
        };
        let m = &analysis.manifest;
        if m.submitter.key_fingerprint != fingerprint {
            return Err(Rejection::forbidden(
                "key_mismatch",
                format!(
                    "the manifest names key {} but the bundle was signed with {fingerprint}",
                    m.submitter.key_fingerprint
                ),
            )
            .with(
                Detail::new("submitter key differs from the signing key")
                    .file(MANIFEST_NAME)
                    .pointer("/submitter/key_fingerprint"),
            )
            .into());
        }
        if !m.submitter.handle.eq_ignore_ascii_case(&key.handle) {
            return Err(Rejection::forbidden(
                "handle_mismatch",
                format!(
                    "the manifest names submitter '{}' but the signing key belongs to '{}'",
                    m.submitter.handle, key.handle
                ),
            )
            .with(
                Detail::new("handle differs from the key's owner")
                    .file(MANIFEST_NAME)
                    .pointer("/submitter/handle"),
            )
            .into());
        }
        if let Some(known) = self.store.submission_digest(m.submission_id).await? {
            if known != digest {
                return Err(id_taken(m.submission_id).into());
            }
        }

        // The same run, packed again (a new submission_id), is one submission.
        if let Some((id, status)) = self
            .store
            .submission_by_content(&analysis.content_sha256)
            .await?
        {
            // These very bytes, stored a moment ago by a request running
            // beside this one: a replay, not a second run.
            if self.store.submission_digest(id).await?.as_deref() == Some(digest.as_str()) {
                return self.existing(id).await;
            }
            return Err(run_already_stored(id, status).into());
        }

        // Consistency needs the accepted results already stored, of the
        // same groups (GPU, protocol, origin).
        let start = Instant::now();
        let gpu_id = analysis.gpu.map(|g| g.id.clone());
        let is_demo = key.handle == DEMO_HANDLE;
        let mut check_results = analysis.checks;
        let peers = match &gpu_id {
            Some(g) => {
                let keys: Vec<String> = analysis
                    .configurations
                    .iter()
                    .map(|c| {
                        crate::leaderboard::group_of(
                            Some(g),
                            &m.system.gpu.name,
                            is_demo,
                            &analysis.protocol,
                            c,
                        )
                        .key
                        .canonical()
                    })
                    .collect();
                self.store.peer_groups(&keys).await?
            }
            None => Vec::new(),
        };
        check_results.push(checks::consistency(
            &analysis.configurations,
            &peers,
            &self.config.thresholds,
        ));
        let status = checks::status_of(&check_results);
        t.checks += start.elapsed();

        let start = Instant::now();
        let blob_path = {
            let blobs = self.blobs.clone();
            blocking(move || blobs.commit(bundle))
                .await?
                .map_err(|e| IngestError::Internal(format!("writing the bundle blob: {e}")))?
        };
        let new = NewSubmission {
            id: m.submission_id,
            bundle_sha256: digest,
            submitter_id: key.submitter_id,
            key_id: key.key_id,
            key_fingerprint: key.fingerprint.clone(),
            status,
            received_at: now,
            gpu_name: m.system.gpu.name.clone(),
            gpu_id,
            run_name: m.run.name.clone(),
            is_demo,
            bundle_bytes,
            blob_path,
            signature: String::from_utf8_lossy(&signature).into_owned(),
            manifest_json: serde_json::to_string(m)
                .map_err(|e| IngestError::Internal(e.to_string()))?,
            protocol: analysis.protocol,
            content_sha256: analysis.content_sha256,
            runs: analysis.runs,
            configurations: analysis.configurations,
            checks: check_results,
        };
        let outcome = self.store.insert_submission(&new).await?;
        t.store = start.elapsed();
        match outcome {
            InsertOutcome::Inserted => {
                let r = self
                    .receipt(new.id)
                    .await?
                    .ok_or_else(|| IngestError::Internal("stored submission not found".into()))?;
                Ok((Outcome::Created, r))
            }
            // Another request stored the same bytes first.
            InsertOutcome::SameBytes(id) => self.existing(id).await,
            InsertOutcome::IdTaken => Err(id_taken(new.id).into()),
            // Another request stored the same run content first.
            InsertOutcome::SameContent(id, status) => Err(run_already_stored(id, status).into()),
        }
    }
}

fn run_already_stored(id: uuid::Uuid, status: crate::domain::Status) -> Rejection {
    Rejection::new(
        RejectKind::Conflict,
        "run_already_submitted",
        format!(
            "this run's harness files are already stored as submission {id} (status {status}); the same run counts once, whatever its submission_id"
        ),
    )
    .with(Detail::new(format!("same run content as {id}")).file(MANIFEST_NAME).pointer("/files"))
}

fn id_taken(id: uuid::Uuid) -> Rejection {
    Rejection::new(
        RejectKind::Conflict,
        "submission_id_reused",
        format!(
            "submission_id {id} is already stored with different bytes; pack again for a fresh id"
        ),
    )
    .with(
        Detail::new("known submission_id, other bundle digest")
            .file(MANIFEST_NAME)
            .pointer("/submission_id"),
    )
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, IngestError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| IngestError::Internal(format!("worker failed: {e}")))
}

/// The protocol and run-content digest of a bundle stored earlier (for
/// `db rebuild`): the manifest and the results CSVs, nothing else. The
/// bundle passed every rule when it was stored, so no rule is run again.
pub fn derive_stored(
    bundle: &[u8],
    schema: &ManifestSchema,
    limits: &UnpackLimits,
) -> Result<(crate::domain::Protocol, String), Rejection> {
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
    let gpu = crate::catalog::gpu_by_nvml_name(&manifest.system.gpu.name);
    let protocol = crate::protocol::derive(&manifest, &rows, gpu)?;
    Ok((protocol, crate::protocol::content_digest(&manifest)))
}

/// Everything between the raw bytes and the derived metrics. Pure: bytes in,
/// data or a rejection out.
pub fn analyse(
    bundle: &[u8],
    schema: &ManifestSchema,
    cfg: &IngestConfig,
    t: &mut StageTimings,
) -> Result<Analysis, Rejection> {
    analyse_stream(bundle, bundle.len() as u64, schema, cfg, t)
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
    let gpu = crate::catalog::gpu_by_nvml_name(&manifest.system.gpu.name);
    let protocol = crate::protocol::derive(&manifest, &parsed.rows, gpu)?;
    let content_sha256 = crate::protocol::content_digest(&manifest);
    let checks = checks::evaluate(
        &CheckInput {
            manifest: &manifest,
            system_info: parsed.system_info.as_ref(),
            gpu,
            rows: &parsed.rows,
            runs: &runs,
            configurations: &configurations,
        },
        &cfg.thresholds,
    );
    t.checks = start.elapsed();
    Ok(Analysis {
        manifest,
        runs,
        configurations,
        checks,
        gpu,
        protocol,
        content_sha256,
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
}

enum FileOutcome {
    Other,
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
}

fn parsed_as(path: &str) -> Option<ParsedAs> {
    if path == system_info::FILE_NAME {
        return Some(ParsedAs::SystemInfo);
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

fn process_file(e: Entry) -> Processed {
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
    let by_path: HashMap<&str, (usize, &crate::bundle::manifest::FileEntry)> = m
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
    for (path, o) in outcomes {
        match o {
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
    Ok(Parsed { rows, system_info })
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

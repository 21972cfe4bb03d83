//! The submission pipeline, stage by stage:
//! sha256 of the exact bytes → replay lookup → signature against a
//! registered key → safe unpack → manifest schema → audience → file list and
//! digests → harness CSVs → derived metrics → one transaction + blob.
//!
//! The pure stages (unpack to checks) are `wattcounts_rules::analysis`; this
//! module verifies the signature against the registered key, runs the
//! analysis on a worker thread, adds the checks that need stored peers,
//! and stores the result with its blob. It knows nothing of HTTP.

use crate::error::ServiceError;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;

use crate::analysis::{analyse_stream, IngestConfig, StageTimings};
use crate::limits::LimitError;
use wattcounts_rules::bundle::manifest::ManifestSchema;
use wattcounts_rules::bundle::MANIFEST_NAME;
use wattcounts_rules::checks;
use wattcounts_rules::claims::Claim;
use wattcounts_rules::handles::DEMO_HANDLE;
use wattcounts_rules::receipt::Receipt;
use wattcounts_rules::rejection::{Detail, RejectKind, Rejection};
use wattcounts_rules::signing;
use wattcounts_store::blobs::{BlobStore, StagedBundle};
use wattcounts_store::crash_points::{self, CrashPoint};
use wattcounts_store::receipt::{self as stored_receipt, Stored};
use wattcounts_store::{InsertOutcome, NewSubmission, Store, StoreError};

/// How long a client waits before retrying on a full disk: space comes
/// back when an operator frees it, not in seconds.
const DISK_FULL_RETRY_SECS: u64 = 60;

/// An I/O failure while `doing` something with the data dir: a full disk
/// (or an exhausted quota) is the service's condition, not the upload's,
/// and answers 507 with Retry-After; anything else is internal.
pub(crate) fn disk_error(doing: &str, e: std::io::Error) -> IngestError {
    // ENOSPC and EDQUOT, as std names them.
    if matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ) {
        tracing::error!(error = %e, "{doing}: the data dir's disk is full");
        IngestError::Rejected(Rejection::retry_later(
            RejectKind::InsufficientStorage,
            "insufficient_storage",
            "the service's disk is full, so your upload was not stored; nothing is lost, send it again later",
            DISK_FULL_RETRY_SECS,
        ))
    } else {
        IngestError::Internal(format!("{doing}: {e}"))
    }
}

/// How long a client is asked to wait after the object store failed.
pub const STORE_RETRY_SECS: u64 = 30;

/// A bucket that did not take a bundle: away, refusing, silent past its
/// bounds (`objects::bounded_s3`). Nothing was stored (the row is written
/// only after the blob), so the client may send the same bytes again.
pub(crate) fn store_error(store: &str, doing: &str, e: std::io::Error) -> IngestError {
    if matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ) {
        return disk_error(doing, e);
    }
    tracing::error!(error = %e, store, "{doing}: the object store failed");
    IngestError::Rejected(Rejection::retry_later(
        RejectKind::Busy,
        "storage_unavailable",
        format!(
            "the object store {store} did not take the bundle ({e}); nothing was stored, send it again later"
        ),
        STORE_RETRY_SECS,
    ))
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{0}")]
    Rejected(Rejection),
    #[error(transparent)]
    Store(#[from] ServiceError),
    #[error("internal error: {0}")]
    Internal(String),
}

crate::error::store_error_into!(IngestError);

impl From<Rejection> for IngestError {
    fn from(r: Rejection) -> Self {
        IngestError::Rejected(r)
    }
}

impl From<LimitError> for IngestError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::Limited(r) => r.into(),
            LimitError::Store(s) => s.into(),
        }
    }
}

/// Whether an upload's bytes were stored by this request or before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Novelty {
    /// Stored now.
    Created,
    /// These bytes were stored before; same receipt, nothing new stored.
    Replayed,
}

pub struct Ingestor {
    store: Arc<dyn Store>,
    pub blobs: BlobStore,
    pub(crate) schema: Arc<ManifestSchema>,
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

    pub async fn receipt(&self, id: uuid::Uuid) -> Result<Option<Receipt>, ServiceError> {
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

    /// The stored receipt of these bytes, if they were stored already and
    /// `signature` is a signature over them by the key that signed them
    /// when they were stored (the receipt is public, but an upload answered
    /// 200 says "your signed bundle is stored": a garbage, empty or other
    /// key's signature must not get that answer).
    pub async fn known(
        &self,
        sha256_hex: &str,
        digests: &signing::MessageDigests,
        signature: &[u8],
    ) -> Result<Option<(Novelty, Receipt)>, IngestError> {
        match self.store.submission_by_digest(sha256_hex).await? {
            Some(id) => {
                self.replay_signed_by_its_signer(id, digests, signature)
                    .await?;
                self.existing(id).await.map(Some)
            }
            None => Ok(None),
        }
    }

    /// Checks a replay's signature against the key that signed the stored
    /// bundle `id`, as its stored `.sig` names it (a revoked key still
    /// proves authorship of what it signed before its revocation).
    async fn replay_signed_by_its_signer(
        &self,
        id: uuid::Uuid,
        digests: &signing::MessageDigests,
        signature: &[u8],
    ) -> Result<(), IngestError> {
        let sig = signing::parse_signature(signature, signing::SUBMISSION_NAMESPACE, "signature")?;
        let (_, stored_sig) =
            self.store.submission_documents(id).await?.ok_or_else(|| {
                IngestError::Internal(format!("submission {id} has no documents"))
            })?;
        let stored = signing::parse_signature(
            stored_sig.as_bytes(),
            signing::SUBMISSION_NAMESPACE,
            "signature",
        )
        .map_err(|r| IngestError::Internal(format!("submission {id}'s stored signature: {r}")))?;
        let signer = signing::signer_fingerprint(&stored);
        let replayed_by = signing::signer_fingerprint(&sig);
        if replayed_by != signer {
            return Err(Rejection::forbidden(
                "bad_signature",
                "these bytes are stored already, signed by another key: send them with the signature they were stored with",
            )
            .with(
                Detail::new(format!(
                    "signed by {replayed_by}, not by {signer}, the key that signed the stored bundle"
                ))
                .file("signature"),
            )
            .into());
        }
        // The stored signature carries its signer's public key, checked
        // against the registered key when the bytes were stored: no lookup.
        let public = signing::signer_key(&stored);
        signing::verify_digests(
            &public,
            signing::SUBMISSION_NAMESPACE,
            digests,
            &sig,
            "signature",
        )?;
        Ok(())
    }

    async fn existing(&self, id: uuid::Uuid) -> Result<(Novelty, Receipt), IngestError> {
        let r = self
            .receipt(id)
            .await?
            .ok_or_else(|| IngestError::Internal(format!("submission {id} vanished")))?;
        Ok((Novelty::Replayed, r))
    }

    /// The verdict on an analysed bundle: its own checks, then the one that
    /// needs stored peers (consistency, within the same groups: GPU,
    /// protocol, origin), the status they give, and after them the results
    /// of configurations rejected on their own. Used at ingest and when a
    /// waiting submission is judged again.
    pub(crate) async fn judge(
        &self,
        mut check_results: Vec<checks::CheckResult>,
        rejected: Vec<checks::RejectedConfiguration>,
        analysis: &crate::analysis::Analysis,
        is_demo: bool,
    ) -> Result<(Vec<checks::CheckResult>, wattcounts_rules::domain::Status), StoreError> {
        let peers = match analysis.gpu {
            Some(g) => {
                let keys: Vec<String> = analysis
                    .configurations
                    .iter()
                    .map(|c| {
                        wattcounts_analytics::leaderboard::group_of(
                            Some(&g.id),
                            &analysis.manifest.system.gpu.name,
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
        // A guessed loaded idle gives way to the one accepted runs of this
        // GPU showed, once three submitters or more showed it (issue #54).
        if let Some(g) = analysis.gpu.filter(|g| g.idle_is_guessed()) {
            if let Some(seen) = self.store.observed_idle(&g.id, is_demo).await? {
                let judged =
                    checks::idle_floor_observed(g, &analysis.runs, &seen, &self.config.thresholds);
                if let Some(r) = judged {
                    if let Some(slot) = check_results.iter_mut().find(|c| c.id == r.id) {
                        *slot = r;
                    }
                }
            }
        }
        check_results.push(checks::consistency(
            &analysis.configurations,
            &peers,
            &self.config.thresholds,
        ));
        let status = checks::status_from_checks(&check_results);
        // Configurations rejected on their own travel with the receipt
        // (their iterations are not stored): after the bundle's results.
        check_results.extend(rejected.into_iter().flat_map(|r| r.failing));
        Ok((check_results, status))
    }

    /// Ingests a bundle already streamed to a staging file (digested on
    /// the way) with its signature: nothing but the signature and the
    /// entries that are parsed is ever held in memory.
    pub async fn submit_staged(
        &self,
        bundle: StagedBundle,
        signature: Vec<u8>,
        t: &mut StageTimings,
    ) -> Result<(Novelty, Receipt), IngestError> {
        // The same bytes again were answered before this (`known`, one
        // lookup); bytes stored by a request running beside this one are
        // the insert's `SameBytes`.
        let digest = bundle.sha256_hex.clone();

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
        signing::may_sign(
            &fingerprint,
            &key.handle,
            key.revoked_at,
            key.submitter_suspended_at.is_some(),
            now,
        )?;
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
                        analyse_stream(source, bundle.len, &schema, &cfg, now, &mut local)
                    });
                (r, local)
            })
        };
        let (synced, analysed) = tokio::join!(synced, analysed);
        synced?.map_err(|e| IngestError::Internal(format!("flushing the staged bundle: {e}")))?;
        let bundle = Arc::into_inner(bundle).expect("the workers are done with it");
        let mut analysis = {
            let (r, local) = analysed?;
            t.decompress = local.decompress;
            t.parse = local.parse;
            t.derive = local.derive;
            t.checks = local.checks;
            t.unpacked_bytes = local.unpacked_bytes;
            r??
        };
        // The verdicts leave the analysis (judged below, with the peers).
        let own_checks = std::mem::take(&mut analysis.checks);
        let rejected = std::mem::take(&mut analysis.rejected_configurations);
        let m = &analysis.manifest;
        wattcounts_rules::bundle::contents::check_signer(m, &fingerprint, &key.handle)?;
        let claims = self
            .store
            .prior_claims(m.submission_id, &analysis.content_sha256)
            .await?;
        // The same bytes are a replay (stored a moment ago by a request
        // beside this one); the same id with other bytes, or the same run
        // packed again under a new id, is refused.
        match wattcounts_rules::claims::judge(m.submission_id, &digest, &claims) {
            Claim::New => {}
            Claim::SameBytes(id) => return self.existing(id).await,
            Claim::IdTaken => return Err(id_taken(m.submission_id).into()),
            Claim::SameContent(id, status) => return Err(run_already_stored(id, status).into()),
        }

        // Consistency needs the accepted results already stored, of the
        // same groups (GPU, protocol, origin).
        let start = Instant::now();
        let gpu_id = analysis.gpu.map(|g| g.id.clone());
        let is_demo = key.handle == DEMO_HANDLE;
        let (check_results, status) = self.judge(own_checks, rejected, &analysis, is_demo).await?;
        t.checks += start.elapsed();

        let start = Instant::now();
        let blob_path = {
            let blobs = self.blobs.clone();
            let remote = self
                .blobs
                .objects()
                .is_remote()
                .then(|| self.blobs.objects().describe());
            blocking(move || blobs.commit(bundle))
                .await?
                .map_err(|e| match remote {
                    Some(store) => store_error(&store, "writing the bundle blob", e),
                    None => disk_error("writing the bundle blob", e),
                })?
        };
        crash_points::reach(CrashPoint::AfterBlobWrite);
        let bundled_models = std::mem::take(&mut analysis.bundled_models);
        let new = NewSubmission {
            id: m.submission_id,
            bundle_sha256: digest,
            submitter_id: key.submitter_id,
            handle: key.handle.clone(),
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
        if matches!(outcome, InsertOutcome::Inserted(_)) {
            crash_points::reach(CrashPoint::AfterCommit);
        }
        t.store = start.elapsed();
        match outcome {
            InsertOutcome::Inserted(r) => {
                if r.status == wattcounts_rules::domain::Status::Accepted && !is_demo {
                    self.catalogue_new_models(r.submission_id, &key.handle, &bundled_models)
                        .await;
                }
                Ok((Novelty::Created, *r))
            }
            // Another request stored the same bytes first.
            InsertOutcome::SameBytes(id) => self.existing(id).await,
            InsertOutcome::IdTaken => Err(id_taken(new.id).into()),
            // Another request stored the same run content first.
            InsertOutcome::SameContent(id, status) => Err(run_already_stored(id, status).into()),
        }
    }
}

impl Ingestor {
    /// Models first seen in an accepted bundle join the catalogue from the
    /// config.json it carries (issue #54): their figures by the one formula,
    /// with the submitter and the config's repo, revision and digest, and a
    /// log leaf. A model another bundle added meanwhile is left as it is.
    /// The submission is stored already: a store that fails here leaves the
    /// model for the next bundle (or `admin model add`), logged.
    async fn catalogue_new_models(
        &self,
        submission: uuid::Uuid,
        handle: &str,
        bundled: &[wattcounts_rules::model_config::BundledModel],
    ) {
        use wattcounts_rules::catalog::{self, ModelProvenance, ModelSpec};
        for b in bundled {
            if catalog::model_by_id(&b.id).is_some() {
                continue;
            }
            let Ok(figures) = &b.figures else { continue };
            let spec = ModelSpec::from_figures(&b.id, figures);
            if !catalog::model_plausibility_problems(&spec).is_empty() {
                continue;
            }
            let provenance = ModelProvenance {
                repo: b.id.clone(),
                revision: b.revision.clone(),
                config_sha256: b.config_sha256.clone(),
                precision: figures.precision.name.clone(),
            };
            let by = wattcounts_store::Actor {
                name: handle.to_string(),
                at: Utc::now(),
                reason: format!(
                    "first seen in accepted submission {submission}, from the config.json it carries"
                ),
            };
            match self
                .store
                .add_catalogue_model(&spec, &provenance, &by)
                .await
            {
                Ok(Some(added)) => catalog::install_model_additions(&[added.spec]),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, model = %b.id, "a model from an accepted bundle was not catalogued")
                }
            }
        }
    }
}

fn run_already_stored(id: uuid::Uuid, status: wattcounts_rules::domain::Status) -> Rejection {
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

//! Receiving a bundle: staged as it arrives, copies of one bundle taking
//! turns, the ingest queue, the receipt with its log proof, and the stored
//! bundle read back.

use uuid::Uuid;

use crate::analysis::{IngestConfig, StageTimings};
use crate::ingest::{IngestError, Novelty};
use crate::limits::RateLimits;
use crate::{files, tlog, upload, Service, ServiceError};
use wattcounts_rules::receipt::Receipt;
use wattcounts_store::blobs::BlobStore;

impl Service {
    pub fn limits(&self) -> &RateLimits {
        &self.ingestor.limits
    }

    /// Counts a request of `action` from a client address against its
    /// limit (the edge calls this before reading a body).
    pub async fn count_request(
        &self,
        action: crate::limits::Action,
        ip: std::net::IpAddr,
    ) -> Result<(), crate::limits::LimitError> {
        self.ingestor
            .limits
            .count(&*self.store, action, crate::limits::Subject::Ip(ip))
            .await
    }

    pub fn config(&self) -> &IngestConfig {
        &self.ingestor.config
    }
    pub fn blobs(&self) -> &BlobStore {
        &self.ingestor.blobs
    }

    /// A stored submission's original bundle and its SHA-256 (None: no
    /// such submission).
    pub async fn stored_bundle(
        &self,
        id: Uuid,
    ) -> Result<Option<(files::StoredFile, String)>, ServiceError> {
        let rec = self.store.submission(id).await?;
        Ok(rec.map(|r| {
            (
                files::StoredFile::new(self.blobs().objects(), r.blob_path),
                r.bundle_sha256,
            )
        }))
    }

    pub async fn submit(
        &self,
        bundle: Vec<u8>,
        signature: Vec<u8>,
    ) -> Result<(Novelty, Receipt), IngestError> {
        let mut t = StageTimings::default();
        self.submit_timed(bundle, signature, &mut t).await
    }

    /// A bundle in memory: staged (and digested) like an upload, then
    /// ingested; `t.hash` is the staging time.
    pub async fn submit_timed(
        &self,
        bundle: Vec<u8>,
        signature: Vec<u8>,
        t: &mut StageTimings,
    ) -> Result<(Novelty, Receipt), IngestError> {
        let start = std::time::Instant::now();
        let mut upload = self.begin_upload()?;
        upload.write_all(bundle).await?;
        let staged = upload.finish().await?;
        t.hash = start.elapsed();
        self.ingest_staged(staged, signature, t).await
    }

    /// Starts receiving an upload into the staging folder.
    pub fn begin_upload(&self) -> Result<upload::Upload, IngestError> {
        let writer = self
            .blobs()
            .staging()
            .map_err(|e| IngestError::Internal(format!("creating a staging file: {e}")))?;
        Ok(upload::Upload::new(writer, self.admission.staging_claim()))
    }

    /// Ingests a received upload when its turn comes (503 when the queue
    /// is full). Each stage's time goes to the metrics.
    pub async fn submit_upload(
        &self,
        staged: upload::StagedUpload,
        signature: Vec<u8>,
    ) -> Result<(Novelty, Receipt), IngestError> {
        self.ingest_staged(staged, signature, &mut StageTimings::default())
            .await
    }

    /// [`Service::submit_upload`] that also hands the stages' times to the
    /// caller (the ingest benchmark, through [`Service::submit_timed`]).
    async fn ingest_staged(
        &self,
        staged: upload::StagedUpload,
        signature: Vec<u8>,
        t: &mut StageTimings,
    ) -> Result<(Novelty, Receipt), IngestError> {
        // Copies of these bytes arriving together take turns here, outside
        // the ingest queue; bytes already stored are then answered from the
        // store before any check slot is taken, so a burst of retries
        // cannot fill the queue that new bundles wait in.
        let digest = staged.sha256_hex().to_string();
        let _flight = self.flights.turn(&digest).await;
        let result = match self
            .ingestor
            .known(&digest, staged.digests(), &signature)
            .await
        {
            Ok(Some(known)) => Ok(known),
            Ok(None) => {
                let _turn = self.admission.ingest_turn().await?;
                let (bundle, _claim) = staged.into_parts();
                let result = self.ingestor.submit_staged(bundle, signature, t).await;
                crate::telemetry::ingest_stages(t);
                result
            }
            Err(e) => Err(e),
        };
        let (outcome, mut receipt) = match result {
            Ok(r) => r,
            Err(e) => {
                if let IngestError::Rejected(r) = &e {
                    crate::telemetry::rejection(r.code);
                }
                return Err(e);
            }
        };
        crate::telemetry::submission(
            match outcome {
                Novelty::Created => "created",
                Novelty::Replayed => "replayed",
            },
            receipt.status.as_str(),
        );
        if outcome == Novelty::Created {
            self.changed();
        }
        // Stored already: a failure here is the log's, and the same bytes
        // sent again answer with the whole receipt.
        self.attach_log(&mut receipt)
            .await
            .map_err(|e| IngestError::Internal(e.to_string()))?;
        Ok((outcome, receipt))
    }

    /// The receipt as it stands now, with its log proof.
    pub async fn receipt(&self, id: Uuid) -> Result<Option<Receipt>, tlog::TlogError> {
        let Some(mut r) = self.ingestor.receipt(id).await? else {
            return Ok(None);
        };
        self.attach_log(&mut r).await?;
        Ok(Some(r))
    }

    /// Adds the receipt's log part (tools without the log's key add none).
    async fn attach_log(&self, r: &mut Receipt) -> Result<(), tlog::TlogError> {
        if let (Some(index), Some(_)) = (r.log_index, self.tlog.verifier_key()) {
            r.log = Some(self.tlog.receipt_part(index).await?);
        }
        Ok(())
    }
}

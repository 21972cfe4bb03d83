//! An upload on its way in: the request body is written to a staging file
//! in batches (digested as it goes, on a blocking thread), within the
//! staging disk claim, so that a body costs the service a buffer, not its
//! size in memory.

use super::admission::StagingClaim;
use crate::ingest::IngestError;
use wattcounts_store::blobs::{StagedBundle, StagingWriter};

/// Bytes gathered before one write to the staging file.
const BATCH: usize = 256 * 1024;

pub struct Upload {
    writer: Option<StagingWriter>,
    claim: StagingClaim,
    batch: Vec<u8>,
}

/// A whole upload on the staging disk, still counted against the cap.
pub struct StagedUpload {
    bundle: StagedBundle,
    claim: StagingClaim,
}

impl StagedUpload {
    /// The SHA-256 (hex) of the bytes received.
    pub fn sha256_hex(&self) -> &str {
        &self.bundle.sha256_hex
    }
    /// The digests its signature is checked against.
    pub fn digests(&self) -> &wattcounts_rules::signing::MessageDigests {
        &self.bundle.digests
    }
    pub fn into_parts(self) -> (StagedBundle, StagingClaim) {
        (self.bundle, self.claim)
    }
}

fn io_error(e: std::io::Error) -> IngestError {
    crate::ingest::disk_error("writing the staging file", e)
}

impl Upload {
    pub(super) fn new(writer: StagingWriter, claim: StagingClaim) -> Self {
        Upload {
            writer: Some(writer),
            claim,
            batch: Vec::with_capacity(BATCH),
        }
    }

    pub async fn write(&mut self, chunk: impl AsRef<[u8]>) -> Result<(), IngestError> {
        let chunk = chunk.as_ref();
        self.claim.grow(chunk.len() as u64)?;
        if chunk.len() >= BATCH && self.batch.is_empty() {
            return self.write_out(chunk.to_vec()).await;
        }
        self.gather(chunk).await
    }

    /// A whole bundle already in memory, written without a copy.
    pub async fn write_all(&mut self, bundle: Vec<u8>) -> Result<(), IngestError> {
        self.claim.grow(bundle.len() as u64)?;
        if !self.batch.is_empty() {
            let pending = std::mem::take(&mut self.batch);
            self.write_out(pending).await?;
        }
        self.write_out(bundle).await
    }

    async fn gather(&mut self, chunk: &[u8]) -> Result<(), IngestError> {
        self.batch.extend_from_slice(chunk);
        if self.batch.len() >= BATCH {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            self.write_out(full).await?;
        }
        Ok(())
    }

    async fn write_out(&mut self, bytes: Vec<u8>) -> Result<(), IngestError> {
        let mut writer = self.writer.take().expect("writer present between writes");
        let (writer, r) = tokio::task::spawn_blocking(move || {
            let r = writer.write(&bytes);
            (writer, r)
        })
        .await
        .map_err(|e| IngestError::Internal(format!("staging worker failed: {e}")))?;
        self.writer = Some(writer);
        r.map_err(io_error)
    }

    /// Writes what is left and flushes the file to disk.
    pub async fn finish(mut self) -> Result<StagedUpload, IngestError> {
        let rest = std::mem::take(&mut self.batch);
        if !rest.is_empty() {
            self.write_out(rest).await?;
        }
        let writer = self.writer.take().expect("writer present between writes");
        let bundle = tokio::task::spawn_blocking(move || writer.finish())
            .await
            .map_err(|e| IngestError::Internal(format!("staging worker failed: {e}")))?
            .map_err(io_error)?;
        Ok(StagedUpload {
            bundle,
            claim: self.claim,
        })
    }
}

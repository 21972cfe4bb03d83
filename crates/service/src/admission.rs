//! What the service takes on at once: ingests (CPU and memory: unpacking,
//! parsing, checks) through a gate with a bounded queue, and upload bytes
//! on the staging disk under a cap. Beyond either, a request is refused
//! with 503 and `Retry-After` instead of waiting without end or filling
//! the disk.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use wattcounts_rules::rejection::{RejectKind, Rejection};

/// The default floor of free disk space: 64 MiB, a few bundles' worth.
pub const DEFAULT_FREE_FLOOR_BYTES: u64 = 64 << 20;

/// Seconds a refused client is told to wait.
const RETRY_AFTER_SECS: u64 = 10;

#[derive(Debug, Clone, Copy)]
pub struct AdmissionLimits {
    /// Ingests running at once.
    pub concurrent_ingests: usize,
    /// Ingests waiting for a turn; one more is refused.
    pub queued_ingests: usize,
    /// Bytes of uploads being staged (or waiting in the queue) at once.
    pub staging_bytes: u64,
    /// Free bytes on the data dir's disk below which the instance reports
    /// itself not ready (0: not checked).
    pub free_floor_bytes: u64,
}

impl AdmissionLimits {
    pub fn for_this_machine() -> Self {
        AdmissionLimits {
            concurrent_ingests: std::thread::available_parallelism().map_or(2, |n| n.get()),
            queued_ingests: 32,
            staging_bytes: 4 << 30,
            free_floor_bytes: DEFAULT_FREE_FLOOR_BYTES,
        }
    }
}

pub struct Admission {
    limits: AdmissionLimits,
    running: Arc<Semaphore>,
    waiting: AtomicUsize,
    staged: Arc<AtomicU64>,
}

/// Bytes held on the staging disk by one upload; given back when dropped.
pub struct StagingClaim {
    staged: Arc<AtomicU64>,
    bytes: u64,
    cap: u64,
}

impl StagingClaim {
    /// Claims `more` bytes, or refuses when the staging disk cap is reached.
    pub fn grow(&mut self, more: u64) -> Result<(), Rejection> {
        let before = self.staged.fetch_add(more, Ordering::SeqCst);
        if before + more > self.cap {
            self.staged.fetch_sub(more, Ordering::SeqCst);
            return Err(Rejection::retry_later(
                RejectKind::Busy,
                "staging_full",
                format!(
                    "uploads being received fill the staging space ({} bytes); try again shortly",
                    self.cap
                ),
                RETRY_AFTER_SECS,
            ));
        }
        self.bytes += more;
        Ok(())
    }
}

impl Drop for StagingClaim {
    fn drop(&mut self) {
        self.staged.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// A turn at ingesting; the next in the queue goes when it is dropped.
pub struct IngestTurn {
    _permit: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Self {
        Admission {
            running: Arc::new(Semaphore::new(limits.concurrent_ingests.max(1))),
            waiting: AtomicUsize::new(0),
            staged: Arc::new(AtomicU64::new(0)),
            limits,
        }
    }

    pub fn limits(&self) -> &AdmissionLimits {
        &self.limits
    }

    pub fn staging_claim(&self) -> StagingClaim {
        StagingClaim {
            staged: self.staged.clone(),
            bytes: 0,
            cap: self.limits.staging_bytes,
        }
    }

    /// Waits for a turn, unless the queue is full.
    pub async fn ingest_turn(&self) -> Result<IngestTurn, Rejection> {
        if let Ok(p) = self.running.clone().try_acquire_owned() {
            return Ok(IngestTurn { _permit: p });
        }
        let queued = self.waiting.fetch_add(1, Ordering::SeqCst);
        if queued >= self.limits.queued_ingests {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(Rejection::retry_later(
                RejectKind::Busy,
                "ingest_queue_full",
                format!(
                    "{} submissions are being checked and {queued} are waiting; try again shortly",
                    self.limits.concurrent_ingests
                ),
                RETRY_AFTER_SECS,
            ));
        }
        // Leaves the queue however the wait ends (a client that hangs up
        // drops this future).
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _leave = Leave(&self.waiting);
        let permit = self
            .running
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Ok(IngestTurn { _permit: permit })
    }
}

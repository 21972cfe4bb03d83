//! A receipt built from what was stored, so the first answer and every
//! later one are the same document.

use wattcounts_core::checks::CheckResult;
use wattcounts_core::derived::ConfigurationMetrics;
use wattcounts_core::receipt::*;

use super::{ts, ModerationEvent, SubmissionRecord};

/// What a receipt is built from: the stored record and its children.
pub struct Stored {
    pub record: SubmissionRecord,
    pub configurations: Vec<ConfigurationMetrics>,
    pub checks: Vec<CheckResult>,
    pub moderation: Vec<ModerationEvent>,
}

pub fn build(stored: Stored) -> Receipt {
    let Stored {
        record: rec,
        configurations,
        checks,
        moderation,
    } = stored;
    let mut models: Vec<&str> = configurations.iter().map(|c| c.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    Receipt {
        submission_id: rec.id,
        bundle_sha256: rec.bundle_sha256.clone(),
        submitter: rec.handle.clone(),
        status: rec.status,
        received_at: ts(&rec.received_at),
        demo: rec.is_demo,
        gpu: ReceiptGpu {
            name: rec.gpu_name.clone(),
            id: rec.gpu_id.clone(),
        },
        run_name: rec.run_name.clone(),
        bundle_bytes: rec.bundle_bytes,
        protocol: rec.protocol.as_ref().map(ReceiptProtocol::of),
        content_sha256: rec.content_sha256.clone(),
        counts: Counts {
            models: models.len() as u64,
            configurations: configurations.len() as u64,
            iterations: rec.iterations,
            power_samples: rec.power_samples,
        },
        checks,
        configurations,
        moderation,
        links: Links {
            this: format!("/api/v1/submissions/{}", rec.id),
            html: format!("/submissions/{}", rec.id),
        },
        log: None,
        log_index: rec.log_index,
    }
}

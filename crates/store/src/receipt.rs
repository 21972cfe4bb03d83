//! A receipt built from what was stored, so the first answer and every
//! later one are the same document.

use wattcounts_rules::checks::CheckResult;
use wattcounts_rules::derived::ConfigurationMetrics;
use wattcounts_rules::receipt::*;

use super::{parse_ts, ts, ModerationEvent, NewSubmission, SubmissionRecord};

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
    let (checks, rejected_configurations) = RejectedConfigurationReceipt::split(checks);
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
        summary: wattcounts_rules::receipt::summary(&checks, &rejected_configurations),
        checks,
        configurations,
        rejected_configurations,
        moderation,
        links: Links {
            this: format!("/api/v1/submissions/{}", rec.id),
            html: format!("/submissions/{}", rec.id),
        },
        log: None,
        log_index: rec.log_index,
    }
}

/// The receipt of a submission just inserted as `s`, at `log_index`: the
/// record the store would read back, built from what it wrote (the time
/// at the stored millisecond precision, no moderation yet).
pub fn of_inserted(s: &NewSubmission, log_index: u64) -> Receipt {
    let received_at = parse_ts(&ts(&s.received_at)).unwrap_or(s.received_at);
    build(Stored {
        record: SubmissionRecord {
            id: s.id,
            bundle_sha256: s.bundle_sha256.clone(),
            handle: s.handle.clone(),
            status: s.status,
            received_at,
            gpu_name: s.gpu_name.clone(),
            gpu_id: s.gpu_id.clone(),
            run_name: s.run_name.clone(),
            is_demo: s.is_demo,
            bundle_bytes: s.bundle_bytes,
            blob_path: s.blob_path.clone(),
            iterations: s.iterations(),
            power_samples: s.power_samples(),
            protocol: Some(s.protocol.clone()),
            content_sha256: Some(s.content_sha256.clone()),
            duplicate_of: None,
            log_index: Some(log_index),
            energy_rule: wattcounts_rules::derived::ENERGY_RULE_VERSION,
        },
        configurations: s.configurations.clone(),
        checks: s.checks.clone(),
        moderation: Vec::new(),
    })
}

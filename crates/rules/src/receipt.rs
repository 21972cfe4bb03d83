//! The receipt a submitter gets back (the store builds it from what it
//! wrote, `wattcounts::store::receipt`), and the moderation events in it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::checks::CheckResult;
use crate::derived::ConfigurationMetrics;
use crate::domain::Status;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Receipt {
    pub submission_id: Uuid,
    pub bundle_sha256: String,
    pub submitter: String,
    pub status: Status,
    pub received_at: String,
    pub demo: bool,
    pub gpu: ReceiptGpu,
    pub run_name: String,
    pub bundle_bytes: u64,
    /// What the runs followed (absent only for rows not yet rebuilt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ReceiptProtocol>,
    /// Digest of the harness files: the same run counts once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_sha256: Option<String>,
    pub counts: Counts,
    /// What decided the status, a line each: every check that failed or
    /// warned, and every configuration rejected on its own with the rule
    /// that rejected it; one line saying so when none did. (The
    /// bundle's `checks` judge only what was kept, so they can all pass
    /// while a configuration was left out.)
    #[serde(default)]
    pub summary: Vec<String>,
    /// Every check's outcome, figure and threshold, in report order.
    pub checks: Vec<CheckResult>,
    pub configurations: Vec<ConfigurationMetrics>,
    /// Configurations that broke a hard rule on their own (a model that
    /// crashed part-way, say): not stored, not published, each with the
    /// results that rejected it. The bundle's other configurations were
    /// judged without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_configurations: Vec<RejectedConfigurationReceipt>,
    /// Maintainers' decisions on this submission, oldest first.
    pub moderation: Vec<ModerationEvent>,
    pub links: Links,
    /// Where the submission sits in the transparency log, with the proof
    /// (`wattcounts verify receipt` checks it offline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<ReceiptLog>,
    /// The stored record's leaf index, from which the service builds `log`
    /// (it holds the log's key; this module does not).
    #[serde(skip)]
    pub log_index: Option<u64>,
}

/// The submission's leaf, its index, and an inclusion proof against the
/// checkpoint of the tree that ends with it, in the c2sp.org/tlog-proof
/// shape (the signed checkpoint is its last part).
/// One configuration rejected on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RejectedConfigurationReceipt {
    pub model: String,
    pub scenario: crate::domain::Scenario,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lambda_qps: Option<f64>,
    pub checks: Vec<CheckResult>,
}

/// The lines of [`Receipt::summary`].
pub fn summary(checks: &[CheckResult], rejected: &[RejectedConfigurationReceipt]) -> Vec<String> {
    use crate::checks::CheckOutcome;
    let mut lines: Vec<String> = checks
        .iter()
        .filter(|c| matches!(c.outcome, CheckOutcome::Fail | CheckOutcome::Warn))
        .map(|c| format!("{} {}: {}", c.outcome.as_str(), c.id, c.message))
        .collect();
    for r in rejected {
        let rate = r
            .lambda_qps
            .map(|l| format!(" at {l} req/s"))
            .unwrap_or_default();
        for c in &r.checks {
            lines.push(format!(
                "configuration {} {}{rate} rejected on its own (not published; the rest was judged without it): {}: {}",
                r.model,
                r.scenario.as_str(),
                c.id,
                c.message
            ));
        }
    }
    if lines.is_empty() {
        let passed = checks
            .iter()
            .filter(|c| c.outcome == CheckOutcome::Pass)
            .count();
        lines.push(format!(
            "no check failed or warned: {passed} passed, {} did not apply",
            checks.len() - passed
        ));
    }
    lines
}

impl RejectedConfigurationReceipt {
    /// Splits stored results into the bundle's and the rejected
    /// configurations', grouped in the order they were stored.
    pub fn split(results: Vec<CheckResult>) -> (Vec<CheckResult>, Vec<Self>) {
        let mut bundle = Vec::new();
        let mut rejected: Vec<Self> = Vec::new();
        for r in results {
            if !r.rejects_configuration {
                bundle.push(r);
                continue;
            }
            let loc = r.location.clone().unwrap_or_default();
            let model = loc.model.unwrap_or_default();
            let scenario = loc.scenario.unwrap_or(crate::domain::Scenario::Batch);
            match rejected.iter_mut().find(|c| {
                c.model == model && c.scenario == scenario && c.lambda_qps == loc.lambda_qps
            }) {
                Some(c) => c.checks.push(r),
                None => rejected.push(RejectedConfigurationReceipt {
                    model,
                    scenario,
                    lambda_qps: loc.lambda_qps,
                    checks: vec![r],
                }),
            }
        }
        (bundle, rejected)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReceiptLog {
    pub index: u64,
    pub tree_size: u64,
    /// The leaf's bytes: RFC 8785 canonical JSON of the submission id,
    /// bundle and run-content SHA-256, key fingerprint, received_at and
    /// the status it was stored with.
    pub leaf: String,
    /// RFC 6962 leaf hash, base64.
    pub leaf_hash: String,
    pub proof: String,
    /// The key the checkpoint is signed with (check it against the one
    /// the service publishes at /log/key before trusting it).
    pub verifier_key: String,
}

/// The protocol and, per scenario, the group id and label it joins.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ReceiptProtocol {
    #[serde(flatten)]
    pub fields: crate::domain::Protocol,
    pub batch_id: String,
    pub batch_label: String,
    pub server_id: String,
    pub server_label: String,
}

impl ReceiptProtocol {
    pub fn of(p: &crate::domain::Protocol) -> Self {
        use crate::domain::Scenario::{Batch, Server};
        ReceiptProtocol {
            batch_id: p.id(Batch),
            batch_label: p.label(Batch),
            server_id: p.id(Server),
            server_label: p.label(Server),
            fields: p.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReceiptGpu {
    pub name: String,
    pub id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counts {
    pub models: u64,
    pub configurations: u64,
    pub iterations: u64,
    pub power_samples: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Links {
    #[serde(rename = "self")]
    pub this: String,
    pub html: String,
}

/// One recorded maintainer decision.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ModerationEvent {
    pub at: String,
    pub actor: String,
    /// approve, reject, suspend_submitter, revoke_key
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_at: Option<String>,
    pub reason: String,
    /// The decision's leaf in the transparency log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::{CheckOutcome, Location, Severity};

    fn result(id: &str, outcome: CheckOutcome, message: &str) -> CheckResult {
        CheckResult {
            id: id.into(),
            severity: Severity::Hard,
            outcome,
            figure: None,
            threshold: None,
            unit: String::new(),
            evaluated: 1,
            failing: u32::from(outcome != CheckOutcome::Pass),
            message: message.into(),
            location: None,
            rejects_configuration: false,
        }
    }

    #[test]
    fn the_summary_names_what_decided_the_status() {
        let passing = vec![
            result("a.x", CheckOutcome::Pass, "fine"),
            result("a.y", CheckOutcome::Skip, "n/a"),
        ];
        assert_eq!(
            summary(&passing, &[]),
            vec!["no check failed or warned: 1 passed, 1 did not apply"]
        );

        // Every bundle check passed, yet a configuration was left out: the
        // summary says so, with its rule, and does not claim all passed.
        let mut cut = result(
            "method.iterations_minimum",
            CheckOutcome::Fail,
            "2 iterations",
        );
        cut.rejects_configuration = true;
        cut.location = Some(Location {
            model: Some("Qwen/Qwen2.5-1.5B-Instruct".into()),
            scenario: Some(crate::domain::Scenario::Batch),
            ..Default::default()
        });
        let mut stored = passing.clone();
        stored.push(cut);
        let (checks, rejected) = RejectedConfigurationReceipt::split(stored);
        assert_eq!(
            summary(&checks, &rejected),
            vec!["configuration Qwen/Qwen2.5-1.5B-Instruct batch rejected on its own (not published; the rest was judged without it): method.iterations_minimum: 2 iterations"]
        );

        // Warnings and failures, in report order, before the cut ones.
        let mixed = vec![
            result(
                "sampling.sampler_late",
                CheckOutcome::Warn,
                "111.1 ms apart",
            ),
            result("a.x", CheckOutcome::Pass, "fine"),
            result("arithmetic.gpu_energy", CheckOutcome::Fail, "5 % off"),
        ];
        let server = RejectedConfigurationReceipt {
            model: "m".into(),
            scenario: crate::domain::Scenario::Server,
            lambda_qps: Some(0.33),
            checks: vec![result(
                "sampling.server_duration",
                CheckOutcome::Fail,
                "150 s",
            )],
        };
        assert_eq!(
            summary(&mixed, &[server]),
            vec![
                "warn sampling.sampler_late: 111.1 ms apart",
                "fail arithmetic.gpu_energy: 5 % off",
                "configuration m server at 0.33 req/s rejected on its own (not published; the rest was judged without it): sampling.server_duration: 150 s",
            ]
        );
    }
}

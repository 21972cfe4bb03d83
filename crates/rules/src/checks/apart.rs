//! A bundle with a hard failure is judged again without the configurations
//! that fail on their own (a model that crashed part-way, say): the rest
//! is kept when it then passes, each configuration set apart with its own
//! failing results.

use super::{
    evaluate, rejected_configurations, CheckInput, CheckOutcome, CheckResult,
    RejectedConfiguration, Thresholds,
};
use crate::bundle::harness::IterationRow;
use crate::derived::{ConfigurationMetrics, IterationMetrics};

/// What a bundle keeps when some of its configurations are set apart.
pub struct Kept {
    /// The bundle's checks on the configurations kept.
    pub checks: Vec<CheckResult>,
    pub runs: Vec<IterationMetrics>,
    pub configurations: Vec<ConfigurationMetrics>,
    pub rejected: Vec<RejectedConfiguration>,
}

/// What a bundle with a hard failure keeps when only some configurations
/// break rules on their own. `None` when the bundle is judged whole: every
/// configuration fails, a failure is not one a configuration can carry
/// alone, or the rest still fails.
pub fn set_apart(input: &CheckInput, t: &Thresholds) -> Option<Kept> {
    let rejected = rejected_configurations(input, t)?;
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
    let checks = evaluate(
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

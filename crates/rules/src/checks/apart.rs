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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::test_support::{iterations, on_l4, row};

    /// A row every bundle-wide rule passes on the L4 (greedy with a seed,
    /// the meter's 50 J: 10 intervals of 0.1 s at 50 W), as `model`.
    fn good(model: &str) -> IterationRow {
        let mut r = row(&[50.0; 11], &[40.0], 100);
        r.sampling_params = "SamplingParams(temperature=0.0, seed=1)".into();
        r.reported_gpu_energy_j = 50.0;
        r.model = model.into();
        r
    }

    /// `set_apart` on these rows, as ingest judges a bundle.
    fn judge(rows: &[IterationRow]) -> Option<Kept> {
        on_l4(rows, |input| set_apart(input, &Thresholds::default()))
    }

    /// Every check on these rows as one bundle, none set apart.
    fn whole(rows: &[IterationRow]) -> Vec<CheckResult> {
        on_l4(rows, |input| evaluate(input, &Thresholds::default()))
    }

    const GPT2: &str = "openai-community/gpt2";
    const QWEN: &str = "Qwen/Qwen2.5-0.5B-Instruct";

    #[test]
    fn the_complete_configurations_are_kept_without_the_incomplete_one() {
        // Qwen with its 3 iterations, GPT-2 with 2 (the minimum is 3).
        let mut rows = iterations(3, &good(QWEN));
        rows.extend(iterations(2, &good(GPT2)));
        let kept = judge(&rows).expect("GPT-2 alone breaks a completeness rule");
        assert_eq!(kept.configurations.len(), 1);
        assert_eq!(kept.configurations[0].model, QWEN);
        assert_eq!(kept.runs.len(), 3);
        assert!(kept.runs.iter().all(|r| r.model == QWEN));
        assert_eq!(kept.rejected.len(), 1);
        assert_eq!(kept.rejected[0].configuration.model, GPT2);
        assert_eq!(kept.rejected[0].failing[0].id, "method.iterations_minimum");
        // The kept checks are the rest's own, as if GPT-2 had never been
        // in the bundle: its runs and figures are not in them either.
        assert!(kept.checks.iter().all(|c| c.outcome != CheckOutcome::Fail));
        assert_eq!(kept.checks, whole(&iterations(3, &good(QWEN))));
    }

    #[test]
    fn nothing_is_set_apart_when_all_or_none_fail_or_another_rule_breaks() {
        // Every configuration complete: nothing to set apart.
        assert!(judge(&iterations(3, &good(QWEN))).is_none());
        // Every configuration incomplete: the bundle is judged whole.
        let mut both = iterations(2, &good(QWEN));
        both.extend(iterations(2, &good(GPT2)));
        assert!(judge(&both).is_none());
        // GPT-2 also draws 90 W on a 72 W board (a physics rule, not one
        // of completeness): judged whole.
        let mut hot = good(GPT2);
        hot.power_w = crate::bundle::harness::SeriesStats::of(&[90.0; 11]);
        let mut rows = iterations(3, &good(QWEN));
        rows.extend(iterations(2, &hot));
        assert!(judge(&rows).is_none());
    }
}

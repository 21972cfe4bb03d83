//! Arithmetic: the harness's own totals agree with the raw data beside them.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;
use crate::derived::{sample_spacing_s, trace_energy_j};

pub const GPU_ENERGY: Rule = Rule {
    id: "arithmetic.gpu_energy",
    severity: Severity::Hard,
    rule: "gpu_energy equals, within the tolerance, the published energy: the trapezoid over the power samples at their real spacing (measurement_duration ÷ samples)",
    unit: "%",
};
pub const TOKEN_TOTALS: Rule = Rule {
    id: "arithmetic.token_totals",
    severity: Severity::Hard,
    rule: "prompt_tokens_total and generation_tokens_total equal the sums of request_prompt_tokens and request_generation_tokens",
    unit: "tokens",
};
pub const QUERY_COUNTS: Rule = Rule {
    id: "arithmetic.query_counts",
    severity: Severity::Hard,
    rule: "batch: request_success_total + request_failure_total = processed_queries = queries_submitted",
    unit: "queries",
};
pub const RULES: &[Rule] = &[GPU_ENERGY, TOKEN_TOTALS, QUERY_COUNTS];

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    vec![
        gpu_energy(input, t),
        token_totals(input),
        query_counts(input),
    ]
}

/// How far, in %, `reported` lies from `published`; NaN when either is.
pub(crate) fn off_pct(reported: f64, published: f64) -> f64 {
    if published > 0.0 {
        (reported - published).abs() / published * 100.0
    } else if reported == published {
        0.0
    } else {
        // No samples (or none apart) publish 0 J: any other figure is off.
        f64::INFINITY
    }
}

/// Like with like: the meter integrates its samples at their own
/// timestamps, the service at their real spacing ([`trace_energy_j`]), so
/// an honest figure matches whatever the sampler's pace; what is left is
/// the thread's start and join inside the duration (0.2 % at 3.5 s).
fn gpu_energy(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let mut tally = Tally::new(GPU_ENERGY, Some(t.energy_tolerance_pct));
    for r in input.rows {
        let published = trace_energy_j(r);
        let off = off_pct(r.reported_gpu_energy_j, published);
        tally.at_most_noted(
            off,
            t.energy_tolerance_pct,
            || Location::of_row(r),
            || {
                let spacing = sample_spacing_s(r.duration_s, r.power_w.n).unwrap_or(0.0);
                format!(
                    "gpu_energy {:.2} J lies {off:.2} % from {published:.2} J, the trapezoid over the {} power samples at their real spacing {:.1} ms (measurement_duration {:.3} s ÷ samples)",
                    r.reported_gpu_energy_j,
                    r.power_w.n,
                    spacing * 1000.0,
                    r.duration_s
                )
            },
        );
    }
    // The note words the worst row whole: its figure and what it was held to.
    tally.finish_noted(|_, note| note.to_string())
}

fn token_totals(input: &CheckInput) -> CheckResult {
    let mut tally = Tally::new(TOKEN_TOTALS, Some(0.0));
    for r in input.rows {
        let prompt: f64 = r.request_prompt_tokens.iter().sum();
        let generated: f64 = r.request_generation_tokens.iter().sum();
        let off = (r.prompt_tokens_total as f64 - prompt).abs()
            + (r.generation_tokens_total as f64 - generated).abs();
        tally.at_most(off, 0.0, || Location::of_row(r));
    }
    tally.finish(|v| format!("token totals differ from the per-request sums by {v:.0} tokens"))
}

fn query_counts(input: &CheckInput) -> CheckResult {
    let mut tally = Tally::new(QUERY_COUNTS, Some(0.0)).when_empty("no batch runs");
    for r in input.rows.iter().filter(|r| r.scenario == Scenario::Batch) {
        let answered = r.requests_ok + r.requests_failed;
        let off = answered
            .abs_diff(r.processed_queries)
            .max(r.processed_queries.abs_diff(r.queries_submitted));
        tally.at_most(off as f64, 0.0, || Location::of_row(r));
    }
    tally.finish(|v| {
        format!("success + failure, processed_queries and queries_submitted differ by {v:.0}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::test_support::{judge, row};
    use crate::checks::CheckOutcome;

    /// 10 samples of 100 W over 1.0 s: 0.1 s apart, the trapezoid is
    /// 0.1 × (10 × 100 − 100/2 − 100/2) = 90 J.
    fn reporting(joules: f64) -> (CheckOutcome, String) {
        let mut r = row(&[100.0; 10], &[40.0], 100);
        r.reported_gpu_energy_j = joules;
        judge(GPU_ENERGY.id, r)
    }

    #[test]
    fn gpu_energy_at_the_2_percent_tolerance() {
        // 2 % of 90 J is 1.8 J: 91.7 J (1.89 % over) and 88.3 J (1.89 %
        // under) pass; 91.9 J and 88.1 J are 2.11 % off.
        assert_eq!(reporting(91.7).0, CheckOutcome::Pass);
        assert_eq!(reporting(88.3).0, CheckOutcome::Pass);
        let (o, m) = reporting(91.9);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(
            m.contains("gpu_energy 91.90 J lies 2.11 % from 90.00 J, the trapezoid over the 10 power samples at their real spacing 100.0 ms (measurement_duration 1.000 s ÷ samples)"),
            "{m}"
        );
        let (o, m) = reporting(88.1);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("2.11 % from"), "{m}");
    }

    #[test]
    fn token_totals_allow_no_difference() {
        // row() states 10 prompt and 100 generated tokens, one request of each.
        assert_eq!(
            judge(TOKEN_TOTALS.id, row(&[50.0; 11], &[40.0], 100)).0,
            CheckOutcome::Pass
        );
        let mut r = row(&[50.0; 11], &[40.0], 100);
        r.generation_tokens_total = 101;
        let (o, m) = judge(TOKEN_TOTALS.id, r);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(
            m.contains("differ from the per-request sums by 1 tokens"),
            "{m}"
        );
        let mut r = row(&[50.0; 11], &[40.0], 100);
        r.request_prompt_tokens = vec![7.0];
        let (o, m) = judge(TOKEN_TOTALS.id, r);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("by 3 tokens"), "{m}");
    }

    #[test]
    fn query_counts_allow_no_difference() {
        // row(): 1 answered (1 ok, 0 failed), 1 processed, 1 submitted.
        assert_eq!(
            judge(QUERY_COUNTS.id, row(&[50.0; 11], &[40.0], 100)).0,
            CheckOutcome::Pass
        );
        for (ok, failed, processed, submitted) in [(1, 1, 1, 1), (1, 0, 1, 2), (1, 0, 2, 2)] {
            let mut r = row(&[50.0; 11], &[40.0], 100);
            (r.requests_ok, r.requests_failed) = (ok, failed);
            (r.processed_queries, r.queries_submitted) = (processed, submitted);
            let (o, m) = judge(QUERY_COUNTS.id, r);
            assert_eq!(
                o,
                CheckOutcome::Fail,
                "{ok} {failed} {processed} {submitted}"
            );
            assert!(m.contains("differ by 1"), "{m}");
        }
        // One failed request among two answered still adds up.
        let mut r = row(&[50.0; 11], &[40.0], 100);
        (
            r.requests_ok,
            r.requests_failed,
            r.processed_queries,
            r.queries_submitted,
        ) = (1, 1, 2, 2);
        assert_eq!(judge(QUERY_COUNTS.id, r).0, CheckOutcome::Pass);
    }

    #[test]
    fn off_by_hand() {
        assert_eq!(off_pct(90.0, 90.0), 0.0);
        assert!((off_pct(99.0, 90.0) - 10.0).abs() < 1e-9);
        assert!((off_pct(81.0, 90.0) - 10.0).abs() < 1e-9);
        assert!(off_pct(f64::NAN, 90.0).is_nan());
        // A trace that publishes 0 J (one sample): 0 J agrees, 1 J does not.
        assert_eq!(off_pct(0.0, 0.0), 0.0);
        assert_eq!(off_pct(1.0, 0.0), f64::INFINITY);
    }

    #[test]
    fn a_late_sampler_matches_and_a_doctored_figure_fails() {
        // 3.3 s at a sampler 8 ms late: 31 samples of 200 W taken 0.108 s
        // apart span 30 × 0.108 = 3.24 s, and the meter reports
        // 3.24 × 200 = 648 J. Its duration holds the 31 periods plus 3 ms
        // of start and join: 31 × 0.108 + 0.003 = 3.351 s. The service's
        // spacing 3.351 / 31 = 0.108097 s gives 30 × 0.108097 × 200 =
        // 648.58 J, 0.09 % from 648 J. (Energy rule 2, at 0.1 s, published
        // 600 J: 7.4 % low, and this check failed the honest meter.)
        let mut r =
            crate::checks::test_support::row_of(Scenario::Batch, 3.351, &[200.0; 31], &[40.0], 100);
        r.reported_gpu_energy_j = 648.0;
        assert_eq!(judge(GPU_ENERGY.id, r.clone()).0, CheckOutcome::Pass);
        // Doctored 5 % up, 680.4 J: 4.9 % from 648.58 J.
        r.reported_gpu_energy_j = 680.4;
        let (o, m) = judge(GPU_ENERGY.id, r);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("680.40 J lies 4.91 % from 648.58 J"), "{m}");
        assert!(m.contains("108.1 ms"), "{m}");
    }
}

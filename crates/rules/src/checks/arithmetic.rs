//! Arithmetic: the harness's own totals agree with the raw data beside them.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::{Scenario, SeriesStats};
use crate::derived::METER_PERIOD_S;

pub const GPU_ENERGY: Rule = Rule {
    id: "arithmetic.gpu_energy",
    severity: Severity::Hard,
    rule: "gpu_energy lies, within the tolerance, between the trapezoid over the power samples at the meter's 0.1 s period and the trapezoid at the widest spacing the measurement allows (measurement_duration ÷ (samples − 1))",
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

/// The energies an honest meter can report for a trace: its samples are
/// at least the sleep period apart (0.1 s; the NVML reads add a few ms)
/// and at most so far apart that they still fit in the measured duration.
/// The band is narrow on long iterations and about one period ÷ duration
/// wide on short ones (3 % at 3.3 s), where the timestamps are not known.
pub(crate) fn energy_band(power: &SeriesStats, duration_s: f64) -> (f64, f64) {
    let lo = power.trapezoid(METER_PERIOD_S);
    let widest = if power.n >= 2 {
        duration_s / (power.n - 1) as f64
    } else {
        METER_PERIOD_S
    };
    (lo, power.trapezoid(widest.max(METER_PERIOD_S)))
}

/// How far, in % of the nearer edge, `reported` lies outside `[lo, hi]`.
pub(crate) fn outside_band(reported: f64, (lo, hi): (f64, f64)) -> f64 {
    if reported.is_nan() {
        f64::NAN
    } else if reported < lo {
        (lo - reported) / lo * 100.0
    } else if reported > hi {
        if hi > 0.0 {
            (reported - hi) / hi * 100.0
        } else {
            f64::INFINITY
        }
    } else {
        0.0
    }
}

fn gpu_energy(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let mut tally = Tally::new(GPU_ENERGY, Some(t.energy_tolerance_pct));
    for r in input.rows {
        let (lo, hi) = energy_band(&r.power_w, r.duration_s);
        let off = outside_band(r.reported_gpu_energy_j, (lo, hi));
        tally.at_most_noted(
            off,
            t.energy_tolerance_pct,
            || Location::of_row(r),
            || {
                format!(
                    "gpu_energy {:.2} J lies {off:.2} % outside {lo:.2}–{hi:.2} J, the trapezoid over the power samples at 0.1 s and at duration ÷ (samples − 1)",
                    r.reported_gpu_energy_j
                )
            },
        );
    }
    // The note words the worst row whole: its figure and its band.
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

    /// 11 samples of 100 W over 1.0 s: both band edges are 100 J (0.1 s
    /// apart and 1.0 ÷ 10 apart give the same trapezoid, 10 × 0.1 × 100).
    fn reporting(joules: f64) -> (CheckOutcome, String) {
        let mut r = row(&[100.0; 11], &[40.0], 100);
        r.reported_gpu_energy_j = joules;
        judge(GPU_ENERGY.id, r)
    }

    #[test]
    fn gpu_energy_at_the_2_percent_tolerance() {
        // 101.9 J is 1.9 % over 100 J, 98.1 J 1.9 % under: inside 2 %.
        assert_eq!(reporting(101.9).0, CheckOutcome::Pass);
        assert_eq!(reporting(98.1).0, CheckOutcome::Pass);
        // 102.1 J and 97.9 J are 2.1 % out.
        let (o, m) = reporting(102.1);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(
            m.contains("gpu_energy 102.10 J lies 2.10 % outside 100.00–100.00 J"),
            "{m}"
        );
        let (o, m) = reporting(97.9);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("2.10 % outside"), "{m}");
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
    fn band_edges_by_hand() {
        // Ten samples of 100 W over 1.0 s: at 0.1 s the trapezoid is
        // 0.1 × (10 × 100 − 100) = 90 J; at 1.0 / 9 s it is 900 / 9 = 100 J.
        let (lo, hi) = energy_band(&SeriesStats::of(&[100.0; 10]), 1.0);
        assert!((lo - 90.0).abs() < 1e-9, "{lo}");
        assert!((hi - 100.0).abs() < 1e-9, "{hi}");
        // Inside: 0 %. 1 % under 90 J is 89.1 J; 2 % over 100 J is 102 J.
        assert_eq!(outside_band(95.0, (lo, hi)), 0.0);
        assert!((outside_band(89.1, (lo, hi)) - 1.0).abs() < 1e-9);
        assert!((outside_band(102.0, (lo, hi)) - 2.0).abs() < 1e-9);
        assert!(outside_band(f64::NAN, (lo, hi)).is_nan());
        assert_eq!(outside_band(0.0, (0.0, 0.0)), 0.0);
        assert_eq!(outside_band(1.0, (0.0, 0.0)), f64::INFINITY);
        // A duration shorter than the samples at 0.1 s allow: the band
        // is the single 0.1 s figure.
        let (lo, hi) = energy_band(&SeriesStats::of(&[100.0; 10]), 0.5);
        assert_eq!(lo, hi);
    }

    #[test]
    fn a_short_honest_iteration_passes_and_a_doctored_one_fails() {
        // 3.3 s at 10 Hz: 33 samples of 200 W. The meter's figure at
        // 0.1 s plus 1 ms of NVML reads per sample: 32 × 0.101 × 200 =
        // 646.4 J; mean × duration would be 660 J (2.1 % above it).
        let power = SeriesStats::of(&[200.0; 33]);
        let band = energy_band(&power, 3.3);
        // lo = 0.1 × 32 × 200 = 640 J; hi = 3.3 / 32 × 32 × 200 = 660 J.
        assert!((band.0 - 640.0).abs() < 1e-9 && (band.1 - 660.0).abs() < 1e-9);
        assert_eq!(outside_band(646.4, band), 0.0);
        // Doctored 5 % above the widest band edge: 693 J is 5 % over 660.
        assert!((outside_band(693.0, band) - 5.0).abs() < 1e-9);
    }
}

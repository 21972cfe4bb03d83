//! Sampling: the power trace is dense enough to integrate, the meter's
//! sampler kept its pace, and server runs last as long as the harness
//! config says they should.
//!
//! The CSV has no per-sample timestamps; `measurement_duration` ÷ samples
//! is the real spacing (see [`crate::derived::sample_spacing_s`]). Energy
//! is integrated at that spacing, so a late sampler no longer biases the
//! published figure: it is named (a warning, for a person to see the
//! host was busy), and only a trace too sparse to follow the load is
//! refused.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::{IterationRow, Scenario};
use crate::derived::sample_spacing_s;

pub const POWER_SAMPLES: Rule = Rule {
    id: "sampling.power_samples",
    severity: Severity::Hard,
    rule: "the power trace is dense enough to integrate: the sampling period ÷ the samples' real spacing (measurement_duration ÷ samples) is at least the given share",
    unit: "%",
};
pub const SAMPLER_LATE: Rule = Rule {
    id: "sampling.sampler_late",
    severity: Severity::Soft,
    rule: "the meter's samples are at most the given share further apart than its sampling period (measurement_duration ÷ samples against 0.1 s); more means its thread ran late, as on a busy host",
    unit: "%",
};
pub const SERVER_DURATION: Rule = Rule {
    id: "sampling.server_duration",
    severity: Severity::Hard,
    rule: "a server run's measurement_duration is at least the config's MAX_TEST_DURATION",
    unit: "s",
};
pub const RULES: &[Rule] = &[POWER_SAMPLES, SAMPLER_LATE, SERVER_DURATION];

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    vec![
        power_samples(input, t),
        sampler_late(input, t),
        server_duration(input, t),
    ]
}

/// A row's real spacing, seconds; an empty trace (or no duration) as
/// infinitely sparse.
fn spacing(r: &IterationRow) -> f64 {
    sample_spacing_s(r.duration_s, r.power_w.n).unwrap_or(f64::INFINITY)
}

fn power_samples(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let mut tally = Tally::new(POWER_SAMPLES, Some(t.sample_coverage_pct));
    for r in input.rows {
        let coverage = t.sample_period_s / spacing(r) * 100.0;
        tally.at_least(coverage, t.sample_coverage_pct, || Location::of_row(r));
    }
    tally.finish(|v| {
        format!(
            "power samples come {:.1} ms apart, {v:.1} % of the meter's rate",
            t.sample_period_s / (v / 100.0) * 1000.0
        )
    })
}

fn sampler_late(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let mut tally = Tally::new(SAMPLER_LATE, Some(t.sampler_late_pct));
    for r in input.rows {
        let late = (spacing(r) / t.sample_period_s - 1.0) * 100.0;
        tally.at_most(late, t.sampler_late_pct, || Location::of_row(r));
    }
    tally.finish(|v| {
        format!(
            "the meter's samples came {:.1} ms apart (measurement_duration ÷ samples), {v:.1} % over its {:.0} ms period; energy is integrated at the real spacing, so the figure stands, but the host was busy while it measured",
            t.sample_period_s * (1.0 + v / 100.0) * 1000.0,
            t.sample_period_s * 1000.0
        )
    })
}

fn server_duration(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let configured = input.manifest.harness_config().max_test_duration;
    let limit = configured * t.server_duration_fraction;
    let mut tally = Tally::new(SERVER_DURATION, Some(limit)).when_empty("no server runs");
    for r in input.rows.iter().filter(|r| r.scenario == Scenario::Server) {
        tally.at_least(r.duration_s, limit, || Location::of_row(r));
    }
    tally.finish(|v| format!("server run lasted {v:.1} s (MAX_TEST_DURATION {configured} s)"))
}

#[cfg(test)]
mod tests {
    //! The sampling rules at their edges, with the default thresholds.

    use super::*;
    use crate::checks::test_support::{judge, row_of};
    use crate::checks::CheckOutcome;

    #[test]
    fn power_samples_at_three_fifths_of_the_meter_rate() {
        // 6 samples in 1 s are 166.7 ms apart: 0.1 / 0.16667 = 60 %, the
        // limit, passes; 5 samples are 200 ms apart, 50 %, and fail.
        let (o, _) = judge(
            POWER_SAMPLES.id,
            row_of(Scenario::Batch, 1.0, &[50.0; 6], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Pass);
        let (o, m) = judge(
            POWER_SAMPLES.id,
            row_of(Scenario::Batch, 1.0, &[50.0; 5], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("200.0 ms apart, 50.0 %"), "{m}");
        // A sampler at 0.150 s (an 8 s iteration of 53 samples: 150.9
        // ms, 66.2 %) is late, not sparse.
        let (o, _) = judge(
            POWER_SAMPLES.id,
            row_of(Scenario::Batch, 8.0, &[50.0; 53], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Pass);
        // No samples at all: nothing to integrate.
        let (o, _) = judge(
            POWER_SAMPLES.id,
            row_of(Scenario::Batch, 1.0, &[], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Fail);
    }

    #[test]
    fn a_sampler_more_than_10_percent_late_is_named() {
        // 100 samples in 11.0 s: 110 ms apart, exactly 10 % late: passes.
        // 99 samples in 11.0 s: 111.1 ms, 11.1 % late: a warning naming
        // the file, row and spacing.
        let (o, _) = judge(
            SAMPLER_LATE.id,
            row_of(Scenario::Batch, 11.0, &[50.0; 100], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Pass);
        let (o, m) = judge(
            SAMPLER_LATE.id,
            row_of(Scenario::Server, 11.0, &[50.0; 99], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("m/llm_server_optimized_results.csv"), "{m}");
        assert!(m.contains("row 2"), "{m}");
        assert!(m.contains("111.1 ms apart"), "{m}");
        assert!(m.contains("11.1 % over its 100 ms period"), "{m}");
        // On time (0.1003 s, as the harness fixtures' quiet host): passes.
        let (o, _) = judge(
            SAMPLER_LATE.id,
            row_of(Scenario::Batch, 3.51, &[50.0; 35], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Pass);
    }

    #[test]
    fn a_server_run_lasts_its_configured_duration() {
        // MAX_TEST_DURATION 300 s in the manifest's config.
        let samples = vec![50.0; 3000];
        let (o, _) = judge(
            SERVER_DURATION.id,
            row_of(Scenario::Server, 300.0, &samples, &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Pass);
        let (o, m) = judge(
            SERVER_DURATION.id,
            row_of(Scenario::Server, 299.5, &samples, &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("299.5 s"), "{m}");
        // A batch-only bundle has nothing to judge here.
        let (o, _) = judge(
            SERVER_DURATION.id,
            row_of(Scenario::Batch, 1.0, &[50.0; 10], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Skip);
    }

    #[test]
    fn an_operator_may_accept_a_shorter_server_run() {
        use crate::checks::test_support::{manifest, result_under};
        // server_duration_fraction 0.5 of the manifest's 300 s: 150 s.
        let t = Thresholds {
            server_duration_fraction: 0.5,
            ..Thresholds::default()
        };
        let r = |secs: f64| {
            let row = row_of(Scenario::Server, secs, &[50.0; 11], &[40.0], 100);
            result_under(SERVER_DURATION.id, &manifest(), None, vec![row], &t).outcome
        };
        assert_eq!(r(150.0), CheckOutcome::Pass);
        assert_eq!(r(149.0), CheckOutcome::Fail);
    }
}

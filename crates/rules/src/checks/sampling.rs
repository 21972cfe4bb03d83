//! Sampling: the power trace covers the run, and server runs last as long
//! as the harness config says they should.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;

pub const POWER_SAMPLES: Rule = Rule {
    id: "sampling.power_samples",
    severity: Severity::Hard,
    rule: "the power trace holds at least the given share of measurement_duration / sampling period samples",
    unit: "%",
};
pub const SERVER_DURATION: Rule = Rule {
    id: "sampling.server_duration",
    severity: Severity::Hard,
    rule: "a server run's measurement_duration is at least the config's MAX_TEST_DURATION",
    unit: "s",
};
pub const RULES: &[Rule] = &[POWER_SAMPLES, SERVER_DURATION];

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    vec![power_samples(input, t), server_duration(input, t)]
}

fn power_samples(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let mut tally = Tally::new(POWER_SAMPLES, Some(t.sample_coverage_pct));
    for r in input.rows {
        let expected = (r.duration_s / t.sample_period_s).floor().max(1.0);
        let coverage = r.power_w.n as f64 / expected * 100.0;
        tally.at_least(coverage, t.sample_coverage_pct, || Location::of_row(r));
    }
    tally.finish(|v| format!("power samples cover {v:.1} % of the run"))
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
    fn power_samples_cover_three_quarters_of_the_run() {
        // 1 s at 0.1 s a sample: 10 expected; 75 % wants 7.5, so 8 pass
        // (80 %) and 7 fail (70 %).
        let (o, _) = judge(
            POWER_SAMPLES.id,
            row_of(Scenario::Batch, 1.0, &[50.0; 8], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Pass);
        let (o, m) = judge(
            POWER_SAMPLES.id,
            row_of(Scenario::Batch, 1.0, &[50.0; 7], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("70.0 %"), "{m}");
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

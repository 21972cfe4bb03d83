//! Arrivals: a server run's request count is what a Poisson process at the
//! configured rate gives over the test duration.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;

pub const POISSON: Rule = Rule {
    id: "arrivals.poisson",
    severity: Severity::Soft,
    rule: "a server iteration's queries_submitted lies within the given number of standard deviations of λ × MAX_TEST_DURATION",
    unit: "σ",
};

pub fn poisson(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let duration = input.manifest.harness_config().max_test_duration;
    let mut tally = Tally::new(POISSON, Some(t.poisson_sigmas)).when_empty("no server runs");
    for r in input.rows.iter().filter(|r| r.scenario == Scenario::Server) {
        let Some(lambda) = r.lambda_qps else { continue };
        let expected = lambda * duration;
        if expected <= 0.0 {
            continue;
        }
        let z = (r.queries_submitted as f64 - expected) / expected.sqrt();
        tally.observe(z, z.abs(), !super::le(z.abs(), t.poisson_sigmas), || {
            Location::of_row(r)
        });
    }
    tally.finish(|z| format!("{z:+.2} σ from the expected request count"))
}

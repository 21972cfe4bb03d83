//! Repeatability: iterations of one configuration agree with each other.
//!
//! Batch runs push the same prompts every iteration, so energy per token
//! should barely move. Server runs draw Poisson arrivals: at 0.017 req/s an
//! iteration holds about 5 requests and energy per *token* swings with that
//! count, so the server check looks at mean power instead, and only where
//! an iteration expects enough requests (λ × MAX_TEST_DURATION, default 30)
//! that the count itself varies little (±18 %); below that, a busy GPU's
//! mean power swings with the count too, and the arrivals check covers the
//! run.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;

pub const BATCH_ENERGY_CV: Rule = Rule {
    id: "repeatability.batch_energy_cv",
    severity: Severity::Soft,
    rule: "batch: the coefficient of variation of energy per token across iterations is at most the limit",
    unit: "%",
};
pub const SERVER_POWER_CV: Rule = Rule {
    id: "repeatability.server_power_cv",
    severity: Severity::Soft,
    rule:
        "server, at rates expecting enough requests per iteration (λ × MAX_TEST_DURATION): the coefficient of variation of mean power across iterations is at most the limit",
    unit: "%",
};
pub const RULES: &[Rule] = &[BATCH_ENERGY_CV, SERVER_POWER_CV, super::arrivals::POISSON];

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    let mut batch =
        Tally::new(BATCH_ENERGY_CV, Some(t.batch_energy_cv_pct)).when_empty("no batch runs");
    let mut server = Tally::new(SERVER_POWER_CV, Some(t.server_power_cv_pct))
        .when_empty("no server rate expects enough requests per iteration");
    let duration = input.manifest.harness_config().max_test_duration;
    for c in input.configurations.iter().filter(|c| c.iterations > 1) {
        if c.scenario == Scenario::Server
            && c.lambda_qps.unwrap_or(0.0) * duration < t.server_cv_min_expected_requests
        {
            continue;
        }
        match c.scenario {
            Scenario::Batch => batch.at_most(
                c.energy_per_token_j.cv * 100.0,
                t.batch_energy_cv_pct,
                || Location::of_configuration(c),
            ),
            Scenario::Server => {
                server.at_most(c.power_mean_w.cv * 100.0, t.server_power_cv_pct, || {
                    Location::of_configuration(c)
                })
            }
        }
    }
    vec![
        batch.finish(|v| format!("energy per token varies by {v:.2} % (CV) across iterations")),
        server.finish(|v| format!("mean power varies by {v:.2} % (CV) across iterations")),
        super::arrivals::poisson(input, t),
    ]
}

//! Arrivals: a server run submitted the requests its protocol implies.
//!
//! The reference harness seeds numpy (`fix_seeds(42)`), so its request
//! counts are not Poisson draws from run to run but one fixed schedule
//! ([`crate::arrival_schedule`]): where the seed is known, each iteration's
//! `queries_submitted` must follow it. Only where it is not known does the
//! Poisson test apply, and that one is skipped for seeded runs (the same
//! 68-request iteration would read −3.1 σ on every honest submission).

use std::collections::BTreeMap;

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::arrival_schedule::{ScheduleProtocol, Submitted, HARNESS_SEED};
use crate::bundle::harness::Scenario;

pub const SCHEDULE: Rule = Rule {
    id: "arrivals.schedule",
    severity: Severity::Soft,
    rule: "where the arrival seed is known (the reference harness's fix_seeds(42), or SEED in its config), each server iteration's queries_submitted is a count the seeded schedule gives at its place in the model's stream, allowing the clock to run up to the drift allowance ahead of the draws",
    unit: "requests",
};

pub const POISSON: Rule = Rule {
    id: "arrivals.poisson",
    severity: Severity::Soft,
    rule: "where the arrival seed is not known: a server iteration's queries_submitted lies within the given number of standard deviations of λ × MAX_TEST_DURATION",
    unit: "σ",
};

/// The harness whose code fixes the seed at [`HARNESS_SEED`].
const SEEDED_HARNESS: &str = "sw-energy-benchmark";

/// The schedule the bundle's runs followed, when the seed and warm-up are
/// known; otherwise why not.
pub fn schedule_of(input: &CheckInput) -> Result<ScheduleProtocol, &'static str> {
    let h = &input.manifest.harness;
    let seed = match h.config.get("SEED") {
        Some(v) => v
            .as_u64()
            .and_then(|s| u32::try_from(s).ok())
            .ok_or("the config's SEED is not an integer in 0..2^32")?,
        None if h.name == SEEDED_HARNESS => HARNESS_SEED,
        None => return Err("the harness states no arrival seed"),
    };
    let warmup_s = h
        .config
        .get("WARMUP_DURATION")
        .and_then(|v| v.as_f64())
        .ok_or("the config states no WARMUP_DURATION")?;
    let c = input.manifest.harness_config();
    let p = ScheduleProtocol {
        seed,
        warmup_s,
        lambdas: c.lambda_qps_array,
        iterations: c.iterations,
        duration_s: c.max_test_duration,
    };
    if !p.replayable() {
        return Err("the config's rates, durations or iterations are too many requests (or none) to replay the seeded schedule");
    }
    Ok(p)
}

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    match schedule_of(input) {
        Ok(p) => vec![
            schedule(input, t, &p),
            super::skip(
                POISSON,
                "the arrivals are seeded; arrivals.schedule judges the counts",
            ),
        ],
        Err(why) => vec![super::skip(SCHEDULE, why), poisson(input, t)],
    }
}

fn schedule(input: &CheckInput, t: &Thresholds, p: &ScheduleProtocol) -> CheckResult {
    let mut tally = Tally::new(SCHEDULE, Some(0.0)).when_empty("no server runs");
    let mut by_model: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in input.rows.iter().enumerate() {
        if r.scenario == Scenario::Server && r.lambda_qps.is_some() {
            by_model.entry(r.model.as_str()).or_default().push(i);
        }
    }
    for rows in by_model.values() {
        let submitted: Vec<Submitted> = rows
            .iter()
            .map(|&i| {
                let r = &input.rows[i];
                Submitted {
                    lambda: r.lambda_qps.unwrap_or(0.0),
                    iteration: r.iteration,
                    requests: r.queries_submitted,
                }
            })
            .collect();
        for f in p.judge(&submitted, t.arrival_drift_s) {
            let Some(&i) = rows.iter().find(|&&i| {
                let r = &input.rows[i];
                r.iteration == f.iteration && r.lambda_qps == Some(f.lambda)
            }) else {
                continue;
            };
            let off = f.requests as f64 - f.expected as f64;
            tally.observe_noted(
                off,
                off.abs(),
                !f.consistent,
                || Location::of_row(&input.rows[i]),
                || {
                    format!(
                        "queries_submitted {} where numpy's seed {} gives {} ({off:+.0}) at this place in the model's stream",
                        f.requests, p.seed, f.expected
                    )
                },
            );
        }
    }
    tally.finish_noted(|_, note| note.to_string())
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::test_support::{judge, row_of};
    use crate::checks::CheckOutcome;

    /// The test manifest states no WARMUP_DURATION, so the schedule is not
    /// known and the Poisson test applies: λT = 0.33 × 300 = 99 requests,
    /// √99 = 9.95, and 4 σ = 39.80 requests either side.
    fn submitting(n: u64) -> (CheckOutcome, String) {
        let mut r = row_of(Scenario::Server, 300.0, &[50.0; 11], &[40.0], 100);
        r.queries_submitted = n;
        judge(POISSON.id, r)
    }

    #[test]
    fn poisson_at_4_sigma() {
        // 138 is +3.92 σ, 60 is −3.92 σ: inside.
        assert_eq!(submitting(138).0, CheckOutcome::Pass);
        assert_eq!(submitting(60).0, CheckOutcome::Pass);
        // 139 is +4.02 σ, 59 is −4.02 σ.
        let (o, m) = submitting(139);
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("+4.02 σ from the expected request count"), "{m}");
        let (o, m) = submitting(59);
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("-4.02 σ"), "{m}");
    }

    #[test]
    fn the_schedule_is_skipped_without_a_warm_up() {
        let (o, m) = judge(
            SCHEDULE.id,
            row_of(Scenario::Server, 300.0, &[50.0; 11], &[40.0], 100),
        );
        assert_eq!(o, CheckOutcome::Skip);
        assert!(m.contains("no WARMUP_DURATION"), "{m}");
    }
}

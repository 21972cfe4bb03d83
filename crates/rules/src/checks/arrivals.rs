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

    /// The reference protocol's seeded schedule, as the harness's own
    /// folders show it (arrival_schedule.rs): warm-up 60 s, then 8, 3, 9,
    /// 7, 3 requests at 0.017 req/s and 108, 97, 108, 97, 68 at 0.33.
    fn seeded(
        counts: [u64; 10],
    ) -> (
        crate::bundle::manifest::Manifest,
        Vec<crate::bundle::harness::IterationRow>,
    ) {
        let mut m = crate::checks::test_support::manifest();
        m.harness.config = serde_json::json!({
            "ITERATIONS": 5, "MAX_TEST_DURATION": 300.0, "WARMUP_DURATION": 60.0,
            "LAMBDA_QPS_ARRAY": [0.017, 0.33], "LLM_MODELS": ["Qwen/Qwen2.5-0.5B-Instruct"]
        })
        .as_object()
        .unwrap()
        .clone();
        let rows = counts
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                let mut r = row_of(Scenario::Server, 300.0, &[50.0; 11], &[40.0], 100);
                r.lambda_qps = Some(if k < 5 { 0.017 } else { 0.33 });
                r.iteration = (k % 5) as u32;
                r.line = 2 + k as u64;
                r.queries_submitted = n;
                r
            })
            .collect();
        (m, rows)
    }

    #[test]
    fn the_seeded_schedule_passes_and_another_count_is_named() {
        use crate::checks::test_support::result_of;
        let (m, rows) = seeded([8, 3, 9, 7, 3, 108, 97, 108, 97, 68]);
        let r = result_of(SCHEDULE.id, &m, None, rows);
        assert_eq!(r.outcome, CheckOutcome::Pass, "{}", r.message);
        assert_eq!(r.evaluated, 10);
        // The Poisson test stands aside where the seed is known.
        let (m, rows) = seeded([8, 3, 9, 7, 3, 108, 97, 108, 97, 68]);
        let p = result_of(POISSON.id, &m, None, rows);
        assert_eq!(p.outcome, CheckOutcome::Skip);
        // The last iteration cut at 60 requests where the schedule gives
        // 68 (a count earlier in the stream would move every later one).
        let (m, rows) = seeded([8, 3, 9, 7, 3, 108, 97, 108, 97, 60]);
        let r = result_of(SCHEDULE.id, &m, None, rows);
        assert_eq!(r.outcome, CheckOutcome::Warn);
        assert!(
            r.message.contains("queries_submitted 60 where numpy's seed 42 gives 68 (-8) at this place in the model's stream"),
            "{}",
            r.message
        );
        assert_eq!((r.evaluated, r.failing), (10, 1));
        let at = r.location.unwrap();
        assert_eq!(
            (at.lambda_qps, at.iteration, at.row),
            (Some(0.33), Some(4), Some(11))
        );
        assert_eq!(r.figure, Some(-8.0));
    }

    #[test]
    fn a_stated_seed_must_be_a_whole_number_and_another_harness_has_none() {
        use crate::checks::test_support::result_of;
        let (mut m, rows) = seeded([8, 3, 9, 7, 3, 108, 97, 108, 97, 68]);
        m.harness
            .config
            .insert("SEED".into(), serde_json::json!("x"));
        let r = result_of(SCHEDULE.id, &m, None, rows.clone());
        assert_eq!(r.outcome, CheckOutcome::Skip);
        assert!(
            r.message.contains("SEED is not an integer"),
            "{}",
            r.message
        );
        let (mut m, _) = seeded([0; 10]);
        m.harness.name = "another-harness".into();
        let r = result_of(SCHEDULE.id, &m, None, rows.clone());
        assert!(
            r.message.contains("the harness states no arrival seed"),
            "{}",
            r.message
        );
        // There the Poisson test judges the counts: 108 at 0.33 × 300 = 99
        // is +0.90 σ, 3 at 0.017 × 300 = 5.1 is −0.93 σ.
        let p = result_of(POISSON.id, &m, None, rows);
        assert_eq!(p.outcome, CheckOutcome::Pass, "{}", p.message);
    }
}

//! Method: the run followed the benchmark's protocol (greedy decoding with
//! a fixed seed, enough iterations, a cooled-down GPU at the start).

use std::collections::BTreeMap;

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::IterationRow;

pub const SAMPLING_PARAMS: Rule = Rule {
    id: "method.sampling_params",
    severity: Severity::Hard,
    rule: "sampling_params has temperature=0.0 and a fixed integer seed",
    unit: "",
};
pub const ITERATIONS_MINIMUM: Rule = Rule {
    id: "method.iterations_minimum",
    severity: Severity::Hard,
    rule: "every configuration (model × scenario × rate) has at least the minimum number of iterations",
    unit: "iterations",
};
pub const ITERATIONS_CONFIGURED: Rule = Rule {
    id: "method.iterations_configured",
    severity: Severity::Soft,
    rule: "every configuration has the config's ITERATIONS iterations",
    unit: "iterations",
};
pub const START_TEMPERATURE: Rule = Rule {
    id: "method.start_temperature",
    severity: Severity::Soft,
    rule: "the first temperature sample of an iteration is at most the limit (the harness cools the GPU down first)",
    unit: "°C",
};
pub const RULES: &[Rule] = &[
    SAMPLING_PARAMS,
    ITERATIONS_MINIMUM,
    ITERATIONS_CONFIGURED,
    START_TEMPERATURE,
];

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    let mut out = vec![sampling_params(input)];
    out.extend(iterations(input, t));
    out.push(start_temperature(input, t));
    out
}

use crate::bundle::harness::sampling_param as param;

/// What is wrong with a sampling_params cell, if anything.
fn sampling_problem(repr: &str) -> Option<String> {
    let temperature = match param(repr, "temperature") {
        None => return Some("no temperature in sampling_params".into()),
        Some(v) => v,
    };
    match temperature.parse::<f64>() {
        Ok(0.0) => {}
        Ok(t) => return Some(format!("temperature={t} (sampling is not greedy)")),
        Err(_) => return Some(format!("temperature='{temperature}' is not a number")),
    }
    match param(repr, "seed") {
        None => Some("no seed in sampling_params".into()),
        Some(s) if s.parse::<i64>().is_ok() => None,
        Some(s) => Some(format!("seed={s} (not a fixed integer seed)")),
    }
}

fn sampling_params(input: &CheckInput) -> CheckResult {
    let mut tally = Tally::new(SAMPLING_PARAMS, None);
    let mut problem: Option<String> = None;
    for r in input.rows {
        let p = sampling_problem(&r.sampling_params);
        let failed = p.is_some();
        if problem.is_none() {
            problem = p;
        }
        tally.observe(f64::from(u8::from(failed)), 0.0, failed, || {
            Location::of_row(r)
        });
    }
    let mut result = tally.finish(|_| String::new());
    result.figure = None;
    result.message = match problem {
        Some(p) => format!(
            "{}: {p}. Rule: {}",
            result
                .location
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            SAMPLING_PARAMS.rule
        ),
        None => format!(
            "all {} iterations decode greedily with a fixed seed",
            result.evaluated
        ),
    };
    result
}

type ConfigKey<'a> = (&'a str, &'static str, Option<u64>);

fn iterations(input: &CheckInput, t: &Thresholds) -> [CheckResult; 2] {
    // (iterations, of which generated tokens, first row)
    let mut per: BTreeMap<ConfigKey, (u32, u32, &IterationRow)> = BTreeMap::new();
    for r in input.rows {
        let e = per
            .entry((
                r.model.as_str(),
                r.scenario.as_str(),
                r.lambda_qps.map(f64::to_bits),
            ))
            .or_insert((0, 0, r));
        e.0 += 1;
        if r.generation_tokens_total > 0 {
            e.1 += 1;
        }
    }
    let configured = input.manifest.harness_config().iterations;
    let min = f64::from(t.min_iterations);
    let mut hard = Tally::new(ITERATIONS_MINIMUM, Some(min));
    let mut soft = Tally::new(ITERATIONS_CONFIGURED, Some(f64::from(configured)));
    for (n, generated, first) in per.values() {
        let at = || Location {
            file: Some(first.file.clone()),
            iteration: None,
            row: None,
            ..Location::of_row(first)
        };
        hard.at_least(f64::from(*n), min, at);
        // Iterations without tokens are dropped from the figures (as the
        // paper does); a configuration left with none has no figure at all,
        // which is flagged, not passed over.
        if *generated == 0 {
            soft.missing(
                format!(
                    "none of its {n} iterations generated tokens, so it has no energy per token"
                ),
                at,
            );
        } else {
            soft.at_least(f64::from(*n), f64::from(configured), at);
        }
    }
    [
        hard.finish(|v| format!("{v:.0} iterations")),
        soft.finish(|v| format!("{v:.0} iterations (ITERATIONS: {configured})")),
    ]
}

fn start_temperature(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let limit = t.max_start_temperature_c;
    let mut tally = Tally::new(START_TEMPERATURE, Some(limit));
    for r in input.rows {
        if r.temperature_c.n == 0 {
            tally.missing("no GPU temperature samples (gpu_0_temp is empty)", || {
                Location::of_row(r)
            });
            continue;
        }
        tally.at_most(r.temperature_c.first, limit, || Location::of_row(r));
    }
    tally.finish(|v| format!("first temperature sample {v:.0} °C"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::test_support::{iterations, judge, judge_rows, row};
    use crate::checks::CheckOutcome;

    #[test]
    fn at_least_3_iterations_and_the_configured_3() {
        // The manifest configures ITERATIONS: 3; the minimum is 3.
        let one = row(&[50.0; 11], &[40.0], 100);
        for id in [ITERATIONS_MINIMUM.id, ITERATIONS_CONFIGURED.id] {
            assert_eq!(judge_rows(id, iterations(3, &one)).0, CheckOutcome::Pass);
        }
        let (o, m) = judge_rows(ITERATIONS_MINIMUM.id, iterations(2, &one));
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("2 iterations"), "{m}");
        let (o, m) = judge_rows(ITERATIONS_CONFIGURED.id, iterations(2, &one));
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("2 iterations (ITERATIONS: 3)"), "{m}");
        // Three iterations that generated nothing leave no figure: flagged.
        let (o, m) = judge_rows(
            ITERATIONS_CONFIGURED.id,
            iterations(3, &row(&[50.0; 11], &[40.0], 0)),
        );
        assert_eq!(o, CheckOutcome::Warn);
        assert!(
            m.contains("none of its 3 iterations generated tokens"),
            "{m}"
        );
    }

    #[test]
    fn too_few_iterations_name_the_file_not_a_row() {
        use crate::checks::test_support::{manifest, result_of};
        let one = row(&[50.0; 11], &[40.0], 100);
        let r = result_of(
            ITERATIONS_MINIMUM.id,
            &manifest(),
            None,
            iterations(2, &one),
        );
        let at = r.location.unwrap();
        assert_eq!(
            at.file.as_deref(),
            Some("m/llm_batch_optimized_results.csv")
        );
        assert_eq!((at.row, at.iteration), (None, None));
        assert_eq!(at.model.as_deref(), Some("Qwen/Qwen2.5-0.5B-Instruct"));
    }

    #[test]
    fn the_first_temperature_sample_at_65_c() {
        assert_eq!(
            judge(START_TEMPERATURE.id, row(&[50.0; 11], &[65.0, 80.0], 100)).0,
            CheckOutcome::Pass
        );
        let (o, m) = judge(START_TEMPERATURE.id, row(&[50.0; 11], &[66.0, 60.0], 100));
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("first temperature sample 66 °C"), "{m}");
        let (o, m) = judge(START_TEMPERATURE.id, row(&[50.0; 11], &[], 100));
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("gpu_0_temp is empty"), "{m}");
    }

    #[test]
    fn greedy_with_a_seed_or_rejected() {
        let mut r = row(&[50.0; 11], &[40.0], 100);
        r.sampling_params = "SamplingParams(temperature=0.0, seed=42)".into();
        assert_eq!(judge(SAMPLING_PARAMS.id, r.clone()).0, CheckOutcome::Pass);
        r.sampling_params = "SamplingParams(temperature=0.01, seed=42)".into();
        let (o, m) = judge(SAMPLING_PARAMS.id, r);
        assert_eq!(o, CheckOutcome::Fail);
        assert!(
            m.contains("temperature=0.01 (sampling is not greedy)"),
            "{m}"
        );
    }

    #[test]
    fn sampling_params_repr() {
        let ok = "SamplingParams(n=1, temperature=0.0, top_p=1.0, seed=123, stop=[])";
        assert_eq!(sampling_problem(ok), None);
        assert!(sampling_problem("SamplingParams(temperature=0.7, seed=1)")
            .unwrap()
            .contains("temperature=0.7"));
        assert!(
            sampling_problem("SamplingParams(temperature=0.0, seed=None)")
                .unwrap()
                .contains("seed=None")
        );
        assert!(
            sampling_problem("SamplingParams(temperature=0.0, min_seed=4)")
                .unwrap()
                .contains("no seed")
        );
    }
}

//! Arithmetic: the harness's own totals agree with the raw data beside them.

use super::{CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;

pub const GPU_ENERGY: Rule = Rule {
    id: "arithmetic.gpu_energy",
    severity: Severity::Hard,
    rule:
        "gpu_energy is within the tolerance of mean(gpu_0_power_draw_watts) × measurement_duration",
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

fn gpu_energy(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let mut tally = Tally::new(GPU_ENERGY, Some(t.energy_tolerance_pct));
    for r in input.rows {
        let from_trace = r.power_w.mean() * r.duration_s;
        let deviation = if from_trace > 0.0 {
            (r.reported_gpu_energy_j - from_trace).abs() / from_trace * 100.0
        } else if r.reported_gpu_energy_j == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        tally.at_most(deviation, t.energy_tolerance_pct, || Location::of_row(r));
    }
    tally.finish(|v| format!("gpu_energy differs from the power trace's energy by {v:.2} %"))
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

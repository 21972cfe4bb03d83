//! Consistency: a configuration's median energy per token is not far from
//! what accepted submissions measured for the same model, GPU, scenario and
//! rate. Robust z-score: |x − median(peers)| / (1.4826 × MAD(peers)).

use std::collections::HashMap;

use super::{skip, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;
use crate::metrics::{percentile_sorted, ConfigurationMetrics};

pub const RULE: Rule = Rule {
    id: "consistency.robust_z",
    severity: Severity::Soft,
    rule: "median energy per token is within the robust z-score limit of accepted results for the same model, GPU, scenario and rate",
    unit: "z",
};

/// One accepted submission's median energy per token for one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerMedian {
    pub model: String,
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
    pub energy_per_token_j: f64,
}

type Key<'a> = (&'a str, Scenario, Option<u64>);

fn median(sorted: &[f64]) -> f64 {
    percentile_sorted(sorted, 0.5)
}

pub fn consistency(
    configurations: &[ConfigurationMetrics],
    peers: &[PeerMedian],
    t: &Thresholds,
) -> CheckResult {
    let mut by_key: HashMap<Key, Vec<f64>> = HashMap::new();
    for p in peers {
        by_key
            .entry((p.model.as_str(), p.scenario, p.lambda_qps.map(f64::to_bits)))
            .or_default()
            .push(p.energy_per_token_j);
    }
    let mut tally = Tally::new(RULE, Some(t.robust_z));
    for c in configurations {
        let key = (c.model.as_str(), c.scenario, c.lambda_qps.map(f64::to_bits));
        let Some(values) = by_key.get_mut(&key) else {
            continue;
        };
        if values.len() < t.consistency_min_peers as usize {
            continue;
        }
        values.sort_by(f64::total_cmp);
        let m = median(values);
        let mut deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        let mad = median(&deviations).max(m.abs() * t.mad_floor_pct / 100.0);
        let x = c.energy_per_token_j.median;
        let z = if mad > 0.0 {
            (x - m) / (1.4826 * mad)
        } else {
            0.0
        };
        tally.observe(z, z.abs(), !super::le(z.abs(), t.robust_z), || {
            Location::of_configuration(c)
        });
    }
    if tally.evaluated() == 0 {
        return skip(
            RULE,
            &format!(
                "fewer than {} accepted results for every configuration of this bundle",
                t.consistency_min_peers
            ),
        );
    }
    tally.finish(|z| {
        format!("median energy per token is {z:+.2} robust z-scores from accepted results")
    })
}

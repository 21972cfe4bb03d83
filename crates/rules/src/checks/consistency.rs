//! Consistency: a configuration's median energy per token is not far from
//! what accepted submissions measured for the same model, GPU, scenario and
//! rate. Robust z-score: |x − median(peers)| / (1.4826 × MAD(peers)).

use std::collections::HashMap;

use super::{skip, CheckResult, Location, Rule, Severity, Tally, Thresholds};
use crate::bundle::harness::Scenario;
use crate::derived::ConfigurationMetrics;

pub const RULE: Rule = Rule {
    id: "consistency.robust_z",
    severity: Severity::Soft,
    rule: "median energy per token is within the robust z-score limit of accepted results for the same model, GPU, scenario and rate",
    unit: "z",
};

/// What the accepted submissions of one group measured: the median of
/// their medians, the median absolute deviation around it, and how many.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerGroup {
    pub model: String,
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
    pub median: f64,
    pub mad: f64,
    pub submissions: u64,
}

type Key<'a> = (&'a str, Scenario, Option<u64>);

pub fn consistency(
    configurations: &[ConfigurationMetrics],
    peers: &[PeerGroup],
    t: &Thresholds,
) -> CheckResult {
    let by_key: HashMap<Key, &PeerGroup> = peers
        .iter()
        .map(|p| {
            (
                (p.model.as_str(), p.scenario, p.lambda_qps.map(f64::to_bits)),
                p,
            )
        })
        .collect();
    let mut tally = Tally::new(RULE, Some(t.robust_z));
    for c in configurations {
        let key = (c.model.as_str(), c.scenario, c.lambda_qps.map(f64::to_bits));
        let Some(peer) = by_key.get(&key) else {
            continue;
        };
        if peer.submissions < u64::from(t.consistency_min_peers) {
            continue;
        }
        let m = peer.median;
        let mad = peer.mad.max(m.abs() * t.mad_floor_pct / 100.0);
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

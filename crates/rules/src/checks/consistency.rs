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

#[cfg(test)]
mod tests {
    //! The robust z at its default limit (3.5), the MAD floor (1 % of the
    //! median) and the peer minimum (3), worked by hand.
    use super::*;
    use crate::checks::test_support::row;
    use crate::checks::CheckOutcome;
    use crate::derived::{aggregate, derive};

    /// The test row's configuration: 11 samples of `w` W 0.1 s apart
    /// over 100 tokens, so w / 100 J per token.
    fn configuration(w: f64) -> Vec<ConfigurationMetrics> {
        aggregate(&[derive(&row(&[w; 11], &[40.0], 100))])
    }

    fn peers(median: f64, mad: f64, submissions: u64) -> Vec<PeerGroup> {
        vec![PeerGroup {
            model: "Qwen/Qwen2.5-0.5B-Instruct".into(),
            scenario: Scenario::Batch,
            lambda_qps: None,
            median,
            mad,
            submissions,
        }]
    }

    fn judge(w: f64, p: &[PeerGroup]) -> CheckResult {
        consistency(&configuration(w), p, &Thresholds::default())
    }

    #[test]
    fn within_3_5_robust_z_scores() {
        // Peers at 0.5 J/token with MAD 0.02: one z is 1.4826 × 0.02 =
        // 0.029652 J, and 3.5 of them 0.103782 J. 0.6 J/token (60 W) is
        // 0.1 J over: z = 3.3725, inside; 0.61 is 0.11 over: z = 3.7097.
        let p = peers(0.5, 0.02, 3);
        let r = judge(60.0, &p);
        assert_eq!(r.outcome, CheckOutcome::Pass, "{}", r.message);
        assert!((r.figure.unwrap() - 0.1 / 0.029652).abs() < 1e-9);
        let r = judge(61.0, &p);
        assert_eq!(r.outcome, CheckOutcome::Warn);
        assert!(r.message.contains("+3.71 robust z-scores"), "{}", r.message);
        // As far below: the sign says which side.
        let r = judge(39.0, &p);
        assert_eq!(r.outcome, CheckOutcome::Warn);
        assert!(r.message.contains("-3.71 robust z-scores"), "{}", r.message);
    }

    #[test]
    fn near_identical_peers_get_a_mad_floor_of_1_percent() {
        // MAD 0 would make any difference infinite; the floor is 1 % of
        // 0.5 = 0.005 J, one z 0.007413 J. 0.52 J/token is 0.02 over:
        // z = 2.698, inside; 0.53 is 0.03 over: z = 4.047.
        let p = peers(0.5, 0.0, 5);
        assert_eq!(judge(52.0, &p).outcome, CheckOutcome::Pass);
        let r = judge(53.0, &p);
        assert_eq!(r.outcome, CheckOutcome::Warn);
        assert!((r.figure.unwrap() - 0.03 / (1.4826 * 0.005)).abs() < 1e-9);
        // A zero median and MAD: no scale at all, z is 0.
        assert_eq!(judge(53.0, &peers(0.0, 0.0, 5)).figure, Some(0.0));
    }

    #[test]
    fn fewer_than_3_accepted_results_skip() {
        let r = judge(99.0, &peers(0.5, 0.02, 2));
        assert_eq!(r.outcome, CheckOutcome::Skip);
        assert!(
            r.message.contains("fewer than 3 accepted results"),
            "{}",
            r.message
        );
        assert_eq!(
            judge(99.0, &peers(0.5, 0.02, 3)).outcome,
            CheckOutcome::Warn
        );
        // Peers of another model are no peers.
        let mut other = peers(0.5, 0.02, 9);
        other[0].model = "openai-community/gpt2".into();
        assert_eq!(judge(99.0, &other).outcome, CheckOutcome::Skip);
    }

    #[test]
    fn an_operator_may_raise_the_mad_floor() {
        // 2 % of 0.5 J: MAD 0.01 J, one z 0.014826 J; 0.55 J/token (55 W)
        // is 0.05 over: z = 3.372, inside (at 1 % it would be 6.745).
        let t = Thresholds {
            mad_floor_pct: 2.0,
            ..Thresholds::default()
        };
        let r = consistency(&configuration(55.0), &peers(0.5, 0.0, 5), &t);
        assert_eq!(r.outcome, CheckOutcome::Pass, "{}", r.message);
        assert!((r.figure.unwrap() - 0.05 / (1.4826 * 0.01)).abs() < 1e-9);
    }
}

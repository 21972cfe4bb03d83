//! The latency-constrained choice: given a deadline, the lowest-energy GPU
//! whose median meets it, the runner-up, and the saving between them. Pure.

use serde::Serialize;

use crate::verdict::{self, Estimate, Verdict};
use wattcounts_rules::domain::Scenario;

/// A service level a reader needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Deadline {
    /// Server: median time to first token at most this, seconds.
    TtftP50 { max_s: f64 },
    /// Server: inter-token latency at most this, seconds.
    Itl { max_s: f64 },
    /// Batch: throughput at least this, generated tokens per second.
    Throughput { min_tok_s: f64 },
}

/// The form fields that name a deadline (values in the unit shown).
pub const PARAMS: [&str; 3] = ["ttft_ms", "itl_ms", "min_tok_s"];

impl Deadline {
    /// A few values worth showing without asking, per scenario.
    pub fn presets(scenario: Scenario) -> Vec<Deadline> {
        match scenario {
            Scenario::Server => [50.0, 100.0, 200.0, 500.0, 1000.0]
                .iter()
                .map(|ms| Deadline::TtftP50 { max_s: ms / 1e3 })
                .chain(
                    [25.0, 50.0]
                        .iter()
                        .map(|ms| Deadline::Itl { max_s: ms / 1e3 }),
                )
                .collect(),
            Scenario::Batch => [250.0, 500.0, 1000.0, 2000.0, 5000.0]
                .iter()
                .map(|t| Deadline::Throughput { min_tok_s: *t })
                .collect(),
        }
    }

    /// From a form field (`ttft_ms`, `itl_ms`, `min_tok_s`) and its value;
    /// the error says what is expected.
    pub fn parse(param: &str, value: &str) -> Result<Deadline, String> {
        let v: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| format!("{param}='{value}' is not a positive number"))?;
        match param {
            "ttft_ms" => Ok(Deadline::TtftP50 { max_s: v / 1e3 }),
            "itl_ms" => Ok(Deadline::Itl { max_s: v / 1e3 }),
            "min_tok_s" => Ok(Deadline::Throughput { min_tok_s: v }),
            _ => Err(format!(
                "unknown deadline '{param}'; expected {}",
                PARAMS.join(", ")
            )),
        }
    }

    pub fn applies_to(&self, scenario: Scenario) -> bool {
        match self {
            Deadline::TtftP50 { .. } | Deadline::Itl { .. } => scenario == Scenario::Server,
            Deadline::Throughput { .. } => scenario == Scenario::Batch,
        }
    }

    pub fn label(&self) -> String {
        // "50 ms", not "50.0 ms": a deadline is a round number someone chose.
        let plain = |v: f64| {
            let s = verdict::sig(v);
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        };
        match self {
            Deadline::TtftP50 { max_s } => format!("TTFT p50 ≤ {} ms", plain(max_s * 1e3)),
            Deadline::Itl { max_s } => format!("ITL ≤ {} ms", plain(max_s * 1e3)),
            Deadline::Throughput { min_tok_s } => {
                format!("throughput ≥ {} tokens/s", plain(*min_tok_s))
            }
        }
    }
}

/// One GPU that measured the model in the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub gpu_id: String,
    pub gpu_name: String,
    pub energy: Estimate,
    pub ttft_p50_s: Option<Estimate>,
    pub itl_s: Option<Estimate>,
    pub throughput_tok_s: Estimate,
}

/// How a GPU stands against a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Meets {
    /// The median and the whole interval meet it.
    Yes,
    /// The median meets it but the interval straddles it.
    Borderline,
    /// The median misses it (or the figure was not measured).
    No,
}

pub fn meets(deadline: &Deadline, c: &Candidate) -> Meets {
    let upper = |e: Option<Estimate>, max: f64| match e {
        Some(e) if e.median <= max && e.hi <= max && e.has_interval() => Meets::Yes,
        Some(e) if e.median <= max => Meets::Borderline,
        _ => Meets::No,
    };
    match *deadline {
        Deadline::TtftP50 { max_s } => upper(c.ttft_p50_s, max_s),
        Deadline::Itl { max_s } => upper(c.itl_s, max_s),
        Deadline::Throughput { min_tok_s } => {
            let t = c.throughput_tok_s;
            if t.median < min_tok_s {
                Meets::No
            } else if t.lo >= min_tok_s && t.has_interval() {
                Meets::Yes
            } else {
                Meets::Borderline
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Pick {
    pub gpu_id: String,
    pub gpu_name: String,
    pub energy: Estimate,
    pub meets: Meets,
}

/// The answer for one deadline.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Choice {
    pub deadline: Deadline,
    pub label: String,
    /// The lowest-energy GPU whose median meets the deadline (None: none does).
    pub pick: Option<Pick>,
    /// The next lowest-energy GPU that meets it.
    pub runner_up: Option<Pick>,
    /// The pick against the runner-up (a tie when their intervals overlap).
    pub verdict: Option<Verdict>,
    /// GPUs that measured the model but miss the deadline (or the budget).
    pub missing: usize,
    /// The energy budget asked for beside the deadline, J/token: a GPU
    /// must meet both (its median J/token at most this).
    pub budget_j_per_token: Option<f64>,
}

/// Candidates in any order; the answer for `deadline`.
pub fn choose(deadline: Deadline, candidates: &[Candidate]) -> Choice {
    choose_within(deadline, None, candidates)
}

/// The lowest-energy GPU meeting `deadline` and, when given, the energy
/// budget (median J/token at most `budget`); "none meets both" is an
/// answer (`pick: None`).
pub fn choose_within(deadline: Deadline, budget: Option<f64>, candidates: &[Candidate]) -> Choice {
    let mut ok: Vec<(&Candidate, Meets)> = candidates
        .iter()
        .map(|c| (c, meets(&deadline, c)))
        .filter(|(_, m)| *m != Meets::No)
        .filter(|(c, _)| budget.is_none_or(|b| c.energy.median <= b))
        .collect();
    ok.sort_by(|a, b| {
        a.0.energy
            .median
            .total_cmp(&b.0.energy.median)
            .then_with(|| a.0.gpu_id.cmp(&b.0.gpu_id))
    });
    let pick = |i: usize| {
        ok.get(i).map(|(c, m)| Pick {
            gpu_id: c.gpu_id.clone(),
            gpu_name: c.gpu_name.clone(),
            energy: c.energy,
            meets: *m,
        })
    };
    let (first, second) = (pick(0), pick(1));
    Choice {
        deadline,
        label: match budget {
            Some(b) => format!("{} and ≤ {} J/token", deadline.label(), verdict::sig(b)),
            None => deadline.label(),
        },
        budget_j_per_token: budget,
        verdict: match (&first, &second) {
            (Some(a), Some(b)) => Some(verdict::verdict(&a.energy, &b.energy, "J/token")),
            _ => None,
        },
        missing: candidates.len() - ok.len(),
        pick: first,
        runner_up: second,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wattcounts_rules::domain::Interval;

    fn est(m: f64, lo: f64, hi: f64) -> Estimate {
        Estimate::new(
            m,
            Some(Interval {
                lo,
                hi,
                confidence: 0.75,
            }),
        )
    }

    fn gpu(id: &str, energy: f64, ttft: (f64, f64, f64), tput: f64) -> Candidate {
        Candidate {
            gpu_id: id.into(),
            gpu_name: id.to_uppercase(),
            energy: est(energy, energy * 0.98, energy * 1.02),
            ttft_p50_s: Some(est(ttft.0, ttft.1, ttft.2)),
            itl_s: None,
            throughput_tok_s: est(tput, tput * 0.9, tput * 1.1),
        }
    }

    #[test]
    fn lowest_energy_among_those_meeting_the_deadline() {
        let gpus = [
            gpu("l4", 1.0, (0.30, 0.25, 0.35), 500.0),
            gpu("a100", 2.0, (0.09, 0.08, 0.12), 900.0),
            gpu("h100", 3.0, (0.05, 0.04, 0.06), 1500.0),
        ];
        let c = choose(Deadline::TtftP50 { max_s: 0.1 }, &gpus);
        let pick = c.pick.unwrap();
        assert_eq!(pick.gpu_id, "a100");
        // Its median meets 100 ms, its interval reaches 120 ms.
        assert_eq!(pick.meets, Meets::Borderline);
        assert_eq!(c.runner_up.unwrap().gpu_id, "h100");
        assert_eq!(c.missing, 1);
        let v = c.verdict.unwrap();
        assert!(!v.is_tie());
        assert!((v.saving().median_pct - 100.0 / 3.0).abs() < 1e-9);
        // A loose deadline: everyone meets it, the L4 wins outright.
        let c = choose(Deadline::TtftP50 { max_s: 1.0 }, &gpus);
        assert_eq!(c.pick.unwrap().meets, Meets::Yes);
        // Too tight for anyone.
        let c = choose(Deadline::TtftP50 { max_s: 0.01 }, &gpus);
        assert!(c.pick.is_none() && c.verdict.is_none());
        assert_eq!(c.missing, 3);
    }

    #[test]
    fn an_energy_budget_must_be_met_beside_the_deadline() {
        let gpus = [
            gpu("l4", 1.0, (0.30, 0.25, 0.35), 500.0),
            gpu("a100", 2.0, (0.09, 0.08, 0.12), 900.0),
            gpu("h100", 3.0, (0.05, 0.04, 0.06), 1500.0),
        ];
        // 100 ms: the A100 and H100 meet it; a 2.5 J budget leaves the A100.
        let c = choose_within(Deadline::TtftP50 { max_s: 0.1 }, Some(2.5), &gpus);
        assert_eq!(c.pick.as_ref().unwrap().gpu_id, "a100");
        assert!(c.runner_up.is_none());
        assert_eq!(c.missing, 2);
        assert_eq!(c.label, "TTFT p50 ≤ 100 ms and ≤ 2.50 J/token");
        assert_eq!(c.budget_j_per_token, Some(2.5));
        // A budget only the L4 meets, which misses the deadline: none
        // meets both.
        let c = choose_within(Deadline::TtftP50 { max_s: 0.1 }, Some(1.5), &gpus);
        assert!(c.pick.is_none());
        assert_eq!(c.missing, 3);
        // Without a budget, as before.
        assert_eq!(
            choose_within(Deadline::TtftP50 { max_s: 0.1 }, None, &gpus),
            choose(Deadline::TtftP50 { max_s: 0.1 }, &gpus)
        );
    }

    #[test]
    fn throughput_floor_for_batch() {
        let gpus = [
            gpu("l4", 1.0, (0.3, 0.3, 0.3), 500.0),
            gpu("a100", 2.0, (0.1, 0.1, 0.1), 1050.0),
        ];
        let c = choose(Deadline::Throughput { min_tok_s: 1000.0 }, &gpus);
        let pick = c.pick.unwrap();
        assert_eq!(pick.gpu_id, "a100");
        // 1050 median, 945 at the bottom of its interval.
        assert_eq!(pick.meets, Meets::Borderline);
        assert!(c.runner_up.is_none() && c.verdict.is_none());
    }

    #[test]
    fn a_figure_never_measured_misses_every_deadline() {
        let mut g = gpu("l4", 1.0, (0.01, 0.01, 0.01), 500.0);
        g.itl_s = None;
        assert_eq!(meets(&Deadline::Itl { max_s: 1.0 }, &g), Meets::No);
    }

    #[test]
    fn parsing_names_the_field() {
        assert_eq!(
            Deadline::parse("ttft_ms", "100").unwrap(),
            Deadline::TtftP50 { max_s: 0.1 }
        );
        assert!(Deadline::parse("ttft_ms", "-1")
            .unwrap_err()
            .contains("ttft_ms"));
        assert!(Deadline::parse("e2e_ms", "1")
            .unwrap_err()
            .contains("unknown"));
        assert_eq!(
            Deadline::TtftP50 { max_s: 0.1 }.label(),
            "TTFT p50 ≤ 100 ms"
        );
    }

    #[test]
    fn form_values_become_deadlines_in_seconds() {
        assert_eq!(
            Deadline::parse("ttft_ms", " 250 "),
            Ok(Deadline::TtftP50 { max_s: 0.25 })
        );
        assert_eq!(
            Deadline::parse("itl_ms", "40"),
            Ok(Deadline::Itl { max_s: 0.04 })
        );
        assert_eq!(
            Deadline::parse("min_tok_s", "800"),
            Ok(Deadline::Throughput { min_tok_s: 800.0 })
        );
        assert_eq!(
            Deadline::parse("ttft_ms", "0"),
            Err("ttft_ms='0' is not a positive number".into())
        );
        assert_eq!(
            Deadline::parse("p99_ms", "5"),
            Err("unknown deadline 'p99_ms'; expected ttft_ms, itl_ms, min_tok_s".into())
        );
    }

    #[test]
    fn presets_per_scenario() {
        let labels = |s| {
            Deadline::presets(s)
                .iter()
                .map(Deadline::label)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            labels(Scenario::Server),
            [
                "TTFT p50 ≤ 50 ms",
                "TTFT p50 ≤ 100 ms",
                "TTFT p50 ≤ 200 ms",
                "TTFT p50 ≤ 500 ms",
                "TTFT p50 ≤ 1,000 ms",
                "ITL ≤ 25 ms",
                "ITL ≤ 50 ms",
            ]
        );
        assert_eq!(
            Deadline::presets(Scenario::Server)[0],
            Deadline::TtftP50 { max_s: 0.05 }
        );
        assert_eq!(
            Deadline::presets(Scenario::Server)[5],
            Deadline::Itl { max_s: 0.025 }
        );
        assert_eq!(
            labels(Scenario::Batch),
            [
                "throughput ≥ 250 tokens/s",
                "throughput ≥ 500 tokens/s",
                "throughput ≥ 1,000 tokens/s",
                "throughput ≥ 2,000 tokens/s",
                "throughput ≥ 5,000 tokens/s",
            ]
        );
    }

    #[test]
    fn a_throughput_exactly_at_the_bound_meets_it() {
        let mut c = gpu("l4", 1.0, (0.3, 0.25, 0.35), 800.0);
        c.throughput_tok_s = est(800.0, 800.0, 880.0);
        let d = Deadline::Throughput { min_tok_s: 800.0 };
        assert_eq!(meets(&d, &c), Meets::Yes);
        c.throughput_tok_s = est(800.0, 790.0, 880.0);
        assert_eq!(meets(&d, &c), Meets::Borderline);
        c.throughput_tok_s = est(799.0, 790.0, 880.0);
        assert_eq!(meets(&d, &c), Meets::No);
    }
}

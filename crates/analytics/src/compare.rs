//! GPU comparisons and per-model summaries, computed from leaderboard
//! entries (one per GPU × model × scenario × rate). Pure: entries in,
//! tables out; the pages and their JSON twins render these.

use serde::Serialize;

use crate::deadline::{self, Candidate, Choice, Deadline};
use crate::leaderboard::LeaderboardRow;
use crate::verdict::{self, Estimate, Saving, Verdict};
use wattcounts_rules::bundle::harness::Scenario;
use wattcounts_rules::domain::Interval;
use wattcounts_rules::stats::median;

pub use wattcounts_rules::domain::ScenarioKey;

/// The scenario of a leaderboard entry.
pub fn key_of(e: &LeaderboardRow) -> ScenarioKey {
    ScenarioKey {
        scenario: e.scenario,
        lambda_qps: e.lambda_qps,
    }
}

/// Every scenario present, batch first, then server rates ascending.
pub fn scenarios<'a>(entries: impl IntoIterator<Item = &'a LeaderboardRow>) -> Vec<ScenarioKey> {
    let mut out: Vec<ScenarioKey> = Vec::new();
    for e in entries {
        let k = key_of(e);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out.sort_by(|a, b| {
        (a.scenario != Scenario::Batch)
            .cmp(&(b.scenario != Scenario::Batch))
            .then(
                a.lambda_qps
                    .unwrap_or(0.0)
                    .total_cmp(&b.lambda_qps.unwrap_or(0.0)),
            )
    });
    out
}

/// Saving of `best` against `other`, in % of `other`.
pub fn saving_pct(best: f64, other: f64) -> f64 {
    (other - best) / other * 100.0
}

/// A leaderboard entry's energy per token with its interval.
pub fn energy_of(e: &LeaderboardRow) -> Estimate {
    Estimate::new(e.energy_per_token_j, Some(e.energy_per_token_interval))
}

/// The latency a scenario is judged by: TTFT p50 for server runs, time
/// per output token (duration ÷ tokens) for batch runs. Seconds.
pub fn latency_of(e: &LeaderboardRow) -> Option<Estimate> {
    match e.scenario {
        Scenario::Server => Estimate::of(e.ttft_p50_s, e.intervals.ttft_p50_s),
        Scenario::Batch => Estimate::of(e.itl_s, e.intervals.itl_s),
    }
}

/// What the latency of a scenario is called on the pages.
pub fn latency_name(s: Scenario) -> &'static str {
    match s {
        Scenario::Server => "TTFT p50",
        Scenario::Batch => "time per output token",
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct ModelRow {
    pub model: String,
    /// Energy per token (J) per compared GPU, in the order of `gpus`; None:
    /// not measured (never a loser).
    pub energy_per_token_j: Vec<Option<f64>>,
    pub energy_per_token_interval: Vec<Option<Interval>>,
    /// The scenario's latency ([`latency_of`]) per GPU, seconds.
    pub latency_s: Vec<Option<f64>>,
    /// The GPU with the least energy per token, among those that measured
    /// the model, when at least two did.
    pub best: Option<usize>,
    /// `best`, only when its interval separates from every other's.
    pub winner: Option<usize>,
    /// The best against the runner-up.
    pub verdict: Option<Verdict>,
    /// The best's saving against each other measured GPU, % (None for the
    /// best itself and for GPUs that did not measure the model).
    pub saving_pct: Vec<Option<f64>>,
    pub saving: Vec<Option<Saving>>,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Headline {
    pub scenario: ScenarioKey,
    /// Models measured on at least two of the compared GPUs.
    pub models: usize,
    /// The GPU that is best for the most of those models.
    pub best_gpu: Option<(String, String)>,
    /// Models it is best for, and how many of those are ties.
    pub best_for: usize,
    pub best_ties: usize,
    /// Median and largest saving of `best_gpu` against each model's
    /// most energy-hungry GPU, %, over the models it measured.
    pub best_vs_worst_median_pct: Option<f64>,
    pub best_vs_worst_max_pct: Option<f64>,
    /// The reference the reader chose (default: an H100 among the GPUs),
    /// and `best_gpu`'s median saving against it over models both ran.
    pub reference_gpu: Option<(String, String)>,
    pub best_vs_reference_median_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Comparison {
    pub gpus: Vec<(String, String)>,
    pub scenario: ScenarioKey,
    pub rows: Vec<ModelRow>,
    pub headline: Headline,
}

/// The reference a headline compares against: the one asked for, else the
/// H100 PCIe, else another H100, among the compared GPUs.
pub fn default_reference(gpus: &[String]) -> Option<String> {
    gpus.iter()
        .find(|g| *g == "h100-pcie")
        .or_else(|| gpus.iter().find(|g| g.starts_with("h100")))
        .cloned()
}

/// The GPUs side by side for one scenario, model by model (models sorted
/// case-insensitively).
pub fn compare(
    entries: &[LeaderboardRow],
    gpus: &[String],
    scenario: ScenarioKey,
    reference: Option<&str>,
) -> Comparison {
    let mut models: Vec<&str> = entries
        .iter()
        .filter(|e| scenario.same(&key_of(e)) && gpus.contains(&e.gpu_id))
        .map(|e| e.model.as_str())
        .collect();
    models.sort_unstable_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then(a.cmp(b)));
    models.dedup();
    // One pass over the view, then a lookup per cell (a scan per cell made
    // the page cost models × GPUs × groups).
    let mut cells: std::collections::HashMap<(&str, &str), &LeaderboardRow> = Default::default();
    for e in entries.iter().filter(|e| scenario.same(&key_of(e))) {
        cells
            .entry((e.gpu_id.as_str(), e.model.as_str()))
            .or_insert(e);
    }
    let find = |gpu: &str, model: &str| cells.get(&(gpu, model)).copied();
    let rows: Vec<ModelRow> = models
        .iter()
        .map(|m| {
            let found: Vec<Option<&LeaderboardRow>> = gpus.iter().map(|g| find(g, m)).collect();
            let estimates: Vec<Option<Estimate>> = found.iter().map(|e| e.map(energy_of)).collect();
            let mut measured: Vec<(usize, Estimate)> = estimates
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i, v)))
                .collect();
            measured.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
            let (best, verdict) = match measured.as_slice() {
                [(b, be), (_, re), ..] => (Some(*b), Some(verdict::verdict(be, re, "J/token"))),
                _ => (None, None),
            };
            let saving: Vec<Option<Saving>> = estimates
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let b = best?;
                    (i != b).then_some(())?;
                    Some(verdict::saving(&estimates[b]?, &(*v)?))
                })
                .collect();
            // Separate from every other GPU, not only the runner-up: a wide
            // interval further down can still reach the best's.
            let winner = match measured.split_first() {
                Some(((b, be), rest)) if !rest.is_empty() => rest
                    .iter()
                    .all(|(_, o)| !verdict::verdict(be, o, "J").is_tie())
                    .then_some(*b),
                _ => None,
            };
            ModelRow {
                model: m.to_string(),
                energy_per_token_j: estimates.iter().map(|v| v.map(|v| v.median)).collect(),
                energy_per_token_interval: found
                    .iter()
                    .map(|e| e.map(|e| e.energy_per_token_interval))
                    .collect(),
                latency_s: found
                    .iter()
                    .map(|e| e.and_then(latency_of).map(|l| l.median))
                    .collect(),
                best,
                winner,
                verdict,
                saving_pct: saving.iter().map(|s| s.map(|s| s.median_pct)).collect(),
                saving,
            }
        })
        .collect();
    let names: Vec<(String, String)> = gpus
        .iter()
        .map(|g| {
            let name = entries
                .iter()
                .find(|e| &e.gpu_id == g)
                .map(|e| e.gpu_name.clone())
                .unwrap_or_else(|| g.clone());
            (g.clone(), name)
        })
        .collect();
    let reference = reference
        .map(str::to_string)
        .or_else(|| default_reference(gpus));
    let headline = headline(&rows, &names, scenario, reference.as_deref());
    Comparison {
        gpus: names,
        scenario,
        rows,
        headline,
    }
}

fn headline(
    rows: &[ModelRow],
    gpus: &[(String, String)],
    scenario: ScenarioKey,
    reference: Option<&str>,
) -> Headline {
    let compared: Vec<&ModelRow> = rows.iter().filter(|r| r.best.is_some()).collect();
    let mut wins = vec![(0usize, 0usize); gpus.len()];
    for r in &compared {
        let b = r.best.expect("filtered");
        wins[b].0 += 1;
        if r.verdict.as_ref().is_some_and(Verdict::is_tie) {
            wins[b].1 += 1;
        }
    }
    // Most models won; among equals, fewer ties, then the list's order.
    let best = (0..gpus.len()).filter(|i| wins[*i].0 > 0).max_by(|a, b| {
        wins[*a]
            .0
            .cmp(&wins[*b].0)
            .then(wins[*b].1.cmp(&wins[*a].1))
            .then(b.cmp(a))
    });
    let reference = reference.and_then(|r| gpus.iter().position(|g| g.0 == r));
    let mut vs_worst = Vec::new();
    let mut vs_reference = Vec::new();
    if let Some(b) = best {
        for r in &compared {
            let Some(mine) = r.energy_per_token_j[b] else {
                continue;
            };
            let worst = r
                .energy_per_token_j
                .iter()
                .flatten()
                .copied()
                .fold(0.0, f64::max);
            vs_worst.push(saving_pct(mine, worst));
            if let Some(other) = reference
                .filter(|i| *i != b)
                .and_then(|i| r.energy_per_token_j[i])
            {
                vs_reference.push(saving_pct(mine, other));
            }
        }
    }
    Headline {
        scenario,
        models: compared.len(),
        best_gpu: best.map(|b| gpus[b].clone()),
        best_for: best.map_or(0, |b| wins[b].0),
        best_ties: best.map_or(0, |b| wins[b].1),
        best_vs_worst_max_pct: vs_worst.iter().copied().reduce(f64::max),
        best_vs_worst_median_pct: median(vs_worst),
        reference_gpu: reference.map(|i| gpus[i].clone()),
        best_vs_reference_median_pct: median(vs_reference),
    }
}

/// One GPU of a model's page: its figures with their intervals.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Point {
    pub gpu_id: String,
    pub gpu_name: String,
    pub energy_per_token: Estimate,
    pub energy_per_request: Option<Estimate>,
    /// [`latency_of`]: TTFT p50 (server) or time per output token (batch).
    pub latency: Option<Estimate>,
    /// Server: inter-token latency.
    pub itl: Option<Estimate>,
    pub throughput: Estimate,
    /// Server: requests in the system on average (Little's law).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_concurrency: Option<Estimate>,
    /// Server: the share of energy attributed to prefill by time (Σ TTFT
    /// ÷ Σ end-to-end latency); decode is the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_energy_share: Option<Estimate>,
    pub iterations: u64,
    pub submissions: u64,
    /// Not beaten on both energy and latency by another GPU.
    pub pareto: bool,
    pub evidence: uuid::Uuid,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct ModelScenario {
    pub scenario: ScenarioKey,
    pub latency_metric: &'static str,
    /// GPUs from least to most energy per token.
    pub points: Vec<Point>,
    /// The least-energy GPU against the runner-up (None: one GPU only).
    pub verdict: Option<Verdict>,
    /// The least-energy GPU under each deadline: the presets, then any the
    /// reader asked for.
    pub choices: Vec<Choice>,
}

/// Per scenario: which GPU needs the least energy for this model, how sure
/// that is, the choice under deadlines, and the energy/latency trade-off
/// with its Pareto front.
pub fn model_summary(
    entries: &[LeaderboardRow],
    model: &str,
    asked: &[Deadline],
) -> Vec<ModelScenario> {
    model_summary_within(entries, model, asked, None)
}

/// [`model_summary`] with an energy budget (J/token) every deadline
/// choice must also meet.
pub fn model_summary_within(
    entries: &[LeaderboardRow],
    model: &str,
    asked: &[Deadline],
    budget: Option<f64>,
) -> Vec<ModelScenario> {
    let mine: Vec<&LeaderboardRow> = entries.iter().filter(|e| e.model == model).collect();
    scenarios(mine.iter().copied())
        .into_iter()
        .map(|k| {
            let mut points: Vec<Point> = mine
                .iter()
                .filter(|e| k.same(&key_of(e)))
                .map(|e| Point {
                    gpu_id: e.gpu_id.clone(),
                    gpu_name: e.gpu_name.clone(),
                    energy_per_token: energy_of(e),
                    energy_per_request: Estimate::of(
                        e.energy_per_request_j,
                        e.intervals.energy_per_request_j,
                    ),
                    latency: latency_of(e),
                    itl: match e.scenario {
                        Scenario::Server => Estimate::of(e.itl_s, e.intervals.itl_s),
                        Scenario::Batch => None,
                    },
                    throughput: Estimate::new(e.throughput_tok_s, e.intervals.throughput_tok_s),
                    mean_concurrency: Estimate::of(
                        e.mean_concurrency,
                        e.intervals.mean_concurrency,
                    ),
                    prefill_energy_share: Estimate::of(
                        e.prefill_energy_share,
                        e.intervals.prefill_energy_share,
                    ),
                    iterations: e.iterations,
                    submissions: e.submissions,
                    pareto: false,
                    evidence: e.evidence,
                })
                .collect();
            let snapshot = points.clone();
            let lat = |p: &Point| p.latency.map_or(f64::INFINITY, |l| l.median);
            for p in &mut points {
                let (pe, pl) = (p.energy_per_token.median, lat(p));
                p.pareto = !snapshot.iter().any(|q| {
                    let (qe, ql) = (q.energy_per_token.median, lat(q));
                    qe <= pe && ql <= pl && (qe < pe || ql < pl)
                });
            }
            points.sort_by(|a, b| {
                a.energy_per_token
                    .median
                    .total_cmp(&b.energy_per_token.median)
                    .then_with(|| a.gpu_id.cmp(&b.gpu_id))
            });
            let verdict = match points.as_slice() {
                [a, b, ..] => Some(verdict::verdict(
                    &a.energy_per_token,
                    &b.energy_per_token,
                    "J/token",
                )),
                _ => None,
            };
            let candidates: Vec<Candidate> = points
                .iter()
                .map(|p| Candidate {
                    gpu_id: p.gpu_id.clone(),
                    gpu_name: p.gpu_name.clone(),
                    energy: p.energy_per_token,
                    ttft_p50_s: match k.scenario {
                        Scenario::Server => p.latency,
                        Scenario::Batch => None,
                    },
                    itl_s: p.itl,
                    throughput_tok_s: p.throughput,
                })
                .collect();
            let choices = Deadline::presets(k.scenario)
                .into_iter()
                .chain(asked.iter().copied().filter(|d| d.applies_to(k.scenario)))
                .map(|d| deadline::choose_within(d, budget, &candidates))
                .collect();
            ModelScenario {
                scenario: k,
                latency_metric: latency_name(k.scenario),
                points,
                verdict,
                choices,
            }
        })
        .collect()
}

/// The least-energy GPU of a model in one scenario.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct BestOf {
    pub gpu_id: String,
    pub gpu_name: String,
    pub energy_per_token_j: f64,
    /// Its interval overlaps the runner-up's (or another rule of
    /// [`verdict::verdict`] held the verdict back).
    pub tie: bool,
    /// The only GPU that measured it: no comparison.
    pub alone: bool,
}

/// A model as the `/models` index lists it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct ModelListing {
    pub model: String,
    pub size_class: Option<crate::leaderboard::SizeClass>,
    pub params_b: Option<f64>,
    /// Distinct GPUs that measured it in any scenario.
    pub gpus_measured: usize,
    /// Per scenario of the index (in its order): the best GPU, if any.
    pub best: Vec<Option<BestOf>>,
}

/// Every model of a view, sorted case-insensitively, with its best GPU per
/// scenario; the scenarios are the columns.
pub fn model_index(entries: &[LeaderboardRow]) -> (Vec<ScenarioKey>, Vec<ModelListing>) {
    let keys = scenarios(entries);
    let mut by_model: std::collections::BTreeMap<(String, String), Vec<&LeaderboardRow>> =
        Default::default();
    for e in entries {
        by_model
            .entry((e.model.to_lowercase(), e.model.clone()))
            .or_default()
            .push(e);
    }
    let listings = by_model
        .into_iter()
        .map(|((_, model), mine)| {
            let mut gpus: Vec<&str> = mine.iter().map(|e| e.gpu_id.as_str()).collect();
            gpus.sort_unstable();
            gpus.dedup();
            let best = keys
                .iter()
                .map(|k| {
                    let mut here: Vec<&&LeaderboardRow> =
                        mine.iter().filter(|e| k.same(&key_of(e))).collect();
                    here.sort_by(|a, b| a.energy_per_token_j.total_cmp(&b.energy_per_token_j));
                    let first = here.first()?;
                    Some(BestOf {
                        gpu_id: first.gpu_id.clone(),
                        gpu_name: first.gpu_name.clone(),
                        energy_per_token_j: first.energy_per_token_j,
                        tie: here.get(1).is_some_and(|second| {
                            verdict::verdict(&energy_of(first), &energy_of(second), "J/token")
                                .is_tie()
                        }),
                        alone: here.len() == 1,
                    })
                })
                .collect();
            let spec = wattcounts_rules::catalog::model_by_id(&model);
            ModelListing {
                size_class: crate::leaderboard::SizeClass::of_model(&model),
                params_b: spec.map(|m| m.params_b),
                gpus_measured: gpus.len(),
                best,
                model,
            }
        })
        .collect();
    (keys, listings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn around(v: f64, spread: f64) -> Interval {
        Interval {
            lo: v * (1.0 - spread),
            hi: v * (1.0 + spread),
            confidence: 0.75,
        }
    }

    fn entry(gpu: &str, model: &str, lambda: Option<f64>, ept: f64, lat: f64) -> LeaderboardRow {
        LeaderboardRow {
            gpu_id: gpu.into(),
            gpu_name: gpu.to_uppercase(),
            model: model.into(),
            scenario: if lambda.is_some() {
                Scenario::Server
            } else {
                Scenario::Batch
            },
            lambda_qps: lambda,
            protocol_id: "ref".into(),
            protocol: "reference".into(),
            reference_protocol: true,
            origin: wattcounts_rules::domain::Origin::Real,
            energy_per_token_j: ept,
            energy_per_token_interval: around(ept, 0.02),
            energy_per_token_cv: 0.01,
            energy_per_request_j: None,
            throughput_tok_s: 1.0,
            power_mean_w: 100.0,
            ttft_p50_s: Some(lat),
            itl_s: Some(lat),
            mean_concurrency: None,
            prefill_energy_share: None,
            intervals: crate::leaderboard::FigureIntervals {
                ttft_p50_s: Some(around(lat, 0.1)),
                ..Default::default()
            },
            iterations: 5,
            submissions: 1,
            submitters: 1,
            rank_in_model: None,
            demo: false,
            needs_review: false,
            evidence: uuid::Uuid::nil(),
            evidence_ids: vec![uuid::Uuid::nil()],
        }
    }

    const SERVER: ScenarioKey = ScenarioKey {
        scenario: Scenario::Server,
        lambda_qps: Some(0.33),
    };

    #[test]
    fn scenarios_in_order_and_the_small_rules() {
        let e = vec![
            entry("l4", "m", Some(2.0), 1.0, 0.2),
            entry("l4", "m", Some(0.33), 1.0, 0.2),
            entry("l4", "m", None, 1.0, 0.2),
            entry("a30", "m", Some(0.33), 1.0, 0.2),
            entry("l4", "m", Some(0.017), 1.0, 0.2),
        ];
        // Batch first, then rates ascending, each once.
        let keys: Vec<String> = scenarios(&e).iter().map(|k| k.param()).collect();
        assert_eq!(keys, ["batch", "server@0.017", "server@0.33", "server@2"]);
        assert_eq!(key_of(&e[1]), SERVER);
        // 1 against 4: 75 % less; against itself nothing; a worse "best"
        // is a negative saving.
        assert_eq!(saving_pct(1.0, 4.0), 75.0);
        assert_eq!(saving_pct(2.0, 2.0), 0.0);
        assert_eq!(saving_pct(3.0, 2.0), -50.0);
        // The reference: the H100 PCIe, else another H100, else none.
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            default_reference(&ids(&["l4", "h100-nvl", "h100-pcie"])).as_deref(),
            Some("h100-pcie")
        );
        assert_eq!(
            default_reference(&ids(&["l4", "h100-nvl"])).as_deref(),
            Some("h100-nvl")
        );
        assert_eq!(default_reference(&ids(&["l4", "h200"])), None);
        // Server rows are judged by TTFT, batch rows by time per token,
        // each with its own interval.
        assert_eq!(
            (
                latency_name(Scenario::Server),
                latency_name(Scenario::Batch)
            ),
            ("TTFT p50", "time per output token")
        );
        let mut batch = entry("l4", "m", None, 1.0, 0.2);
        batch.itl_s = Some(0.004);
        batch.intervals.itl_s = Some(around(0.004, 0.5));
        let near = |got: Estimate, want: [f64; 3]| {
            [got.median, got.lo, got.hi]
                .iter()
                .zip(want)
                .all(|(g, w)| (g - w).abs() < 1e-12)
        };
        assert!(near(latency_of(&batch).unwrap(), [0.004, 0.002, 0.006]));
        assert!(near(latency_of(&e[1]).unwrap(), [0.2, 0.18, 0.22]));
        batch.itl_s = None;
        assert!(latency_of(&batch).is_none());
        let e0 = energy_of(&e[0]);
        assert!(near(e0, [1.0, 0.98, 1.02]) && e0.confidence == 0.75);
    }

    #[test]
    fn best_savings_and_headline() {
        let e = vec![
            entry("l4", "m1", Some(0.33), 1.0, 0.2),
            entry("h100-pcie", "m1", Some(0.33), 2.5, 0.04),
            entry("l4", "M2", Some(0.33), 3.0, 0.3),
            entry("h100-pcie", "M2", Some(0.33), 2.0, 0.05),
            entry("l4", "m3", Some(0.33), 1.5, 0.2),
            entry("h100-pcie", "m3", Some(0.33), 3.0, 0.05),
            entry("l4", "m1", None, 1.0, 0.2),
        ];
        let mut e = e;
        // A model only an unchosen GPU measured is no row.
        e.push(entry("t4", "only-t4", Some(0.33), 0.5, 0.2));
        let c = compare(&e, &["l4".into(), "h100-pcie".into()], SERVER, None);
        // Case-insensitive: m1, M2, m3.
        let models: Vec<&str> = c.rows.iter().map(|r| r.model.as_str()).collect();
        assert_eq!(models, ["m1", "M2", "m3"]);
        assert_eq!(c.rows[0].best, Some(0));
        assert_eq!(c.rows[0].winner, Some(0));
        assert_eq!(c.rows[0].saving_pct, vec![None, Some(60.0)]);
        assert_eq!(c.rows[1].best, Some(1));
        assert!((c.rows[1].saving_pct[0].unwrap() - 33.333).abs() < 0.01);
        // The saving's range follows the intervals (±2 % each).
        let s = c.rows[0].saving[1].unwrap();
        assert!((s.lo_pct - (2.45 - 1.02) / 2.45 * 100.0).abs() < 1e-9);
        let h = &c.headline;
        assert_eq!(h.models, 3);
        assert_eq!(h.best_gpu.as_ref().unwrap().0, "l4");
        assert_eq!((h.best_for, h.best_ties), (2, 0));
        // The L4 against each model's worst: 60 %, 0 % (it is the worst of
        // M2), 50 %; against the H100 reference: 60, -50, 50.
        assert_eq!(h.best_vs_worst_median_pct, Some(50.0));
        assert_eq!(h.best_vs_worst_max_pct, Some(60.0));
        assert_eq!(h.reference_gpu.as_ref().unwrap().0, "h100-pcie");
        assert_eq!(h.best_vs_reference_median_pct, Some(50.0));
    }

    #[test]
    fn a_gpu_without_data_is_not_a_loser_and_one_gpu_is_no_winner() {
        let e = vec![
            entry("l4", "only-l4", Some(0.33), 1.0, 0.2),
            entry("l4", "both", Some(0.33), 1.0, 0.2),
            entry("a30", "both", Some(0.33), 1.01, 0.2),
        ];
        let gpus = ["l4".to_string(), "a30".into(), "t4".into()];
        let c = compare(&e, &gpus, SERVER, None);
        let both = &c.rows[0];
        assert_eq!(both.model, "both");
        // 1.00 ± 2 % and 1.01 ± 2 % overlap: best, but no winner.
        assert_eq!(both.best, Some(0));
        assert_eq!(both.winner, None);
        assert!(both.verdict.as_ref().unwrap().is_tie());
        assert_eq!(
            both.energy_per_token_j[2], None,
            "the T4 did not measure it"
        );
        assert_eq!(both.saving_pct[2], None);
        let alone = &c.rows[1];
        assert_eq!(
            (alone.best, alone.winner, &alone.verdict),
            (None, None, &None)
        );
        assert_eq!(c.headline.models, 1);
        assert_eq!(c.headline.best_ties, 1);
        assert_eq!(c.headline.reference_gpu, None);
    }

    #[test]
    fn model_summary_gives_verdict_choices_and_pareto_front() {
        let e = vec![
            entry("a", "m", Some(1.0), 1.0, 0.5),
            entry("b", "m", Some(1.0), 2.0, 0.1),
            entry("c", "m", Some(1.0), 3.0, 0.6),
        ];
        let s = model_summary(&e, "m", &[Deadline::TtftP50 { max_s: 0.3 }]);
        assert_eq!(s.len(), 1);
        let front: Vec<(&str, bool)> = s[0]
            .points
            .iter()
            .map(|p| (p.gpu_id.as_str(), p.pareto))
            .collect();
        assert_eq!(front, vec![("a", true), ("b", true), ("c", false)]);
        // Equal energy, slower: dominated; equal latency, more energy: too.
        let e2 = vec![
            entry("a", "m", Some(1.0), 1.0, 0.5),
            entry("b", "m", Some(1.0), 1.0, 0.6),
            entry("c", "m", Some(1.0), 2.0, 0.5),
        ];
        let s2 = model_summary(&e2, "m", &[]);
        let front: Vec<(&str, bool)> = s2[0]
            .points
            .iter()
            .map(|p| (p.gpu_id.as_str(), p.pareto))
            .collect();
        assert_eq!(front, vec![("a", true), ("b", false), ("c", false)]);
        assert!(!s[0].verdict.as_ref().unwrap().is_tie());
        // Presets first, then the one asked for: under 300 ms only b.
        let asked = s[0].choices.last().unwrap();
        assert_eq!(asked.label, "TTFT p50 ≤ 300 ms");
        assert_eq!(asked.pick.as_ref().unwrap().gpu_id, "b");
        assert_eq!(asked.missing, 2);
        // A batch deadline does not apply to a server scenario.
        let s = model_summary(&e, "m", &[Deadline::Throughput { min_tok_s: 1.0 }]);
        assert_eq!(
            s[0].choices.len(),
            Deadline::presets(Scenario::Server).len()
        );
    }

    #[test]
    fn model_index_lists_best_per_scenario() {
        let e = vec![
            entry("l4", "b-model", Some(0.33), 1.0, 0.2),
            entry("a30", "b-model", Some(0.33), 1.01, 0.2),
            entry("l4", "A-model", None, 1.0, 0.2),
            entry("a30", "A-model", None, 3.0, 0.2),
            entry("t4", "c-model", None, 3.0, 0.2),
        ];
        let (keys, list) = model_index(&e);
        assert_eq!(keys.len(), 2);
        let names: Vec<&str> = list.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["A-model", "b-model", "c-model"]);
        let a = list[0].best[0].as_ref().unwrap();
        assert_eq!((a.gpu_id.as_str(), a.tie, a.alone), ("l4", false, false));
        assert!(list[0].best[1].is_none(), "A-model has no server data");
        assert!(list[1].best[1].as_ref().unwrap().tie);
        assert!(list[2].best[0].as_ref().unwrap().alone);
        assert_eq!(list[1].gpus_measured, 2);
    }
}

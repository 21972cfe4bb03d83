//! GPU comparisons and per-model summaries, computed from leaderboard
//! entries (one per GPU × model × scenario × rate). Pure: entries in,
//! tables out; the pages and their JSON twins render these.

use serde::Serialize;

use crate::bundle::harness::Scenario;
use crate::leaderboard::Entry;

pub use crate::domain::ScenarioKey;

/// The scenario of a leaderboard entry.
pub fn key_of(e: &Entry) -> ScenarioKey {
    ScenarioKey {
        scenario: e.scenario,
        lambda_qps: e.lambda_qps,
    }
}

/// Every scenario present, batch first, then server rates ascending.
pub fn scenarios(entries: &[Entry]) -> Vec<ScenarioKey> {
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

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelRow {
    pub model: String,
    /// Energy per token (J) per compared GPU, in the order of `gpus`.
    pub energy_per_token_j: Vec<Option<f64>>,
    /// Index of the GPU with the least energy per token.
    pub winner: Option<usize>,
    /// The winner's saving against each GPU, % (0 for itself).
    pub saving_pct: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Headline {
    pub scenario: ScenarioKey,
    /// Models measured on at least two of the compared GPUs.
    pub models: usize,
    /// Median and largest saving of the best GPU against the worst, %.
    pub best_vs_worst_median_pct: Option<f64>,
    pub best_vs_worst_max_pct: Option<f64>,
    /// Median saving of the best GPU against the H100 PCIe (or another
    /// H100 among the compared GPUs), %, over models it ran.
    pub vs_h100_gpu: Option<String>,
    pub best_vs_h100_median_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub gpus: Vec<(String, String)>,
    pub scenario: ScenarioKey,
    pub rows: Vec<ModelRow>,
    pub headline: Headline,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(crate::metrics::percentile_sorted(&v, 0.5))
}

/// The GPUs side by side for one scenario, model by model.
pub fn compare(entries: &[Entry], gpus: &[String], scenario: ScenarioKey) -> Comparison {
    let mut models: Vec<&str> = entries
        .iter()
        .filter(|e| scenario.same(&key_of(e)) && gpus.contains(&e.gpu_id))
        .map(|e| e.model.as_str())
        .collect();
    models.sort_unstable();
    models.dedup();
    let value = |gpu: &str, model: &str| {
        entries
            .iter()
            .find(|e| e.gpu_id == gpu && e.model == model && scenario.same(&key_of(e)))
            .map(|e| e.energy_per_token_j)
    };
    let rows: Vec<ModelRow> = models
        .iter()
        .map(|m| {
            let values: Vec<Option<f64>> = gpus.iter().map(|g| value(g, m)).collect();
            let winner = values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i, v)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(i, _)| i);
            let best = winner.and_then(|i| values[i]);
            let saving_pct = values
                .iter()
                .map(|v| Some(saving_pct(best?, (*v)?)))
                .collect();
            ModelRow {
                model: m.to_string(),
                energy_per_token_j: values,
                winner,
                saving_pct,
            }
        })
        .collect();
    let names = gpus
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
    let headline = headline(&rows, gpus, scenario);
    Comparison {
        gpus: names,
        scenario,
        rows,
        headline,
    }
}

fn headline(rows: &[ModelRow], gpus: &[String], scenario: ScenarioKey) -> Headline {
    let h100 = gpus
        .iter()
        .position(|g| g == "h100-pcie")
        .or_else(|| gpus.iter().position(|g| g.starts_with("h100")));
    let mut spread = Vec::new();
    let mut vs_h100 = Vec::new();
    for r in rows {
        let present: Vec<f64> = r.energy_per_token_j.iter().flatten().copied().collect();
        if present.len() < 2 {
            continue;
        }
        let best = present.iter().copied().fold(f64::INFINITY, f64::min);
        let worst = present.iter().copied().fold(0.0, f64::max);
        spread.push(saving_pct(best, worst));
        if let Some(v) = h100.and_then(|i| r.energy_per_token_j[i]) {
            vs_h100.push(saving_pct(best, v));
        }
    }
    Headline {
        scenario,
        models: spread.len(),
        best_vs_worst_max_pct: spread.iter().copied().reduce(f64::max),
        best_vs_worst_median_pct: median(spread),
        vs_h100_gpu: h100.map(|i| gpus[i].clone()),
        best_vs_h100_median_pct: median(vs_h100),
    }
}

/// One point of a model's energy-vs-latency chart.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Point {
    pub gpu_id: String,
    pub gpu_name: String,
    pub energy_per_token_j: f64,
    /// TTFT p50 for server runs, inter-token latency for batch, seconds.
    pub latency_s: f64,
    /// Not beaten on both energy and latency by another GPU.
    pub pareto: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelScenario {
    pub scenario: ScenarioKey,
    pub latency_metric: &'static str,
    /// GPUs from least to most energy per token.
    pub points: Vec<Point>,
}

/// Per scenario: which GPU needs the least energy for this model, and the
/// energy/latency trade-off with its Pareto front.
pub fn model_summary(entries: &[Entry], model: &str) -> Vec<ModelScenario> {
    let mine: Vec<&Entry> = entries.iter().filter(|e| e.model == model).collect();
    let owned: Vec<Entry> = mine.iter().map(|e| (*e).clone()).collect();
    scenarios(&owned)
        .into_iter()
        .map(|k| {
            let latency_metric = match k.scenario {
                Scenario::Batch => "inter-token latency",
                Scenario::Server => "TTFT p50",
            };
            let mut points: Vec<Point> = mine
                .iter()
                .filter(|e| k.same(&key_of(e)))
                .filter_map(|e| {
                    let latency = match k.scenario {
                        Scenario::Batch => e.itl_s,
                        Scenario::Server => e.ttft_p50_s,
                    }?;
                    Some(Point {
                        gpu_id: e.gpu_id.clone(),
                        gpu_name: e.gpu_name.clone(),
                        energy_per_token_j: e.energy_per_token_j,
                        latency_s: latency,
                        pareto: false,
                    })
                })
                .collect();
            let snapshot = points.clone();
            for p in &mut points {
                p.pareto = !snapshot.iter().any(|q| {
                    q.energy_per_token_j <= p.energy_per_token_j
                        && q.latency_s <= p.latency_s
                        && (q.energy_per_token_j < p.energy_per_token_j
                            || q.latency_s < p.latency_s)
                });
            }
            points.sort_by(|a, b| a.energy_per_token_j.total_cmp(&b.energy_per_token_j));
            ModelScenario {
                scenario: k,
                latency_metric,
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(gpu: &str, model: &str, lambda: Option<f64>, ept: f64, lat: f64) -> Entry {
        Entry {
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
            origin: crate::domain::Origin::Real,
            energy_per_token_j: ept,
            energy_per_token_interval: crate::domain::Interval {
                lo: ept,
                hi: ept,
                confidence: 0.0,
            },
            energy_per_token_cv: 0.01,
            energy_per_request_j: None,
            throughput_tok_s: 1.0,
            power_mean_w: 100.0,
            ttft_p50_s: Some(lat),
            itl_s: Some(lat),
            iterations: 5,
            submissions: 1,
            submitters: 1,
            demo: false,
            needs_review: false,
            evidence: uuid::Uuid::nil(),
            evidence_ids: vec![uuid::Uuid::nil()],
        }
    }

    #[test]
    fn winner_savings_and_headline() {
        let e = vec![
            entry("l4", "m1", Some(0.33), 1.0, 0.2),
            entry("h100-pcie", "m1", Some(0.33), 2.5, 0.04),
            entry("l4", "m2", Some(0.33), 3.0, 0.3),
            entry("h100-pcie", "m2", Some(0.33), 2.0, 0.05),
            entry("l4", "m1", None, 1.0, 0.2),
        ];
        let key = ScenarioKey {
            scenario: Scenario::Server,
            lambda_qps: Some(0.33),
        };
        let c = compare(&e, &["l4".into(), "h100-pcie".into()], key);
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].winner, Some(0));
        assert_eq!(c.rows[0].saving_pct[1], Some(60.0));
        assert_eq!(c.rows[1].winner, Some(1));
        assert!((c.rows[1].saving_pct[0].unwrap() - 33.333).abs() < 0.01);
        assert_eq!(c.headline.models, 2);
        assert_eq!(c.headline.best_vs_worst_max_pct, Some(60.0));
        assert_eq!(c.headline.vs_h100_gpu.as_deref(), Some("h100-pcie"));
        // m1: 60 % below the H100; m2: the H100 is best, 0 %.
        assert_eq!(c.headline.best_vs_h100_median_pct, Some(30.0));
    }

    #[test]
    fn pareto_front() {
        let e = vec![
            entry("a", "m", Some(1.0), 1.0, 0.5),
            entry("b", "m", Some(1.0), 2.0, 0.1),
            entry("c", "m", Some(1.0), 3.0, 0.6),
        ];
        let s = model_summary(&e, "m");
        assert_eq!(s.len(), 1);
        let front: Vec<(&str, bool)> = s[0]
            .points
            .iter()
            .map(|p| (p.gpu_id.as_str(), p.pareto))
            .collect();
        assert_eq!(front, vec![("a", true), ("b", true), ("c", false)]);
    }
}

//! What an answer reads from a fit's training rows, computed once when
//! the fit is loaded: which GPUs, models and rates were measured, each
//! domain feature's range, and the standardised features the neighbour
//! distance is taken over. Its own module so that the fit (`trained`)
//! and the answers (`answer`) both use it without naming each other.

use std::collections::BTreeMap;

use wattcounts_rules::catalog::{self, GpuSpec, ModelSpec};
use wattcounts_rules::stats::median;

use super::features::{itl_features, ScenarioClass};
use super::{is_moe, resolved, TrainingRow};

/// What answers read from the rows, computed once per fit.
pub(super) struct Index {
    pub(super) gpus: Vec<String>,
    pub(super) models: Vec<String>,
    pub(super) rates: Option<(f64, f64)>,
    /// Per catalogue feature the domain rule reads: (min, max).
    pub(super) params_b: (f64, f64),
    pub(super) active_params_b: (f64, f64),
    pub(super) bandwidth: (f64, f64),
    pub(super) tdp: (f64, f64),
    pub(super) memory: (f64, f64),
    pub(super) mean: Vec<f64>,
    pub(super) sd: Vec<f64>,
    pub(super) standardised: Vec<Vec<f64>>,
    pub(super) tokens_per_request: BTreeMap<String, f64>,
    /// How many measured models are mixtures of experts.
    pub(super) moe_models: usize,
}

/// The (min, max) of `values`.
pub(crate) fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// Features for the distance: the ITL model's, without the scenario.
pub(super) fn distance_features(gpu: &GpuSpec, model: &ModelSpec) -> Vec<f64> {
    itl_features(gpu, model, ScenarioClass::Batch, true)[1..].to_vec()
}

impl Index {
    pub(super) fn of(rows: &[TrainingRow]) -> Index {
        let mut gpus: Vec<String> = rows.iter().map(|r| r.gpu_id.clone()).collect();
        let mut models: Vec<String> = rows.iter().map(|r| r.model.clone()).collect();
        gpus.sort();
        gpus.dedup();
        models.sort();
        models.dedup();
        let gpu_specs: Vec<&GpuSpec> = gpus.iter().filter_map(|g| catalog::gpu_by_id(g)).collect();
        let model_specs: Vec<&ModelSpec> = models
            .iter()
            .filter_map(|m| catalog::model_by_id(m))
            .collect();
        let rates =
            rows.iter()
                .filter_map(|r| r.lambda_qps)
                .fold(None, |acc: Option<(f64, f64)>, l| {
                    Some(acc.map_or((l, l), |(lo, hi)| (lo.min(l), hi.max(l))))
                });
        let raw: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| {
                let (g, m) = resolved(r).expect("training rows are catalogue rows");
                distance_features(g, m)
            })
            .collect();
        let cols = raw.first().map_or(0, Vec::len);
        let n = raw.len().max(1) as f64;
        let mean: Vec<f64> = (0..cols)
            .map(|j| raw.iter().map(|r| r[j]).sum::<f64>() / n)
            .collect();
        let sd: Vec<f64> = (0..cols)
            .map(|j| {
                let v = raw.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n;
                // A constant column weighs nothing.
                if v > 0.0 {
                    v.sqrt()
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        let standardised = raw
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(j, v)| (v - mean[j]) / sd[j])
                    .collect()
            })
            .collect();
        let mut per_model: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in rows {
            if let Some(t) = r.tokens_per_request() {
                per_model.entry(r.model.clone()).or_default().push(t);
            }
        }
        Index {
            moe_models: model_specs.iter().filter(|m| is_moe(m)).count(),
            params_b: range(model_specs.iter().map(|m| m.params_b)),
            active_params_b: range(model_specs.iter().map(|m| m.active_params_b)),
            bandwidth: range(gpu_specs.iter().map(|g| g.memory_bandwidth_gb_s)),
            tdp: range(gpu_specs.iter().map(|g| g.tdp_w)),
            memory: range(gpu_specs.iter().map(|g| g.memory_gb)),
            gpus,
            models,
            rates,
            mean,
            sd,
            standardised,
            tokens_per_request: per_model
                .into_iter()
                .filter_map(|(m, v)| Some((m, median(v)?)))
                .collect(),
        }
    }
}

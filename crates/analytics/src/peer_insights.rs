//! What a peer dataset says, read within that dataset alone (issue #39):
//! the same questions /insights asks of Watt Counts data, asked of the
//! publisher's own figures. One published figure per configuration and no
//! spread: a comparison is a ratio over matched configurations, shown with
//! its range and how many pairs agree, never a verdict the figures cannot
//! carry.

use serde::Serialize;

use wattcounts_rules::domain::Interval;
use wattcounts_rules::peer::PeerConfig;
use wattcounts_rules::stats::{percentile_sorted, theil_sen};

/// One model's energy per token on `other` over `reference`, over the
/// configurations both GPUs ran alike: same task, precision, GPU count,
/// parallelism and batch-size setting.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GpuSaving {
    pub task: String,
    pub model: String,
    pub nickname: String,
    pub reference: String,
    pub other: String,
    pub pairs: usize,
    /// Median of other ÷ reference J/token over the pairs.
    pub median_ratio: f64,
    pub min_ratio: f64,
    pub max_ratio: f64,
    /// Pairs where `other` used less energy per token.
    pub other_less: usize,
}

/// J/token ∝ parameters^exponent across dense models on one GPU at one
/// batch-size setting (one GPU, bfloat16 weights).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SizeExponent {
    pub task: String,
    pub gpu: String,
    pub batch_size_setting: u32,
    pub models: usize,
    /// Theil–Sen slope of ln J/token on ln parameters.
    pub exponent: f64,
    /// Sen's interval for the slope.
    pub interval: Interval,
    /// (model, parameters in billions, J/token) the slope is fitted on.
    pub points: Vec<(String, f64, f64)>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PeerInsights {
    pub savings: Vec<GpuSaving>,
    pub exponents: Vec<SizeExponent>,
}

/// The level of the size exponent's interval.
pub const EXPONENT_LEVEL: f64 = 0.95;

/// A configuration's place, apart from the GPU.
fn matched_key(c: &PeerConfig) -> (String, String, String, u32, u32, u32, u32, u32) {
    (
        c.task.clone(),
        c.model_id.clone(),
        c.weight_precision.clone(),
        c.num_gpus,
        c.tensor_parallel,
        c.expert_parallel,
        c.data_parallel,
        c.max_num_seqs,
    )
}

/// Per task and model: `other` against `reference` over matched
/// configurations. A key published twice on one GPU (v3 has three) takes
/// the median of its figures, so no pair counts twice.
pub fn gpu_savings(configs: &[PeerConfig], reference: &str, other: &str) -> Vec<GpuSaving> {
    use std::collections::BTreeMap;
    type Key = (String, String, String, u32, u32, u32, u32, u32);
    let mut on: BTreeMap<(Key, bool), Vec<f64>> = BTreeMap::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for c in configs {
        let side = if c.gpu_model == reference {
            false
        } else if c.gpu_model == other {
            true
        } else {
            continue;
        };
        names.insert(c.model_id.clone(), c.nickname.clone());
        on.entry((matched_key(c), side))
            .or_default()
            .push(c.energy_per_token_joules);
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        percentile_sorted(&v, 0.5)
    };
    let mut ratios: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for ((key, side), v) in &on {
        if *side {
            continue;
        }
        if let Some(o) = on.get(&(key.clone(), true)) {
            ratios
                .entry((key.0.clone(), key.1.clone()))
                .or_default()
                .push(med(o.clone()) / med(v.clone()));
        }
    }
    ratios
        .into_iter()
        .map(|((task, model), mut r)| {
            r.sort_by(f64::total_cmp);
            GpuSaving {
                nickname: names.get(&model).cloned().unwrap_or_default(),
                task,
                model,
                reference: reference.into(),
                other: other.into(),
                pairs: r.len(),
                median_ratio: percentile_sorted(&r, 0.5),
                min_ratio: r[0],
                max_ratio: r[r.len() - 1],
                other_less: r.iter().filter(|x| **x < 1.0).count(),
            }
        })
        .collect()
}

/// Per task and GPU: the size exponent across dense models on one GPU with
/// bfloat16 weights, at the batch-size setting most such models share
/// (the smallest on a tie); three models at least.
pub fn size_exponents(configs: &[PeerConfig]) -> Vec<SizeExponent> {
    use std::collections::BTreeMap;
    let dense: Vec<&PeerConfig> = configs
        .iter()
        .filter(|c| c.architecture.eq_ignore_ascii_case("Dense Transformer"))
        .filter(|c| c.num_gpus == 1 && c.weight_precision == "bfloat16")
        .filter(|c| c.total_params_billions.is_some())
        .collect();
    // (task, GPU, batch setting) → model → (parameters, least J/token).
    type Cells = BTreeMap<(String, String, u32), BTreeMap<String, (f64, f64)>>;
    let mut cells: Cells = BTreeMap::new();
    for c in dense {
        // One point per model: the least J/token at that setting.
        let e = cells
            .entry((c.task.clone(), c.gpu_model.clone(), c.max_num_seqs))
            .or_default()
            .entry(c.model_id.clone())
            .or_insert((
                c.total_params_billions.unwrap_or(f64::NAN),
                c.energy_per_token_joules,
            ));
        e.1 = e.1.min(c.energy_per_token_joules);
    }
    let mut best: BTreeMap<(String, String), (u32, usize)> = BTreeMap::new();
    for ((task, gpu, batch), models) in &cells {
        let n = models.len();
        let slot = best
            .entry((task.clone(), gpu.clone()))
            .or_insert((*batch, n));
        if n > slot.1 {
            *slot = (*batch, n);
        }
    }
    best.into_iter()
        .filter_map(|((task, gpu), (batch, _))| {
            let models = &cells[&(task.clone(), gpu.clone(), batch)];
            let points: Vec<(f64, f64)> = models.values().map(|(p, e)| (p.ln(), e.ln())).collect();
            let (exponent, interval) = theil_sen(&points, EXPONENT_LEVEL, 3)?;
            Some(SizeExponent {
                task,
                gpu,
                batch_size_setting: batch,
                models: models.len(),
                exponent,
                interval,
                points: models
                    .iter()
                    .map(|(m, (p, e))| (m.clone(), *p, *e))
                    .collect(),
            })
        })
        .collect()
}

/// Both, for a release: `other` against `reference` (for v3, B200
/// against the older H100), and the size exponents.
pub fn peer_insights(configs: &[PeerConfig], reference: &str, other: &str) -> PeerInsights {
    PeerInsights {
        savings: gpu_savings(configs, reference, other),
        exponents: size_exponents(configs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(gpu: &str, model: &str, params: f64, batch: u32, ept: f64) -> PeerConfig {
        PeerConfig {
            file: String::new(),
            pointer: String::new(),
            task: "chat".into(),
            task_name: "Chat".into(),
            model_id: model.into(),
            nickname: model.into(),
            architecture: "Dense Transformer".into(),
            total_params_billions: Some(params),
            activated_params_billions: Some(params),
            weight_precision: "bfloat16".into(),
            gpu_model: gpu.into(),
            gpu_name: String::new(),
            num_gpus: 1,
            max_num_seqs: batch,
            tensor_parallel: 1,
            pipeline_parallel: 1,
            expert_parallel: 1,
            data_parallel: 1,
            avg_batch_size: Some(f64::from(batch)),
            avg_power_watts: Some(500.0),
            energy_per_token_joules: ept,
            energy_per_request_joules: ept * 100.0,
            output_throughput_tokens_per_sec: 500.0 / ept,
            avg_output_len: 100.0,
            mean_itl_ms: None,
            median_itl_ms: Some(20.0),
            p90_itl_ms: Some(25.0),
            p95_itl_ms: Some(28.0),
            p99_itl_ms: Some(30.0),
        }
    }

    #[test]
    fn savings_pair_only_like_configurations() {
        let c = vec![
            config("H100", "m", 8.0, 64, 0.20),
            config("B200", "m", 8.0, 64, 0.10), // ratio 0.5
            config("H100", "m", 8.0, 128, 0.10),
            config("B200", "m", 8.0, 128, 0.08), // ratio 0.8
            config("B200", "m", 8.0, 256, 0.01), // no H100 twin: unpaired
            config("H100", "m", 8.0, 512, 0.05),
            config("B200", "m", 8.0, 512, 0.06), // ratio 1.2
        ];
        let s = gpu_savings(&c, "H100", "B200");
        assert_eq!(s.len(), 1);
        // Ratios 0.5, 0.8, 1.2: median 0.8, two of three less.
        assert_eq!((s[0].pairs, s[0].other_less), (3, 2));
        assert!((s[0].median_ratio - 0.8).abs() < 1e-12);
        assert!((s[0].min_ratio - 0.5).abs() < 1e-12 && (s[0].max_ratio - 1.2).abs() < 1e-12);
    }

    #[test]
    fn the_size_exponent_of_an_exact_power_law() {
        // J/token = 0.01 x params^0.7 at batch 64, on three models; a
        // fourth model only at batch 128 does not move the chosen setting.
        let law = |p: f64| 0.01 * p.powf(0.7);
        let c = vec![
            config("H100", "a", 1.0, 64, law(1.0)),
            config("H100", "b", 8.0, 64, law(8.0)),
            config("H100", "c", 70.0, 64, law(70.0)),
            config("H100", "d", 14.0, 128, 5.0),
        ];
        let e = size_exponents(&c);
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].batch_size_setting, e[0].models), (64, 3));
        assert!((e[0].exponent - 0.7).abs() < 1e-9, "{}", e[0].exponent);
        // Two models are too few for a slope.
        assert!(size_exponents(&c[..2]).is_empty());
    }
}

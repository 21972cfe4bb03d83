//! The energy estimator for GPU × model pairs nobody has measured (issue
//! #28), as WattGPU builds it: gradient-boosted trees predict mean power
//! ÷ TDP and ln(ITL) from the catalogue's features and the scenario's
//! class, and energy follows from the two (batch J/token = P̂ × ITL̂,
//! server J/request = P̂ ÷ λ over the idle-inclusive window). Pure: training
//! rows in (one per accepted reference-protocol group), fits, predictions
//! and validation out. The service runs it in the background; nothing
//! here knows a clock, a thread pool or a database.

pub mod answer;
pub mod baselines;
pub mod conformal;
pub mod features;
pub(crate) mod index;
pub mod metrics;
pub mod peer;
pub mod trained;
pub mod validation;

use forust_ml::objective::ObjectiveType;
use forust_ml::{GradientBooster, Matrix};
use serde::{Deserialize, Serialize};

use features::{itl_features, power_features, ScenarioClass};
use wattcounts_rules::catalog::{self, GpuSpec, ModelSpec};

/// One training row: a group's medians.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingRow {
    pub gpu_id: String,
    pub model: String,
    pub scenario: ScenarioClass,
    pub lambda_qps: Option<f64>,
    pub power_w: f64,
    pub itl_s: f64,
    pub energy_per_token_j: f64,
    pub energy_per_request_j: Option<f64>,
}

impl TrainingRow {
    /// The energy the estimator is scored on: batch J/token, server
    /// J/request.
    pub fn energy(&self) -> Option<f64> {
        match self.scenario {
            ScenarioClass::Batch => Some(self.energy_per_token_j),
            _ => self.energy_per_request_j,
        }
    }

    /// Server rows: output tokens per request (J/request ÷ J/token).
    pub fn tokens_per_request(&self) -> Option<f64> {
        self.energy_per_request_j
            .map(|r| r / self.energy_per_token_j)
            .filter(|t| t.is_finite() && *t > 0.0)
    }
}

/// How many distinct GPUs and models the rows hold.
pub fn distinct_counts(rows: &[TrainingRow]) -> (usize, usize) {
    let mut g: Vec<&str> = rows.iter().map(|r| r.gpu_id.as_str()).collect();
    let mut m: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    g.sort_unstable();
    g.dedup();
    m.sort_unstable();
    m.dedup();
    (g.len(), m.len())
}

/// Whether the model is a mixture of experts (it reads a fraction of its
/// weights per token). WattGPU fitted dense models only; here the trees
/// also read active parameters and the expert count, so both kinds train
/// and answer together.
pub fn is_moe(model: &ModelSpec) -> bool {
    model.active_params_b < model.params_b || model.experts > 0
}

/// One training row per accepted group of a catalogue GPU and a catalogue
/// model, from the read model's medians (never the runs).
pub fn training_rows(groups: &[crate::leaderboard::LeaderboardRow]) -> Vec<TrainingRow> {
    groups
        .iter()
        .filter(|g| catalog::gpu_by_id(&g.gpu_id).is_some())
        .filter(|g| catalog::model_by_id(&g.model).is_some())
        .filter_map(|g| {
            Some(TrainingRow {
                gpu_id: g.gpu_id.clone(),
                model: g.model.clone(),
                scenario: ScenarioClass::of(g.lambda_qps),
                lambda_qps: g.lambda_qps,
                power_w: g.power_mean_w,
                itl_s: g.itl_s.filter(|v| *v > 0.0)?,
                energy_per_token_j: g.energy_per_token_j,
                energy_per_request_j: g.energy_per_request_j,
            })
        })
        .filter(|r| r.power_w > 0.0 && r.energy_per_token_j > 0.0)
        .collect()
}

/// One booster's knobs (XGBoost's names).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BoosterSettings {
    pub max_depth: usize,
    pub l2: f32,
    pub trees: usize,
    pub learning_rate: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Settings {
    /// Mean power ÷ TDP, squared loss.
    pub power: BoosterSettings,
    /// ln(ITL), squared loss.
    pub itl: BoosterSettings,
    pub seed: u64,
    /// Whether the trees may read the catalogue's loaded-idle power ÷ TDP
    /// (not a WattGPU feature; off, the column is a constant and no tree
    /// splits on it). The bench prints the LOGO table both ways.
    #[serde(default = "on")]
    pub idle_share: bool,
}

fn on() -> bool {
    true
}

impl Default for Settings {
    /// WattGPU's: depth 6, L2 150, 200 trees for power; depth 5, L2 100,
    /// 100 trees for ITL.
    fn default() -> Self {
        Settings {
            power: BoosterSettings {
                max_depth: 6,
                l2: 150.0,
                trees: 200,
                learning_rate: 0.3,
            },
            itl: BoosterSettings {
                max_depth: 5,
                l2: 100.0,
                trees: 100,
                learning_rate: 0.3,
            },
            seed: 0,
            idle_share: true,
        }
    }
}

/// The two fitted boosters.
pub struct Fit {
    power: GradientBooster,
    itl: GradientBooster,
    idle_share: bool,
}

/// Why no fit or no estimate could be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EstimatorError {
    #[error("the catalogue has no GPU '{0}'")]
    UnknownGpu(String),
    #[error("the catalogue has no model '{0}'")]
    UnknownModel(String),
    #[error("no training rows")]
    NoRows,
    #[error("fitting failed: {0}")]
    Fit(String),
}

/// One row's features and targets, resolved against the catalogue.
fn resolved(row: &TrainingRow) -> Result<(&'static GpuSpec, &'static ModelSpec), EstimatorError> {
    let gpu = catalog::gpu_by_id(&row.gpu_id)
        .ok_or_else(|| EstimatorError::UnknownGpu(row.gpu_id.clone()))?;
    let model = catalog::model_by_id(&row.model)
        .ok_or_else(|| EstimatorError::UnknownModel(row.model.clone()))?;
    Ok((gpu, model))
}

/// Column-major, as forust reads a matrix.
fn column_major(rows: &[Vec<f64>]) -> Vec<f64> {
    let cols = rows.first().map_or(0, Vec::len);
    (0..cols)
        .flat_map(|j| rows.iter().map(move |r| r[j]))
        .collect()
}

fn booster(s: &BoosterSettings, seed: u64) -> GradientBooster {
    // One thread and no tiled histograms: the same rows give the same
    // trees on any machine.
    GradientBooster::default()
        .set_objective_type(ObjectiveType::SquaredLoss)
        .set_max_depth(s.max_depth)
        .set_l2(s.l2)
        .set_iterations(s.trees)
        .set_learning_rate(s.learning_rate)
        .set_parallel(false)
        .set_tiled_histograms(false)
        .set_seed(seed)
}

fn trained(
    features: &[Vec<f64>],
    target: &[f64],
    s: &BoosterSettings,
    seed: u64,
) -> Result<GradientBooster, EstimatorError> {
    let data = column_major(features);
    let matrix = Matrix::new(&data, features.len(), features[0].len());
    let mut b = booster(s, seed);
    b.fit_unweighted(&matrix, target, None)
        .map_err(|e| EstimatorError::Fit(e.to_string()))?;
    Ok(b)
}

/// Fits both boosters on `rows` (rows of GPUs or models the catalogue
/// does not know are an error: the caller keeps only catalogue rows).
pub fn fit(rows: &[TrainingRow], settings: &Settings) -> Result<Fit, EstimatorError> {
    if rows.is_empty() {
        return Err(EstimatorError::NoRows);
    }
    let mut pf = Vec::with_capacity(rows.len());
    let mut itf = Vec::with_capacity(rows.len());
    let mut share = Vec::with_capacity(rows.len());
    let mut log_itl = Vec::with_capacity(rows.len());
    for r in rows {
        let (gpu, model) = resolved(r)?;
        pf.push(power_features(gpu, model, r.scenario, settings.idle_share));
        itf.push(itl_features(gpu, model, r.scenario, settings.idle_share));
        share.push(r.power_w / gpu.tdp_w);
        log_itl.push(r.itl_s.ln());
    }
    Ok(Fit {
        power: trained(&pf, &share, &settings.power, settings.seed)?,
        itl: trained(&itf, &log_itl, &settings.itl, settings.seed)?,
        idle_share: settings.idle_share,
    })
}

/// What the estimator says of one GPU × model × scenario.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    pub power_w: f64,
    pub itl_s: f64,
    /// Batch: P̂ × ITL̂. Server: None (it needs the tokens per request).
    pub energy_per_token_j: Option<f64>,
    /// Server: P̂ ÷ λ. Batch: None.
    pub energy_per_request_j: Option<f64>,
}

impl Prediction {
    /// The energy validation scores: batch J/token, server J/request.
    pub fn energy(&self) -> Option<f64> {
        self.energy_per_token_j.or(self.energy_per_request_j)
    }
}

impl Fit {
    pub fn predict(&self, gpu: &GpuSpec, model: &ModelSpec, lambda_qps: Option<f64>) -> Prediction {
        let scenario = ScenarioClass::of(lambda_qps);
        let one = |f: Vec<f64>, b: &GradientBooster| {
            let cols = f.len();
            b.predict(&Matrix::new(&f, 1, cols), false)[0]
        };
        let power_w = one(
            power_features(gpu, model, scenario, self.idle_share),
            &self.power,
        ) * gpu.tdp_w;
        let itl_s = one(
            itl_features(gpu, model, scenario, self.idle_share),
            &self.itl,
        )
        .exp();
        match lambda_qps {
            None => Prediction {
                power_w,
                itl_s,
                energy_per_token_j: Some(power_w * itl_s),
                energy_per_request_j: None,
            },
            Some(l) => Prediction {
                power_w,
                itl_s,
                energy_per_token_j: None,
                energy_per_request_j: Some(power_w / l),
            },
        }
    }

    /// Both boosters as forust's JSON, to store beside the data they were
    /// fitted on.
    pub fn to_json(&self) -> Result<(String, String), EstimatorError> {
        let dump = |b: &GradientBooster| {
            b.json_dump()
                .map_err(|e| EstimatorError::Fit(e.to_string()))
        };
        Ok((dump(&self.power)?, dump(&self.itl)?))
    }

    /// Both boosters from their JSON, read with the feature set they
    /// were fitted with (`idle_share` of their settings).
    pub fn from_json(power: &str, itl: &str, idle_share: bool) -> Result<Fit, EstimatorError> {
        let load =
            |s: &str| GradientBooster::from_json(s).map_err(|e| EstimatorError::Fit(e.to_string()));
        Ok(Fit {
            power: load(power)?,
            itl: load(itl)?,
            idle_share,
        })
    }
}

#[cfg(test)]
mod tests;

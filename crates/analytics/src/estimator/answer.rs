//! Answering one question (a GPU × model × scenario) from a fit: the point
//! estimates, split-conformal intervals from the validation split that
//! matches what is unmeasured, the three nearest measured groups, the
//! measured group itself when there is one, or a refusal that names the
//! input, its value and what was expected. An estimate is never a
//! measurement: callers show it apart and never rank it among them.

use serde::Serialize;

use super::conformal;
use super::features::ScenarioClass;
use super::index::distance_features;
use super::trained::Trained;
use super::validation::{Line, Split};
use super::{is_moe, TrainingRow};
use wattcounts_rules::catalog::{GpuSpec, ModelSpec};

/// What the service is configured to answer with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// The intervals' level (0.8 by default).
    pub level: f64,
    /// How far past the measured range a feature may lie: the range
    /// [min ÷ f, max × f] (2 by default).
    pub domain_factor: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            level: 0.8,
            domain_factor: 2.0,
        }
    }
}

/// Why a question gets no estimate. Each names the input and the figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Refusal {
    /// The weights and a minimal KV cache do not fit.
    DoesNotFit { message: String },
    /// A feature outside the measured range widened by the domain factor.
    OutsideDomain {
        feature: String,
        value: f64,
        lo: f64,
        hi: f64,
        message: String,
    },
    /// A server rate outside the measured rates widened likewise, or no
    /// server rate was measured.
    RateOutsideDomain { value: f64, message: String },
}

impl Refusal {
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::DoesNotFit { .. } => "does_not_fit",
            Refusal::OutsideDomain { .. } => "outside_domain",
            Refusal::RateOutsideDomain { .. } => "rate_outside_domain",
        }
    }
    pub fn message(&self) -> &str {
        match self {
            Refusal::DoesNotFit { message }
            | Refusal::OutsideDomain { message, .. }
            | Refusal::RateOutsideDomain { message, .. } => message,
        }
    }
}

/// A point and its interval (None when the residuals are too few for
/// the level).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Band {
    pub point: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Band {
    fn of(point: f64, q: Option<f64>) -> Band {
        let (lo, hi) = match q {
            Some(q) => {
                let (lo, hi) = conformal::interval(point, q);
                (Some(lo), Some(hi))
            }
            None => (None, None),
        };
        Band { point, lo, hi }
    }
    fn scaled(self, by: f64) -> Band {
        Band {
            point: self.point * by,
            lo: self.lo.map(|v| v * by),
            hi: self.hi.map(|v| v * by),
        }
    }
}

/// Which out-of-fold residuals an interval comes from.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct IntervalSource {
    /// `grouped_cv` (a measured GPU and model), `logo` (an unmeasured
    /// GPU), `lolo` (an unmeasured model); both unmeasured: the wider of
    /// `logo` and `lolo` per figure, named `logo+lolo`.
    pub split: String,
    pub scenario: ScenarioClass,
    pub residuals: usize,
    /// The share of held-out rows validation found inside their interval
    /// at the estimator's level (0.8), for this split and class.
    pub coverage_achieved: Option<f64>,
}

/// A measured group near the question (standardised catalogue features).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Neighbour {
    pub gpu_id: String,
    pub model: String,
    pub lambda_qps: Option<f64>,
    pub power_w: f64,
    pub itl_s: f64,
    pub energy_per_token_j: f64,
    pub energy_per_request_j: Option<f64>,
    /// Euclidean distance over standardised features.
    pub distance: f64,
}

/// The estimate of one question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub scenario: ScenarioClass,
    pub power_w: Band,
    pub itl_s: Band,
    /// Batch: P̂ × ITL̂. Server: J/request ÷ the model's measured tokens
    /// per request (None when the model has no server measurement).
    pub energy_per_token_j: Option<Band>,
    pub energy_per_token_note: Option<String>,
    /// Server: P̂ ÷ λ over the idle-inclusive window. Batch: None.
    pub energy_per_request_j: Option<Band>,
    pub tokens_per_request: Option<f64>,
    pub level: f64,
    pub interval_from: IntervalSource,
    pub gpu_measured: bool,
    pub model_measured: bool,
    /// The training row of this very group, when it was measured (the
    /// caller shows the group itself beside the estimate).
    #[serde(skip)]
    pub measured: Option<TrainingRow>,
    pub neighbours: Vec<Neighbour>,
    /// The estimator's validation line of the split that applies.
    pub validation: Option<Line>,
    /// What the reader should weigh beside the interval (a mixture of
    /// experts estimated from dense models alone).
    pub caveat: Option<String>,
}

fn outside(feature: &str, unit: &str, value: f64, (lo, hi): (f64, f64), f: f64) -> Option<Refusal> {
    let (lo, hi) = (lo / f, hi * f);
    (value < lo || value > hi).then(|| Refusal::OutsideDomain {
        feature: feature.into(),
        value,
        lo,
        hi,
        message: format!(
            "{feature} = {value} {unit} lies outside the measured range widened by a factor of {f}: {lo:.4} to {hi:.4} {unit}; an estimate there would extrapolate the trees"
        ),
    })
}

impl Trained {
    /// The estimate for one question, or why there is none. The rate is
    /// assumed positive and finite (the caller parses it).
    pub fn answer(
        &self,
        gpu: &GpuSpec,
        model: &ModelSpec,
        lambda_qps: Option<f64>,
        rules: &Rules,
    ) -> Result<Answer, Refusal> {
        self.refusal(gpu, model, lambda_qps, rules)
            .map_or(Ok(()), Err)?;
        let ix = &self.index;
        let scenario = ScenarioClass::of(lambda_qps);
        let gpu_measured = ix.gpus.binary_search(&gpu.id).is_ok();
        let model_measured = ix.models.binary_search(&model.id).is_ok();
        let splits: &[Split] = match (gpu_measured, model_measured) {
            (true, true) => &[Split::GroupedCv],
            (false, true) => &[Split::Logo],
            (true, false) => &[Split::Lolo],
            (false, false) => &[Split::Logo, Split::Lolo],
        };
        let q = |pick: fn(&super::validation::Residuals) -> &Vec<f64>| {
            splits
                .iter()
                .map(|s| {
                    self.report
                        .residuals_of(*s, scenario)
                        .and_then(|r| conformal::quantile(pick(r), rules.level))
                })
                .try_fold(0.0f64, |acc, q| q.map(|q| acc.max(q)))
        };
        let p = self.fit.predict(gpu, model, lambda_qps);
        let power_w = Band::of(p.power_w, q(|r| &r.power));
        let itl_s = Band::of(p.itl_s, q(|r| &r.itl));
        let energy_q = q(|r| &r.energy);
        let tokens = ix.tokens_per_request.get(&model.id).copied();
        let (per_token, per_request, note) = match lambda_qps {
            None => (Some(Band::of(p.power_w * p.itl_s, energy_q)), None, None),
            Some(l) => {
                let request = Band::of(p.power_w / l, energy_q);
                match tokens {
                    Some(t) => (Some(request.scaled(1.0 / t)), Some(request), None),
                    None => (
                        None,
                        Some(request),
                        Some(format!(
                            "{} has no server measurement to take its output tokens per request from; J/request stands alone",
                            model.id
                        )),
                    ),
                }
            }
        };
        let primary = splits[0];
        let residuals = self
            .report
            .residuals_of(primary, scenario)
            .map_or(0, |r| r.energy.len());
        let validation = self.report.line(primary, scenario).cloned();
        let measured = self
            .rows
            .iter()
            .find(|r| {
                r.gpu_id == gpu.id
                    && r.model == model.id
                    && match (r.lambda_qps, lambda_qps) {
                        (None, None) => true,
                        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
                        _ => false,
                    }
            })
            .cloned();
        Ok(Answer {
            scenario,
            power_w,
            itl_s,
            energy_per_token_j: per_token,
            energy_per_token_note: note,
            energy_per_request_j: per_request,
            tokens_per_request: lambda_qps.and(tokens),
            level: rules.level,
            interval_from: IntervalSource {
                split: splits
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("+"),
                scenario,
                residuals,
                coverage_achieved: validation.as_ref().and_then(|l| l.scores.coverage),
            },
            gpu_measured,
            model_measured,
            measured,
            neighbours: self.neighbours(gpu, model, scenario),
            validation,
            caveat: (is_moe(model) && ix.moe_models == 0).then(|| {
                format!(
                    "{} is a mixture of experts ({} B parameters, {} B active per token, {} experts) and no mixture of experts was measured: the trees read it by its active and total parameters and expert count from dense models alone, and its interval comes from dense models' errors",
                    model.id, model.params_b, model.active_params_b, model.experts
                )
            }),
        })
    }

    /// Why this question gets no estimate, if it gets none.
    pub fn refusal(
        &self,
        gpu: &GpuSpec,
        model: &ModelSpec,
        lambda_qps: Option<f64>,
        rules: &Rules,
    ) -> Option<Refusal> {
        let ix = &self.index;
        let f = rules.domain_factor;
        if let Some(message) = wattcounts_rules::memory_fit::why_not(gpu, model) {
            return Some(Refusal::DoesNotFit { message });
        }
        if let Some(r) = outside("params_b", "B", model.params_b, ix.params_b, f)
            .or_else(|| {
                outside(
                    "active_params_b",
                    "B",
                    model.active_params_b,
                    ix.active_params_b,
                    f,
                )
            })
            .or_else(|| {
                outside(
                    "memory_bandwidth_gb_s",
                    "GB/s",
                    gpu.memory_bandwidth_gb_s,
                    ix.bandwidth,
                    f,
                )
            })
            .or_else(|| outside("tdp_w", "W", gpu.tdp_w, ix.tdp, f))
            .or_else(|| outside("memory_gb", "GB", gpu.memory_gb, ix.memory, f))
        {
            return Some(r);
        }
        let l = lambda_qps?;
        match ix.rates {
            None => Some(Refusal::RateOutsideDomain {
                value: l,
                message: format!(
                    "rate = {l} req/s: no server scenario was measured in the data the estimator was fitted on"
                ),
            }),
            Some((lo, hi)) => {
                let (lo, hi) = (lo / f, hi * f);
                (l < lo || l > hi).then(|| Refusal::RateOutsideDomain {
                    value: l,
                    message: format!(
                        "rate = {l} req/s lies outside the measured rates widened by a factor of {f}: {lo:.4} to {hi:.4} req/s"
                    ),
                })
            }
        }
    }

    /// The three measured groups of the scenario class nearest the pair
    /// (the pair's own group left out: it is shown as `measured`).
    fn neighbours(
        &self,
        gpu: &GpuSpec,
        model: &ModelSpec,
        scenario: ScenarioClass,
    ) -> Vec<Neighbour> {
        let ix = &self.index;
        let me: Vec<f64> = distance_features(gpu, model)
            .iter()
            .enumerate()
            .map(|(j, v)| (v - ix.mean[j]) / ix.sd[j])
            .collect();
        let mut near: Vec<(f64, &TrainingRow)> = self
            .rows
            .iter()
            .zip(&ix.standardised)
            .filter(|(r, _)| r.scenario == scenario && !(r.gpu_id == gpu.id && r.model == model.id))
            .map(|(r, z)| {
                let d = z
                    .iter()
                    .zip(&me)
                    .map(|(a, b)| (a - b).powi(2))
                    .sum::<f64>()
                    .sqrt();
                (d, r)
            })
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near.into_iter()
            .take(3)
            .map(|(d, r)| Neighbour {
                gpu_id: r.gpu_id.clone(),
                model: r.model.clone(),
                lambda_qps: r.lambda_qps,
                power_w: r.power_w,
                itl_s: r.itl_s,
                energy_per_token_j: r.energy_per_token_j,
                energy_per_request_j: r.energy_per_request_j,
                distance: d,
            })
            .collect()
    }
}

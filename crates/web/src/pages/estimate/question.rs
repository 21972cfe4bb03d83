//! The question an estimate answers, parsed: a catalogue model, a GPU by
//! id or NVML name, a scenario and rate, a level; 400 for a missing or
//! malformed parameter, 422 for one the catalogue does not know.

use super::*;
use crate::extract::query::given;
use wattcounts_rules::catalog::{self, GpuSpec, ModelSpec};

/// A parsed question.
pub(crate) struct Question {
    pub gpu: &'static GpuSpec,
    pub model: &'static ModelSpec,
    pub lambda_qps: Option<f64>,
    pub level: Option<f64>,
}

fn missing(name: &str, expected: &str) -> ApiError {
    ApiError::bad_request(
        "missing_parameter",
        format!("{name} is required: {expected} (rules: {RULES_LINK})"),
    )
}

/// A GPU by the site's id or its NVML name.
pub(crate) fn gpu_named(v: &str) -> Option<&'static GpuSpec> {
    catalog::gpu_by_id(v)
        .or_else(|| catalog::gpu_by_id(&catalog::gpu_id(v)))
        .or_else(|| {
            catalog::gpus()
                .iter()
                .find(|g| g.nvml_name.eq_ignore_ascii_case(v.trim()))
        })
}

fn parse_rate(v: &str) -> Result<f64, ApiError> {
    match v.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(refused(
            "bad_rate",
            format!("rate = '{v}' is not a positive finite number of requests per second"),
        )),
    }
}

pub(crate) fn parse_question(p: &EstimateParams) -> Result<Question, ApiError> {
    let model_id = given(&p.model).ok_or_else(|| {
        missing(
            "model",
            "a catalogue model's Hugging Face id, e.g. meta-llama/Llama-3.1-8B-Instruct (the list: /api/v1/models)",
        )
    })?;
    let gpu_id = given(&p.gpu).ok_or_else(|| {
        missing(
            "gpu",
            "a catalogue GPU's id, e.g. a100-sxm4-40gb, or its NVML name (the list: /api/v1/gpus)",
        )
    })?;
    let scenario = given(&p.scenario)
        .ok_or_else(|| missing("scenario", "batch, server (with rate) or server@RATE"))?;
    let model = catalog::model_by_id(model_id.trim()).ok_or_else(|| {
        refused(
            "unknown_model",
            format!(
                "model = '{model_id}' is not in the catalogue; expected one of its {} Hugging Face ids (/api/v1/models)",
                catalog::models().len()
            ),
        )
    })?;
    let gpu = gpu_named(gpu_id).ok_or_else(|| {
        refused(
            "unknown_gpu",
            format!(
                "gpu = '{gpu_id}' is not in the catalogue; expected one of {} (or their NVML names)",
                catalog::gpus()
                    .iter()
                    .map(|g| g.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let rate = given(&p.rate);
    let lambda_qps = match scenario.trim() {
        "batch" => {
            if let Some(r) = rate {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    format!("rate = '{r}' applies to the server scenario only; scenario is batch"),
                ));
            }
            None
        }
        "server" => Some(parse_rate(rate.ok_or_else(|| {
            missing(
                "rate",
                "the server scenario's arrival rate in requests per second, e.g. 0.33",
            )
        })?)?),
        s => match s.strip_prefix("server@") {
            Some(r) => {
                let from_scenario = parse_rate(r)?;
                if let Some(other) = rate {
                    if parse_rate(other)? != from_scenario {
                        return Err(ApiError::bad_request(
                            "bad_parameter",
                            format!("scenario = '{s}' and rate = '{other}' disagree; give the rate once"),
                        ));
                    }
                }
                Some(from_scenario)
            }
            None => {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    format!("scenario = '{s}'; expected batch, server (with rate) or server@RATE"),
                ))
            }
        },
    };
    let level = match given(&p.level) {
        None => None,
        Some(v) => match v.trim().parse::<f64>() {
            Ok(l) if l > 0.0 && l < 1.0 => Some(l),
            _ => {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    format!("level = '{v}'; expected a share between 0 and 1, e.g. 0.8"),
                ))
            }
        },
    };
    Ok(Question {
        gpu,
        model,
        lambda_qps,
        level,
    })
}

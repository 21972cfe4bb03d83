//! The estimator's validation as findings (issue #28, item 4): per
//! scenario class, how far its energy estimates are off for a GPU nobody
//! measured (leave one GPU out), against the better power baseline, with
//! grouped CV and leave-one-LLM-out beside and WattGPU's figures as the
//! paper's. The scores come from the service's fit, never from the
//! measured rankings.

use super::Finding;
use crate::estimator::features::ScenarioClass;
use crate::estimator::validation::{Line, Split};
use wattcounts_rules::domain::ScenarioKey;

pub const VALIDATION: &str = "out_of_fold_leave_one_gpu_out";

/// WattGPU's figures for the same split and scenario.
fn wattgpu(class: ScenarioClass) -> &'static str {
    match class {
        ScenarioClass::Batch => {
            "WattGPU, leaving one GPU out: power MdAPE 3.4 %, ITL 24.9 % offline (42 dense LLMs × 8 GPUs)"
        }
        _ => "WattGPU, leaving one GPU out: power MdAPE 13.5 %, ITL 8.5 % in server (42 dense LLMs × 8 GPUs)",
    }
}

fn energy(lines: &[Line], split: Split, class: ScenarioClass, method: &str) -> Option<f64> {
    lines
        .iter()
        .find(|l| l.split == split && l.scenario == class && l.method == method)
        .and_then(|l| l.scores.energy_mdape_pct)
}

/// One finding per scenario class the lines score; `gpus` and `models`
/// count what the fit rests on.
pub fn findings(lines: &[Line], gpus: usize, models: usize) -> Vec<Finding> {
    [
        ScenarioClass::Batch,
        ScenarioClass::ServerLow,
        ScenarioClass::ServerHigh,
    ]
    .into_iter()
    .filter_map(|class| {
        let logo = lines.iter().find(|l| {
            l.split == Split::Logo && l.scenario == class && l.method == "estimator"
        })?;
        let batch = ScenarioKey::parse("batch").expect("batch parses");
        let mut f = Finding::new(
            format!("estimator.validation.{}", class.as_str()),
            &batch,
            VALIDATION,
            "estimates-validation",
        );
        f.scenario = class.as_str().to_string();
        f.metric = match class {
            ScenarioClass::Batch => "energy_per_token_j",
            _ => "energy_per_request_j",
        }
        .into();
        f.groups = logo.scores.rows;
        f.gpus = gpus;
        f.models = models;
        f.paper = Some(wattgpu(class).to_string());
        let baseline = ["tdp", "load_scaled_tdp"]
            .iter()
            .filter_map(|m| energy(lines, Split::Logo, class, m))
            .reduce(f64::min);
        let Some(mdape) = logo.scores.energy_mdape_pct else {
            return Some(f.missing(format!(
                "Too few held-out rows in {} to score the estimator there.",
                class.as_str()
            )));
        };
        f.energy_mdape_pct = Some(mdape);
        f.baseline_mdape_pct = baseline;
        f.coverage = logo.scores.coverage;
        let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1} %"));
        f.statement = format!(
            "For a GPU nobody measured (each of {gpus} left out in turn), the estimator's {} is off by a median {mdape:.1} % over {} held-out groups, against {} for the better TDP baseline; {} of them inside their 80 % intervals. Grouped CV {}, leaving each LLM out {}.",
            match class {
                ScenarioClass::Batch => "J/token in batch",
                ScenarioClass::ServerLow => "J/request in server below 0.2 req/s",
                ScenarioClass::ServerHigh => "J/request in server at 0.2 req/s and above",
            },
            logo.scores.rows,
            pct(baseline),
            logo.scores
                .coverage
                .map_or("–".to_string(), |c| format!("{:.0} %", c * 100.0)),
            pct(energy(lines, Split::GroupedCv, class, "estimator")),
            pct(energy(lines, Split::Lolo, class, "estimator")),
        );
        Some(f)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimator::validation::Scores;

    fn line(split: Split, class: ScenarioClass, method: &str, mdape: f64) -> Line {
        Line {
            split,
            scenario: class,
            method: method.into(),
            folds: 8,
            scores: Scores {
                rows: 40,
                power_mdape_pct: None,
                itl_mdape_pct: None,
                energy_mdape_pct: Some(mdape),
                energy_pearson_r: None,
                gpu_ranking_tau: None,
                model_ranking_tau: None,
                top1_share: None,
                coverage: (method == "estimator").then_some(0.8),
            },
        }
    }

    #[test]
    fn one_finding_per_class_with_the_better_baseline_beside() {
        let lines = vec![
            line(Split::Logo, ScenarioClass::Batch, "estimator", 12.0),
            line(Split::Logo, ScenarioClass::Batch, "tdp", 80.0),
            line(Split::Logo, ScenarioClass::Batch, "load_scaled_tdp", 30.0),
            line(Split::GroupedCv, ScenarioClass::Batch, "estimator", 5.0),
        ];
        let f = findings(&lines, 8, 6);
        assert_eq!(f.len(), 1);
        let f = &f[0];
        assert_eq!(f.id, "estimator.validation.batch");
        assert_eq!(f.basis, VALIDATION);
        assert_eq!(f.energy_mdape_pct, Some(12.0));
        assert_eq!(f.baseline_mdape_pct, Some(30.0));
        assert_eq!((f.groups, f.gpus, f.models), (40, 8, 6));
        assert!(f.statement.contains("median 12.0 %"), "{}", f.statement);
        assert!(f.statement.contains("30.0 % for the better TDP baseline"));
        assert!(f
            .statement
            .contains("Grouped CV 5.0 %, leaving each LLM out –"));
        assert!(f.paper.as_deref().unwrap().contains("3.4 %"));
        assert_eq!(f.method, "/methodology#estimates-validation");
    }
}

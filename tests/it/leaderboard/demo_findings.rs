//! The demo's physical model reproduces the paper's qualitative findings,
//! measured the way the service measures submissions: generated harness CSVs,
//! parsed and derived by the real code.

use std::collections::HashMap;

use wattcounts::bundle::harness::{self, Scenario};
use wattcounts::catalog;
use wattcounts::derived;
use wattcounts::synth::{self, SynthOptions};

/// Median energy per token per (gpu id, model, scenario, rate).
fn medians(
    gpus: &[&str],
    models: &[&str],
) -> HashMap<(String, String, Scenario, Option<u64>), f64> {
    let opts = SynthOptions {
        iterations: 3,
        batch_prompts: 300,
        ..SynthOptions::default()
    };
    let models: Vec<_> = models
        .iter()
        .map(|m| catalog::model_by_id(m).unwrap())
        .collect();
    let mut out = HashMap::new();
    for g in gpus {
        let gpu = catalog::gpu_by_id(g).unwrap();
        let run = synth::generate_run(gpu, &models, &opts);
        for (path, data) in &run.files {
            let name = path.rsplit('/').next().unwrap();
            let Some(harness::FileKind::Results(s)) = harness::classify(name) else {
                continue;
            };
            let rows = harness::parse_results(path, data, s).unwrap();
            let its: Vec<_> = rows.iter().map(derived::derive).collect();
            for c in derived::aggregate(&its) {
                out.insert(
                    (
                        gpu.id.clone(),
                        c.model.clone(),
                        c.scenario,
                        c.lambda_qps.map(f64::to_bits),
                    ),
                    c.energy_per_token_j.median,
                );
            }
        }
    }
    out
}

const GPUS: &[&str] = &[
    "h100-pcie",
    "h100-nvl",
    "h200",
    "a100-sxm4-40gb",
    "l40s",
    "l4",
    "a30",
    "t4",
    "v100-sxm2-32gb",
    "rtx-3090",
    "rtx-4090",
];
const MODELS: &[&str] = &[
    "Qwen/Qwen2.5-0.5B-Instruct",
    "Qwen/Qwen2.5-3B-Instruct",
    "meta-llama/Llama-3.1-8B-Instruct",
    "microsoft/phi-4",
    "mistralai/Mistral-Small-24B-Instruct-2501",
];

fn best(
    m: &HashMap<(String, String, Scenario, Option<u64>), f64>,
    model: &str,
    s: Scenario,
    rate: Option<f64>,
) -> Option<(String, f64, f64)> {
    let mut v: Vec<(String, f64)> = m
        .iter()
        .filter(|(k, _)| k.1 == model && k.2 == s && k.3 == rate.map(f64::to_bits))
        .map(|(k, e)| (k.0.clone(), *e))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    let worst = v.last()?.1;
    v.first().map(|(g, e)| (g.clone(), *e, worst))
}

#[test]
fn paper_findings_hold_on_the_demo_model() {
    let m = medians(GPUS, MODELS);
    let mut keys: Vec<_> = m.iter().collect();
    keys.sort_by(|a, b| {
        (&a.0 .1, a.0 .2.as_str(), a.0 .3, &a.0 .0).cmp(&(
            &b.0 .1,
            b.0 .2.as_str(),
            b.0 .3,
            &b.0 .0,
        ))
    });
    for (k, e) in keys {
        eprintln!(
            "{:<45} {:<7} {:>6} {:<16} {e:.4}",
            k.1,
            k.2.as_str(),
            k.3.map(f64::from_bits)
                .map_or("-".into(), |r| r.to_string()),
            k.0
        );
    }
    let h100_class = ["h100-pcie", "h100-nvl", "h200"];

    // Batch: the H100 class is the most efficient for most models.
    let batch_wins = MODELS
        .iter()
        .filter(|model| {
            h100_class.contains(&best(&m, model, Scenario::Batch, None).unwrap().0.as_str())
        })
        .count();
    assert!(
        batch_wins * 2 > MODELS.len(),
        "H100 class won batch for only {batch_wins} of {} models",
        MODELS.len()
    );

    // Server at a low rate: L4 or A30 wins for the models that fit them,
    // with large savings against the worst GPU.
    let mut max_saving: f64 = 0.0;
    for model in MODELS {
        let (gpu, e_best, e_worst) = best(&m, model, Scenario::Server, Some(0.017)).unwrap();
        let fits_small = ["l4", "a30"].iter().any(|g| {
            m.contains_key(&(
                g.to_string(),
                model.to_string(),
                Scenario::Server,
                Some(0.017f64.to_bits()),
            ))
        });
        if fits_small {
            assert!(
                gpu == "l4" || gpu == "a30",
                "{model}: {gpu} won the low-rate server scenario"
            );
        }
        max_saving = max_saving.max(1.0 - e_best / e_worst);
    }
    assert!(
        (0.6..0.8).contains(&max_saving),
        "best-vs-worst saving in server {max_saving:.2}"
    );

    // Energy per token grows sub-linearly with model size (batch, on H100 PCIe).
    let pts: Vec<(f64, f64)> = MODELS
        .iter()
        .filter_map(|model| {
            let e = m.get(&(
                "h100-pcie".to_string(),
                model.to_string(),
                Scenario::Batch,
                None,
            ))?;
            Some((catalog::model_by_id(model).unwrap().params_b.ln(), e.ln()))
        })
        .collect();
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
        / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
    assert!(
        slope > 0.0 && slope < 1.0,
        "energy/token ~ params^{slope:.2}"
    );
}

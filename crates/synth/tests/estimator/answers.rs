//! Answers from a stored-and-loaded fit: the version is a function of the
//! rows and settings, the interval's split follows what is unmeasured,
//! and every refusal names its input and figure.

use crate::prelude::*;
use wattcounts_analytics::estimator::answer::{Refusal, Rules};
use wattcounts_analytics::estimator::features::{self, ScenarioClass};
use wattcounts_analytics::estimator::trained::{Provenance, StoredFit, Trained};
use wattcounts_synth::other_physics::{other_physics, GPUS, INTERIOR};

fn provenance() -> Provenance {
    Provenance {
        data_stamp: "1.0".into(),
        origin: "real".into(),
        protocol: "reference".into(),
        fitted_at: "2026-12-04T00:00:00Z".into(),
        fit_seconds: 0.0,
        validation_seconds: 0.0,
    }
}

/// Fewer trees: the tests check plumbing, not accuracy.
fn quick() -> Settings {
    let mut s = Settings::default();
    s.power.trees = 40;
    s.itl.trees = 30;
    s
}

fn trained_without_interior() -> Trained {
    let gpus: Vec<&str> = GPUS.iter().copied().filter(|g| *g != INTERIOR).collect();
    let rows = other_physics(&gpus, 3);
    Trained::train(rows, quick(), provenance(), 2, || 0.0).unwrap()
}

#[test]
fn the_same_rows_give_one_version_and_a_stored_fit_answers_alike() {
    let gpus: Vec<&str> = GPUS.iter().copied().filter(|g| *g != INTERIOR).collect();
    let mut rows = other_physics(&gpus, 3);
    let a = Trained::train(rows.clone(), quick(), provenance(), 1, || 0.0).unwrap();
    // Another order and another thread count: the same fit.
    rows.reverse();
    let b = Trained::train(rows.clone(), quick(), provenance(), 3, || 0.0).unwrap();
    assert_eq!(a.version, b.version);
    assert_eq!(a.report, b.report);
    let json = serde_json::to_string(&a.to_stored().unwrap()).unwrap();
    let loaded = Trained::from_stored(serde_json::from_str::<StoredFit>(&json).unwrap()).unwrap();
    let gpu = catalog::gpu_by_id(INTERIOR).unwrap();
    let model = catalog::model_by_id("Qwen/Qwen2.5-7B-Instruct").unwrap();
    let rules = Rules::default();
    assert_eq!(
        a.answer(gpu, model, Some(0.5), &rules),
        loaded.answer(gpu, model, Some(0.5), &rules)
    );
    // One row changed: another version.
    rows[0].power_w *= 1.01;
    let c = Trained::train(rows, quick(), provenance(), 1, || 0.0).unwrap();
    assert_ne!(a.version, c.version);
    // Other settings: another version.
    let mut s = quick();
    s.seed = 9;
    let d = Trained::train(other_physics(&gpus, 3), s, provenance(), 1, || 0.0).unwrap();
    assert_ne!(a.version, d.version);
    // A stored fit whose rows were edited does not load.
    let mut tampered: StoredFit = serde_json::from_str(&json).unwrap();
    tampered.rows[0].power_w += 1.0;
    assert!(Trained::from_stored(tampered).is_err());
}

#[test]
fn the_interval_comes_from_the_split_that_matches_what_is_unmeasured() {
    let t = trained_without_interior();
    let rules = Rules::default();
    let unmeasured_gpu = catalog::gpu_by_id(INTERIOR).unwrap();
    let measured_gpu = catalog::gpu_by_id("l40s").unwrap();
    let measured_model = catalog::model_by_id("Qwen/Qwen2.5-7B-Instruct").unwrap();
    // A dense catalogue model the rows never saw, inside the range.
    let unmeasured_model = catalog::models()
        .iter()
        .find(|m| {
            !is_moe(m)
                && !other_physics::MODELS.contains(&m.id.as_str())
                && m.params_b > 1.0
                && m.params_b < 20.0
        })
        .expect("an unmeasured dense model");

    let a = t
        .answer(unmeasured_gpu, measured_model, None, &rules)
        .unwrap();
    assert_eq!(a.interval_from.split, "logo");
    assert!(!a.gpu_measured && a.model_measured);
    let e = a.energy_per_token_j.unwrap();
    assert!(e.lo.unwrap() < e.point && e.point < e.hi.unwrap());
    assert!(a.energy_per_request_j.is_none());
    assert_eq!(a.neighbours.len(), 3);
    assert!(a.neighbours.iter().all(|n| n.lambda_qps.is_none()));
    assert!(a.measured.is_none());

    let b = t
        .answer(measured_gpu, unmeasured_model, Some(0.5), &rules)
        .unwrap();
    assert_eq!(b.interval_from.split, "lolo");
    // The model was never measured in server: no tokens per request, so
    // J/token is absent and says why.
    assert!(b.energy_per_token_j.is_none());
    assert!(b
        .energy_per_token_note
        .unwrap()
        .contains("no server measurement"));
    let r = b.energy_per_request_j.unwrap();
    assert!((r.point - b.power_w.point / 0.5).abs() < 1e-9 * r.point);

    let c = t
        .answer(unmeasured_gpu, unmeasured_model, None, &rules)
        .unwrap();
    assert_eq!(c.interval_from.split, "logo+lolo");
    // The wider of the two: at least as wide as either alone.
    let width = |a: &answer::Answer| {
        let e = a.energy_per_token_j.unwrap();
        e.hi.unwrap() / e.point
    };
    let logo_only = t
        .answer(unmeasured_gpu, measured_model, None, &rules)
        .unwrap();
    assert!(width(&c) >= width(&logo_only) - 1e-12);

    let d = t
        .answer(measured_gpu, measured_model, Some(0.5), &rules)
        .unwrap();
    assert_eq!(d.interval_from.split, "grouped_cv");
    let m = d.measured.clone().expect("a measured pair carries its row");
    assert_eq!(m.gpu_id, "l40s");
    // Server J/token = J/request ÷ the model's measured tokens per request
    // (180 in this physics).
    let t_r = d.tokens_per_request.unwrap();
    assert!((t_r - 180.0).abs() < 1e-6, "{t_r}");
    let per_token = d.energy_per_token_j.unwrap().point;
    assert!((per_token - d.energy_per_request_j.unwrap().point / 180.0).abs() < 1e-9);
    // A higher level, a wider interval.
    let wide = t
        .answer(
            measured_gpu,
            measured_model,
            Some(0.5),
            &Rules {
                level: 0.95,
                ..rules
            },
        )
        .unwrap();
    assert!(wide.power_w.hi.unwrap() >= d.power_w.hi.unwrap());
}

#[test]
fn refusals_name_the_input_and_the_figure() {
    let t = trained_without_interior();
    let rules = Rules::default();
    let l40s = catalog::gpu_by_id("l40s").unwrap();
    let t4 = catalog::gpu_by_id("t4").unwrap();
    let big = catalog::models()
        .iter()
        .find(|m| !is_moe(m) && m.params_b > 25.0)
        .unwrap();
    match t.answer(t4, big, None, &rules) {
        Err(Refusal::DoesNotFit { message }) => {
            // The T4 (Turing) has no BF16: a 16-bit checkpoint runs as FP16.
            assert!(message.contains("GB of FP16 weights"), "{message}");
            assert!(message.contains("80 % of 16 GB"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A mixture of experts is answered (issue #54), and since these rows
    // hold none, the answer says it was read from dense models alone.
    let moe = catalog::model_by_id("openai/gpt-oss-20b").unwrap();
    assert!(is_moe(moe) && moe.experts == 32, "{moe:?}");
    let a = t
        .answer(catalog::gpu_by_id("h200").unwrap(), moe, None, &rules)
        .unwrap();
    let caveat = a.caveat.expect("a caveat for a mixture of experts");
    assert!(
        caveat.contains("32 experts") && caveat.contains("dense models alone"),
        "{caveat}"
    );
    let e = a.energy_per_token_j.unwrap();
    assert!(e.lo.unwrap() < e.point && e.point < e.hi.unwrap(), "{e:?}");
    // A dense model gets no caveat.
    let dense = t.answer(
        l40s,
        catalog::model_by_id("Qwen/Qwen2.5-7B-Instruct").unwrap(),
        None,
        &rules,
    );
    assert_eq!(dense.unwrap().caveat, None);
    // The rows' rates are 0.1 and 0.5: widened by 2, 0.05 to 1.0.
    let small = catalog::model_by_id("Qwen/Qwen2.5-7B-Instruct").unwrap();
    match t.answer(l40s, small, Some(1.5), &rules) {
        Err(Refusal::RateOutsideDomain { value, message }) => {
            assert_eq!(value, 1.5);
            assert!(message.contains("0.0500 to 1.0000 req/s"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(t.answer(l40s, small, Some(1.0), &rules).is_ok());
    // A tighter domain factor refuses a model far from the rows' sizes:
    // the smallest measured is 0.5 B; with factor 1 a 0.36 B one is out.
    let tight = Rules {
        domain_factor: 1.0,
        ..rules
    };
    if let Some(tiny) = catalog::models()
        .iter()
        .find(|m| !is_moe(m) && m.params_b < 0.49)
    {
        match t.answer(l40s, tiny, None, &tight) {
            Err(Refusal::OutsideDomain { feature, lo, .. }) => {
                assert_eq!(feature, "params_b");
                assert!((lo - 0.5).abs() < 0.1, "{lo}");
            }
            other => panic!("{other:?}"),
        }
    }
    let codes = [Refusal::DoesNotFit {
        message: String::new(),
    }
    .code()];
    assert_eq!(codes, ["does_not_fit"]);
}

#[test]
fn figures_follow_the_energy_formulas_and_the_measured_row_is_the_very_group() {
    let t = trained_without_interior();
    let rules = Rules::default();
    let l40s = catalog::gpu_by_id("l40s").unwrap();
    let qwen = catalog::model_by_id("Qwen/Qwen2.5-7B-Instruct").unwrap();
    // Batch: J/token = P̂ × ITL̂, its interval from the energy residuals.
    let b = t.answer(l40s, qwen, None, &rules).unwrap();
    let e = b.energy_per_token_j.unwrap();
    assert!((e.point - b.power_w.point * b.itl_s.point).abs() <= 1e-12 * e.point);
    let m = b.measured.unwrap();
    assert_eq!(
        (m.gpu_id.as_str(), m.model.as_str(), m.lambda_qps),
        ("l40s", qwen.id.as_str(), None)
    );
    // Server: J/token is J/request ÷ 180 tokens, interval and all.
    let s = t.answer(l40s, qwen, Some(0.5), &rules).unwrap();
    let (r, k) = (
        s.energy_per_request_j.unwrap(),
        s.energy_per_token_j.unwrap(),
    );
    for (a, b) in [
        (r.point, k.point),
        (r.lo.unwrap(), k.lo.unwrap()),
        (r.hi.unwrap(), k.hi.unwrap()),
    ] {
        assert!((a / 180.0 - b).abs() <= 1e-9 * b, "{a} / 180 vs {b}");
    }
    assert_eq!(s.measured.unwrap().lambda_qps, Some(0.5));
    // A rate nobody measured finds no measured row, and neither does
    // batch on a GPU that was never measured.
    assert!(t
        .answer(l40s, qwen, Some(0.3), &rules)
        .unwrap()
        .measured
        .is_none());
    let a100 = catalog::gpu_by_id(INTERIOR).unwrap();
    assert!(t
        .answer(a100, qwen, None, &rules)
        .unwrap()
        .measured
        .is_none());
}

#[test]
fn neighbours_are_the_nearest_groups_of_the_class_by_standardised_features() {
    let t = trained_without_interior();
    let gpu = catalog::gpu_by_id(INTERIOR).unwrap();
    let model = catalog::model_by_id("Qwen/Qwen2.5-3B-Instruct").unwrap();
    let a = t.answer(gpu, model, Some(0.5), &Rules::default()).unwrap();
    // An independent z-scoring over the training rows (population sd).
    let feats = |g: &catalog::GpuSpec, m: &catalog::ModelSpec| {
        features::itl_features(g, m, ScenarioClass::Batch, true)[1..].to_vec()
    };
    let raw: Vec<Vec<f64>> = t
        .rows
        .iter()
        .map(|r| {
            feats(
                catalog::gpu_by_id(&r.gpu_id).unwrap(),
                catalog::model_by_id(&r.model).unwrap(),
            )
        })
        .collect();
    let n = raw.len() as f64;
    let cols = raw[0].len();
    let mean: Vec<f64> = (0..cols)
        .map(|j| raw.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let sd: Vec<f64> = (0..cols)
        .map(|j| (raw.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n).sqrt())
        .collect();
    let z = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .enumerate()
            .map(|(j, x)| {
                if sd[j] > 0.0 {
                    (x - mean[j]) / sd[j]
                } else {
                    0.0
                }
            })
            .collect()
    };
    let me = z(&feats(gpu, model));
    let mut expected: Vec<(f64, &TrainingRow)> = t
        .rows
        .iter()
        .zip(&raw)
        .filter(|(r, _)| r.scenario == ScenarioClass::ServerHigh)
        .map(|(r, f)| {
            let d = z(f)
                .iter()
                .zip(&me)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt();
            (d, r)
        })
        .collect();
    expected.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(a.neighbours.len(), 3);
    for (got, (d, r)) in a.neighbours.iter().zip(&expected) {
        assert_eq!(
            (got.gpu_id.as_str(), got.model.as_str()),
            (r.gpu_id.as_str(), r.model.as_str())
        );
        assert!((got.distance - d).abs() < 1e-9, "{} vs {d}", got.distance);
        assert_eq!(got.lambda_qps, Some(0.5));
    }
    // A measured pair's own group is never its neighbour.
    let l40s = catalog::gpu_by_id("l40s").unwrap();
    let own = t.answer(l40s, model, Some(0.5), &Rules::default()).unwrap();
    assert!(own
        .neighbours
        .iter()
        .all(|n| !(n.gpu_id == "l40s" && n.model == model.id)));
    assert!(own
        .neighbours
        .iter()
        .any(|n| n.model == model.id || n.gpu_id == "l40s"));
}

#[test]
fn the_domain_edges_are_inside_and_the_stored_fit_says_what_it_holds() {
    let t = trained_without_interior();
    let l40s = catalog::gpu_by_id("l40s").unwrap();
    let qwen = catalog::model_by_id("Qwen/Qwen2.5-7B-Instruct").unwrap();
    let tight = Rules {
        domain_factor: 1.0,
        ..Rules::default()
    };
    // The measured rates are 0.1 and 0.5: with factor 1 both ends are in.
    assert!(t.answer(l40s, qwen, Some(0.1), &tight).is_ok());
    assert!(t.answer(l40s, qwen, Some(0.5), &tight).is_ok());
    match t.answer(l40s, qwen, Some(0.0999), &tight) {
        Err(Refusal::RateOutsideDomain { message, .. }) => {
            assert!(message.contains("0.1000 to 0.5000 req/s"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Widened by 2, the range is min ÷ 2 to max × 2.
    match t.answer(l40s, qwen, Some(1.2), &Rules::default()) {
        Err(Refusal::RateOutsideDomain { message, .. }) => {
            assert!(message.contains("0.0500 to 1.0000 req/s"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let tiny = catalog::models()
        .iter()
        .filter(|m| !is_moe(m))
        .min_by(|a, b| a.params_b.total_cmp(&b.params_b))
        .unwrap();
    let smallest = catalog::model_by_id(other_physics::MODELS[0])
        .unwrap()
        .params_b;
    if tiny.params_b < smallest / 2.0 {
        match t.answer(l40s, tiny, None, &Rules::default()) {
            Err(Refusal::OutsideDomain { lo, .. }) => assert_eq!(lo, smallest / 2.0),
            other => panic!("{other:?}"),
        }
    }
    // The measured models' smallest and largest sizes are inside too;
    // a refusal carries the widened range exactly.
    let sizes: Vec<f64> = other_physics::MODELS
        .iter()
        .map(|m| catalog::model_by_id(m).unwrap().params_b)
        .collect();
    let (lo, hi) = (
        sizes.iter().copied().fold(f64::INFINITY, f64::min),
        sizes.iter().copied().fold(0.0, f64::max),
    );
    let h200 = catalog::gpu_by_id("h200").unwrap();
    for m in other_physics::MODELS {
        assert!(
            t.answer(h200, catalog::model_by_id(m).unwrap(), None, &tight)
                .is_ok(),
            "{m}"
        );
    }
    let outside = catalog::models()
        .iter()
        .find(|m| !is_moe(m) && m.params_b > hi && wattcounts_rules::memory_fit::fits(h200, m))
        .expect("a larger dense model that fits an H200");
    match t.answer(h200, outside, None, &tight) {
        Err(Refusal::OutsideDomain {
            feature,
            value,
            lo: l,
            hi: h,
            message,
        }) => {
            assert_eq!(feature, "params_b");
            assert_eq!((value, l, h), (outside.params_b, lo, hi));
            assert!(message.contains(&format!("params_b = {} B", outside.params_b)));
        }
        other => panic!("{other:?}"),
    }
    // Refusal::message is the message each variant carries.
    let r = t.answer(h200, outside, None, &tight).unwrap_err();
    assert!(r.message().starts_with("params_b = "), "{}", r.message());
    // What the fit holds and how long each part took (a clock that
    // counts calls: 1 before the fit, 2 after it, 4 at the end).
    assert_eq!(t.counts(), (7, 11));
    let mut ticks = [1.0, 2.0, 4.0].into_iter();
    let gpus: Vec<&str> = GPUS.iter().copied().filter(|g| *g != INTERIOR).collect();
    let timed = Trained::train(
        other_physics(&gpus, 3),
        quick(),
        provenance(),
        1,
        move || ticks.next().unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            timed.provenance.fit_seconds,
            timed.provenance.validation_seconds
        ),
        (1.0, 2.0)
    );
    let stored = timed.to_stored().unwrap();
    let mut all: Vec<String> = features::POWER_FEATURES
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(stored.power_features, all);
    all.extend(features::ITL_EXTRA_FEATURES.iter().map(|s| s.to_string()));
    assert_eq!(stored.itl_features, all);
}

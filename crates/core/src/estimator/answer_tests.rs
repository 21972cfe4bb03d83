//! Answers from a stored-and-loaded fit: the version is a function of the
//! rows and settings, the interval's split follows what is unmeasured,
//! and every refusal names its input and figure.

use super::answer::{Refusal, Rules};
use super::other_physics::{other_physics, GPUS, INTERIOR};
use super::trained::{Provenance, StoredFit, Trained};
use super::*;

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
            is_dense(m)
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
        .find(|m| is_dense(m) && m.params_b > 25.0)
        .unwrap();
    match t.answer(t4, big, None, &rules) {
        Err(Refusal::DoesNotFit { message }) => {
            assert!(message.contains("GB of BF16 weights"), "{message}");
            assert!(message.contains("80 % of 16 GB"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    if let Some(moe) = catalog::models().iter().find(|m| !is_dense(m)) {
        let r = t.answer(catalog::gpu_by_id("h200").unwrap(), moe, None, &rules);
        assert!(matches!(r, Err(Refusal::MixtureOfExperts { .. })), "{r:?}");
    }
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
        .find(|m| is_dense(m) && m.params_b < 0.49)
    {
        match t.answer(l40s, tiny, None, &tight) {
            Err(Refusal::OutsideDomain { feature, lo, .. }) => {
                assert_eq!(feature, "params_b");
                assert!((lo - 0.5).abs() < 0.1, "{lo}");
            }
            other => panic!("{other:?}"),
        }
    }
    let codes = [
        Refusal::DoesNotFit {
            message: String::new(),
        }
        .code(),
        Refusal::MixtureOfExperts {
            message: String::new(),
        }
        .code(),
    ];
    assert_eq!(codes, ["does_not_fit", "mixture_of_experts"]);
}

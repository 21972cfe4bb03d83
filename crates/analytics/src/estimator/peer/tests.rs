//! The peer estimator on rows made by a known physics: mean power is half
//! the GPUs' TDP and a step takes 1.2 × its roofline, so an answer can be
//! worked out by hand and the trees must find it.

use super::*;
use wattcounts_rules::catalog;

const YIELD: f64 = 0.94;

fn row(model: &str, params: f64, gpu: &str, n: f64, batch: f64) -> PeerRow {
    let gpu = catalog::gpu_by_id(gpu).unwrap();
    let mut r = PeerRow {
        task: "chat".into(),
        model: model.into(),
        gpu,
        num_gpus: n,
        tensor_parallel: n,
        expert_parallel: 1.0,
        batch,
        weight_bytes: 2.0,
        total_params_b: params,
        active_params_b: params,
        architecture: 0.0,
        power_w: 0.5 * n * gpu.tdp_w,
        itl_s: 0.0,
        energy_per_token_j: 0.0,
    };
    r.itl_s = 1.2 * r.roofline_itl_s();
    r.energy_per_token_j = r.power_w * r.itl_s / (batch * YIELD);
    r
}

fn rows() -> Vec<PeerRow> {
    let mut out = Vec::new();
    for (m, p) in [
        ("a/8B", 8.0),
        ("a/14B", 14.0),
        ("b/32B", 32.0),
        ("c/70B", 70.0),
    ] {
        for (gpu, n) in [("b200", 1.0), ("b200", 2.0), ("h100-80gb-hbm3", 4.0)] {
            for batch in [8.0, 32.0, 128.0, 512.0] {
                out.push(row(m, p, gpu, n, batch));
            }
        }
    }
    out
}

fn ask(model: &str, gpu: &str, n: u32, seqs: u32) -> PeerQuestion {
    PeerQuestion {
        task: "chat".into(),
        model: model.into(),
        gpu: catalog::gpu_by_id(gpu).unwrap(),
        num_gpus: n,
        tensor_parallel: None,
        expert_parallel: None,
        max_num_seqs: seqs,
        weight_precision: None,
    }
}

#[test]
fn an_unpublished_cap_is_answered_by_the_physics_the_rows_follow() {
    let e = PeerEstimator::fit(rows(), &Settings::default()).unwrap();
    // 70 B in BF16 on 2 × B200 (8,192 GB/s, 2,250 TFLOPS, 1,000 W each)
    // at a cap of 96, by hand:
    //   weight read per GPU = 70e9 × 2 ÷ (2 × 8192e9) = 8.544921875 ms
    //   batch's matrix work = 2 × 70e9 × 96 ÷ (2 × 2250e12) = 2.987 ms
    //   roofline = 8.544921875 ms; ITL = 1.2 × that = 10.25390625 ms
    //   power = 0.5 × 2 × 1000 = 1000 W
    //   J/token = 1000 × 0.01025390625 ÷ (96 × 0.94) = 0.113629...
    let a = e.answer(&ask("c/70B", "b200", 2, 96)).unwrap();
    let near = |got: f64, want: f64| (got / want - 1.0).abs() < 0.01;
    assert!(near(a.roofline_itl_s, 0.008_544_921_875), "{a:?}");
    assert!(near(a.itl_s, 0.010_253_906_25), "{a:?}");
    assert!(near(a.power_w, 1000.0), "{a:?}");
    assert!(near(a.energy_per_token_j, 0.113_629), "{a:?}");
    assert!(a.energy_per_token_lo <= a.energy_per_token_j);
    assert!(a.energy_per_token_j <= a.energy_per_token_hi);
    assert_eq!((a.tensor_parallel, a.expert_parallel), (2, 1));
    assert_eq!(a.facts.source, "peer data");
    assert!(a.published.is_none());
    // A published configuration carries the peer's own figure.
    let p = e.answer(&ask("c/70B", "b200", 2, 128)).unwrap();
    let published = p.published.expect("published");
    assert!(near(
        published.energy_per_token_j,
        row("c/70B", 70.0, "b200", 2.0, 128.0).energy_per_token_j
    ));
}

#[test]
fn precision_changes_the_bytes_read() {
    let e = PeerEstimator::fit(rows(), &Settings::default()).unwrap();
    let mut q = ask("c/70B", "b200", 2, 8);
    let bf16 = e.answer(&q).unwrap();
    q.weight_precision = Some("fp8".into());
    let fp8 = e.answer(&q).unwrap();
    // At a cap of 8 the step reads weights: half the bytes, half the time.
    assert!((fp8.roofline_itl_s / bf16.roofline_itl_s - 0.5).abs() < 1e-9);
    assert_eq!(fp8.facts.weight_precision, "fp8");
    q.weight_precision = Some("int3".into());
    assert_eq!(e.answer(&q).unwrap_err().code, "unknown_precision");
}

#[test]
fn refusals_name_the_input_and_the_figure() {
    let e = PeerEstimator::fit(rows(), &Settings::default()).unwrap();
    // 70 B × 2 bytes = 140 GB on one 80 GB H100.
    let r = e.answer(&ask("c/70B", "h100-80gb-hbm3", 1, 8)).unwrap_err();
    assert_eq!(r.code, "does_not_fit");
    assert!(
        r.message.contains("140 GB of weights") && r.message.contains("holds 80 GB"),
        "{}",
        r.message
    );
    // Caps run 8 to 512: × 2 is 1,024.
    let r = e.answer(&ask("a/8B", "b200", 1, 2000)).unwrap_err();
    assert_eq!(r.code, "outside_domain");
    assert!(
        r.message.contains("max_num_seqs = 2000") && r.message.contains("8 to 512"),
        "{}",
        r.message
    );
    assert!(e.answer(&ask("a/8B", "b200", 1, 1024)).is_ok());
    let mut q = ask("a/8B", "b200", 1, 8);
    q.task = "code".into();
    let r = e.answer(&q).unwrap_err();
    assert_eq!(r.code, "unknown_task");
    assert!(r.message.contains("chat"), "{}", r.message);
    let r = e
        .answer(&ask("nobody/Unknown-9B", "b200", 1, 8))
        .unwrap_err();
    assert_eq!(r.code, "unknown_model");
}

#[test]
fn a_catalogue_model_the_peer_never_ran_is_answered_from_its_catalogue_figures() {
    let e = PeerEstimator::fit(rows(), &Settings::default()).unwrap();
    let id = "Qwen/Qwen2.5-7B-Instruct";
    let m = catalog::model_by_id(id).unwrap();
    let a = e.answer(&ask(id, "b200", 1, 32)).unwrap();
    assert_eq!(a.facts.source, "catalogue");
    assert_eq!(a.facts.total_params_b, m.params_b);
    assert!(a.facts.precision_assumed);
    assert_eq!(a.facts.architecture, "dense");
}

#[test]
fn families_leave_together() {
    let mut a = row("meta-llama/Llama-3.1-70B-Instruct", 70.0, "b200", 2.0, 8.0);
    let b = row("meta-llama/Llama-3.3-70B-Instruct", 70.0, "b200", 2.0, 8.0);
    let c = row("Qwen/Qwen3-32B", 32.0, "b200", 2.0, 8.0);
    assert_eq!(a.family(), b.family());
    assert_ne!(a.family(), c.family());
    // An FP8 twin has the same sizes and architecture: the same family.
    a.weight_bytes = 1.0;
    assert_eq!(a.family(), b.family());
}

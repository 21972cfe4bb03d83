//! The estimator judged on real hardware: leave-one-LLM-out and
//! leave-one-batch-size-out on the ML.ENERGY v3 LLM configurations, per
//! task, against the TDP, load-scaled TDP and roofline-ITL baselines
//! (issue #39), with the time the validation takes.
//!
//!     cargo run --release --example peer_estimator_bench [-- <folder with index.json and tasks/>]
//!
//! Without a folder it reads the copy shipped in
//! crates/service/peers/mlenergy-v3 (the full v3 LLM files, 565 rows);
//! give a newer checkout's `public/data` to score another release.

use std::path::PathBuf;
use std::time::Instant;

use wattcounts::estimator::peer::{markdown, peer_rows, validate, PeerEstimator, PeerQuestion};
use wattcounts::estimator::Settings;
use wattcounts::peer::PeerSource;
use wattcounts::service::peers::FolderOnDisk;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/service/peers/mlenergy-v3")
        });
    let release = PeerSource::MlEnergyV3.read(&mut FolderOnDisk(&dir))?;
    let rows = peer_rows(&release.configs);
    println!(
        "ML.ENERGY v3 release {} from {}: {} configurations, {} the estimator reads",
        release.label,
        dir.display(),
        release.configs.len(),
        rows.len()
    );
    let start = Instant::now();
    let lines = validate(&rows, &Settings::default())?;
    let seconds = start.elapsed().as_secs_f64();
    print!("{}", markdown(&lines));
    println!("validation: {seconds:.2} s (default settings, one thread)");

    // What a reader asks of /peers/mlenergy-v3/estimate: Llama-3.1-70B on
    // 2 x B200 at a cap v3 did not publish, and a mixture of experts.
    let start = Instant::now();
    let estimator = PeerEstimator::fit(rows, &Settings::default())?;
    println!(
        "fit for answers: {:.2} s (every task, with its leave-one-LLM-out interval)",
        start.elapsed().as_secs_f64()
    );
    let b200 = wattcounts::catalog::gpu_by_id("b200").expect("the B200");
    let questions = [
        ("meta-llama/Llama-3.1-70B-Instruct", 2, 96),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", 1, 96),
    ];
    for (model, gpus, cap) in questions {
        let q = PeerQuestion {
            task: "lm-arena-chat".into(),
            model: model.into(),
            gpu: b200,
            num_gpus: gpus,
            tensor_parallel: None,
            expert_parallel: None,
            max_num_seqs: cap,
            weight_precision: None,
        };
        let n = 1000;
        let start = Instant::now();
        let mut last = None;
        for _ in 0..n {
            last = Some(estimator.answer(&q));
        }
        let per = start.elapsed().as_secs_f64() / f64::from(n) * 1e3;
        match last.expect("answered") {
            Ok(a) => println!(
                "{model} on {gpus} x B200 at cap {cap}: {:.4} J/token ({:.4}-{:.4}), {:.0} W, ITL {:.1} ms; {per:.3} ms an estimate",
                a.energy_per_token_j,
                a.energy_per_token_lo,
                a.energy_per_token_hi,
                a.power_w,
                a.itl_s * 1e3
            ),
            Err(r) => println!("{model}: refused ({}): {}", r.code, r.message),
        }
    }
    Ok(())
}

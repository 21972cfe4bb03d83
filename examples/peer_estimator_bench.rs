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

use wattcounts::estimator::peer::{markdown, peer_rows, validate};
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
    Ok(())
}

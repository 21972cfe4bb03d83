//! Snapshot creation time and sizes for the paper-scale demo, with and
//! without the power traces.
//!
//!     cargo run --release --example snapshot_bench [-- --runs 3]
//!
//! The demo is loaded once into target/bench-snapshot (as `serve --demo`
//! would) and reused; each run publishes a new snapshot there, then the
//! snapshots are removed again.

mod support;

use std::time::Duration;

use wattcounts::snapshot::{self, Library};

fn mb(b: u64) -> String {
    format!("{:.2} MB", b as f64 / 1e6)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse())
        .transpose()?
        .unwrap_or(3);
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-snapshot");
    let (store, service) = support::demo_service(&data).await?;
    let counts = store.dataset_counts().await?;
    println!(
        "accepted data: {} submissions, {} iterations, {} power samples",
        counts.submissions, counts.iterations, counts.power_samples
    );
    let library = Library::new(data.join("snapshots"))?;
    for traces in [false, true] {
        let mut times: Vec<(Duration, Duration)> = Vec::new();
        let mut last = None;
        for _ in 0..runs {
            let created = service
                .create_snapshot(
                    &library,
                    &snapshot::Options {
                        traces,
                        created_by: "bench".into(),
                        public_url: None,
                        log_key: None,
                        estimator: None,
                    },
                    |_| {},
                )
                .await?;
            times.push((created.read_time, created.write_time));
            let dir = library
                .objects()
                .local_path(&created.published.manifest.snapshot_id)
                .expect("a local library");
            last = Some(created.published);
            // Files are read-only; the folder is not: remove it for the next run.
            std::fs::remove_dir_all(dir)?;
        }
        let p = last.expect("at least one run");
        let mut totals: Vec<f64> = times.iter().map(|(r, w)| (*r + *w).as_secs_f64()).collect();
        totals.sort_by(f64::total_cmp);
        println!(
            "\n{} power traces: created in {:.2} s median of {runs} (min {:.2}, max {:.2}; reading the database {:.2} s)",
            if traces { "with" } else { "without" },
            totals[totals.len() / 2],
            totals[0],
            totals[totals.len() - 1],
            times[0].0.as_secs_f64(),
        );
        for f in &p.manifest.files {
            println!(
                "  {:<24} {:>10} {:>10}",
                f.path,
                f.rows.map_or(String::new(), |r| format!("{r} rows")),
                mb(f.bytes)
            );
        }
        println!(
            "  {:<24} {:>10} {:>10}\n  total {}",
            "manifest.json",
            "",
            mb(p.manifest_bytes),
            mb(p.manifest.total_bytes() + p.manifest_bytes)
        );
    }
    Ok(())
}

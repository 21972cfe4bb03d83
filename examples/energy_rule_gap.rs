//! The published energy against the meter's own, at every sampler pace the
//! harness-written fixtures hold (issue #53): for each case under
//! tests/fixtures/harness (quiet host, sampler 108 ms and 150 ms apart),
//! each results row's real spacing (duration ÷ samples), and the gap
//! between the meter's `gpu_energy` and the energy by the rule in force
//! (rule 3, the trapezoid at that spacing) and by rule 2 (at 0.1 s); then
//! per configuration, the published J/token (the service's own derivation
//! and aggregation) against the meter's gpu_energy ÷ tokens.
//!
//!   cargo run --release --example energy_rule_gap [-- FIXTURES_DIR]

use std::path::{Path, PathBuf};

use wattcounts::bundle::harness::{self, Scenario};
use wattcounts::derived::{self, METER_PERIOD_S};

fn results_files(case: &Path) -> Vec<(PathBuf, Scenario)> {
    let mut out = Vec::new();
    let mut stack = vec![case.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                stack.push(p);
            } else if name == harness::BATCH_RESULTS {
                out.push((p, Scenario::Batch));
            } else if name == harness::SERVER_RESULTS {
                out.push((p, Scenario::Server));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn pct(a: f64, b: f64) -> f64 {
    (a / b - 1.0) * 100.0
}

fn main() -> anyhow::Result<()> {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harness"));
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    println!(
        "{:<16} {:<7} {:>5} {:>11} {:>11} {:>11} {:>13} {:>13}",
        "case",
        "kind",
        "rows",
        "spacing ms",
        "rule 3 row",
        "rule 2 row",
        "J/tok rule 3",
        "J/tok rule 2"
    );
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        for (file, scenario) in results_files(case) {
            let data = std::fs::read(&file)?;
            let rows = harness::parse_results(&file.display().to_string(), &data, scenario)
                .map_err(|r| anyhow::anyhow!("{}: {}", file.display(), r.message))?;
            let runs: Vec<_> = rows.iter().map(derived::derive).collect();
            let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
            let (mut worst3, mut worst2) = (0.0f64, 0.0f64);
            for r in &rows {
                let spacing = r.duration_s / r.power_w.n as f64;
                lo = lo.min(spacing);
                hi = hi.max(spacing);
                let rule3 = pct(derived::trace_energy_j(r), r.reported_gpu_energy_j);
                let rule2 = pct(r.power_w.trapezoid(METER_PERIOD_S), r.reported_gpu_energy_j);
                if rule3.abs() > worst3.abs() {
                    worst3 = rule3;
                }
                if rule2.abs() > worst2.abs() {
                    worst2 = rule2;
                }
            }
            // Per configuration: the published median J/token against the
            // median of the meter's gpu_energy ÷ tokens over the same rows.
            let (mut cfg3, mut cfg2) = (0.0f64, 0.0f64);
            for c in derived::aggregate(&runs) {
                let of = |r: &&harness::IterationRow| {
                    c.is_of(&r.model, r.scenario, r.lambda_qps) && r.generation_tokens_total > 0
                };
                let median = |mut v: Vec<f64>| {
                    v.sort_by(f64::total_cmp);
                    let n = v.len();
                    if n % 2 == 1 {
                        v[n / 2]
                    } else {
                        (v[n / 2 - 1] + v[n / 2]) / 2.0
                    }
                };
                let tokens = |r: &harness::IterationRow| r.generation_tokens_total as f64;
                let meter = median(
                    rows.iter()
                        .filter(of)
                        .map(|r| r.reported_gpu_energy_j / tokens(r))
                        .collect(),
                );
                let rule2 = median(
                    rows.iter()
                        .filter(of)
                        .map(|r| r.power_w.trapezoid(METER_PERIOD_S) / tokens(r))
                        .collect(),
                );
                let g3 = pct(c.energy_per_token_j.median, meter);
                let g2 = pct(rule2, meter);
                if g3.abs() > cfg3.abs() {
                    cfg3 = g3;
                }
                if g2.abs() > cfg2.abs() {
                    cfg2 = g2;
                }
            }
            println!(
                "{:<16} {:<7} {:>5} {:>5.1}–{:<5.1} {:>+10.3}% {:>+10.3}% {:>+12.3}% {:>+12.3}%",
                name,
                scenario.as_str(),
                rows.len(),
                lo * 1000.0,
                hi * 1000.0,
                worst3,
                worst2,
                cfg3,
                cfg2
            );
        }
    }
    println!("(each gap is the worst of its file: energy by the rule ÷ the meter's gpu_energy − 1; J/tok: the configuration's published median ÷ the meter's median)");
    Ok(())
}

//! The estimator's validation tables, fit and validation times and the
//! latency of one estimate, on the paper-scale demo's groups and on the
//! tests' other physics; and the time `/insights` spends computing its
//! findings from the demo's groups.
//!
//!     cargo run --release --example estimator_bench
//!
//! The demo is loaded once into target/bench-estimator (as `serve --demo`
//! would) and reused. On the demo the scores check the pipeline, not
//! hardware: the demo's physics is a formula of the very catalogue
//! features the estimator reads.

mod support;

use std::time::{Duration, Instant};

use wattcounts::catalog;
use wattcounts::estimator::features::ScenarioClass;
use wattcounts::estimator::validation::{validate, Line, Split};
use wattcounts::estimator::{self, other_physics, Settings, TrainingRow};
use wattcounts::leaderboard::{LeaderboardRow, Query};

/// WattGPU's published MdAPE of power (CV / LOGO / LOLO), offline and server.
const WATTGPU_POWER: [(&str, [f64; 3]); 2] =
    [("batch", [1.6, 3.4, 2.0]), ("server", [5.5, 13.5, 6.7])];

/// One training row per accepted group of a catalogue GPU and a dense
/// catalogue model, from the read model's medians.
fn training_rows(groups: &[LeaderboardRow]) -> Vec<TrainingRow> {
    groups
        .iter()
        .filter(|g| catalog::gpu_by_id(&g.gpu_id).is_some())
        .filter(|g| catalog::model_by_id(&g.model).is_some_and(|m| m.active_params_b == m.params_b))
        .filter_map(|g| {
            Some(TrainingRow {
                gpu_id: g.gpu_id.clone(),
                model: g.model.clone(),
                scenario: ScenarioClass::of(g.lambda_qps),
                lambda_qps: g.lambda_qps,
                power_w: g.power_mean_w,
                itl_s: g.itl_s.filter(|v| *v > 0.0)?,
                energy_per_token_j: g.energy_per_token_j,
                energy_per_request_j: g.energy_per_request_j,
            })
        })
        .collect()
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.1} %"))
}

fn num(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.2}"))
}

fn table(title: &str, rows: &[TrainingRow], lines: &[Line]) {
    let gpus = {
        let mut g: Vec<&str> = rows.iter().map(|r| r.gpu_id.as_str()).collect();
        g.sort_unstable();
        g.dedup();
        g.len()
    };
    let models = {
        let mut m: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        m.sort_unstable();
        m.dedup();
        m.len()
    };
    println!(
        "\n{title}: {} rows, {gpus} GPUs, {models} models",
        rows.len()
    );
    println!(
        "| split | scenario | method | folds | rows | power MdAPE | ITL MdAPE | energy MdAPE | energy r | GPU-ranking τ | model-ranking τ | top-1 | 80 % coverage |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for l in lines {
        let s = &l.scores;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            l.split.as_str(),
            l.scenario.as_str(),
            l.method,
            l.folds,
            s.rows,
            pct(s.power_mdape_pct),
            pct(s.itl_mdape_pct),
            pct(s.energy_mdape_pct),
            num(s.energy_pearson_r),
            num(s.gpu_ranking_tau),
            num(s.model_ranking_tau),
            s.top1_share
                .map_or("–".into(), |v| format!("{:.0} %", v * 100.0)),
            s.coverage
                .map_or("–".into(), |v| format!("{:.0} %", v * 100.0)),
        );
    }
    println!(
        "WattGPU (42 dense LLMs × 8 GPUs), power MdAPE CV / LOGO / LOLO: {}",
        WATTGPU_POWER
            .iter()
            .map(|(s, v)| format!("{s} {} / {} / {} %", v[0], v[1], v[2]))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

/// Fit time, validation time, and the median of 200 estimates.
fn bench(title: &str, rows: &[TrainingRow]) -> anyhow::Result<()> {
    let settings = Settings::default();
    let start = Instant::now();
    let fit = estimator::fit(rows, &settings)?;
    let fit_time = start.elapsed();
    let start = Instant::now();
    let report = validate(rows, &settings)?;
    let validation_time = start.elapsed();
    table(title, rows, &report.lines);
    let mut times: Vec<Duration> = Vec::new();
    let pairs: Vec<_> = catalog::gpus()
        .iter()
        .flat_map(|g| catalog::models().iter().map(move |m| (g, m)))
        .take(200)
        .collect();
    for (i, (g, m)) in pairs.iter().enumerate() {
        let rate = [None, Some(0.1), Some(0.5)][i % 3];
        let t = Instant::now();
        std::hint::black_box(fit.predict(g, m, rate));
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "fit {:.2} s (both boosters), validation {:.1} s ({} splits), estimate median {:.1} µs over {} distinct queries",
        fit_time.as_secs_f64(),
        validation_time.as_secs_f64(),
        Split::ALL.len(),
        times[times.len() / 2].as_secs_f64() * 1e6,
        times.len()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-estimator");
    let (_, service) = support::demo_service(&data).await?;
    let board = service.all_groups(&Query::default()).await?;
    println!("demo view: {} groups", board.entries.len());

    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        std::hint::black_box(wattcounts::insights::findings(&board.entries));
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "insights: {} findings computed in {:.2} ms (median of 20, the groups already read)",
        wattcounts::insights::findings(&board.entries).len(),
        times[10].as_secs_f64() * 1e3
    );

    bench(
        "demo (synthetic: the scores check the pipeline, not hardware)",
        &training_rows(&board.entries),
    )?;
    bench(
        "other physics (the tests' generator)",
        &other_physics::other_physics(&other_physics::GPUS, 2),
    )?;
    Ok(())
}

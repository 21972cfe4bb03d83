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
use wattcounts::estimator::validation::{validate, Line, Split};
use wattcounts::estimator::{self, Settings, TrainingRow};
use wattcounts::leaderboard::Query;
use wattcounts::synth::other_physics;

/// WattGPU's published MdAPE of power (CV / LOGO / LOLO), offline and server.
const WATTGPU_POWER: [(&str, [f64; 3]); 2] =
    [("batch", [1.6, 3.4, 2.0]), ("server", [5.5, 13.5, 6.7])];

fn table(title: &str, rows: &[TrainingRow], lines: &[Line]) {
    let (gpus, models) = estimator::distinct_counts(rows);
    println!(
        "\n{title}: {} rows, {gpus} GPUs, {models} models",
        rows.len()
    );
    print!("{}", wattcounts::estimator::validation::markdown(lines));
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

/// Median of `n` runs of `f`, in ms.
async fn median_ms<F, Fut>(n: usize, mut f: F) -> f64
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times: Vec<Duration> = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        f(i).await;
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

/// One GET through the router, as the server handles it; the status.
async fn get(router: &axum::Router, path: &str) -> u16 {
    use tower::ServiceExt;
    let resp = router
        .clone()
        .oneshot(
            axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let _ = axum::body::to_bytes(resp.into_body(), usize::MAX).await;
    status
}

fn enc(s: &str) -> String {
    s.replace('/', "%2F")
}

/// The service's own fit job, pages and answers on the demo: the refresh
/// that fits, validates and stores; a restart that loads; estimate and
/// page latencies uncached; reader pages while a refit runs; memory.
async fn service_bench(data: &std::path::Path) -> anyhow::Result<()> {
    let store =
        wattcounts::store::open(&format!("sqlite:{}", data.join("wattcounts.db").display()))
            .await?;
    // A seed no earlier run stored a fit for: this run fits for real.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let mut cfg = wattcounts::config::ServeConfig::defaults(data);
    cfg.no_response_cache = true;
    cfg.estimator_toml = Some(format!("seed = {seed}\n"));
    let state = wattcounts::app::with_store(store.clone(), &cfg, "https://bench.test".into())?;
    let service = state.service.clone();
    let router = wattcounts::web::app(state);
    let leaderboard_idle = median_ms(20, |_| async {
        get(&router, "/api/v1/leaderboard?per_page=50").await;
    })
    .await;
    let t = Instant::now();
    let outcome = service.refresh_estimator().await?;
    let refresh = t.elapsed();
    let view = service.estimator();
    let fit = view.current.as_ref().expect("a fit");
    println!(
        "\nservice: refresh {:?} in {:.2} s (fit {:.2} s, validation {:.1} s, then stored); {} training rows",
        match outcome {
            wattcounts::service::estimates::Refreshed::Fitted(_) => "fitted",
            wattcounts::service::estimates::Refreshed::Loaded(_) => "loaded (stored earlier)",
            _ => "other",
        },
        refresh.as_secs_f64(),
        fit.provenance.fit_seconds,
        fit.provenance.validation_seconds,
        fit.rows.len()
    );
    // A restart: a second service on the same database loads the fit.
    let again = wattcounts::app::with_store(store.clone(), &cfg, "https://bench.test".into())?;
    let t = Instant::now();
    let loaded = again.service.refresh_estimator().await?;
    println!(
        "restart: {:?} in {:.0} ms, fits made by the new instance: {}",
        loaded,
        t.elapsed().as_secs_f64() * 1e3,
        again.service.estimator().fits_made
    );

    // 200 distinct questions (every GPU × model × scenario in turn).
    let questions: Vec<String> = catalog::models()
        .iter()
        .flat_map(|m| {
            catalog::gpus().iter().flat_map(move |g| {
                ["batch", "server@0.017", "server@0.33"]
                    .into_iter()
                    .map(move |sc| {
                        format!(
                            "/api/v1/estimate?model={}&gpu={}&scenario={sc}",
                            enc(&m.id),
                            g.id
                        )
                    })
            })
        })
        .step_by(7)
        .take(200)
        .collect();
    let answered = std::cell::Cell::new(0);
    let estimate = median_ms(questions.len(), |i| {
        let q = questions[i].clone();
        let router = &router;
        let answered = &answered;
        async move {
            if get(router, &q).await == 200 {
                answered.set(answered.get() + 1);
            }
        }
    })
    .await;
    let answered = answered.get();
    println!(
        "/api/v1/estimate: median {estimate:.2} ms over {} distinct questions, uncached ({answered} estimates, the rest refusals)",
        questions.len()
    );
    for path in [
        "/insights",
        "/api/v1/insights",
        "/api/v1/estimator",
        "/estimate?model=meta-llama%2FLlama-3.1-8B-Instruct&gpu=a100-sxm4-40gb&scenario=batch",
        "/models/meta-llama/Llama-3.1-8B-Instruct",
        "/api/v1/models/meta-llama/Llama-3.1-8B-Instruct/estimates",
    ] {
        let ms = median_ms(20, |_| async {
            assert_eq!(get(&router, path).await, 200, "{path}");
        })
        .await;
        println!("{path}: median {ms:.1} ms uncached (20 requests)");
    }

    // Reader pages while a refit runs (other settings: a new version).
    let mut other = cfg.clone();
    other.estimator_toml = Some(format!("seed = {}\n", seed + 1));
    let busy = wattcounts::app::with_store(store.clone(), &other, "https://bench.test".into())?;
    let refit = tokio::spawn({
        let s = busy.service.clone();
        async move { s.refresh_estimator().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut during = Vec::new();
    while !refit.is_finished() {
        let t = Instant::now();
        get(&router, "/api/v1/leaderboard?per_page=50").await;
        during.push(t.elapsed());
    }
    refit.await??;
    during.sort();
    println!(
        "reader page /api/v1/leaderboard: idle median {leaderboard_idle:.1} ms; during a refit median {:.1} ms over {} requests ({:.2}×)",
        during.get(during.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3),
        during.len(),
        during.get(during.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3) / leaderboard_idle
    );
    Ok(())
}

/// A real `serve` process on the demo with the estimator configured by
/// `estimator` (an `[estimator]` table): seconds until its job settles,
/// and (VmRSS, VmHWM) in MB after a round of pages.
async fn serve_memory(
    data: &std::path::Path,
    name: &str,
    estimator: &str,
) -> anyhow::Result<(f64, f64, f64)> {
    let file = data.join(format!("bench-{name}.toml"));
    std::fs::write(&file, format!("[estimator]\n{estimator}"))?;
    let server = support::serve(
        data,
        None,
        &[
            "--config-file",
            file.to_str().unwrap(),
            "--no-response-cache",
        ],
    )?;
    let t = Instant::now();
    let settled = loop {
        let v: serde_json::Value = reqwest::get(format!("{}/api/v1/estimator", server.url))
            .await?
            .json()
            .await?;
        if v["status"] != "fitting" {
            break t.elapsed().as_secs_f64();
        }
        anyhow::ensure!(t.elapsed() < Duration::from_secs(300), "no fit in 300 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for path in [
        "/insights",
        "/leaderboard",
        "/models/meta-llama/Llama-3.1-8B-Instruct",
        "/estimate?model=meta-llama%2FLlama-3.1-8B-Instruct&gpu=a100-sxm4-40gb&scenario=batch",
    ] {
        reqwest::get(format!("{}{path}", server.url))
            .await?
            .bytes()
            .await?;
    }
    let (rss, hwm) = support::memory_mb(server.pid());
    Ok((settled, rss, hwm))
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
        &estimator::training_rows(&board.entries),
    )?;
    bench(
        "other physics (the tests' generator)",
        &other_physics::other_physics(&other_physics::GPUS, 2),
    )?;
    // The one feature WattGPU does not use, on and off: leave-one-GPU-out
    // energy and power MdAPE per scenario class.
    for (title, rows) in [
        ("demo", estimator::training_rows(&board.entries)),
        (
            "other physics",
            other_physics::other_physics(&other_physics::GPUS, 2),
        ),
    ] {
        for idle_share in [true, false] {
            let settings = Settings {
                idle_share,
                ..Settings::default()
            };
            let report = validate(&rows, &settings)?;
            let cells: Vec<String> = report
                .lines
                .iter()
                .filter(|l| l.split == Split::Logo && l.method == "estimator")
                .map(|l| {
                    format!(
                        "{} energy {} power {}",
                        l.scenario.as_str(),
                        l.cells()[7],
                        l.cells()[5]
                    )
                })
                .collect();
            println!(
                "LOGO, {title}, idle share {}: {}",
                if idle_share { "on" } else { "off" },
                cells.join("; ")
            );
        }
    }
    drop(service);
    service_bench(&data).await?;

    // Server memory: the estimator off, then fitting anew (a seed no
    // stored fit has), each in its own `serve` process.
    let (_, off_rss, off_hwm) = serve_memory(&data, "off", "enabled = false").await?;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs()
        + 2;
    let (settled, on_rss, on_hwm) =
        serve_memory(&data, "fitting", &format!("seed = {seed}")).await?;
    println!(
        "serve on the demo: estimator off RSS {off_rss:.0} MB (peak {off_hwm:.0}); fitting at start, settled in {settled:.1} s, RSS {on_rss:.0} MB (peak {on_hwm:.0}): +{:.0} MB (+{:.0} peak)",
        on_rss - off_rss,
        on_hwm - off_hwm
    );
    Ok(())
}

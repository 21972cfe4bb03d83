//! Findings on groups whose answers are known by construction: three GPUs
//! × three dense models in batch, energy per token c_g × P^0.5 with
//! c = 1.0, 0.8 and 0.6, so the best GPU saves exactly 40 % against the
//! worst for every model, every GPU's slope is exactly 0.5, and one
//! model's intervals overlap (a tie counted apart).

use super::*;
use crate::leaderboard::FigureIntervals;
use wattcounts_rules::domain::Origin;

fn row(gpu: &str, model: &str, k: ScenarioKey, ept: f64, lo: f64, hi: f64) -> LeaderboardRow {
    LeaderboardRow {
        gpu_id: gpu.into(),
        gpu_name: format!("GPU {gpu}"),
        model: model.into(),
        scenario: k.scenario,
        lambda_qps: k.lambda_qps,
        protocol_id: "p".into(),
        protocol: "reference".into(),
        reference_protocol: true,
        origin: Origin::Real,
        energy_per_token_j: ept,
        energy_per_token_interval: Interval {
            lo,
            hi,
            confidence: 0.75,
        },
        energy_per_token_cv: 0.01,
        energy_per_request_j: None,
        throughput_tok_s: 100.0,
        power_mean_w: 100.0 * ept,
        ttft_p50_s: None,
        itl_s: None,
        mean_concurrency: None,
        prefill_energy_share: None,
        intervals: FigureIntervals::default(),
        iterations: 15,
        submissions: 3,
        submitters: 3,
        rank_in_model: None,
        demo: false,
        needs_review: false,
        evidence: uuid::Uuid::nil(),
        evidence_ids: vec![],
    }
}

const BATCH: ScenarioKey = ScenarioKey {
    scenario: Scenario::Batch,
    lambda_qps: None,
};
const SERVER: ScenarioKey = ScenarioKey {
    scenario: Scenario::Server,
    lambda_qps: Some(0.5),
};

/// Three dense catalogue models of different sizes, smallest first.
fn three_models() -> Vec<(&'static str, f64)> {
    let mut dense: Vec<&wattcounts_rules::catalog::ModelSpec> = wattcounts_rules::catalog::models()
        .iter()
        .filter(|m| m.active_params_b == m.params_b && m.attention_heads > 0)
        .collect();
    dense.sort_by(|a, b| a.params_b.total_cmp(&b.params_b));
    dense.dedup_by(|a, b| a.params_b == b.params_b);
    let picked = [
        dense[dense.len() / 4],
        dense[dense.len() / 2],
        dense[3 * dense.len() / 4],
    ];
    picked.iter().map(|m| (m.id.as_str(), m.params_b)).collect()
}

/// The constructed view; `tie` makes the last model's best interval reach
/// the runner-up's.
fn view() -> Vec<LeaderboardRow> {
    let mut rows = Vec::new();
    for (i, (model, params)) in three_models().into_iter().enumerate() {
        for (gpu, c) in [("a", 1.0), ("b", 0.8), ("c", 0.6)] {
            let ept = c * params.sqrt();
            // ±1 % intervals, except the tie: c's reaches 20 % up, past b's bottom.
            let hi = if i == 2 && gpu == "c" {
                ept * 1.4
            } else {
                ept * 1.01
            };
            rows.push(row(gpu, model, BATCH, ept, ept * 0.99, hi));
        }
    }
    rows
}

fn by_id<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
    f.iter()
        .find(|x| x.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

#[test]
fn best_against_worst_saves_forty_percent_for_every_model() {
    let f = findings(&view());
    let g = by_id(&f, "gpu_choice.best_vs_worst.batch");
    assert_eq!(g.basis, "best_vs_worst_per_model");
    assert_eq!((g.groups, g.models, g.gpus), (9, 3, 3));
    // (1.0 − 0.6) ÷ 1.0 = 40 %, for each model.
    assert!((g.max_saving_pct.unwrap() - 40.0).abs() < 1e-9);
    assert!((g.median_saving_pct.unwrap() - 40.0).abs() < 1e-9);
    assert_eq!(g.best_gpu.as_deref(), Some("GPU c"));
    assert_eq!(g.worst_gpu.as_deref(), Some("GPU a"));
    // The largest is the first model by name among equals; its interval:
    // best at its top (0.6·1.01) against worst at its bottom (0.99), and
    // the other way round.
    let r = g.max_saving_interval_pct.unwrap();
    assert!((r.lo - (0.99 - 0.606) / 0.99 * 100.0).abs() < 1e-9, "{r:?}");
    assert!((r.hi - (1.01 - 0.594) / 1.01 * 100.0).abs() < 1e-9, "{r:?}");
    assert_eq!(g.savings.len(), 3);
    assert!(g.statement.contains("40.0 %"), "{}", g.statement);
    assert_eq!(g.paper.as_deref(), Some(PAPER_GPU_CHOICE));
}

#[test]
fn against_the_single_best_gpu_nothing_is_saved_when_it_is_best_everywhere() {
    let f = findings(&view());
    let s = by_id(&f, "gpu_choice.vs_single_best.batch");
    assert_eq!(s.single_gpu.as_deref(), Some("GPU c"));
    assert_eq!(s.models_not_run, Some(0));
    assert_eq!(s.mean_saving_pct, Some(0.0));
    assert_eq!(
        s.paper, None,
        "the paper's figure stands beside best-vs-worst only"
    );
    // Take c off the first model: b is then best there, at 20 % below a,
    // and the single GPU (still c, best for the other two) did not run it.
    let models = three_models();
    let rows: Vec<LeaderboardRow> = view()
        .into_iter()
        .filter(|r| !(r.gpu_id == "c" && r.model == models[0].0))
        .collect();
    let f = findings(&rows);
    let s = by_id(&f, "gpu_choice.vs_single_best.batch");
    assert_eq!(s.single_gpu.as_deref(), Some("GPU c"));
    assert_eq!(s.models_not_run, Some(1));
    assert_eq!(s.models, 2);
    assert_eq!(s.mean_saving_pct, Some(0.0));
    let g = by_id(&f, "gpu_choice.best_vs_worst.batch");
    let first = g.savings.iter().find(|x| x.model == models[0].0).unwrap();
    assert!((first.saving_pct - 20.0).abs() < 1e-9, "{first:?}");
}

#[test]
fn wins_count_ties_apart() {
    let f = findings(&view());
    let w = by_id(&f, "which_gpu_wins.batch");
    let all: Vec<&GpuWins> = w.wins.iter().filter(|x| x.size_class == "all").collect();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        (all[0].gpu_id.as_str(), all[0].best_for, all[0].ties),
        ("c", 2, 1)
    );
    // Per size class, the same three models split by their sizes.
    let per_class: usize = w
        .wins
        .iter()
        .filter(|x| x.size_class != "all")
        .map(|x| x.best_for + x.ties)
        .sum();
    assert_eq!(per_class, 3);
    assert!(
        w.statement.contains("for 2 of the 3 models"),
        "{}",
        w.statement
    );
    assert!(
        w.statement.contains("1 of them are ties"),
        "{}",
        w.statement
    );
    // Every interval overlapping: no winner, said so.
    let wide: Vec<LeaderboardRow> = view()
        .into_iter()
        .map(|mut r| {
            r.energy_per_token_interval.lo = 0.0;
            r.energy_per_token_interval.hi = 100.0;
            r
        })
        .collect();
    let f = findings(&wide);
    let w = by_id(&f, "which_gpu_wins.batch");
    assert!(w.statement.contains("no GPU wins here"), "{}", w.statement);
    assert_eq!(
        w.wins
            .iter()
            .filter(|x| x.size_class == "all")
            .map(|x| x.ties)
            .sum::<usize>(),
        3
    );
    // No server rows: the measured power at the lowest rate is unknown.
    assert!(w.idle_power.iter().all(|p| p.measured_w.is_none()));
    assert_eq!(w.idle_power.len(), 3);
}

#[test]
fn every_gpu_scales_as_the_square_root_of_parameters() {
    let f = findings(&view());
    let s = by_id(&f, "size_scaling.batch");
    assert_eq!(s.slopes.len(), 3);
    for g in &s.slopes {
        assert!((g.exponent - 0.5).abs() < 1e-12, "{g:?}");
        // Every pairwise slope is 0.5: the interval is that point.
        assert!((g.interval.lo - 0.5).abs() < 1e-12 && (g.interval.hi - 0.5).abs() < 1e-12);
        assert_eq!(g.models, 3);
    }
    assert!((s.median_exponent.unwrap() - 0.5).abs() < 1e-12);
    assert!(s.statement.contains("parameters^0.50"), "{}", s.statement);
    // 3 GPUs × 3 models fitted.
    assert_eq!((s.groups, s.models, s.gpus), (9, 3, 3));
    // A mixture of experts (reads fewer parameters than it holds) and a
    // row of zero energy are left out of the fit: the same slopes.
    let mut more = view();
    more.push(row(
        "a",
        "allenai/OLMoE-1B-7B-0924",
        BATCH,
        50.0,
        49.0,
        51.0,
    ));
    more.push(row("a", three_models()[0].0, SERVER, 0.0, 0.0, 0.0));
    let mut zero = row("b", "01-ai/Yi-1.5-9B-Chat", BATCH, 0.0, 0.0, 0.0);
    zero.energy_per_token_interval = Interval {
        lo: 0.0,
        hi: 0.0,
        confidence: 0.75,
    };
    more.push(zero);
    let f = findings(&more);
    let s = by_id(&f, "size_scaling.batch");
    assert_eq!((s.groups, s.models, s.gpus), (9, 3, 3));
    assert!(s
        .slopes
        .iter()
        .all(|g| (g.exponent - 0.5).abs() < 1e-12 && g.models == 3));
    // Three models: too few for the second fit's three coefficients and a
    // residual.
    assert_eq!(s.exponent_with_kv_ratio, None);
}

#[test]
fn too_little_data_is_said_instead_of_a_number() {
    // Server at 0.5 req/s: two models, each on one GPU only.
    let models = three_models();
    let rows = vec![
        row("a", models[0].0, SERVER, 1.0, 0.9, 1.1),
        row("b", models[1].0, SERVER, 2.0, 1.9, 2.1),
    ];
    let f = findings(&rows);
    assert_eq!(f.len(), 4);
    for x in &f {
        assert!(x.missing.is_some(), "{x:?}");
        assert_eq!(x.statement, *x.missing.as_ref().unwrap());
        assert_eq!(x.max_saving_pct, None);
        assert_eq!(x.median_exponent, None);
    }
    assert!(by_id(&f, "size_scaling.server@0.5")
        .statement
        .contains("3 or more dense models"));
    assert!(findings(&[]).is_empty());
}

/// Rows on GPUs a, b, c for each model, ±1 % intervals.
fn clear(model: &str, k: ScenarioKey, a: f64, b: f64, c: f64) -> Vec<LeaderboardRow> {
    [("a", a), ("b", b), ("c", c)]
        .into_iter()
        .map(|(g, e)| row(g, model, k, e, e * 0.99, e * 1.01))
        .collect()
}

#[test]
fn against_the_single_best_gpu_where_another_is_better() {
    // The single GPU is c (best for two models); b is best for the first,
    // where choosing it saves (0.8 − 0.5) ÷ 0.8 = 37.5 %, and 0 on the
    // others: a mean of 37.5 ÷ 3 = 12.5 %.
    let m = three_models();
    let mut rows = clear(m[0].0, BATCH, 1.0, 0.5, 0.8);
    rows.extend(clear(m[1].0, BATCH, 1.0, 0.9, 0.6));
    rows.extend(clear(m[2].0, BATCH, 1.0, 0.9, 0.6));
    let f = findings(&rows);
    let s = by_id(&f, "gpu_choice.vs_single_best.batch");
    assert_eq!(s.single_gpu.as_deref(), Some("GPU c"));
    assert!((s.mean_saving_pct.unwrap() - 12.5).abs() < 1e-9, "{s:?}");
    assert!((s.max_saving_pct.unwrap() - 37.5).abs() < 1e-9);
    assert_eq!(
        (s.model.as_deref(), s.best_gpu.as_deref()),
        (Some(m[0].0), Some("GPU b"))
    );
    let first = &s.savings[0];
    // Its range: b at its top against c at its bottom, and the other way.
    assert!((first.interval_pct.lo - (0.792 - 0.505) / 0.792 * 100.0).abs() < 1e-9);
    assert!((first.interval_pct.hi - (0.808 - 0.495) / 0.808 * 100.0).abs() < 1e-9);
    // Where c is itself the best, nothing is saved and nothing is ranged.
    for other in &s.savings[1..] {
        assert_eq!(other.saving_pct, 0.0);
        assert_eq!((other.interval_pct.lo, other.interval_pct.hi), (0.0, 0.0));
    }
}

#[test]
fn wins_by_size_class_leaders_ties_and_idle_power() {
    // Yi 9 B (small): c clear. SOLAR 10.7 B and Nemotron 30 B (medium): b
    // clear, then c clear. A model outside the catalogue (no size class):
    // a tie, counted in "all" only.
    let mut rows = clear("01-ai/Yi-1.5-9B-Chat", BATCH, 1.0, 0.9, 0.5);
    rows.extend(clear(
        "upstage/SOLAR-10.7B-Instruct-v1.0",
        BATCH,
        1.0,
        0.5,
        0.9,
    ));
    rows.extend(clear(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        BATCH,
        1.0,
        0.9,
        0.5,
    ));
    let tie = "lab/custom-model";
    rows.push(row("a", tie, BATCH, 1.0, 0.9, 1.3));
    rows.push(row("c", tie, BATCH, 0.95, 0.85, 1.2));
    // Server rows for idle power: at the lowest rate (0.1) the L4 draws
    // 30 and 34 W (median 32); the T4 ran only at 0.5.
    let low = ScenarioKey {
        scenario: Scenario::Server,
        lambda_qps: Some(0.1),
    };
    for (gpu, model, k, w) in [
        ("l4", "01-ai/Yi-1.5-9B-Chat", low, 30.0),
        ("l4", "upstage/SOLAR-10.7B-Instruct-v1.0", low, 34.0),
        ("l4", "01-ai/Yi-1.5-9B-Chat", SERVER, 50.0),
        ("t4", "01-ai/Yi-1.5-9B-Chat", SERVER, 60.0),
    ] {
        let mut r = row(gpu, model, k, 1.0, 0.99, 1.01);
        r.power_mean_w = w;
        rows.push(r);
    }
    let f = findings(&rows);
    let w = by_id(&f, "which_gpu_wins.batch");
    let of = |class: &str| -> Vec<(&str, usize, usize)> {
        w.wins
            .iter()
            .filter(|x| x.size_class == class)
            .map(|x| (x.gpu_id.as_str(), x.best_for, x.ties))
            .collect()
    };
    assert_eq!(of("all"), vec![("c", 2, 1), ("b", 1, 0)]);
    assert_eq!(of("small"), vec![("c", 1, 0)]);
    assert_eq!(of("medium"), vec![("b", 1, 0), ("c", 1, 0)]);
    assert_eq!(of("large"), vec![]);
    assert!(
        w.statement.contains("the GPU c uses the least energy per token, its interval clear of every other GPU's, for 2 of the 4 models")
            && w.statement.contains("; among small models (under 10 B) the GPU c leads with 1; 1 of them are ties"),
        "{}",
        w.statement
    );
    // The batch view's GPUs have no server rows: idle power unknown there.
    assert!(w
        .idle_power
        .iter()
        .all(|p| p.measured_w.is_none() && p.lowest_rate_qps.is_none()));
    let s = by_id(&f, "which_gpu_wins.server@0.5");
    let idle: Vec<_> = s
        .idle_power
        .iter()
        .map(|p| {
            (
                p.gpu_id.as_str(),
                p.catalogue_idle_w,
                p.lowest_rate_qps,
                p.measured_w,
            )
        })
        .collect();
    // The catalogue's loaded idle: L4 24 W, T4 28 W.
    assert_eq!(
        idle,
        vec![
            ("l4", Some(24.0), Some(0.1), Some(32.0)),
            ("t4", Some(28.0), None, None)
        ]
    );
    // Without the tie, no ties are said at all.
    let clean: Vec<LeaderboardRow> = rows.into_iter().filter(|r| r.model != tie).collect();
    let f = findings(&clean);
    let w = by_id(&f, "which_gpu_wins.batch");
    assert!(!w.statement.contains("ties"), "{}", w.statement);
}

#[test]
fn the_second_fit_separates_size_from_the_kv_ratio() {
    // Four dense catalogue models of different sizes and KV-head ratios,
    // energy per token exactly c_g · P^0.5 · e^(0.7 · kv/heads): the fit of
    // log J/token on log P and the ratio gives back 0.5 and 0.7.
    let ratio = |m: &wattcounts_rules::catalog::ModelSpec| {
        f64::from(m.kv_heads) / f64::from(m.attention_heads)
    };
    let mut picked: Vec<&wattcounts_rules::catalog::ModelSpec> = Vec::new();
    for m in wattcounts_rules::catalog::models()
        .iter()
        .filter(|m| m.active_params_b == m.params_b)
    {
        if picked
            .iter()
            .all(|p| p.params_b != m.params_b && ratio(p) != ratio(m))
        {
            picked.push(m);
        }
        if picked.len() == 4 {
            break;
        }
    }
    assert_eq!(picked.len(), 4);
    let mut rows = Vec::new();
    for (gpu, c) in [("a", 1.0), ("b", 0.8), ("c", 0.6)] {
        for m in &picked {
            let ept = c * m.params_b.sqrt() * (0.7 * ratio(m)).exp();
            rows.push(row(gpu, &m.id, BATCH, ept, ept * 0.99, ept * 1.01));
        }
    }
    let f = findings(&rows);
    let s = by_id(&f, "size_scaling.batch");
    assert!(
        (s.exponent_with_kv_ratio.unwrap() - 0.5).abs() < 1e-9,
        "{s:?}"
    );
    assert!(
        (s.kv_ratio_coefficient.unwrap() - 0.7).abs() < 1e-9,
        "{s:?}"
    );
}

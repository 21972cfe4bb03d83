//! Physics: figures a real GPU can produce. Limits scale with the
//! catalogue GPU's TDP and loaded-idle power.

use super::{skip, CheckInput, CheckResult, Location, Rule, Severity, Tally, Thresholds};

pub const MEAN_POWER: Rule = Rule {
    id: "physics.mean_power",
    severity: Severity::Hard,
    rule: "an iteration's mean board power is at most the factor × the GPU's TDP",
    unit: "W",
};
pub const PEAK_POWER: Rule = Rule {
    id: "physics.peak_power",
    severity: Severity::Hard,
    rule: "no power sample exceeds the factor × the GPU's TDP",
    unit: "W",
};
pub const IDLE_FLOOR: Rule = Rule {
    id: "physics.idle_floor",
    severity: Severity::Hard,
    rule: "an iteration's mean board power is at least the factor × the GPU's loaded-idle power",
    unit: "W",
};
pub const ENERGY_PER_TOKEN: Rule = Rule {
    id: "physics.energy_per_token",
    severity: Severity::Hard,
    rule: "a configuration's median energy per generated token is above 0 and at most the limit",
    unit: "J/token",
};
pub const TEMPERATURE: Rule = Rule {
    id: "physics.temperature",
    severity: Severity::Hard,
    rule: "every GPU temperature sample lies within the limits",
    unit: "°C",
};
pub const RULES: &[Rule] = &[
    MEAN_POWER,
    PEAK_POWER,
    IDLE_FLOOR,
    ENERGY_PER_TOKEN,
    TEMPERATURE,
];

pub fn checks(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    let mut out = match input.gpu {
        Some(gpu) => {
            let mean_limit = t.mean_power_tdp_factor * gpu.tdp_w;
            let mut mean = Tally::new(MEAN_POWER, Some(mean_limit));
            let peak_limit = t.peak_power_tdp_factor * gpu.tdp_w;
            let mut peak = Tally::new(PEAK_POWER, Some(peak_limit));
            let floor = t.idle_floor_factor * gpu.idle_w;
            let mut idle = Tally::new(IDLE_FLOOR, Some(floor));
            for r in input.rows.iter().filter(|r| r.power_w.n > 0) {
                mean.at_most(r.power_w.mean(), mean_limit, || Location::of_row(r));
                peak.at_most(r.power_w.max, peak_limit, || Location::of_row(r));
                idle.at_least(r.power_w.mean(), floor, || Location::of_row(r));
            }
            let tdp = gpu.tdp_w;
            let idle_w = gpu.idle_w;
            let idle = idle.finish(|v| format!("mean power {v:.1} W (loaded idle {idle_w:.0} W)"));
            let idle = if gpu.idle_is_guessed() {
                super::on_a_guess(
                    idle,
                    &format!(
                        "its loaded idle, {idle_w:.0} W, is {}",
                        gpu.idle_basis_words()
                    ),
                )
            } else {
                idle
            };
            vec![
                mean.finish(|v| format!("mean power {v:.1} W (TDP {tdp:.0} W)")),
                peak.finish(|v| format!("power sample of {v:.1} W (TDP {tdp:.0} W)")),
                idle,
            ]
        }
        None => [MEAN_POWER, PEAK_POWER, IDLE_FLOOR]
            .into_iter()
            .map(|r| skip(r, "the GPU is not in the catalogue, so its TDP is unknown"))
            .collect(),
    };
    out.push(energy_per_token(input, t));
    out.push(temperature(input, t));
    out
}

/// What accepted submissions of one GPU showed of its loaded idle (issue
/// #54): the lowest power sample of their server iterations (between
/// requests a board draws its loaded idle), over how many submissions and
/// distinct submitters. The store keeps each submission's figure on write.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct ObservedIdle {
    pub lowest_w: f64,
    pub submissions: u64,
    pub submitters: u64,
}

/// Distinct submitters whose accepted runs must show a loaded idle before
/// it replaces a guessed catalogue figure in the idle floor.
pub const OBSERVED_IDLE_SUBMITTERS: u64 = 3;

/// `physics.idle_floor` judged again on the loaded idle accepted runs
/// showed, when the catalogue's figure is a guess and at least
/// [`OBSERVED_IDLE_SUBMITTERS`] submitters showed it: a measured basis, so
/// unlike the guess it may fail. None when the catalogue's figure stands
/// (measured, or too few submitters). Judged on the iterations' metrics
/// (the check runs after the bundle's own, beside consistency), so the
/// place it names is the model, scenario, rate and iteration.
pub fn idle_floor_observed(
    gpu: &crate::catalog::GpuSpec,
    runs: &[crate::derived::IterationMetrics],
    seen: &ObservedIdle,
    t: &Thresholds,
) -> Option<CheckResult> {
    if !gpu.idle_is_guessed() || seen.submitters < OBSERVED_IDLE_SUBMITTERS {
        return None;
    }
    let floor = t.idle_floor_factor * seen.lowest_w;
    let mut idle = Tally::new(IDLE_FLOOR, Some(floor));
    for r in runs.iter().filter(|r| r.power_samples > 0) {
        idle.at_least(r.power_mean_w, floor, || Location {
            model: Some(r.model.clone()),
            scenario: Some(r.scenario),
            lambda_qps: r.lambda_qps,
            iteration: Some(r.iteration),
            ..Location::default()
        });
    }
    let (lowest, n, who) = (seen.lowest_w, seen.submissions, seen.submitters);
    Some(idle.finish(|v| {
        format!(
            "mean power {v:.1} W (loaded idle {lowest:.0} W: the lowest seen in {n} accepted submissions from {who} submitters, in place of the catalogue's guess of {:.0} W)",
            gpu.idle_w
        )
    }))
}

/// Judged on each configuration's median: at 0.017 req/s an iteration may
/// hold a single short request, and 300 s of loaded-idle power over one
/// answer legitimately exceeds any per-token bound; the median over the
/// iterations does not. The message names the iteration furthest out.
fn energy_per_token(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let limit = t.max_energy_per_token_j;
    let mut tally =
        Tally::new(ENERGY_PER_TOKEN, Some(limit)).when_empty("no iteration generated tokens");
    for c in input.configurations {
        let median = c.energy_per_token_j.median;
        // The configuration's iteration with the most energy per token.
        let worst = input
            .rows
            .iter()
            .zip(input.runs)
            .filter(|(_, run)| {
                run.model == c.model && run.scenario == c.scenario && run.lambda_qps == c.lambda_qps
            })
            .filter_map(|(row, run)| run.energy_per_token_j.map(|e| (row, e)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((row, _)) = worst else { continue };
        // Zero or negative is as wrong as too much; rank it as far out.
        let badness = if median > 0.0 { median } else { f64::INFINITY };
        tally.observe(median, badness, !(median > 0.0 && median <= limit), || {
            Location::of_row(row)
        });
    }
    tally.finish(|v| format!("median {v:.3} J per generated token over the configuration's iterations (the iteration named has the most)"))
}

fn temperature(input: &CheckInput, t: &Thresholds) -> CheckResult {
    let (lo, hi) = (t.min_temperature_c, t.max_temperature_c);
    let mut tally = Tally::new(TEMPERATURE, Some(hi));
    for r in input.rows {
        if r.temperature_c.n == 0 {
            tally.missing("no GPU temperature samples (gpu_0_temp is empty)", || {
                Location::of_row(r)
            });
            continue;
        }
        let s = &r.temperature_c;
        // The sample furthest outside (or closest to leaving) the band.
        let (figure, badness) = if hi - s.max <= s.min - lo {
            (s.max, s.max - hi)
        } else {
            (s.min, lo - s.min)
        };
        tally.observe(figure, badness, s.min < lo || s.max > hi, || {
            Location::of_row(r)
        });
    }
    tally.finish(|v| format!("temperature sample of {v:.0} °C (allowed {lo:.0}–{hi:.0} °C)"))
}

#[cfg(test)]
mod tests {
    //! Each physics rule at its edge, with the default thresholds and the
    //! L4's catalogue row (TDP 72 W, loaded idle 24 W): a figure just
    //! inside passes, just outside fails and is named in the message.

    use super::*;
    use crate::checks::test_support::{judge, row};
    use crate::checks::CheckOutcome;

    fn flat(w: f64) -> Vec<f64> {
        vec![w; 11]
    }

    #[test]
    fn mean_power_at_1_1_tdp() {
        // 1.1 × 72 W = 79.2 W.
        assert_eq!(
            judge(MEAN_POWER.id, row(&flat(79.1), &[40.0], 100)).0,
            CheckOutcome::Pass
        );
        let (o, m) = judge(MEAN_POWER.id, row(&flat(79.3), &[40.0], 100));
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("79.3 W"), "{m}");
    }

    #[test]
    fn peak_power_at_1_7_tdp() {
        // 1.7 × 72 W = 122.4 W; one sample among 60 W ones.
        let mut w = flat(60.0);
        w[5] = 122.3;
        assert_eq!(
            judge(PEAK_POWER.id, row(&w, &[40.0], 100)).0,
            CheckOutcome::Pass
        );
        w[5] = 122.5;
        let (o, m) = judge(PEAK_POWER.id, row(&w, &[40.0], 100));
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("122.5 W"), "{m}");
    }

    #[test]
    fn an_observed_idle_from_three_submitters_replaces_a_guess() {
        // An RTX 5090 (TDP 575 W, loaded idle guessed at 86 W). Accepted
        // runs showed 30 W at the lowest: from three submitters the floor is
        // 0.5 × 30 = 15 W, so 20 W passes and 14 W fails, named; from two,
        // the guess stands (None).
        let gpu = crate::catalog::gpu_by_id("rtx-5090").expect("the RTX 5090");
        assert!(gpu.idle_is_guessed());
        let t = Thresholds::default();
        let run = |w: f64, i: u32| {
            let mut r = crate::derived::derive(&row(&[w; 10], &[50.0; 10], 100));
            r.iteration = i;
            r
        };
        let seen = ObservedIdle {
            lowest_w: 30.0,
            submissions: 5,
            submitters: 3,
        };
        let ok = idle_floor_observed(gpu, &[run(20.0, 1)], &seen, &t).unwrap();
        assert_eq!(ok.outcome, crate::checks::CheckOutcome::Pass, "{ok:?}");
        let bad = idle_floor_observed(gpu, &[run(20.0, 1), run(14.0, 2)], &seen, &t).unwrap();
        assert_eq!(bad.outcome, crate::checks::CheckOutcome::Fail, "{bad:?}");
        assert!(bad.message.contains("mean power 14.0 W"), "{}", bad.message);
        assert!(
            bad.message
                .contains("the lowest seen in 5 accepted submissions from 3 submitters"),
            "{}",
            bad.message
        );
        assert_eq!(bad.threshold, Some(15.0));
        let two = ObservedIdle {
            submitters: 2,
            ..seen
        };
        assert_eq!(idle_floor_observed(gpu, &[run(14.0, 1)], &two, &t), None);
        // A measured catalogue figure is never replaced.
        let l4 = crate::catalog::gpu_by_id("l4").unwrap();
        assert!(!l4.idle_is_guessed());
        assert_eq!(idle_floor_observed(l4, &[run(1.0, 1)], &seen, &t), None);
    }

    #[test]
    fn idle_floor_at_half_the_loaded_idle_power() {
        // 0.5 × 24 W = 12 W.
        assert_eq!(
            judge(IDLE_FLOOR.id, row(&flat(12.1), &[40.0], 100)).0,
            CheckOutcome::Pass
        );
        let (o, m) = judge(IDLE_FLOOR.id, row(&flat(11.9), &[40.0], 100));
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("11.9 W"), "{m}");
    }

    #[test]
    fn a_guessed_idle_warns_and_never_rejects() {
        use crate::bundle::harness::Scenario;
        use crate::checks::test_support::{manifest, result_of, row_of};
        // An RTX 5090 (TDP 575 W; loaded idle guessed at 15 %, 86 W, floor
        // 0.5 × 86 = 43 W) serving 0.017 req/s with a 30 W loaded idle:
        // below the guessed floor, an honest run. A warning, naming the
        // guess; the L4's measured idle still rejects (above).
        let mut m = manifest();
        m.system.gpu.name = "NVIDIA GeForce RTX 5090".into();
        let r = result_of(
            IDLE_FLOOR.id,
            &m,
            None,
            vec![row_of(Scenario::Server, 300.0, &[30.0; 3000], &[40.0], 100)],
        );
        assert_eq!(r.outcome, CheckOutcome::Warn, "{}", r.message);
        assert_eq!(r.severity, crate::checks::Severity::Soft);
        assert_eq!(r.figure, Some(30.0));
        assert_eq!(r.threshold, Some(43.0));
        assert!(
            r.message.contains("The limit rests on a guess: its loaded idle, 86 W, is guessed: 15 % of its 575 W TDP; a guess never rejects"),
            "{}",
            r.message
        );
        // Above the guessed floor it passes, still naming the guess.
        let r = result_of(
            IDLE_FLOOR.id,
            &m,
            None,
            vec![row_of(Scenario::Server, 300.0, &[50.0; 3000], &[40.0], 100)],
        );
        assert_eq!(r.outcome, CheckOutcome::Pass);
        assert!(r.message.contains("rests on a guess"), "{}", r.message);
    }

    #[test]
    fn temperature_between_20_and_95_c() {
        for (temps, outcome) in [
            (vec![20.0, 95.0], CheckOutcome::Pass),
            (vec![40.0, 96.0], CheckOutcome::Fail),
            (vec![19.0, 40.0], CheckOutcome::Fail),
        ] {
            let (o, m) = judge(TEMPERATURE.id, row(&flat(50.0), &temps, 100));
            assert_eq!(o, outcome, "{temps:?}: {m}");
        }
    }

    #[test]
    fn energy_per_token_at_100_j() {
        // 11 samples 0.1 s apart at P W: the trapezoid is 0.1 × 10 × P =
        // P J; over 1 token, P J/token.
        assert_eq!(
            judge(ENERGY_PER_TOKEN.id, row(&flat(99.0), &[40.0], 1)).0,
            CheckOutcome::Pass
        );
        let (o, m) = judge(ENERGY_PER_TOKEN.id, row(&flat(101.0), &[40.0], 1));
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("101.000 J"), "{m}");
    }

    #[test]
    fn rows_without_power_samples_are_left_to_the_sampling_check() {
        let r = judge(MEAN_POWER.id, row(&[], &[40.0], 100));
        assert_eq!(r.0, CheckOutcome::Skip, "{}", r.1);
    }

    #[test]
    fn the_temperature_named_is_the_one_furthest_out() {
        use crate::checks::test_support::{manifest, result_of};
        let figure = |temps: &[f64]| {
            result_of(
                TEMPERATURE.id,
                &manifest(),
                None,
                vec![row(&flat(50.0), temps, 100)],
            )
            .figure
        };
        // Inside: the nearer edge (95 − 90 = 5 ties 25 − 20 = 5: the top).
        assert_eq!(figure(&[25.0, 90.0]), Some(90.0));
        assert_eq!(figure(&[22.0, 80.0]), Some(22.0));
        // Outside on both sides: 15 is 5 under, 97 only 2 over.
        assert_eq!(figure(&[15.0, 97.0]), Some(15.0));
        assert_eq!(figure(&[30.0, 96.0]), Some(96.0));
    }

    #[test]
    fn zero_energy_per_token_fails_and_outranks_a_high_one() {
        use crate::checks::test_support::{judge_rows, manifest, result_of};
        // Nothing drawn over 100 tokens: 0 J per token.
        let (o, m) = judge(ENERGY_PER_TOKEN.id, row(&flat(0.0), &[40.0], 100));
        assert_eq!(o, CheckOutcome::Fail);
        assert!(m.contains("median 0.000 J"), "{m}");
        // Two models: 0 J (Qwen) and 101 J (GPT-2) per token; the zero is
        // the worse (ranked as far out), and each is named by its own row.
        let mut other = row(&flat(101.0), &[40.0], 1);
        other.model = "openai-community/gpt2".into();
        other.line = 3;
        let rows = vec![row(&flat(0.0), &[40.0], 100), other.clone()];
        let r = result_of(ENERGY_PER_TOKEN.id, &manifest(), None, rows);
        assert_eq!((r.failing, r.figure), (2, Some(0.0)));
        assert_eq!(r.location.unwrap().row, Some(2));
        // GPT-2 alone over the limit, beside a Qwen whose iteration draws
        // more energy per token in absolute terms but passes: GPT-2's row.
        let rows = vec![row(&flat(99.0), &[40.0], 1), other];
        let (o, _) = judge_rows(ENERGY_PER_TOKEN.id, rows.clone());
        assert_eq!(o, CheckOutcome::Fail);
        let r = result_of(ENERGY_PER_TOKEN.id, &manifest(), None, rows);
        assert_eq!(
            r.location.unwrap().model.as_deref(),
            Some("openai-community/gpt2")
        );
    }

    #[test]
    fn of_two_configurations_over_the_limit_the_higher_is_named() {
        use crate::checks::test_support::{manifest, result_of};
        let mut gpt2 = row(&flat(150.0), &[40.0], 1);
        gpt2.model = "openai-community/gpt2".into();
        let rows = vec![row(&flat(101.0), &[40.0], 1), gpt2];
        let r = result_of(ENERGY_PER_TOKEN.id, &manifest(), None, rows);
        assert_eq!((r.failing, r.figure), (2, Some(150.0)));
    }

    #[test]
    fn of_two_iterations_out_of_band_the_one_further_out_is_named() {
        use crate::checks::test_support::{judge_rows, manifest, result_of};
        // One 5 °C under 20 °C, one 2 °C over 95 °C: the first.
        let mut over = row(&flat(50.0), &[40.0, 97.0], 100);
        over.iteration = 1;
        let rows = vec![row(&flat(50.0), &[15.0, 40.0], 100), over];
        assert_eq!(
            judge_rows(TEMPERATURE.id, rows.clone()).0,
            CheckOutcome::Fail
        );
        let r = result_of(TEMPERATURE.id, &manifest(), None, rows);
        assert_eq!(r.figure, Some(15.0));
    }

    #[test]
    fn the_temperature_closest_to_leaving_is_ranked_by_its_margin() {
        use crate::checks::test_support::{manifest, result_of};
        let figure = |a: &[f64], b: &[f64]| {
            let mut second = row(&flat(50.0), b, 100);
            second.iteration = 1;
            let rows = vec![row(&flat(50.0), a, 100), second];
            result_of(TEMPERATURE.id, &manifest(), None, rows).figure
        };
        // Both inside: 22 °C is 2 from the floor, 90 °C 5 from the top.
        assert_eq!(figure(&[22.0, 50.0], &[40.0, 90.0]), Some(22.0));
        // Both outside: −10 °C is 30 under, 110 °C 15 over.
        assert_eq!(figure(&[-10.0, 40.0], &[40.0, 110.0]), Some(-10.0));
    }
}

//! Derived metrics, computed by the service from the harness CSVs alone.
//!
//! Per iteration (HARNESS-FORMAT.md, "Derived metrics"): energy from the
//! power trace by the meter's own rule (the trapezoid over the samples at
//! their real spacing, [`ENERGY_RULE`]), energy per token and per request,
//! throughput, power statistics, and for server runs TTFT / end-to-end
//! percentiles and the inter-token latency. Per configuration (model ×
//! scenario × arrival rate): median, min, max and coefficient of variation
//! over iterations.

use serde::{Deserialize, Serialize};

use crate::bundle::harness::{IterationRow, Scenario};
use crate::stats::{percentile, percentile_sorted};

/// The harness's energy meter (ai-energymeter 2.0.2, `gpu_sampling_rate`
/// 0.1) reads NVML, then sleeps this long: samples are this far apart plus
/// the time the reads take (more when its thread waits for Python's GIL
/// beside vLLM), never less.
pub const METER_PERIOD_S: f64 = 0.1;

/// How published energy is derived from a power trace; named on the
/// snapshot card and `/methodology` so a figure says which rule made it.
/// Version 1 (until 2026-12) was mean(samples) × measurement_duration,
/// which overstates by about one sampling period ÷ duration; version 2
/// (December 2026) was the trapezoid at exactly 0.1 s, which understates
/// by as much as the sampler ran late (7.4 % at 0.108 s).
pub const ENERGY_RULE: &str =
    "trapezoid over the power samples at their real spacing, measurement_duration ÷ samples (energy rule 3)";

/// The number in [`ENERGY_RULE`]: stored with each submission, so `db
/// rebuild` knows which stored runs were derived by an older rule.
pub const ENERGY_RULE_VERSION: i64 = 3;

/// The seconds between an iteration's power samples, as the files carry
/// them: the meter's thread takes a sample, sleeps, and stops when its
/// sleep ends after `end()` was called, so its `measurement_duration`
/// (from `begin()` to the end of `end()`) holds n whole periods plus the
/// thread's start and join, a few milliseconds (0.2 % of a 3.5 s batch
/// iteration in the harness-written fixtures, 0.03 % of a 10 s server run).
/// The CSV has no per-sample timestamps, so this is the only spacing the
/// files tell; it is the mean of the real spacings, which a late sampler
/// stretches (0.1006–0.111 s measured beside vLLM). None without samples
/// or a positive duration.
pub fn sample_spacing_s(duration_s: f64, samples: u64) -> Option<f64> {
    (samples > 0 && duration_s > 0.0 && duration_s.is_finite()).then(|| duration_s / samples as f64)
}

/// The energy of one iteration by [`ENERGY_RULE`]: the trapezoid over the
/// power samples at their real spacing ([`sample_spacing_s`]), which is
/// what the meter's own `np.trapezoid` over its timestamps gives when the
/// spacings are even, and its mean when they are not.
pub fn trace_energy_j(row: &IterationRow) -> f64 {
    sample_spacing_s(row.duration_s, row.power_w.n)
        .map_or(0.0, |spacing| row.power_w.trapezoid(spacing))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IterationMetrics {
    pub model: String,
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
    pub iteration: u32,
    pub started_at: String,
    pub duration_s: f64,
    pub requests_ok: u64,
    pub requests_failed: u64,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    /// The trapezoid over the power trace at its real spacing ([`ENERGY_RULE`]).
    pub gpu_energy_j: f64,
    pub reported_gpu_energy_j: f64,
    pub cpu_energy_j: f64,
    pub dram_energy_j: f64,
    pub power_mean_w: f64,
    pub power_max_w: f64,
    pub power_min_w: f64,
    pub power_samples: u64,
    pub temp_first_c: f64,
    pub temp_max_c: f64,
    pub energy_per_token_j: Option<f64>,
    pub energy_per_request_j: Option<f64>,
    pub throughput_tok_s: f64,
    pub itl_s: Option<f64>,
    pub ttft_p50_s: Option<f64>,
    pub ttft_p90_s: Option<f64>,
    pub e2e_p50_s: Option<f64>,
    pub e2e_p90_s: Option<f64>,
    /// Server: how many requests the per-request latency lists hold (the
    /// successful ones); absent on batch runs.
    #[serde(default)]
    pub timed_requests: Option<u64>,
    /// Server: Σ time to first token over those requests, seconds.
    #[serde(default)]
    pub ttft_sum_s: Option<f64>,
    /// Server: Σ end-to-end latency over those requests, seconds.
    #[serde(default)]
    pub e2e_sum_s: Option<f64>,
    /// Server: requests in the system on average over the measurement
    /// window, by Little's law: Σ end-to-end latency ÷ measurement duration.
    #[serde(default)]
    pub mean_concurrency: Option<f64>,
    /// Server: the part of `gpu_energy_j` attributed to prefill by time,
    /// `gpu_energy_j` × Σ TTFT ÷ Σ end-to-end latency (an attribution, not
    /// a measurement: the GPU serves prefill and decode of different
    /// requests at once, and TTFT includes queueing).
    #[serde(default)]
    pub prefill_energy_j: Option<f64>,
}

impl IterationMetrics {
    /// The paper drops iterations that generated no tokens.
    pub fn counts(&self) -> bool {
        self.generation_tokens > 0
    }

    /// Σ TTFT ÷ Σ end-to-end latency: the share of request time, and so of
    /// energy by [`IterationMetrics::prefill_energy_j`]'s attribution, that
    /// is prefill.
    pub fn prefill_share(&self) -> Option<f64> {
        ratio(self.ttft_sum_s?, self.e2e_sum_s?)
    }
}

/// Median, min, max and coefficient of variation of one figure over iterations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation / mean; 0 for a single value.
    pub cv: f64,
    /// Order-statistic interval for the median over iterations, with the
    /// confidence it achieves (absent in rows stored before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<crate::domain::Interval>,
}

impl Spread {
    /// The interval for the median: the stored one, or min–max with the
    /// coverage min–max has for `n` values (what older rows can say).
    pub fn median_interval(&self, n: u32) -> crate::domain::Interval {
        self.interval.unwrap_or(crate::domain::Interval {
            lo: self.min,
            hi: self.max,
            confidence: if n > 1 {
                crate::stats::order_statistic_coverage(n as usize, 1)
            } else {
                0.0
            },
        })
    }
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let cv = if v.len() > 1 && mean != 0.0 {
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            var.sqrt() / mean.abs()
        } else {
            0.0
        };
        Some(Spread {
            median: percentile_sorted(&v, 0.5),
            min: v[0],
            max: v[v.len() - 1],
            cv,
            interval: crate::stats::median_interval(&v),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigurationMetrics {
    pub model: String,
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
    /// Iterations that count (generated tokens).
    pub iterations: u32,
    pub energy_per_token_j: Spread,
    pub energy_per_request_j: Option<Spread>,
    pub throughput_tok_s: Spread,
    pub power_mean_w: Spread,
    pub itl_s: Option<Spread>,
    pub ttft_p50_s: Option<Spread>,
    pub e2e_p50_s: Option<Spread>,
    /// Server: mean requests in the system (Little's law) over iterations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_concurrency: Option<Spread>,
    /// Server: Σ TTFT ÷ Σ end-to-end latency over iterations, the share of
    /// energy attributed to prefill (the rest to decode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_energy_share: Option<Spread>,
}

impl ConfigurationMetrics {
    /// Whether `model`, `scenario` and `lambda_qps` name this configuration.
    pub fn is_of(&self, model: &str, scenario: Scenario, lambda_qps: Option<f64>) -> bool {
        self.model == model && self.scenario == scenario && self.lambda_qps == lambda_qps
    }
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

pub fn derive(row: &IterationRow) -> IterationMetrics {
    let energy = trace_energy_j(row);
    let sums = match row.scenario {
        Scenario::Batch => None,
        Scenario::Server => Some(RequestSums {
            timed: row.e2e_s.len() as u64,
            ttft_s: row.ttft_s.iter().sum(),
            e2e_s: row.e2e_s.iter().sum(),
        }),
    };
    let (itl, ttft_p50, ttft_p90, e2e_p50, e2e_p90) = match row.scenario {
        Scenario::Batch => (
            ratio(row.duration_s, row.generation_tokens_total as f64),
            None,
            None,
            None,
            None,
        ),
        Scenario::Server => {
            // Mean over requests with ≥ 2 tokens of (e2e − ttft)/(tokens − 1).
            let per_request: Vec<f64> = row
                .e2e_s
                .iter()
                .zip(&row.ttft_s)
                .zip(&row.request_generation_tokens)
                .filter(|(_, &tokens)| tokens >= 2.0)
                .map(|((e2e, ttft), tokens)| (e2e - ttft) / (tokens - 1.0))
                .collect();
            let itl = (!per_request.is_empty())
                .then(|| per_request.iter().sum::<f64>() / per_request.len() as f64);
            (
                itl,
                percentile(&row.ttft_s, 0.5),
                percentile(&row.ttft_s, 0.9),
                percentile(&row.e2e_s, 0.5),
                percentile(&row.e2e_s, 0.9),
            )
        }
    };
    IterationMetrics {
        model: row.model.clone(),
        scenario: row.scenario,
        lambda_qps: row.lambda_qps,
        iteration: row.iteration,
        started_at: row.started_at.clone(),
        duration_s: row.duration_s,
        requests_ok: row.requests_ok,
        requests_failed: row.requests_failed,
        prompt_tokens: row.prompt_tokens_total,
        generation_tokens: row.generation_tokens_total,
        gpu_energy_j: energy,
        reported_gpu_energy_j: row.reported_gpu_energy_j,
        cpu_energy_j: row.cpu_energy_j,
        dram_energy_j: row.dram_energy_j,
        power_mean_w: row.power_w.mean(),
        power_max_w: row.power_w.max,
        power_min_w: row.power_w.min,
        power_samples: row.power_w.n,
        temp_first_c: row.temperature_c.first,
        temp_max_c: row.temperature_c.max,
        energy_per_token_j: ratio(energy, row.generation_tokens_total as f64),
        energy_per_request_j: ratio(energy, row.requests_ok as f64),
        throughput_tok_s: ratio(row.generation_tokens_total as f64, row.duration_s).unwrap_or(0.0),
        itl_s: itl,
        ttft_p50_s: ttft_p50,
        ttft_p90_s: ttft_p90,
        e2e_p50_s: e2e_p50,
        e2e_p90_s: e2e_p90,
        timed_requests: sums.map(|s| s.timed),
        ttft_sum_s: sums.map(|s| s.ttft_s),
        e2e_sum_s: sums.map(|s| s.e2e_s),
        mean_concurrency: sums.and_then(|s| ratio(s.e2e_s, row.duration_s)),
        prefill_energy_j: sums
            .and_then(|s| ratio(s.ttft_s, s.e2e_s))
            .map(|share| energy * share),
    }
}

/// A server iteration's per-request sums, from the results CSV's lists.
#[derive(Clone, Copy)]
struct RequestSums {
    timed: u64,
    ttft_s: f64,
    e2e_s: f64,
}

/// The first derived figure of an iteration that is NaN or infinite.
pub fn first_non_finite(m: &IterationMetrics) -> Option<&'static str> {
    let figures = [
        ("duration_s", Some(m.duration_s)),
        ("gpu_energy_j", Some(m.gpu_energy_j)),
        ("reported_gpu_energy_j", Some(m.reported_gpu_energy_j)),
        ("cpu_energy_j", Some(m.cpu_energy_j)),
        ("dram_energy_j", Some(m.dram_energy_j)),
        ("power_mean_w", Some(m.power_mean_w)),
        ("power_max_w", Some(m.power_max_w)),
        ("power_min_w", Some(m.power_min_w)),
        ("temp_first_c", Some(m.temp_first_c)),
        ("temp_max_c", Some(m.temp_max_c)),
        ("energy_per_token_j", m.energy_per_token_j),
        ("energy_per_request_j", m.energy_per_request_j),
        ("throughput_tok_s", Some(m.throughput_tok_s)),
        ("itl_s", m.itl_s),
        ("ttft_p50_s", m.ttft_p50_s),
        ("ttft_p90_s", m.ttft_p90_s),
        ("e2e_p50_s", m.e2e_p50_s),
        ("e2e_p90_s", m.e2e_p90_s),
        ("ttft_sum_s", m.ttft_sum_s),
        ("e2e_sum_s", m.e2e_sum_s),
        ("mean_concurrency", m.mean_concurrency),
        ("prefill_energy_j", m.prefill_energy_j),
    ];
    figures
        .into_iter()
        .find(|(_, v)| v.is_some_and(|x| !x.is_finite()))
        .map(|(name, _)| name)
}

/// The first spread of a configuration with a non-finite part (a CV of
/// finite but huge values can overflow).
pub fn first_non_finite_spread(c: &ConfigurationMetrics) -> Option<&'static str> {
    let finite = |s: &Spread| {
        [s.median, s.min, s.max, s.cv].iter().all(|v| v.is_finite())
            && s.interval
                .is_none_or(|i| i.lo.is_finite() && i.hi.is_finite())
    };
    [
        ("energy_per_token_j", Some(&c.energy_per_token_j)),
        ("energy_per_request_j", c.energy_per_request_j.as_ref()),
        ("throughput_tok_s", Some(&c.throughput_tok_s)),
        ("power_mean_w", Some(&c.power_mean_w)),
        ("itl_s", c.itl_s.as_ref()),
        ("ttft_p50_s", c.ttft_p50_s.as_ref()),
        ("e2e_p50_s", c.e2e_p50_s.as_ref()),
        ("mean_concurrency", c.mean_concurrency.as_ref()),
        ("prefill_energy_share", c.prefill_energy_share.as_ref()),
    ]
    .into_iter()
    .find(|(_, s)| s.is_some_and(|s| !finite(s)))
    .map(|(name, _)| name)
}

/// Groups iterations into configurations, in first-seen order.
pub fn aggregate(iterations: &[IterationMetrics]) -> Vec<ConfigurationMetrics> {
    let mut keys: Vec<(&str, Scenario, Option<u64>)> = Vec::new();
    for it in iterations {
        let k = (
            it.model.as_str(),
            it.scenario,
            it.lambda_qps.map(f64::to_bits),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .filter_map(|(model, scenario, lambda)| {
            let group: Vec<&IterationMetrics> = iterations
                .iter()
                .filter(|i| {
                    i.model == model
                        && i.scenario == scenario
                        && i.lambda_qps.map(f64::to_bits) == lambda
                        && i.counts()
                })
                .collect();
            let collect = |f: fn(&IterationMetrics) -> Option<f64>| -> Vec<f64> {
                group.iter().filter_map(|i| f(i)).collect()
            };
            Some(ConfigurationMetrics {
                model: model.to_string(),
                scenario,
                lambda_qps: lambda.map(f64::from_bits),
                iterations: group.len() as u32,
                energy_per_token_j: Spread::of(&collect(|i| i.energy_per_token_j))?,
                energy_per_request_j: Spread::of(&collect(|i| i.energy_per_request_j)),
                throughput_tok_s: Spread::of(&collect(|i| Some(i.throughput_tok_s)))?,
                power_mean_w: Spread::of(&collect(|i| Some(i.power_mean_w)))?,
                itl_s: Spread::of(&collect(|i| i.itl_s)),
                ttft_p50_s: Spread::of(&collect(|i| i.ttft_p50_s)),
                e2e_p50_s: Spread::of(&collect(|i| i.e2e_p50_s)),
                mean_concurrency: Spread::of(&collect(|i| i.mean_concurrency)),
                prefill_energy_share: Spread::of(&collect(IterationMetrics::prefill_share)),
            })
        })
        .collect()
}

/// What `db rebuild` derives again from a bundle stored earlier.
#[derive(Debug, Clone)]
pub struct StoredDerivation {
    pub protocol: crate::domain::Protocol,
    pub content_sha256: String,
    /// Every iteration, by today's rules ([`ENERGY_RULE`]), in
    /// the order ingest stores them.
    pub runs: Vec<IterationMetrics>,
    pub configurations: Vec<ConfigurationMetrics>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::harness::{parse_results, result_columns};
    use crate::stats::median_absolute_deviation;

    /// One results row as the harness's pandas writes it (list cells as
    /// Python lists), with every value chosen by hand so that each
    /// derived figure below can be worked out on paper, by the rules
    /// `/methodology` states (energy = the trapezoid over the samples at
    /// duration ÷ samples;
    /// percentiles interpolated between closest ranks).
    fn csv(scenario: Scenario, row: &[&str]) -> Vec<u8> {
        let cols = result_columns(scenario);
        assert_eq!(cols.len(), row.len(), "{cols:?}");
        let quote = |c: &&str| {
            if c.contains(',') {
                format!("\"{c}\"")
            } else {
                c.to_string()
            }
        };
        let row: Vec<String> = row.iter().map(quote).collect();
        format!("{}\n{}\n", cols.join(","), row.join(",")).into_bytes()
    }

    const SAMPLING: &str = "SamplingParams(n=1, temperature=0.0, max_tokens=256)";

    /// Batch: 2.0 s, four 10 Hz power samples, 4 requests answered (1
    /// failed), 46 tokens.
    fn batch_row() -> IterationRow {
        let data = csv(
            Scenario::Batch,
            &[
                "2.0",
                "1764547200.0",
                "2025-12-01T00:00:00.000000+00:00",
                "[1000.0, 1000.0, 1000.0, 1000.0]",
                "[90.0, 95.0, 97.0, 99.0]",
                "[100.0, 110.0, 120.0, 130.0]",
                "[50.0, 51.0, 52.0, 53.0]",
                "[1800.0, 1800.0, 1800.0, 1800.0]",
                "[14000.0, 14000.0, 14000.0, 14000.0]",
                "[5.0, 5.0, 5.0, 5.0]",
                "120.0",
                "20.0",
                "230.0",
                "0.0",
                "[]",
                "[2.0]",
                "[23.0]",
                "4",
                // One request failed: per-request energy divides by the 4 that
                // answered, not by 5.
                "1",
                "80",
                "46",
                "[20, 20, 20, 20]",
                "[10, 12, 11, 13]",
                "0",
                SAMPLING,
                "Qwen/Qwen2.5-0.5B-Instruct",
                "5",
                "5",
            ],
        );
        parse_results("m/llm_batch_optimized_results.csv", &data, Scenario::Batch)
            .unwrap()
            .remove(0)
    }

    /// Server at 0.5 req/s: 10.0 s, five power samples, five requests.
    fn server_row() -> IterationRow {
        let data = csv(
            Scenario::Server,
            &[
                "10.0",
                "1764547300.0",
                "2025-12-01T00:01:40.000000+00:00",
                "[1000.0, 1000.0, 1000.0, 1000.0, 1000.0]",
                "[10.0, 60.0, 70.0, 60.0, 10.0]",
                "[200.0, 220.0, 240.0, 260.0, 280.0]",
                "[50.0, 51.0, 52.0, 53.0, 54.0]",
                "[1800.0, 1800.0, 1800.0, 1800.0, 1800.0]",
                "[14000.0, 14000.0, 14000.0, 14000.0, 14000.0]",
                "[5.0, 5.0, 5.0, 5.0, 5.0]",
                "600.0",
                "98.0",
                "2400.0",
                "0.0",
                "[0.1, 0.2, 0.3, 0.4, 0.5]",
                "[1.1, 2.2, 2.3, 0.9, 3.5]",
                "[10.0, 7.27, 9.13, 1.11, 8.86]",
                "5",
                "0",
                "100",
                "80",
                "[20, 20, 20, 20, 20]",
                "[11, 16, 21, 1, 31]",
                SAMPLING,
                "Qwen/Qwen2.5-0.5B-Instruct",
                "0.5",
                "0",
                "5",
                "5",
            ],
        );
        parse_results(
            "m/llm_server_optimized_results.csv",
            &data,
            Scenario::Server,
        )
        .unwrap()
        .remove(0)
    }

    fn close(got: f64, want: f64) {
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "got {got}, want {want}"
        );
    }

    /// What the meter does (ai-energymeter 2.0.2): `begin()` notes the
    /// time, its thread starts `start_s` later and loops `sample; sleep`,
    /// each loop `spacing_s` long give or take `jitter_s` (the GIL); `end()`
    /// sets the stop flag, the thread leaves after its sleep, and the join
    /// returns `join_s` later. The meter integrates with `np.trapezoid`
    /// over the real timestamps, written out here on its own: Σ (t[k+1] −
    /// t[k]) × (p[k] + p[k+1]) / 2. Returns (duration, samples, energy).
    fn meter(
        seconds: f64,
        spacing_s: f64,
        jitter_s: f64,
        power: impl Fn(f64) -> f64,
    ) -> (f64, Vec<f64>, f64) {
        let (start_s, join_s) = (0.003, 0.002);
        let mut t = start_s;
        let (mut times, mut watts) = (Vec::new(), Vec::new());
        let mut k = 0u32;
        while t < seconds {
            times.push(t);
            watts.push(power(t));
            // A fixed pattern of late and early loops around the mean.
            let wobble = [0.0, 1.0, -0.5, 0.8, -1.0, -0.3][k as usize % 6] * jitter_s;
            t += spacing_s + wobble;
            k += 1;
        }
        // The loop after the last sample ends its sleep, sees the flag.
        let duration = t + join_s;
        let energy: f64 = (1..times.len())
            .map(|i| (times[i] - times[i - 1]) * (watts[i] + watts[i - 1]) / 2.0)
            .sum();
        (duration, watts, energy)
    }

    #[test]
    fn energy_rule_3_by_hand_at_0_108_s() {
        // 28 samples of 100 W, 0.108 s apart: they span 27 × 0.108 =
        // 2.916 s, and the meter reports 291.6 J. The duration holds the
        // 28 loops and 5 ms of start and join: 3.029 s. Spacing 3.029 /
        // 28 = 0.1081786 s; trapezoid 27 × 0.1081786 × 100 = 292.08 J,
        // 0.16 % over the meter. Rule 2 (0.1 s) gave 270 J: 7.4 % low.
        let (duration, watts, energy) = meter(3.0, 0.108, 0.0, |_| 100.0);
        assert_eq!(watts.len(), 28);
        assert!((duration - 3.029).abs() < 1e-9, "{duration}");
        assert!((energy - 291.6).abs() < 1e-9, "{energy}");
        let row =
            crate::checks::test_support::row_of(Scenario::Batch, duration, &watts, &[40.0], 100);
        close(trace_energy_j(&row), 27.0 * 3.029 / 28.0 * 100.0);
        assert!((trace_energy_j(&row) - 292.08).abs() < 0.005);
        assert_eq!(sample_spacing_s(3.029, 28), Some(3.029 / 28.0));
        assert_eq!(sample_spacing_s(3.029, 0), None);
        assert_eq!(sample_spacing_s(0.0, 28), None);
        // One sample spans no time: 0 J, as the meter's trapezoid.
        let one = crate::checks::test_support::row_of(Scenario::Batch, 0.1, &[100.0], &[40.0], 1);
        assert_eq!(trace_energy_j(&one), 0.0);
    }

    #[test]
    fn the_published_energy_is_the_meters_at_any_sampler_pace() {
        // A load that rises, holds and falls (idle 30 W, busy 200 W with a
        // ripple), sampled on time and late, with and without jitter,
        // over a 3 s batch iteration and a 300 s server run: the published
        // energy stays within 0.5 % of the meter's own.
        let load = |t: f64, length: f64| {
            let busy = if t < 0.3 || t > length - 0.3 {
                30.0
            } else {
                200.0
            };
            busy + 10.0 * (t * 2.1).sin()
        };
        for scenario in [Scenario::Batch, Scenario::Server] {
            for seconds in [3.0, 300.0] {
                for spacing in [0.100, 0.104, 0.108, 0.115, 0.125, 0.150] {
                    for jitter in [0.0, 0.004] {
                        let (duration, watts, meter_j) =
                            meter(seconds, spacing, jitter, |t| load(t, seconds));
                        let row = crate::checks::test_support::row_of(
                            scenario,
                            duration,
                            &watts,
                            &[40.0],
                            100,
                        );
                        let published = trace_energy_j(&row);
                        let gap = (published / meter_j - 1.0) * 100.0;
                        assert!(
                            gap.abs() < 0.5,
                            "{scenario:?} {seconds} s at {spacing} s ± {jitter}: {published} J against the meter's {meter_j} J ({gap:+.3} %)"
                        );
                        // Rule 2 at 0.1 s read low by about the lateness.
                        let rule_2 = row.power_w.trapezoid(METER_PERIOD_S);
                        if spacing >= 0.108 {
                            assert!(rule_2 < meter_j * 0.93, "{spacing}: {rule_2} {meter_j}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn batch_figures_by_hand() {
        let m = derive(&batch_row());
        // Energy: the trapezoid over the samples at their real spacing,
        // 2.0 s ÷ 4 samples = 0.5 s apart:
        // 0.5 s × (100/2 + 110 + 120 + 130/2) W = 0.5 × 345 = 172.5 J
        // (not mean × duration = 115 W × 2 s = 230 J: the meter's own rule
        // spans one spacing less than the duration).
        close(m.power_mean_w, 115.0);
        close(m.gpu_energy_j, 172.5);
        // Per token: 172.5 J / 46 tokens = 3.75 J; per request: 172.5 / 4 = 43.125 J.
        close(m.energy_per_token_j.unwrap(), 3.75);
        close(m.energy_per_request_j.unwrap(), 43.125);
        // Throughput: 46 tokens / 2 s = 23 tok/s.
        close(m.throughput_tok_s, 23.0);
        // Batch time per output token: 2.0 s / 46 = 0.0434782608695652 s.
        close(m.itl_s.unwrap(), 2.0 / 46.0);
        assert_eq!(
            (m.power_min_w, m.power_max_w, m.power_samples),
            (100.0, 130.0, 4)
        );
        assert_eq!(m.ttft_p50_s, None);
    }

    #[test]
    fn server_figures_by_hand() {
        let m = derive(&server_row());
        // 10.0 s ÷ 5 samples = 2.0 s apart:
        // 2.0 s × (200/2 + 220 + 240 + 260 + 280/2) W = 2.0 × 960 = 1920 J.
        close(m.gpu_energy_j, 1920.0);
        // 1920 J / 80 tokens = 24 J; / 5 requests = 384 J; 80 / 10 s = 8 tok/s.
        close(m.energy_per_token_j.unwrap(), 24.0);
        close(m.energy_per_request_j.unwrap(), 384.0);
        close(m.throughput_tok_s, 8.0);
        // ITL: mean over requests with ≥ 2 tokens of (e2e − ttft)/(tokens − 1):
        // (1.1 − 0.1)/10 = 0.1, (2.2 − 0.2)/15 = 0.13̅, (2.3 − 0.3)/20 = 0.1,
        // the 1-token request left out, (3.5 − 0.5)/30 = 0.1;
        // (0.1 + 0.13̅ + 0.1 + 0.1) / 4 = 0.108̅3 s.
        close(m.itl_s.unwrap(), (0.1 + 2.0 / 15.0 + 0.1 + 0.1) / 4.0);
        close(m.itl_s.unwrap(), 0.108_333_333_333_333_33);
        // Percentiles interpolate between closest ranks: p at rank p·(n − 1).
        // TTFT sorted 0.1 … 0.5: p50 at rank 2 = 0.3; p90 at rank 3.6 =
        // 0.4 + 0.6 × (0.5 − 0.4) = 0.46.
        close(m.ttft_p50_s.unwrap(), 0.3);
        close(m.ttft_p90_s.unwrap(), 0.46);
        // E2E sorted 0.9, 1.1, 2.2, 2.3, 3.5: p50 = 2.2; p90 = 2.3 + 0.6 × 1.2 = 3.02.
        close(m.e2e_p50_s.unwrap(), 2.2);
        close(m.e2e_p90_s.unwrap(), 3.02);
        // Per-request sums over the 5 timed requests: Σ TTFT = 0.1 + 0.2 +
        // 0.3 + 0.4 + 0.5 = 1.5 s; Σ E2E = 1.1 + 2.2 + 2.3 + 0.9 + 3.5 = 10 s.
        assert_eq!(m.timed_requests, Some(5));
        close(m.ttft_sum_s.unwrap(), 1.5);
        close(m.e2e_sum_s.unwrap(), 10.0);
        // Little's law: 10 request-seconds over a 10 s window = 1 request
        // in the system on average.
        close(m.mean_concurrency.unwrap(), 1.0);
        // Prefill's share by time 1.5 / 10 = 0.15, of 1920 J = 288 J.
        close(m.prefill_share().unwrap(), 0.15);
        close(m.prefill_energy_j.unwrap(), 288.0);
    }

    #[test]
    fn request_sums_are_server_only_and_spread_over_iterations() {
        let b = derive(&batch_row());
        assert_eq!(
            (b.timed_requests, b.ttft_sum_s, b.e2e_sum_s),
            (None, None, None)
        );
        assert_eq!((b.mean_concurrency, b.prefill_energy_j), (None, None));
        let c = aggregate(&[b]).remove(0);
        assert_eq!((c.mean_concurrency, c.prefill_energy_share), (None, None));

        // Three server iterations whose concurrency is 1, 3 and 2 and
        // whose prefill share is 0.15, 0.05 and 0.25: medians 2 and 0.15.
        let base = derive(&server_row());
        let its: Vec<IterationMetrics> = [(1, 1.0, 1.5), (2, 3.0, 0.5), (3, 2.0, 2.5)]
            .into_iter()
            .map(|(i, conc, ttft_sum)| {
                let mut m = base.clone();
                m.iteration = i;
                m.mean_concurrency = Some(conc);
                m.ttft_sum_s = Some(ttft_sum);
                m
            })
            .collect();
        let c = aggregate(&its).remove(0);
        let conc = c.mean_concurrency.unwrap();
        assert_eq!((conc.median, conc.min, conc.max), (2.0, 1.0, 3.0));
        let share = c.prefill_energy_share.unwrap();
        close(share.median, 0.15);
        close(share.min, 0.05);
        close(share.max, 0.25);
        // A stored configuration written before the sums existed reads
        // back without them.
        let mut old = serde_json::to_value(&c).unwrap();
        let obj = old.as_object_mut().unwrap();
        obj.remove("mean_concurrency");
        obj.remove("prefill_energy_share");
        let back: ConfigurationMetrics = serde_json::from_value(old).unwrap();
        assert_eq!(back.mean_concurrency, None);
    }

    #[test]
    fn configuration_spread_by_hand() {
        // Three iterations of one configuration: 5, 4 and 7 J/token.
        let base = derive(&batch_row());
        let mut its = Vec::new();
        for (i, ept) in [(1, 5.0), (2, 4.0), (3, 7.0)] {
            let mut m = base.clone();
            m.iteration = i;
            m.energy_per_token_j = Some(ept);
            its.push(m);
        }
        let c = aggregate(&its).remove(0);
        assert_eq!(c.iterations, 3);
        let s = c.energy_per_token_j;
        // Median of 4, 5, 7 is 5; min 4, max 7.
        assert_eq!((s.median, s.min, s.max), (5.0, 4.0, 7.0));
        // CV: mean 16/3, sample variance ((5−16/3)² + (4−16/3)² + (7−16/3)²)/2
        // = (1/9 + 16/9 + 25/9)/2 = 7/3; sd √(7/3) = 1.5275…; / (16/3) = 0.28641…
        close(s.cv, (7.0f64 / 3.0).sqrt() / (16.0 / 3.0));
        // The median's interval over 3 values: min–max, coverage
        // 1 − 2 · P(Bin(3, ½) = 0) = 1 − 2/8 = 0.75.
        let i = s.interval.unwrap();
        assert_eq!((i.lo, i.hi), (4.0, 7.0));
        close(i.confidence, 0.75);
        // MAD around 5: |5−5|, |4−5|, |7−5| = 0, 1, 2 → median 1.
        close(median_absolute_deviation(&[5.0, 4.0, 7.0], 5.0), 1.0);
    }

    #[test]
    fn spread_and_percentiles() {
        let s = Spread::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert_eq!((s.min, s.max), (1.0, 4.0));
        assert!((s.cv - 0.5163977794943222).abs() < 1e-12);
        assert_eq!(percentile_sorted(&[0.0, 10.0], 0.9), 9.0);
        assert_eq!(Spread::of(&[5.0]).unwrap().cv, 0.0);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn configurations_are_grouped_by_model_scenario_and_rate_and_empty_iterations_dropped() {
        let batch = derive(&batch_row());
        let server = derive(&server_row());
        let mut other_model = batch.clone();
        other_model.model = "other/model".into();
        let mut other_rate = server.clone();
        other_rate.lambda_qps = Some(9.0);
        // An iteration that generated nothing is dropped (the paper's rule).
        let mut empty = batch.clone();
        empty.generation_tokens = 0;
        assert!(!empty.counts() && batch.counts());
        let configs = aggregate(&[
            batch.clone(),
            server.clone(),
            other_model,
            empty,
            batch,
            other_rate,
        ]);
        let keys: Vec<(&str, Scenario, Option<f64>, u32)> = configs
            .iter()
            .map(|c| (c.model.as_str(), c.scenario, c.lambda_qps, c.iterations))
            .collect();
        let model = server.model.as_str();
        let rate = server.lambda_qps;
        assert_eq!(
            keys,
            [
                (model, Scenario::Batch, None, 2),
                (model, Scenario::Server, rate, 1),
                ("other/model", Scenario::Batch, None, 1),
                (model, Scenario::Server, Some(9.0), 1),
            ]
        );
    }

    #[test]
    fn a_figure_without_a_denominator_is_absent() {
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(3.0, 0.0), None);
    }

    #[test]
    fn median_absolute_deviation_by_hand() {
        // Around 2: |0−2|, |2−2|, |5−2| = 2, 0, 3 → median 2.
        close(median_absolute_deviation(&[0.0, 2.0, 5.0], 2.0), 2.0);
    }

    #[test]
    fn non_finite_figures_are_named() {
        let mut m = derive(&batch_row());
        assert_eq!(first_non_finite(&m), None);
        m.energy_per_request_j = Some(f64::INFINITY);
        assert_eq!(first_non_finite(&m), Some("energy_per_request_j"));
        m.gpu_energy_j = f64::NAN;
        assert_eq!(first_non_finite(&m), Some("gpu_energy_j"));

        let mut c = aggregate(&[derive(&batch_row())]).remove(0);
        assert_eq!(first_non_finite_spread(&c), None);
        c.throughput_tok_s.cv = f64::INFINITY;
        assert_eq!(first_non_finite_spread(&c), Some("throughput_tok_s"));
        c.throughput_tok_s.cv = 0.0;
        let mut i = c.power_mean_w.median_interval(3);
        i.hi = f64::INFINITY;
        c.power_mean_w.interval = Some(i);
        assert_eq!(first_non_finite_spread(&c), Some("power_mean_w"));
        c.power_mean_w.interval = None;
        c.power_mean_w.median = f64::NAN;
        assert_eq!(first_non_finite_spread(&c), Some("power_mean_w"));
    }

    #[test]
    fn an_old_row_without_an_interval_gets_min_to_max() {
        let s = Spread {
            median: 5.0,
            min: 4.0,
            max: 7.0,
            cv: 0.1,
            interval: None,
        };
        let i = s.median_interval(3);
        assert_eq!((i.lo, i.hi), (4.0, 7.0));
        // Min–max of 3 values: 1 − 2/8.
        close(i.confidence, 0.75);
        assert_eq!(s.median_interval(1).confidence, 0.0);
    }
}

//! The limits the checks hold bundles to. Defaults are the ones
//! `/methodology` states, with the reason for each beside it; an operator can override any of them from a YAML file
//! (`serve --thresholds FILE`), e.g. `batch_energy_cv_pct: 7.5`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// arithmetic.gpu_energy: |gpu_energy − published energy| / that, in %.
    pub energy_tolerance_pct: f64,
    /// sampling.power_samples: period ÷ real spacing ≥ this, in %. The
    /// energy is integrated at the real spacing, so this only refuses a
    /// trace too sparse to follow the load (60 %: 167 ms apart).
    pub sample_coverage_pct: f64,
    /// sampling.sampler_late: real spacing ≤ period × (1 + this / 100).
    pub sampler_late_pct: f64,
    /// The harness's sampling period, seconds.
    pub sample_period_s: f64,
    /// sampling.server_duration: server duration ≥ this × MAX_TEST_DURATION.
    pub server_duration_fraction: f64,
    /// physics.mean_power: mean power ≤ this × TDP.
    pub mean_power_tdp_factor: f64,
    /// physics.peak_power: any sample ≤ this × TDP.
    pub peak_power_tdp_factor: f64,
    /// physics.idle_floor: mean power ≥ this × the GPU's loaded-idle power.
    pub idle_floor_factor: f64,
    /// physics.energy_per_token: in (0, this] joules.
    pub max_energy_per_token_j: f64,
    /// physics.temperature: every sample within [min, max] °C.
    pub min_temperature_c: f64,
    pub max_temperature_c: f64,
    /// method.iterations_minimum: fewer iterations per configuration reject.
    pub min_iterations: u32,
    /// method.start_temperature: first sample ≤ this, °C.
    pub max_start_temperature_c: f64,
    /// repeatability.batch_energy_cv: CV of energy per token, %.
    pub batch_energy_cv_pct: f64,
    /// repeatability.server_load_fit: residual standard deviation of the
    /// iterations' energy about its fit to power × duration plus a cost per
    /// generated token, % of the mean energy. (Read from `server_power_cv_pct` too, the name
    /// of the raw power CV it replaced.)
    #[serde(alias = "server_power_cv_pct")]
    pub server_load_fit_pct: f64,
    /// repeatability.server_load_fit applies only where λ × MAX_TEST_DURATION
    /// (the expected requests per iteration) reaches this: with fewer, a
    /// handful of requests leaves the energy mostly idle and the fit loose.
    pub server_cv_min_expected_requests: f64,
    /// arrivals.poisson (unseeded runs only): |requests − λT| ≤ this × √(λT).
    pub poisson_sigmas: f64,
    /// arrivals.schedule: how far, in seconds, the harness's wall clock may
    /// run ahead of the sum of its drawn sleeps by the end of an iteration
    /// (each asyncio sleep overshoots by about a millisecond).
    pub arrival_drift_s: f64,
    /// consistency.robust_z: |x − median| / (1.4826 × MAD) ≤ this.
    pub robust_z: f64,
    /// consistency.robust_z: peers needed before the check applies.
    pub consistency_min_peers: u32,
    /// consistency.robust_z: MAD floor as a share of the median, %, so
    /// near-identical peers do not make every small difference an outlier.
    pub mad_floor_pct: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            energy_tolerance_pct: 2.0,
            sample_coverage_pct: 60.0,
            sampler_late_pct: 10.0,
            sample_period_s: 0.1,
            server_duration_fraction: 1.0,
            mean_power_tdp_factor: 1.1,
            peak_power_tdp_factor: 1.7,
            idle_floor_factor: 0.5,
            max_energy_per_token_j: 100.0,
            min_temperature_c: 20.0,
            max_temperature_c: 95.0,
            min_iterations: 3,
            max_start_temperature_c: 65.0,
            batch_energy_cv_pct: 5.0,
            server_load_fit_pct: 10.0,
            server_cv_min_expected_requests: 30.0,
            poisson_sigmas: 4.0,
            arrival_drift_s: 1.0,
            robust_z: 3.5,
            consistency_min_peers: 3,
            mad_floor_pct: 1.0,
        }
    }
}

impl Thresholds {
    /// Reads overrides from a YAML file; keys not named keep their default.
    pub fn from_yaml(text: &str) -> anyhow::Result<Self> {
        let t: Thresholds = serde_yaml_ng::from_str(text)?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_keep_other_defaults() {
        let t = Thresholds::from_yaml("batch_energy_cv_pct: 7.5\n").unwrap();
        assert_eq!(t.batch_energy_cv_pct, 7.5);
        assert_eq!(t.robust_z, 3.5);
    }

    #[test]
    fn the_old_server_cv_name_still_reads() {
        let t = Thresholds::from_yaml("server_power_cv_pct: 12\n").unwrap();
        assert_eq!(t.server_load_fit_pct, 12.0);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = Thresholds::from_yaml("batch_cv: 7.5\n").unwrap_err();
        assert!(e.to_string().contains("batch_cv"), "{e}");
    }
}

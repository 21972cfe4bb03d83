//! Split-conformal intervals from out-of-fold residuals: with residuals
//! r = |ln(actual ÷ predicted)| of n held-out rows, the ⌈(n + 1)·level⌉-th
//! smallest is a bound a new row's residual stays under with probability
//! at least `level` (when rows are exchangeable), so the interval is the
//! prediction times e^±q. Nothing about the errors' shape is assumed.

/// The residual of one held-out row, on the log scale.
pub fn log_residual(predicted: f64, actual: f64) -> f64 {
    (actual / predicted).ln().abs()
}

/// The conformal quantile of `residuals` at `level`; None when there are
/// too few residuals for that level (⌈(n + 1)·level⌉ > n) or none.
pub fn quantile(residuals: &[f64], level: f64) -> Option<f64> {
    let n = residuals.len();
    let rank = ((n as f64 + 1.0) * level).ceil() as usize;
    if n == 0 || rank == 0 || rank > n {
        return None;
    }
    let mut r = residuals.to_vec();
    r.sort_by(f64::total_cmp);
    Some(r[rank - 1])
}

/// The interval around `point` for quantile `q`.
pub fn interval(point: f64, q: f64) -> (f64, f64) {
    (point * (-q).exp(), point * q.exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_is_the_ceiling_of_n_plus_one_times_the_level() {
        let r: Vec<f64> = (1..=9).map(f64::from).collect();
        // n = 9, level 0.8: ⌈10·0.8⌉ = 8 → the 8th smallest.
        assert_eq!(quantile(&r, 0.8), Some(8.0));
        // level 0.95: ⌈9.5⌉ = 10 > 9: too few residuals.
        assert_eq!(quantile(&r, 0.95), None);
        assert_eq!(quantile(&[], 0.5), None);
        let (lo, hi) = interval(2.0, 2f64.ln());
        assert!((lo - 1.0).abs() < 1e-12 && (hi - 4.0).abs() < 1e-12);
        assert!((log_residual(2.0, 1.0) - 2f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn coverage_on_a_sample_of_known_distribution() {
        // Log errors drawn from N(0, 0.2²) by a fixed seed: calibrate on
        // 400, then 4,000 fresh rows must land inside at close to 80 %.
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut draw = || {
            let u: f64 = rng.gen_range(1e-12..1.0);
            wattcounts_rules::stats::normal_quantile(u) * 0.2
        };
        let calibration: Vec<f64> = (0..400).map(|_| draw().abs()).collect();
        let q = quantile(&calibration, 0.8).unwrap();
        // |N(0, σ²)| has its 80 % quantile at σ·z₀.₉ = 0.2 × 1.2816 = 0.2563.
        assert!((q - 0.2563).abs() < 0.03, "{q}");
        let fresh: Vec<f64> = (0..4000).map(|_| draw()).collect();
        let inside = fresh
            .iter()
            .filter(|e| {
                let (lo, hi) = interval(1.0, q);
                let actual = e.exp();
                lo <= actual && actual <= hi
            })
            .count();
        let covered = inside as f64 / fresh.len() as f64;
        assert!((covered - 0.8).abs() < 0.03, "{covered}");
    }
}

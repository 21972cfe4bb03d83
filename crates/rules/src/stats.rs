//! Every median, percentile, interval and rank statistic the service
//! computes, in one copy: the percentile rule `/methodology` states
//! (linear between closest ranks, numpy's default), the order-statistic
//! interval for a median, the median absolute deviation, Theil–Sen with
//! Sen's interval, the normal quantile behind it, a two-regressor least
//! squares, Pearson's r and Kendall's τ-b. Pure functions of slices.

use crate::domain::{Interval, TARGET_CONFIDENCE};

/// The median of `v` (the percentile rule above); None when empty.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(percentile_sorted(&v, 0.5))
}

/// The median absolute deviation of `values` around their median `m`.
pub fn median_absolute_deviation(values: &[f64], m: f64) -> f64 {
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    deviations.sort_by(f64::total_cmp);
    percentile_sorted(&deviations, 0.5)
}

/// Linear interpolation between closest ranks (numpy's default).
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(percentile_sorted(&v, q))
}

/// Coverage of [x_(k), x_(n+1-k)] for the median of n values:
/// 1 − 2·P(Bin(n, ½) ≤ k − 1), summed in log space so large n cannot underflow.
pub fn order_statistic_coverage(n: usize, k: usize) -> f64 {
    if n == 0 || k == 0 || 2 * k > n + 1 {
        return 0.0;
    }
    let ln2 = std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64; // ln C(n, 0)
    let mut tail = 0.0f64;
    for i in 0..k {
        tail += (ln_choose - n as f64 * ln2).exp();
        ln_choose += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    (1.0 - 2.0 * tail).max(0.0)
}

/// The narrowest order-statistic interval for the median of `sorted` that
/// reaches [`TARGET_CONFIDENCE`], or min–max when none does (few values).
pub fn median_interval(sorted: &[f64]) -> Option<Interval> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let mut k = 1;
    while order_statistic_coverage(n, k + 1) >= TARGET_CONFIDENCE {
        k += 1;
    }
    Some(Interval {
        lo: sorted[k - 1],
        hi: sorted[n - k],
        confidence: if n == 1 {
            0.0
        } else {
            order_statistic_coverage(n, k)
        },
    })
}

/// Theil–Sen slope of `points` (x, y): the median of the slopes over
/// every pair with distinct x, and Sen's (1968) interval at `level` from
/// the order statistics of those slopes (normal approximation to
/// Kendall's S). With few points the interval is the slopes' whole range
/// and the confidence stated is what that range can claim at most
/// (`level`, never more). None below `min_x` distinct x values (never
/// below two).
pub fn theil_sen(points: &[(f64, f64)], level: f64, min_x: usize) -> Option<(f64, Interval)> {
    let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    if xs.len() < min_x.max(2) {
        return None;
    }
    let mut slopes = Vec::new();
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if (b.0 - a.0).abs() > 1e-12 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    slopes.sort_by(f64::total_cmp);
    let slope = percentile_sorted(&slopes, 0.5);
    let n = points.len() as f64;
    let big_n = slopes.len() as f64;
    let c = normal_quantile(0.5 + level / 2.0) * (n * (n - 1.0) * (2.0 * n + 5.0) / 18.0).sqrt();
    // Ranks M1 and M2 + 1 (1-based) of the sorted slopes.
    let m1 = ((big_n - c) / 2.0).floor();
    let m2 = ((big_n + c) / 2.0).ceil();
    let lo = if m1 >= 1.0 {
        slopes[m1 as usize - 1]
    } else {
        slopes[0]
    };
    let hi = if (m2 as usize) < slopes.len() {
        slopes[m2 as usize]
    } else {
        slopes[slopes.len() - 1]
    };
    Some((
        slope,
        Interval {
            lo,
            hi,
            confidence: level,
        },
    ))
}

/// The standard normal quantile (Acklam's rational approximation, good to
/// about 1e-9 relative: ample for an interval's ranks).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Least squares of y on (x1, x2) with an intercept; rows are [x1, x2, y].
/// Returns the two slopes, or None when the design is singular (fewer
/// than four rows, or x2 constant or collinear with x1).
pub fn least_squares_2(rows: &[[f64; 3]]) -> Option<(f64, f64)> {
    if rows.len() < 4 {
        return None;
    }
    let n = rows.len() as f64;
    let mean = |j: usize| rows.iter().map(|r| r[j]).sum::<f64>() / n;
    let (m1, m2, my) = (mean(0), mean(1), mean(2));
    let s = |a: usize, ma: f64, b: usize, mb: f64| {
        rows.iter().map(|r| (r[a] - ma) * (r[b] - mb)).sum::<f64>()
    };
    let (s11, s22, s12) = (s(0, m1, 0, m1), s(1, m2, 1, m2), s(0, m1, 1, m2));
    let (s1y, s2y) = (s(0, m1, 2, my), s(1, m2, 2, my));
    let det = s11 * s22 - s12 * s12;
    if det.abs() <= 1e-12 * (s11 * s22).max(1e-300) {
        return None;
    }
    Some(((s22 * s1y - s12 * s2y) / det, (s11 * s2y - s12 * s1y) / det))
}

/// Pearson's correlation; None with fewer than two pairs or no spread.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    if n < 2 {
        return None;
    }
    let mx = x[..n].iter().sum::<f64>() / n as f64;
    let my = y[..n].iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (dx, dy) = (x[i] - mx, y[i] - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Kendall's τ-b: (concordant − discordant) ÷ √((n₀ − n₁)(n₀ − n₂)), with
/// n₁ and n₂ the pairs tied in x and in y. None when either side is all
/// ties (or fewer than two values).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = x[i] - x[j];
            let dy = y[i] - y[j];
            if dx == 0.0 {
                tied_x += 1;
            }
            if dy == 0.0 {
                tied_y += 1;
            }
            if dx != 0.0 && dy != 0.0 {
                if (dx > 0.0) == (dy > 0.0) {
                    concordant += 1;
                } else {
                    discordant += 1;
                }
            }
        }
    }
    let n0 = (n * n.saturating_sub(1) / 2) as i64;
    let denominator = ((n0 - tied_x) as f64 * (n0 - tied_y) as f64).sqrt();
    (denominator > 0.0).then(|| (concordant - discordant) as f64 / denominator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_midpoint_and_none_when_empty() {
        // 1, 2, 4, 9: (2 + 4) ÷ 2 = 3.
        assert_eq!(median(vec![9.0, 1.0, 4.0, 2.0]), Some(3.0));
        assert_eq!(median(vec![5.0]), Some(5.0));
        assert_eq!(median(Vec::new()), None);
        assert_eq!(percentile(&[], 0.5), None);
        // 10 values 1..10 at q 0.9: position 8.1 → 9 + 0.1 × (10 − 9) = 9.1.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((percentile(&v, 0.9).unwrap() - 9.1).abs() < 1e-12);
    }

    #[test]
    fn coverage_of_known_cases() {
        // min–max of five values covers the median with 1 − 2/32.
        assert!((order_statistic_coverage(5, 1) - 0.9375).abs() < 1e-12);
        assert!((order_statistic_coverage(2, 1) - 0.5).abs() < 1e-12);
        // n = 10, k = 2: 1 − 2·(1 + 10)/1024.
        assert!((order_statistic_coverage(10, 2) - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        // Large n does not underflow.
        let c = order_statistic_coverage(5000, 2430);
        assert!(c > 0.9 && c < 1.0, "{c}");
    }

    #[test]
    fn interval_widths() {
        let v: Vec<f64> = (1..=5).map(f64::from).collect();
        let i = median_interval(&v).unwrap();
        assert_eq!((i.lo, i.hi), (1.0, 5.0));
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&v).unwrap();
        // n = 20: k = 6 reaches 95.9 %, k = 7 only 88.5 %.
        assert_eq!((i.lo, i.hi), (6.0, 15.0));
        assert!(i.confidence >= TARGET_CONFIDENCE);
        let one = median_interval(&[3.0]).unwrap();
        assert_eq!((one.lo, one.hi, one.confidence), (3.0, 3.0, 0.0));
    }

    #[test]
    fn theil_sen_shrugs_off_an_outlier_and_its_interval_narrows_with_n() {
        // y = 2x + 1 with one wild point.
        let mut pts: Vec<(f64, f64)> = (0..12).map(|i| (i as f64, 2.0 * i as f64 + 1.0)).collect();
        pts[5].1 = 100.0;
        let (slope, i) = theil_sen(&pts, 0.95, 3).unwrap();
        assert!((slope - 2.0).abs() < 1e-12, "{slope}");
        assert!(i.lo <= 2.0 && i.hi >= 2.0 && i.confidence == 0.95, "{i:?}");
        // 12 points, 66 slopes: C = 1.96·√(12·11·29/18) = 28.6, ranks
        // ⌊(66 − 28.6)/2⌋ = 18 and ⌈(66 + 28.6)/2⌉ + 1 = 49 (1-based).
        let mut slopes = Vec::new();
        for a in 0..12 {
            for b in a + 1..12 {
                slopes.push((pts[b].1 - pts[a].1) / (pts[b].0 - pts[a].0));
            }
        }
        slopes.sort_by(f64::total_cmp);
        assert_eq!(i.lo, slopes[17]);
        assert_eq!(i.hi, slopes[48]);
        // Fewer than three distinct x: no slope.
        assert_eq!(
            theil_sen(&[(1.0, 1.0), (1.0, 2.0), (2.0, 3.0)], 0.95, 3),
            None
        );
    }

    #[test]
    fn the_normal_quantile_and_the_two_regressor_fit() {
        assert!((normal_quantile(0.975) - 1.959963985).abs() < 1e-8);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_quantile(0.01) + 2.326347874).abs() < 1e-8);
        assert!((normal_quantile(0.999) - 3.090232306).abs() < 1e-8);
        // y = 3 + 0.5·x1 − 2·x2, exactly.
        let rows: Vec<[f64; 3]> = [(1.0, 0.1), (2.0, 0.5), (3.0, 0.2), (4.0, 1.0), (5.0, 0.25)]
            .iter()
            .map(|(a, b)| [*a, *b, 3.0 + 0.5 * a - 2.0 * b])
            .collect();
        let (b1, b2) = least_squares_2(&rows).unwrap();
        assert!(
            (b1 - 0.5).abs() < 1e-12 && (b2 + 2.0).abs() < 1e-12,
            "{b1} {b2}"
        );
        // x2 constant: singular.
        let flat: Vec<[f64; 3]> = (0..5).map(|i| [i as f64, 1.0, i as f64]).collect();
        assert_eq!(least_squares_2(&flat), None);
        assert_eq!(least_squares_2(&rows[..3]), None);
    }

    #[test]
    fn pearson_of_hand_worked_cases() {
        assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        // x = 1..4, y = 1, 3, 2, 4: Σdxdy = 4, Σdx² = Σdy² = 5 → 0.8.
        assert!(
            (pearson(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap() - 0.8).abs() < 1e-12
        );
        assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(pearson(&[1.0], &[1.0]), None);
    }

    #[test]
    fn kendall_tau_b_counts_ties_as_tau_b_does() {
        // No ties: 1, 3, 2, 4 against 1..4: 5 concordant, 1 discordant of 6.
        let t = kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((t - 4.0 / 6.0).abs() < 1e-12, "{t}");
        // x = 1, 2, 2, 3; y = 1, 2, 3, 3: pairs (0,1) C, (0,2) C, (0,3) C,
        // (1,2) tie in x, (1,3) C, (2,3) tie in y → 4 C, 0 D; n₀ = 6,
        // n₁ = n₂ = 1 → 4 ÷ √(5·5) = 0.8.
        let t = kendall_tau_b(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 3.0]).unwrap();
        assert!((t - 0.8).abs() < 1e-12, "{t}");
        assert!((kendall_tau_b(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(kendall_tau_b(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(kendall_tau_b(&[1.0], &[1.0]), None);
    }
}

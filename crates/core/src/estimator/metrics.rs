//! How good an estimate is, as WattGPU scores it: the median absolute
//! percentage error, Pearson's r, Kendall's τ-b of a ranking (ties
//! counted as τ-b counts them), top-1 hits and interval coverage.

/// Median absolute percentage error, %; None without pairs or with a zero
/// actual value.
pub fn mdape(predicted: &[f64], actual: &[f64]) -> Option<f64> {
    if predicted.is_empty() || actual.contains(&0.0) {
        return None;
    }
    let mut e: Vec<f64> = predicted
        .iter()
        .zip(actual)
        .map(|(p, a)| ((p - a) / a).abs() * 100.0)
        .collect();
    e.sort_by(f64::total_cmp);
    Some(crate::derived::percentile_sorted(&e, 0.5))
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

/// Whether the least predicted is the least actual (the GPU a reader
/// would pick is the right one); None without values.
pub fn top1(predicted: &[f64], actual: &[f64]) -> Option<bool> {
    let arg = |v: &[f64]| {
        v.iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
    };
    Some(arg(predicted)? == arg(actual)?)
}

/// Share of actual values inside their interval.
pub fn coverage(intervals: &[(f64, f64)], actual: &[f64]) -> Option<f64> {
    if actual.is_empty() {
        return None;
    }
    let inside = intervals
        .iter()
        .zip(actual)
        .filter(|((lo, hi), a)| lo <= *a && *a <= hi)
        .count();
    Some(inside as f64 / actual.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mdape_of_a_hand_worked_case() {
        // Errors 10 %, 50 %, 20 %, 0 %: median (10 + 20) ÷ 2 = 15 %.
        let got = mdape(&[110.0, 150.0, 80.0, 5.0], &[100.0, 100.0, 100.0, 5.0]).unwrap();
        assert!((got - 15.0).abs() < 1e-12, "{got}");
        assert_eq!(mdape(&[], &[]), None);
        assert_eq!(mdape(&[1.0], &[0.0]), None);
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

    #[test]
    fn top1_and_coverage() {
        assert_eq!(top1(&[3.0, 1.0, 2.0], &[2.5, 0.5, 9.0]), Some(true));
        assert_eq!(top1(&[3.0, 1.0, 2.0], &[0.1, 0.5, 9.0]), Some(false));
        assert_eq!(top1(&[], &[]), None);
        let c = coverage(
            &[(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (5.0, 6.0)],
            &[0.5, 2.0, 3.5, 5.0],
        );
        assert_eq!(c, Some(0.75));
        assert_eq!(coverage(&[], &[]), None);
    }
}

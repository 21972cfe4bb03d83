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
    Some(wattcounts_rules::stats::percentile_sorted(&e, 0.5))
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

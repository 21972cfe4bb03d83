//! When a page may say "A uses less energy than B", and by how much. Pure:
//! medians with their order-statistic intervals in, a verdict or a tie out.
//!
//! The rule (described to readers on `/methodology`): a verdict needs two
//! measured GPUs whose intervals do not overlap, each interval backed by at
//! least two values; anything else is a tie within measurement noise, and
//! the page says which of those reasons applies.

use serde::Serialize;

use wattcounts_rules::domain::Interval;

/// A median with its interval (`confidence` 0 when no interval exists:
/// one value, or a figure stored before intervals were kept).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Estimate {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    pub confidence: f64,
}

impl Estimate {
    pub fn new(median: f64, interval: Option<Interval>) -> Estimate {
        match interval {
            Some(i) => Estimate {
                median,
                lo: i.lo.min(median),
                hi: i.hi.max(median),
                confidence: i.confidence,
            },
            None => Estimate {
                median,
                lo: median,
                hi: median,
                confidence: 0.0,
            },
        }
    }

    pub fn of(median: Option<f64>, interval: Option<Interval>) -> Option<Estimate> {
        median.map(|m| Estimate::new(m, interval))
    }

    /// The same estimate in another unit (a positive factor).
    pub fn scaled(self, factor: f64) -> Estimate {
        Estimate {
            median: self.median * factor,
            lo: self.lo * factor,
            hi: self.hi * factor,
            confidence: self.confidence,
        }
    }

    /// Whether it rests on an interval at all.
    pub fn has_interval(&self) -> bool {
        self.confidence > 0.0
    }
}

/// How much less energy `best` takes than `other`, in % of `other`, with the
/// range the two intervals allow (lowest: best at its top, other at its
/// bottom).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Saving {
    pub median_pct: f64,
    pub lo_pct: f64,
    pub hi_pct: f64,
}

pub fn saving(best: &Estimate, other: &Estimate) -> Saving {
    let pct = |b: f64, o: f64| if o > 0.0 { (o - b) / o * 100.0 } else { 0.0 };
    Saving {
        median_pct: pct(best.median, other.median),
        lo_pct: pct(best.hi, other.lo),
        hi_pct: pct(best.lo, other.hi),
    }
}

/// What may be said of the least-energy GPU against another.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// The intervals separate: the first uses less energy.
    Less { saving: Saving },
    /// Within measurement noise; `why` says which rule held it back.
    Tie { saving: Saving, why: String },
}

impl Verdict {
    pub fn is_tie(&self) -> bool {
        matches!(self, Verdict::Tie { .. })
    }
    pub fn saving(&self) -> Saving {
        match self {
            Verdict::Less { saving } | Verdict::Tie { saving, .. } => *saving,
        }
    }
}

/// The verdict of `best` (the lower median) against `other`.
pub fn verdict(best: &Estimate, other: &Estimate, unit: &str) -> Verdict {
    let s = saving(best, other);
    if !best.has_interval() || !other.has_interval() {
        return Verdict::Tie {
            saving: s,
            why: "one of them has a single measurement, so no interval to compare".into(),
        };
    }
    if best.hi < other.lo {
        Verdict::Less { saving: s }
    } else {
        Verdict::Tie {
            saving: s,
            why: format!(
                "their intervals overlap ({}–{} and {}–{} {unit})",
                sig(best.lo),
                sig(best.hi),
                sig(other.lo),
                sig(other.hi)
            ),
        }
    }
}

/// Three significant digits, the precision the pages show (whole numbers
/// from 1,000 up, with thousands separators).
pub fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 1000.0 {
        let digits = (v.abs().round() as u64).to_string();
        let mut out = String::from(if v < 0.0 { "-" } else { "" });
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        return out;
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 8) as usize;
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(median: f64, lo: f64, hi: f64) -> Estimate {
        Estimate::new(
            median,
            Some(Interval {
                lo,
                hi,
                confidence: 0.75,
            }),
        )
    }

    #[test]
    fn separate_intervals_give_a_verdict_with_a_saving_range() {
        let v = verdict(&est(1.0, 0.9, 1.1), &est(2.0, 1.6, 2.4), "J/token");
        let Verdict::Less { saving } = v else {
            panic!("{v:?}")
        };
        assert_eq!(saving.median_pct, 50.0);
        // Best at its top against the other at its bottom, and the reverse.
        assert!((saving.lo_pct - (1.6 - 1.1) / 1.6 * 100.0).abs() < 1e-9);
        assert!((saving.hi_pct - (2.4 - 0.9) / 2.4 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn overlapping_intervals_are_a_tie_that_says_why() {
        let v = verdict(&est(1.0, 0.9, 1.3), &est(1.2, 1.25, 1.4), "J/token");
        match v {
            Verdict::Tie { why, saving } => {
                assert!(why.contains("overlap"), "{why}");
                assert!(why.contains("0.900–1.30"), "{why}");
                assert!(saving.lo_pct < 0.0 && saving.hi_pct > 0.0);
            }
            other => panic!("{other:?}"),
        }
        // Touching ends overlap too.
        assert!(verdict(&est(1.0, 0.9, 1.1), &est(1.2, 1.1, 1.3), "J").is_tie());
    }

    #[test]
    fn a_single_measurement_never_gives_a_verdict() {
        let one = Estimate::new(1.0, None);
        let v = verdict(&one, &est(5.0, 4.0, 6.0), "J");
        assert!(v.is_tie());
        assert!(matches!(v, Verdict::Tie { ref why, .. } if why.contains("single")));
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig(0.012345), "0.0123");
        assert_eq!(sig(1.2345), "1.23");
        assert_eq!(sig(123.45), "123");
        assert_eq!(sig(1463.2), "1,463");
        assert_eq!(sig(12345.6), "12,346");
    }

    #[test]
    fn an_estimate_in_another_unit_scales_every_bound() {
        let e = Estimate {
            median: 2.0,
            lo: 1.5,
            hi: 3.0,
            confidence: 0.75,
        }
        .scaled(4.0);
        assert_eq!((e.median, e.lo, e.hi, e.confidence), (8.0, 6.0, 12.0, 0.75));
    }

    #[test]
    fn three_significant_digits_at_the_edges() {
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(f64::INFINITY), "inf");
        assert_eq!(sig(999.4), "999");
        assert_eq!(sig(1000.0), "1,000");
        // Six digits: no separator before the first group.
        assert_eq!(sig(123456.0), "123,456");
        assert_eq!(sig(-999999.6), "-1,000,000");
        assert_eq!(sig(-1234567.0), "-1,234,567");
        assert_eq!(sig(12.345), "12.3");
        assert_eq!(sig(0.012345), "0.0123");
        assert_eq!(sig(-0.5), "-0.500");
    }

    #[test]
    fn no_saving_against_nothing() {
        let e = |m: f64| Estimate {
            median: m,
            lo: m,
            hi: m,
            confidence: 0.75,
        };
        let s = saving(&e(1.0), &e(0.0));
        assert_eq!((s.median_pct, s.lo_pct, s.hi_pct), (0.0, 0.0, 0.0));
        assert_eq!(saving(&e(1.0), &e(4.0)).median_pct, 75.0);
    }
}

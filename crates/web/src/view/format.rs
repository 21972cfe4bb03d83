//! How numbers, intervals and dates read on the pages: three significant
//! digits, thousands separators, intervals with the confidence they
//! achieve, dates a person reads at a glance.

use chrono::{DateTime, Utc};

use wattcounts_analytics::verdict::{sig, Estimate, Saving};

/// 1234567 → "1,234,567".
pub fn thousands(n: u64) -> String {
    if n < 1000 {
        return n.to_string();
    }
    sig(n as f64)
}

/// "1 Dec 2026, 23:11 UTC".
pub fn date(t: &DateTime<Utc>) -> String {
    t.format("%-d %b %Y, %H:%M UTC").to_string()
}

/// An RFC 3339 timestamp (as receipts and manifests keep it) read the same
/// way; left as it is if it does not parse.
pub fn date_text(rfc3339: &str) -> String {
    DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| date(&t.with_timezone(&Utc)))
        .unwrap_or_else(|_| rfc3339.to_string())
}

/// A median as shown: three significant digits, `scale` into the unit.
pub fn value(e: Option<Estimate>, scale: f64) -> String {
    e.map_or("–".into(), |e| sig(e.median * scale))
}

/// "0.0123 J/token (0.0121–0.0125, 75 % interval)", or what stands in for
/// a missing interval.
pub fn estimate(e: &Estimate, unit: &str) -> String {
    if e.has_interval() {
        format!(
            "{} {unit} ({}–{}, {} interval)",
            sig(e.median),
            sig(e.lo),
            sig(e.hi),
            confidence(Some(*e))
        )
    } else {
        format!("{} {unit} (one measurement, no interval)", sig(e.median))
    }
}

/// "0.0121–0.0125" or "–" where no interval exists.
pub fn range(e: Option<Estimate>, scale: f64) -> String {
    match e {
        Some(e) if e.has_interval() => format!("{}–{}", sig(e.lo * scale), sig(e.hi * scale)),
        _ => "–".into(),
    }
}

/// The interval shown under a median in a table cell: as [`range`], but
/// nothing at all where there is none.
pub fn under(e: Option<Estimate>, scale: f64) -> String {
    match e {
        Some(e) if e.has_interval() => range(Some(e), scale),
        _ => String::new(),
    }
}

/// "75 %" (the interval's achieved confidence).
pub fn confidence(e: Option<Estimate>) -> String {
    match e {
        Some(e) if e.has_interval() => {
            format!("{:.1} %", e.confidence * 100.0).replace(".0 %", " %")
        }
        _ => "–".into(),
    }
}

/// "23 % (18–27 %)".
/// A whole percentage with a true minus sign: "−7–12 %" reads as a range,
/// "-7–12 %" as a typo.
fn pct(v: f64) -> String {
    format!("{v:.0}").replace('-', "−")
}

/// A range from "more" to "less" is no saving to promise (issue #55:
/// "8 % (−303–79 %)" was hard to read): such a saving is said in words.
fn spans_zero(s: &Saving) -> bool {
    s.lo_pct < 0.0 && s.hi_pct > 0.0
}

pub fn saving(s: &Saving) -> String {
    let (m, lo, hi) = (pct(s.median_pct), pct(s.lo_pct), pct(s.hi_pct));
    if spans_zero(s) {
        // The bounds joined by "to", not a dash that reads as a minus.
        return format!("{m} % ({lo} to {hi} %): no clear saving");
    }
    format!("{m} % ({lo}–{hi} %)")
}

/// The saving as a sentence "Against `against`: …", with "no clear
/// saving" in words when its range spans zero (the model page's answer).
pub fn saving_sentence(against: &str, s: &Saving) -> String {
    let (m, lo, hi) = (pct(s.median_pct), pct(s.lo_pct), pct(s.hi_pct));
    if spans_zero(s) {
        format!("Against {against}: no clear saving ({m} % less at the medians, but the intervals allow {lo} to {hi} %).")
    } else {
        format!("Against {against}: {m} % less energy per token ({lo}–{hi} %).")
    }
}

/// A model's weights' precision as a table shows it (`BF16`, `AWQ-INT4`),
/// from the catalogue; empty for a model it does not hold.
pub fn precision_of(model: &str) -> String {
    wattcounts_rules::catalog::model_by_id(model)
        .map(|m| m.precision.to_ascii_uppercase())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saving_that_spans_zero_is_said_in_words() {
        let s = |m, lo, hi| Saving {
            median_pct: m,
            lo_pct: lo,
            hi_pct: hi,
        };
        assert_eq!(
            saving(&s(8.0, -303.0, 79.0)),
            "8 % (−303 to 79 %): no clear saving"
        );
        assert_eq!(saving(&s(30.0, 12.0, 45.0)), "30 % (12–45 %)");
        // A saving that may be nil at one end is still a saving.
        assert_eq!(saving(&s(30.0, 0.0, 45.0)), "30 % (0–45 %)");
    }

    #[test]
    fn readable_numbers_and_dates() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        let t = DateTime::parse_from_rfc3339("2026-12-01T09:05:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(date(&t), "1 Dec 2026, 09:05 UTC");
        assert_eq!(
            date_text("2026-12-01T09:05:00.123Z"),
            "1 Dec 2026, 09:05 UTC"
        );
        assert_eq!(date_text("yesterday"), "yesterday");
        let e = Estimate::new(
            0.01234,
            Some(wattcounts_rules::domain::Interval {
                lo: 0.0121,
                hi: 0.0125,
                confidence: 0.9375,
            }),
        );
        assert_eq!(value(Some(e), 1.0), "0.0123");
        assert_eq!(range(Some(e), 1.0), "0.0121–0.0125");
        assert_eq!(confidence(Some(e)), "93.8 %");
        assert_eq!(range(Some(Estimate::new(1.0, None)), 1.0), "–");
        let s = Saving {
            median_pct: 4.0,
            lo_pct: -7.3,
            hi_pct: 12.2,
        };
        assert_eq!(saving(&s), "4 % (−7 to 12 %): no clear saving");
    }
}

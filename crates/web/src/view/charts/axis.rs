//! A chart's axes: the range, linear or logarithmic scale, 5-7 "nice"
//! ticks with their labels, and the drawn x and y axes with gridlines.

use super::escape;
use std::fmt::Write as _;

/// An axis: where values map, and where its ticks go.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub log: bool,
    pub min: f64,
    pub max: f64,
    pub ticks: Vec<f64>,
}

impl Axis {
    /// An axis covering `values` (all positive for a log axis).
    pub fn fit(values: &[f64]) -> Axis {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let hi = finite.iter().copied().fold(0.0, f64::max);
        let lo = finite
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        if hi > 0.0 && lo.is_finite() && hi / lo > LOG_SPAN {
            return Axis::logarithmic(lo, hi);
        }
        Axis::linear(hi)
    }

    /// From 0 to a round number at or above `hi`, 5-7 ticks.
    fn linear(hi: f64) -> Axis {
        let hi = if hi > 0.0 { hi } else { 1.0 };
        let magnitude = 10f64.powf((hi / 6.0).log10().floor());
        let mut best: Option<(f64, usize)> = None;
        for m in [0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0] {
            let step = m * magnitude;
            let n = (hi / step - 1e-9).ceil() as usize + 1;
            let score = n.abs_diff(6);
            if (5..=7).contains(&n) && best.is_none_or(|(_, s)| score < s) {
                best = Some((step, score));
            }
        }
        let step = best.map_or_else(|| nice(hi / 5.0), |b| b.0);
        let n = (hi / step - 1e-9).ceil() as usize;
        let ticks: Vec<f64> = (0..=n).map(|i| clean(i as f64 * step)).collect();
        Axis {
            log: false,
            min: 0.0,
            max: *ticks.last().unwrap_or(&hi),
            ticks,
        }
    }

    /// Whole decades around [lo, hi]; with few decades, the 2 and 5 between.
    fn logarithmic(lo: f64, hi: f64) -> Axis {
        let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let decades = (b - a).max(1);
        let steps: &[f64] = match decades {
            1 => &[1.0, 2.0, 5.0],
            2 => &[1.0, 3.0],
            _ => &[1.0],
        };
        let mut ticks = Vec::new();
        for d in a..=b {
            for m in steps {
                let v = clean(m * 10f64.powi(d));
                if v <= 10f64.powi(b) * 1.000_001 {
                    ticks.push(v);
                }
            }
        }
        // Thin out to at most 7 (every other, then every third decade).
        let mut k = 1;
        while ticks.len().div_ceil(k) > 7 {
            k += 1;
        }
        let ticks: Vec<f64> = ticks.into_iter().step_by(k).collect();
        Axis {
            log: true,
            min: 10f64.powi(a),
            max: 10f64.powi(b),
            ticks,
        }
    }

    /// Where `v` falls, 0 (min) to 1 (max), clamped.
    pub fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = v.max(self.min);
            (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (v - self.min) / (self.max - self.min)
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// 1, 2 or 5 × a power of ten, at or above `raw`.
pub(crate) fn nice(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Rounds away float noise (0.30000000000000004 → 0.3).
pub(crate) fn clean(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(12 - v.abs().log10().ceil() as i32);
    (v * scale).round() / scale
}

pub(crate) fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v >= 10_000.0 {
        return crate::view::format::thousands(v.round() as u64);
    }
    // As many digits as the value needs, no trailing zeros.
    let s = format!("{:.6}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Vertical gridlines and tick labels of an x axis spanning [x0, x1].
pub(crate) fn x_axis(
    s: &mut String,
    axis: &Axis,
    x0: f64,
    x1: f64,
    top: f64,
    bottom: f64,
    title: &str,
) {
    for t in &axis.ticks {
        let x = x0 + axis.frac(*t) * (x1 - x0);
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" class="grid"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
            bottom + 16.0,
            tick_label(*t)
        );
    }
    let _ = write!(
        s,
        r#"<line x1="{x0:.1}" y1="{bottom:.1}" x2="{x1:.1}" y2="{bottom:.1}" class="axis-line"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="axis-title">{}{}</text>"#,
        (x0 + x1) / 2.0,
        bottom + 36.0,
        escape(title),
        if axis.log { " (log scale)" } else { "" }
    );
}

/// Horizontal gridlines and tick labels of a y axis spanning [y1 (top), y0].
pub(crate) fn y_axis(
    s: &mut String,
    axis: &Axis,
    left: f64,
    right: f64,
    y0: f64,
    y1: f64,
    title: &str,
) {
    for t in &axis.ticks {
        let y = y0 - axis.frac(*t) * (y0 - y1);
        let _ = write!(
            s,
            r#"<line x1="{left:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" class="grid"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
            left - 6.0,
            y + 4.0,
            tick_label(*t)
        );
    }
    let mid = (y0 + y1) / 2.0;
    let _ = write!(
        s,
        r#"<line x1="{left:.1}" y1="{y1:.1}" x2="{left:.1}" y2="{y0:.1}" class="axis-line"/><text x="16" y="{mid:.1}" transform="rotate(-90 16 {mid:.1})" text-anchor="middle" class="axis-title">{}{}</text>"#,
        escape(title),
        if axis.log { " (log scale)" } else { "" }
    );
}

/// Values spanning more than this factor get a log axis.
pub const LOG_SPAN: f64 = 20.0;

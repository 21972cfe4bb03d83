//! Server-rendered SVG charts: no JavaScript, a `<title>` and `<desc>`
//! (ids unique per chart) for screen readers, sizes that scale with the
//! page (viewBox; the stylesheet keeps text at 11 px or more on a phone by
//! letting a chart scroll rather than shrink). Axes get 5-7 "nice" ticks
//! with gridlines and their unit, and turn logarithmic when the values span
//! more than [`LOG_SPAN`]×. Labels never overlap: bar and dot charts put
//! one label per row, the scatter stacks its labels in a column beside the
//! plot with leader lines. Every label is XML-escaped here, since the
//! markup is inserted into pages unescaped.

mod axis;

use axis::*;
pub use axis::{Axis, LOG_SPAN};

use std::fmt::Write as _;

use wattcounts_analytics::verdict::Estimate;

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Width of every chart in its own units (the viewBox).
const W: f64 = 640.0;
/// Height of a label row.
const ROW: f64 = 22.0;
/// Longest row label shown whole (the rest end in "…"; the full name is
/// in the row's tooltip).
const LABEL_CHARS: usize = 34;

fn head(s: &mut String, id: &str, height: f64, title: &str, desc: &str) {
    let _ = write!(
        s,
        r#"<svg class="chart" id="{id}" role="img" viewBox="0 0 {W} {height:.0}" xmlns="http://www.w3.org/2000/svg" aria-labelledby="{id}-t {id}-d"><title id="{id}-t">{}</title><desc id="{id}-d">{}</desc>"#,
        escape(title),
        escape(desc)
    );
}

fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

fn whisker_h(s: &mut String, x_lo: f64, x_hi: f64, y: f64) {
    if x_hi - x_lo < 0.5 {
        return;
    }
    let _ = write!(
        s,
        r#"<path d="M{x_lo:.1} {:.1}v8M{x_lo:.1} {y:.1}H{x_hi:.1}M{x_hi:.1} {:.1}v8" class="whisker"/>"#,
        y - 4.0,
        y - 4.0
    );
}

fn whisker_v(s: &mut String, x: f64, y_lo: f64, y_hi: f64) {
    if y_lo - y_hi < 0.5 {
        return;
    }
    let _ = write!(
        s,
        r#"<path d="M{:.1} {y_lo:.1}h8M{x:.1} {y_lo:.1}V{y_hi:.1}M{:.1} {y_hi:.1}h8" class="whisker"/>"#,
        x - 4.0,
        x - 4.0
    );
}

/// One row per (label, estimate), least first as given: a bar (a dot on a
/// log axis) at the median with the interval as error bars.
pub fn bars(id: &str, title: &str, desc: &str, unit: &str, items: &[(String, Estimate)]) -> String {
    const L: f64 = 250.0;
    const R: f64 = 24.0;
    const TOP: f64 = 12.0;
    let axis = Axis::fit(
        &items
            .iter()
            .flat_map(|(_, e)| [e.lo, e.hi, e.median])
            .collect::<Vec<_>>(),
    );
    let bottom = TOP + ROW * items.len() as f64;
    let height = bottom + 48.0;
    let mut s = String::new();
    head(&mut s, id, height, title, desc);
    x_axis(&mut s, &axis, L, W - R, TOP, bottom, unit);
    let px = |v: f64| L + axis.frac(v) * (W - L - R);
    for (i, (label, e)) in items.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let mid = y + ROW / 2.0;
        let _ = write!(
            s,
            r#"<g class="row"><title>{}: {}</title><text x="{:.1}" y="{:.1}" text-anchor="end" class="label">{}</text>"#,
            escape(label),
            escape(&crate::view::format::estimate(e, unit)),
            L - 8.0,
            mid + 4.5,
            escape(&short(label)),
        );
        if axis.log {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{mid:.1}" r="5" class="dot front-dot"/>"#,
                px(e.median)
            );
        } else {
            let _ = write!(
                s,
                r#"<rect x="{L}" y="{:.1}" width="{:.1}" height="{:.1}" class="bar"/>"#,
                y + 4.0,
                (px(e.median) - L).max(1.0),
                ROW - 8.0
            );
        }
        whisker_h(&mut s, px(e.lo), px(e.hi), mid);
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    s
}

/// One scatter point: label, x and y with their intervals, and whether it
/// is on the Pareto front.
pub struct Dot {
    pub label: String,
    pub x: Estimate,
    pub y: Estimate,
    pub highlight: bool,
}

/// Label positions for points at `wanted` heights (any order): as close
/// as possible, at least `gap` apart, within [top, bottom].
pub fn spread_labels(wanted: &[f64], gap: f64, top: f64, bottom: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by(|a, b| wanted[*a].total_cmp(&wanted[*b]));
    let mut placed = vec![0.0; wanted.len()];
    let mut last = f64::NEG_INFINITY;
    for &i in &order {
        let y = wanted[i].max(top).max(last + gap);
        placed[i] = y;
        last = y;
    }
    // Pushed past the bottom: shift the stack up, keeping the gaps.
    let mut limit = bottom;
    for &i in order.iter().rev() {
        if placed[i] > limit {
            placed[i] = limit;
        }
        limit = placed[i] - gap;
    }
    placed
}

/// A scatter with error bars both ways; highlighted points are joined in
/// x order (the Pareto front). Labels sit in a column right of the plot,
/// each joined to its point by a leader line.
pub fn scatter(
    id: &str,
    title: &str,
    desc: &str,
    x_label: &str,
    y_label: &str,
    dots: &[Dot],
) -> String {
    const L: f64 = 72.0;
    const R: f64 = 200.0;
    const T: f64 = 16.0;
    const B: f64 = 52.0;
    let plot_h = (ROW * dots.len() as f64).max(260.0);
    let height = T + plot_h + B;
    let x_axis_v = Axis::fit(
        &dots
            .iter()
            .flat_map(|d| [d.x.lo, d.x.hi])
            .collect::<Vec<_>>(),
    );
    let y_axis_v = Axis::fit(
        &dots
            .iter()
            .flat_map(|d| [d.y.lo, d.y.hi])
            .collect::<Vec<_>>(),
    );
    let (x0, x1, y0, y1) = (L, W - R, T + plot_h, T);
    let px = |v: f64| x0 + x_axis_v.frac(v) * (x1 - x0);
    let py = |v: f64| y0 - y_axis_v.frac(v) * (y0 - y1);
    let mut s = String::new();
    head(&mut s, id, height, title, desc);
    x_axis(&mut s, &x_axis_v, x0, x1, y1, y0, x_label);
    y_axis(&mut s, &y_axis_v, x0, x1, y0, y1, y_label);
    let mut front: Vec<&Dot> = dots.iter().filter(|d| d.highlight).collect();
    front.sort_by(|a, b| a.x.median.total_cmp(&b.x.median));
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|d| format!("{:.1},{:.1}", px(d.x.median), py(d.y.median)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" class="front"/>"#,
            path.join(" ")
        );
    }
    let labels = spread_labels(
        &dots.iter().map(|d| py(d.y.median)).collect::<Vec<_>>(),
        ROW - 4.0,
        T + 6.0,
        y0,
    );
    let lx = x1 + 24.0;
    for (d, ly) in dots.iter().zip(&labels) {
        let (cx, cy) = (px(d.x.median), py(d.y.median));
        let class = if d.highlight { "dot front-dot" } else { "dot" };
        let _ = write!(
            s,
            r#"<g class="point"><title>{}: {}; {}</title>"#,
            escape(&d.label),
            escape(&crate::view::format::estimate(&d.x, x_label)),
            escape(&crate::view::format::estimate(&d.y, y_label)),
        );
        whisker_h(&mut s, px(d.x.lo), px(d.x.hi), cy);
        whisker_v(&mut s, cx, py(d.y.lo), py(d.y.hi));
        let _ = write!(
            s,
            r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="5" class="{class}"/><polyline points="{:.1},{cy:.1} {:.1},{cy:.1} {:.1},{ly:.1}" class="leader"/><text x="{:.1}" y="{:.1}" class="label">{}</text></g>"#,
            cx + 6.0,
            x1 + 6.0,
            lx - 4.0,
            lx,
            ly + 4.5,
            escape(&short(&d.label))
        );
    }
    s.push_str("</svg>");
    s
}

/// Series `i`'s marker at (`x`, `y`): one of eight colours and one of six
/// shapes, so that no two of 24 series look alike even without colour
/// (issue #55: eleven GPUs in eight colours made pairs indistinguishable).
/// `title`, when given, is the marker's tooltip.
fn marker(s: &mut String, x: f64, y: f64, i: usize, title: Option<&str>) {
    // The shape is named in the class too (m0 … m5), for tests and styles.
    let class = format!("dot s{} m{}", i % 8, i % 6);
    let shape = match i % 6 {
        0 => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" class="{class}""#),
        1 => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="9" height="9" class="{class}""#,
            x - 4.5,
            y - 4.5
        ),
        2 => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {:.1}H{:.1}Z" class="{class}""#,
            y - 5.5,
            x + 5.5,
            y + 4.5,
            x - 5.5
        ),
        3 => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z" class="{class}""#,
            y - 6.0,
            x + 6.0,
            y + 6.0,
            x - 6.0
        ),
        4 => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {:.1}H{:.1}Z" class="{class}""#,
            y + 5.5,
            x + 5.5,
            y - 4.5,
            x - 5.5
        ),
        _ => format!(
            r#"<path d="M{:.1} {:.1}h3v-4.5h3v4.5h4.5v3h-4.5v4.5h-3v-4.5h-4.5Z" class="{class}""#,
            x - 5.5,
            y - 1.5
        ),
    };
    s.push_str(&shape);
    match title {
        Some(t) => {
            let _ = write!(s, "><title>{}</title>", escape(t));
            let tag = if i % 6 == 0 {
                "circle"
            } else if i % 6 == 1 {
                "rect"
            } else {
                "path"
            };
            let _ = write!(s, "</{tag}>");
        }
        None => s.push_str("/>"),
    }
}

/// One row per model, one marker per series (GPU) at its median with its
/// interval; series not measured for a row are left out. A legend on top,
/// each series with its own colour and shape.
pub fn dot_rows(
    id: &str,
    title: &str,
    desc: &str,
    unit: &str,
    series: &[String],
    rows: &[(String, Vec<Option<Estimate>>)],
) -> String {
    const L: f64 = 250.0;
    const R: f64 = 24.0;
    let legend_h = ROW * series.len() as f64 + 6.0;
    let top = legend_h + 6.0;
    let bottom = top + ROW * rows.len() as f64;
    let height = bottom + 48.0;
    let axis = Axis::fit(
        &rows
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().flat_map(|e| [e.lo, e.hi]))
            .collect::<Vec<_>>(),
    );
    let px = |v: f64| L + axis.frac(v) * (W - L - R);
    let mut s = String::new();
    head(&mut s, id, height, title, desc);
    for (i, name) in series.iter().enumerate() {
        let y = ROW * i as f64 + ROW / 2.0;
        marker(&mut s, L + 6.0, y, i, None);
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="label">{}</text>"#,
            L + 18.0,
            y + 4.5,
            escape(name)
        );
    }
    x_axis(&mut s, &axis, L, W - R, top, bottom, unit);
    for (r, (label, values)) in rows.iter().enumerate() {
        let mid = top + ROW * r as f64 + ROW / 2.0;
        let _ = write!(
            s,
            r#"<g class="row"><title>{}</title><text x="{:.1}" y="{:.1}" text-anchor="end" class="label">{}</text>"#,
            escape(label),
            L - 8.0,
            mid + 4.5,
            escape(&short(label))
        );
        for (i, v) in values.iter().enumerate() {
            let Some(e) = v else { continue };
            whisker_h(&mut s, px(e.lo), px(e.hi), mid);
            let tip = format!("{}: {}", series[i], crate::view::format::estimate(e, unit));
            marker(&mut s, px(e.median), mid, i, Some(&tip));
        }
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 24 series get 24 markers that differ in colour or shape, and the
    /// first 6 differ in shape alone (readable without colour).
    #[test]
    fn markers_differ_by_shape_as_well_as_colour() {
        let sig = |i: usize| {
            let mut s = String::new();
            marker(&mut s, 10.0, 10.0, i, None);
            let class = s
                .split("class=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string();
            let shape = class.split(' ').nth(2).unwrap().to_string();
            // The element drawn differs with the shape, not the colour.
            let tag = s.split(' ').next().unwrap().to_string();
            (class, format!("{shape} {tag}"))
        };
        let all: std::collections::BTreeSet<_> = (0..24).map(sig).collect();
        assert_eq!(all.len(), 24);
        let shapes: std::collections::BTreeSet<_> = (0..6).map(|i| sig(i).1).collect();
        assert_eq!(shapes.len(), 6);
        // A marker with a tooltip closes its own element.
        let mut s = String::new();
        marker(&mut s, 1.0, 1.0, 1, Some("L4: 0.1 J"));
        assert!(
            s.starts_with("<rect") && s.ends_with("<title>L4: 0.1 J</title></rect>"),
            "{s}"
        );
    }
    use wattcounts_rules::domain::Interval;

    fn est(v: f64) -> Estimate {
        Estimate::new(
            v,
            Some(Interval {
                lo: v * 0.9,
                hi: v * 1.1,
                confidence: 0.75,
            }),
        )
    }

    #[test]
    fn labels_are_escaped() {
        let svg = bars(
            "c",
            "t",
            "d",
            "J",
            &[("<script>alert(1)</script>".into(), est(1.0))],
        );
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
    }

    #[test]
    fn linear_ticks_are_round_and_five_to_seven() {
        for hi in [
            0.0093, 0.5, 0.55, 0.61, 0.93, 1.01, 3.3, 7.7, 12.0, 48.0, 99.0, 730.0,
        ] {
            let a = Axis::fit(&[hi * 0.3, hi]);
            assert!(!a.log, "{hi}");
            assert!((5..=7).contains(&a.ticks.len()), "{hi}: {:?}", a.ticks);
            assert_eq!(a.ticks[0], 0.0);
            assert!(*a.ticks.last().unwrap() >= hi, "{hi}: {:?}", a.ticks);
            let step = a.ticks[1];
            let mantissa = step / 10f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 2.5, 5.0]
                    .iter()
                    .any(|m| (m - mantissa).abs() < 1e-9),
                "{hi}: step {step}"
            );
        }
    }

    #[test]
    fn values_spanning_decades_get_a_log_axis() {
        let a = Axis::fit(&[0.004, 0.05, 1.9]);
        assert!(a.log);
        assert_eq!((a.min, a.max), (0.001, 10.0));
        assert!((2..=7).contains(&a.ticks.len()), "{:?}", a.ticks);
        assert!((a.frac(0.1) - 0.5).abs() < 1e-9);
        assert!(!Axis::fit(&[1.0, 15.0]).log);
    }

    #[test]
    fn ids_are_the_charts_own() {
        let a = bars("gpu-batch", "t", "d", "J", &[("m".into(), est(1.0))]);
        assert!(a.contains(r#"aria-labelledby="gpu-batch-t gpu-batch-d""#));
        assert!(a.contains(r#"<title id="gpu-batch-t">"#));
    }

    #[test]
    fn stacked_labels_keep_their_gap_and_bounds() {
        let placed = spread_labels(&[100.0, 101.0, 99.0, 300.0, 299.0], 18.0, 10.0, 300.0);
        let mut sorted = placed.clone();
        sorted.sort_by(f64::total_cmp);
        for w in sorted.windows(2) {
            assert!(w[1] - w[0] >= 18.0 - 1e-9, "{placed:?}");
        }
        assert!(
            sorted[0] >= 10.0 && *sorted.last().unwrap() <= 300.0,
            "{placed:?}"
        );
        // Order kept: the lowest wanted is the lowest placed.
        assert!(placed[2] < placed[0] && placed[0] < placed[1]);
    }
}

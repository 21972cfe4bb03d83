//! Server-rendered SVG charts: no JavaScript, a `<title>` and `<desc>` for
//! screen readers, sizes that scale with the page (viewBox). Every label is
//! XML-escaped here, since the markup is inserted into pages unescaped.

use std::fmt::Write as _;

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

fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Horizontal bars, one per (label, value), longest bar = largest value.
pub fn bars(title: &str, desc: &str, unit: &str, items: &[(String, f64)]) -> String {
    const LABEL_W: f64 = 260.0;
    const BAR_W: f64 = 360.0;
    const ROW_H: f64 = 18.0;
    let width = LABEL_W + BAR_W + 90.0;
    let height = 24.0 + ROW_H * items.len() as f64 + 8.0;
    let max = items
        .iter()
        .map(|i| i.1)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" aria-labelledby="t d"><title id="t">{}</title><desc id="d">{}</desc>"#,
        escape(title),
        escape(desc)
    );
    let _ = write!(
        s,
        r#"<text x="{LABEL_W}" y="14" class="axis">{}</text>"#,
        escape(unit)
    );
    for (i, (label, value)) in items.iter().enumerate() {
        let y = 24.0 + ROW_H * i as f64;
        let w = (value / max * BAR_W).max(1.0);
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end" class="label">{}</text><rect x="{LABEL_W}" y="{}" width="{w:.1}" height="{}" class="bar"><title>{}: {} {}</title></rect><text x="{}" y="{}" class="value">{}</text>"#,
            LABEL_W - 6.0,
            y + 12.0,
            escape(label),
            y + 2.0,
            ROW_H - 4.0,
            escape(label),
            num(*value),
            escape(unit),
            LABEL_W + w + 4.0,
            y + 12.0,
            num(*value)
        );
    }
    s.push_str("</svg>");
    s
}

/// One scatter point: label, x, y, and whether it is on the Pareto front.
pub struct Dot {
    pub label: String,
    pub x: f64,
    pub y: f64,
    pub highlight: bool,
}

/// Scatter on log-free linear axes from 0; highlighted points are joined
/// in x order (the Pareto front).
pub fn scatter(title: &str, desc: &str, x_label: &str, y_label: &str, dots: &[Dot]) -> String {
    const W: f64 = 640.0;
    const H: f64 = 360.0;
    const L: f64 = 60.0;
    const B: f64 = 40.0;
    const T: f64 = 16.0;
    const R: f64 = 150.0;
    let max_x = dots
        .iter()
        .map(|d| d.x)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let max_y = dots
        .iter()
        .map(|d| d.y)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let px = |x: f64| L + x / max_x * (W - L - R);
    let py = |y: f64| H - B - y / max_y * (H - B - T);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg" aria-labelledby="st sd"><title id="st">{}</title><desc id="sd">{}</desc>"#,
        escape(title),
        escape(desc)
    );
    let _ = write!(
        s,
        r#"<line x1="{L}" y1="{}" x2="{}" y2="{}" class="axis"/><line x1="{L}" y1="{T}" x2="{L}" y2="{}" class="axis"/>"#,
        H - B,
        W - R,
        H - B,
        H - B
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" class="axis">{}</text><text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle" class="axis">{}</text>"#,
        (L + W - R) / 2.0,
        H - 8.0,
        escape(x_label),
        (H - B + T) / 2.0,
        (H - B + T) / 2.0,
        escape(y_label)
    );
    let _ = write!(
        s,
        r#"<text x="{L}" y="{}" class="tick">0</text><text x="{}" y="{}" text-anchor="end" class="tick">{}</text><text x="{}" y="{}" text-anchor="end" class="tick">{}</text>"#,
        H - B + 14.0,
        W - R,
        H - B + 14.0,
        num(max_x),
        L - 4.0,
        T + 8.0,
        num(max_y)
    );
    let mut front: Vec<&Dot> = dots.iter().filter(|d| d.highlight).collect();
    front.sort_by(|a, b| a.x.total_cmp(&b.x));
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|d| format!("{:.1},{:.1}", px(d.x), py(d.y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" class="front"/>"#,
            path.join(" ")
        );
    }
    for d in dots {
        let class = if d.highlight { "dot front-dot" } else { "dot" };
        let _ = write!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="5" class="{class}"><title>{}: {} / {}</title></circle><text x="{:.1}" y="{:.1}" class="label">{}</text>"#,
            px(d.x),
            py(d.y),
            escape(&d.label),
            num(d.x),
            num(d.y),
            px(d.x) + 7.0,
            py(d.y) + 4.0,
            escape(&d.label)
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        let svg = bars("t", "d", "J", &[("<script>alert(1)</script>".into(), 1.0)]);
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
    }
}

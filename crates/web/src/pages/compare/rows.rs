//! The compare page's rows and headline in words: cells with intervals,
//! savings, and "within measurement noise" where the intervals overlap.

use wattcounts_analytics::compare;

pub(crate) struct CompareCell {
    pub(crate) ept: String,
    pub(crate) range: String,
    pub(crate) best: bool,
    pub(crate) winner: bool,
    pub(crate) measured: bool,
}

pub(crate) struct CompareRow {
    pub(crate) model: String,
    pub(crate) model_link: String,
    /// The weights' precision (`BF16`, `AWQ-INT4`, …), from the catalogue.
    pub(crate) precision: String,
    pub(crate) cells: Vec<CompareCell>,
    pub(crate) savings: Vec<String>,
    pub(crate) latencies: Vec<String>,
    pub(crate) verdict: String,
    pub(crate) tie: bool,
}

pub(crate) struct HeadlineRow {
    pub(crate) scenario: String,
    pub(crate) current: bool,
    pub(crate) best: String,
    pub(crate) models: String,
    pub(crate) vs_worst: String,
    pub(crate) vs_reference: String,
}

/// A GPU's name as a column of the side-by-side table: without the maker's
/// prefix every column shares ("NVIDIA ", "Tesla "), so eleven fit a wide
/// screen; the full name stays in the column's title.
pub(crate) fn column_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ")
        .or_else(|| name.strip_prefix("Tesla "))
        .unwrap_or(name)
}

pub(crate) fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |p| format!("{p:.0} %"))
}

/// How many of the best GPU's models are ties, when any are.
pub(crate) fn within_noise(ties: usize, before: &str, after: &str) -> String {
    if ties == 0 {
        return String::new();
    }
    format!("{before}{ties}{after}")
}

pub(crate) fn headline_row(h: &compare::Headline, current: bool) -> HeadlineRow {
    HeadlineRow {
        scenario: h.scenario.label(),
        current,
        best: h.best_gpu.as_ref().map_or("–".into(), |g| g.1.clone()),
        models: match h.best_gpu {
            Some(_) => format!(
                "{} of {}{}",
                h.best_for,
                h.models,
                within_noise(h.best_ties, " (", " within noise)")
            ),
            None => "no model measured by two of them".into(),
        },
        vs_worst: format!(
            "{} (up to {})",
            pct(h.best_vs_worst_median_pct),
            pct(h.best_vs_worst_max_pct)
        ),
        vs_reference: match (&h.reference_gpu, &h.best_gpu) {
            (Some(r), Some(b)) if r.0 == b.0 => format!("{} is the reference", r.1),
            (Some(r), _) => format!("{} vs {}", pct(h.best_vs_reference_median_pct), r.1),
            (None, _) => "no reference chosen".into(),
        },
    }
}

/// One sentence: which GPU is best, for how many models, and by how much.
pub(crate) fn headline_sentence(h: &compare::Headline) -> String {
    let Some((_, best)) = &h.best_gpu else {
        return "No model here was measured by two of these GPUs: nothing to compare.".into();
    };
    let mut s = format!(
        "{best} uses the least energy for {} of the {} models measured by at least two of these GPUs{}; median saving against each model's most energy-hungry GPU {} (up to {})",
        h.best_for,
        h.models,
        within_noise(h.best_ties, ", ", " of them within measurement noise"),
        pct(h.best_vs_worst_median_pct),
        pct(h.best_vs_worst_max_pct),
    );
    match &h.reference_gpu {
        Some(r) if Some(&r.0) != h.best_gpu.as_ref().map(|b| &b.0) => s.push_str(&format!(
            ", and {} against the {} (median over the models both measured).",
            pct(h.best_vs_reference_median_pct),
            r.1
        )),
        _ => s.push('.'),
    }
    s
}

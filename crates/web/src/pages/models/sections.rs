//! The model page's view models: one section per scenario (the points, the
//! verdict in words, the choices under deadlines) built from the analytics'
//! comparison, ready for `model.html`.

use askama::Template;

use crate::view::charts::{self, Dot};
use crate::view::{format, View};
use wattcounts_analytics::compare::ModelScenario;
use wattcounts_analytics::deadline::{self, Deadline, Meets};
use wattcounts_analytics::verdict::{sig, Verdict};
use wattcounts_rules::domain::Scenario;

pub(crate) struct PointRow {
    pub(crate) gpu: String,
    pub(crate) gpu_link: Option<String>,
    pub(crate) ept: String,
    pub(crate) ept_range: String,
    pub(crate) confidence: String,
    pub(crate) epr: String,
    pub(crate) epr_range: String,
    pub(crate) wh_per_1000: String,
    pub(crate) co2_per_1000: String,
    pub(crate) latency: String,
    pub(crate) latency_range: String,
    pub(crate) itl: String,
    pub(crate) itl_range: String,
    pub(crate) throughput: String,
    pub(crate) throughput_range: String,
    /// Server: mean concurrency (Little's law) and its interval.
    pub(crate) concurrency: String,
    pub(crate) concurrency_range: String,
    /// Server: "14 / 86": the energy attributed to prefill / decode, %.
    pub(crate) split: String,
    pub(crate) split_range: String,
    pub(crate) iterations: String,
    pub(crate) pareto: bool,
    pub(crate) evidence: String,
}

pub(crate) struct ChoiceRow {
    pub(crate) label: String,
    pub(crate) asked: bool,
    pub(crate) pick: String,
    pub(crate) pick_ept: String,
    pub(crate) borderline: bool,
    pub(crate) runner_up: String,
    pub(crate) saving: String,
    pub(crate) tie: bool,
    pub(crate) missing: usize,
}

pub(crate) struct ModelSection {
    pub(crate) anchor: String,
    pub(crate) label: String,
    /// "L4: 0.0123 J/token (0.0121–0.0125, 75 % interval)".
    pub(crate) best: String,
    /// The verdict against the runner-up, or why it is a tie.
    pub(crate) verdict: String,
    /// The saving against the most energy-hungry GPU measured (three GPUs
    /// or more: with two, that is the runner-up).
    pub(crate) against_worst: Option<String>,
    /// The saving against the GPU the reader picked, or why there is none.
    pub(crate) against_reference: Option<String>,
    pub(crate) tie: bool,
    pub(crate) alone: bool,
    pub(crate) per_request: String,
    pub(crate) latency_header: String,
    pub(crate) server: bool,
    pub(crate) chart: String,
    pub(crate) rows: Vec<PointRow>,
    pub(crate) choices: Vec<ChoiceRow>,
}

#[derive(Template)]
#[template(path = "model.html")]
pub(crate) struct ModelPage {
    pub(crate) model: String,
    /// The model's RSS feed of new results.
    pub(crate) feed_link: String,
    pub(crate) facts: String,
    pub(crate) leaderboard_link: String,
    pub(crate) sections: Vec<ModelSection>,
    pub(crate) ttft_ms: String,
    pub(crate) itl_ms: String,
    pub(crate) min_tok_s: String,
    pub(crate) max_j_per_token: String,
    /// The GPUs measured with the model, for the reference picker:
    /// (id, name, picked).
    pub(crate) references: Vec<(String, String, bool)>,
    pub(crate) footprint: String,
    pub(crate) json_link: String,
    pub(crate) csv_link: String,
    /// Estimates for the catalogue GPUs without a group: below the
    /// measured tables, never among them.
    pub(crate) estimates: crate::pages::estimate::UnmeasuredSection,
    /// The model in each imported peer origin: its own section.
    pub(crate) also_measured: Vec<crate::pages::peers::model_notes::PeerNote>,
    pub(crate) view: View,
    pub(crate) layout: crate::layout::Layout,
}

pub(crate) fn verdict_text(v: &Verdict, best: &str, other: &str) -> String {
    match v {
        Verdict::Less { saving } => format!(
            "{best} uses less energy than the runner-up, the {other}: {} less",
            format::saving(saving)
        ),
        Verdict::Tie { why, saving } => format!(
            "Tie within measurement noise: {best} and {other} ({:.0} % apart at the medians), because {why}.",
            saving.median_pct
        ),
    }
}

pub(crate) fn choice_row(c: &deadline::Choice, asked: bool) -> ChoiceRow {
    ChoiceRow {
        label: c.label.clone(),
        asked,
        pick: c.pick.as_ref().map_or(
            if c.budget_j_per_token.is_some() {
                "none meets both".into()
            } else {
                "none meets it".into()
            },
            |p| p.gpu_name.clone(),
        ),
        pick_ept: c.pick.as_ref().map_or("–".into(), |p| sig(p.energy.median)),
        borderline: c
            .pick
            .as_ref()
            .is_some_and(|p| p.meets == Meets::Borderline),
        runner_up: c
            .runner_up
            .as_ref()
            .map_or("–".into(), |p| p.gpu_name.clone()),
        saving: match &c.verdict {
            Some(v) => format::saving(&v.saving()),
            None => "–".into(),
        },
        tie: c.verdict.as_ref().is_some_and(Verdict::is_tie),
        missing: c.missing,
    }
}

pub(crate) fn section(
    id: &str,
    m: &ModelScenario,
    footprint: &wattcounts_analytics::units::Footprint,
    view_query: &str,
    reference: Option<&str>,
) -> ModelSection {
    // The presets come first in `choices`; any after them were asked for.
    let presets = Deadline::presets(m.scenario.scenario).len();
    let label = m.scenario.label();
    let server = m.scenario.scenario == Scenario::Server;
    let first = m.points.first();
    let best = first.map_or("–".into(), |p| {
        format!(
            "{}: {}",
            p.gpu_name,
            format::estimate(&p.energy_per_token, "J/token")
        )
    });
    let verdict = match (&m.verdict, m.points.as_slice()) {
        (Some(v), [a, b, ..]) => verdict_text(v, &a.gpu_name, &b.gpu_name),
        _ => "Only one GPU measured this model here: no comparison to make.".into(),
    };
    let against_worst = match m.points.as_slice() {
        [a, _, .., z] => Some(format::saving_sentence(
            &format!("the most energy-hungry GPU measured, the {}", z.gpu_name),
            &wattcounts_analytics::verdict::saving(&a.energy_per_token, &z.energy_per_token),
        )),
        _ => None,
    };
    let against_reference = reference.filter(|r| !r.is_empty()).map(|r| {
        match (m.points.first(), m.points.iter().find(|p| p.gpu_id == r)) {
            (_, None) => format!(
                "The GPU you picked ({r}) was not measured with this model in this scenario."
            ),
            (Some(best), Some(p)) if best.gpu_id == p.gpu_id => {
                format!(
                    "The {} you picked is the least-energy GPU here.",
                    p.gpu_name
                )
            }
            (Some(best), Some(p)) => format::saving_sentence(
                &format!("the {} you picked", p.gpu_name),
                &wattcounts_analytics::verdict::saving(&best.energy_per_token, &p.energy_per_token),
            ),
            (None, Some(_)) => String::new(),
        }
    });
    let per_request = first
        .and_then(|p| Some((p, p.energy_per_request?)))
        .map_or(String::new(), |(p, e)| {
            format!(
                "Per request on the {}: {} · {} Wh per 1,000 requests · {} gCO₂e per 1,000 requests ({}).",
                p.gpu_name,
                format::estimate(&e, "J"),
                sig(wattcounts_analytics::units::wh_per_1000(e).median),
                sig(footprint.g_co2e_per_1000(e).median),
                footprint.describe()
            )
        });
    let chart = charts::scatter(
        &format!("model-{}", m.scenario.slug()),
        &format!("{id}: energy per token against {} ({label})", m.latency_metric),
        &format!(
            "Each GPU as a point: median energy per generated token (J) across, {} (ms) up, each with its interval as error bars; the Pareto front (no other GPU is better on both) is joined.",
            m.latency_metric
        ),
        "J / token",
        &format!("{} (ms)", m.latency_metric),
        &m.points
            .iter()
            .filter_map(|p| {
                Some(Dot {
                    label: p.gpu_name.clone(),
                    x: p.energy_per_token,
                    y: p.latency?.scaled(1e3),
                    highlight: p.pareto,
                })
            })
            .collect::<Vec<_>>(),
    );
    ModelSection {
        anchor: m.scenario.slug(),
        label,
        best,
        tie: m.verdict.as_ref().is_some_and(Verdict::is_tie),
        alone: m.verdict.is_none(),
        verdict,
        against_worst,
        against_reference,
        per_request,
        latency_header: format!("{} ms", m.latency_metric),
        server,
        chart,
        rows: m
            .points
            .iter()
            .map(|p| PointRow {
                gpu: p.gpu_name.clone(),
                gpu_link: wattcounts_rules::catalog::gpu_by_id(&p.gpu_id).map(|g| {
                    format!(
                        "/gpus/{}?scenario={}&{view_query}",
                        g.id,
                        m.scenario.param()
                    )
                }),
                ept: format::value(Some(p.energy_per_token), 1.0),
                ept_range: format::range(Some(p.energy_per_token), 1.0),
                confidence: format::confidence(Some(p.energy_per_token)),
                epr: format::value(p.energy_per_request, 1.0),
                epr_range: format::under(p.energy_per_request, 1.0),
                itl_range: format::under(p.itl, 1e3),
                throughput_range: format::under(Some(p.throughput), 1.0),
                wh_per_1000: format::value(
                    p.energy_per_request
                        .map(wattcounts_analytics::units::wh_per_1000),
                    1.0,
                ),
                co2_per_1000: format::value(
                    p.energy_per_request.map(|e| footprint.g_co2e_per_1000(e)),
                    1.0,
                ),
                latency: format::value(p.latency, 1e3),
                latency_range: format::range(p.latency, 1e3),
                itl: format::value(p.itl, 1e3),
                throughput: format::thousands(p.throughput.median.round() as u64),
                concurrency: format::value(p.mean_concurrency, 1.0),
                concurrency_range: format::under(p.mean_concurrency, 1.0),
                split: p.prefill_energy_share.map_or("–".into(), |s| {
                    format!(
                        "{} / {}",
                        sig(s.median * 100.0),
                        sig((1.0 - s.median) * 100.0)
                    )
                }),
                split_range: format::under(p.prefill_energy_share, 100.0),
                iterations: format::thousands(p.iterations),
                pareto: p.pareto,
                evidence: p.evidence.to_string(),
            })
            .collect(),
        choices: m
            .choices
            .iter()
            .enumerate()
            .map(|(i, c)| choice_row(c, i >= presets))
            .collect(),
    }
}

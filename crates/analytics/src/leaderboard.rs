//! The leaderboard's groups. A group is GPU × model × scenario × arrival
//! rate × protocol × origin ([`wattcounts_rules::domain::GroupKey`]); its figures are
//! the median over its submissions of each submission's median over
//! iterations, with an order-statistic interval. [`aggregate`] computes them
//! from a group's members; the store keeps the result in its read model on
//! every write, and pages read only that. Pure: members in, figures out.

use serde::Serialize;

use wattcounts_rules::derived::ConfigurationMetrics;
use wattcounts_rules::domain::{
    GroupKey, Interval, Origin, Protocol, Scenario, ScenarioKey, Status,
};
use wattcounts_rules::stats;

/// One submission's configuration in a group: what the read model needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub submission_id: uuid::Uuid,
    pub submitter_id: i64,
    pub status: Status,
    pub iterations: u32,
    pub ept_median: f64,
    /// The submission's own interval over its iterations.
    pub ept_interval: Interval,
    pub ept_cv: f64,
    pub epr_median: Option<f64>,
    pub throughput_median: f64,
    pub power_median: f64,
    pub ttft_median: Option<f64>,
    pub itl_median: Option<f64>,
    /// Server: the submission's median mean concurrency and prefill share.
    pub concurrency_median: Option<f64>,
    pub prefill_share_median: Option<f64>,
    /// The submission's own intervals of its other figures.
    pub intervals: FigureIntervals,
}

/// Intervals of the figures beside energy per token, each the same kind of
/// order-statistic interval as [`LeaderboardRow::energy_per_token_interval`]; None
/// where the figure is absent (or was stored before intervals were kept,
/// until `db rebuild`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize, utoipa::ToSchema,
)]
pub struct FigureIntervals {
    pub energy_per_request_j: Option<Interval>,
    pub throughput_tok_s: Option<Interval>,
    pub ttft_p50_s: Option<Interval>,
    pub itl_s: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_concurrency: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_energy_share: Option<Interval>,
}

impl FigureIntervals {
    /// As the `intervals` column stores them (per configuration and group).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("numbers serialise")
    }
}

/// How many submission ids a group keeps as its evidence (oldest first).
pub const EVIDENCE_KEPT: usize = 20;

/// A group's figures over its members.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Figures {
    pub ept_median: f64,
    pub ept_interval: Interval,
    /// Median absolute deviation of the members' medians around
    /// `ept_median` (the consistency check's scale).
    pub ept_mad: f64,
    /// Largest coefficient of variation over iterations among the members.
    pub ept_cv: f64,
    pub epr_median: Option<f64>,
    pub throughput_median: f64,
    pub power_median: f64,
    pub ttft_median: Option<f64>,
    pub itl_median: Option<f64>,
    pub concurrency_median: Option<f64>,
    pub prefill_share_median: Option<f64>,
    pub iterations: u64,
    pub submissions: u64,
    pub submitters: u64,
    /// Members waiting for a maintainer.
    pub in_review: u64,
    /// The first [`EVIDENCE_KEPT`] members, oldest first.
    pub evidence: Vec<uuid::Uuid>,
    pub intervals: FigureIntervals,
}

/// A group's interval of one figure: the one member's own, or the
/// order-statistic interval over the members' medians.
fn group_interval(
    members: &[Member],
    median: impl Fn(&Member) -> Option<f64>,
    own: impl Fn(&FigureIntervals) -> Option<Interval>,
) -> Option<Interval> {
    if let [one] = members {
        return own(&one.intervals);
    }
    let mut medians: Vec<f64> = members.iter().filter_map(median).collect();
    medians.sort_by(f64::total_cmp);
    stats::median_interval(&medians)
}

/// The figures of one group from its members (oldest first); None when it
/// has none. With one submission the interval is that submission's over its
/// iterations; with several, the order-statistic interval over the
/// submissions' medians.
pub fn aggregate(members: &[Member]) -> Option<Figures> {
    let first = members.first()?;
    let mut medians: Vec<f64> = members.iter().map(|m| m.ept_median).collect();
    medians.sort_by(f64::total_cmp);
    let ept_interval = if members.len() == 1 {
        first.ept_interval
    } else {
        stats::median_interval(&medians)?
    };
    let mut submitters: Vec<i64> = members.iter().map(|m| m.submitter_id).collect();
    submitters.sort_unstable();
    submitters.dedup();
    let ept_median = stats::percentile_sorted(&medians, 0.5);
    Some(Figures {
        ept_median,
        ept_mad: stats::median_absolute_deviation(&medians, ept_median),
        ept_interval,
        ept_cv: members.iter().map(|m| m.ept_cv).fold(0.0, f64::max),
        epr_median: stats::median(members.iter().filter_map(|m| m.epr_median).collect()),
        throughput_median: stats::median(members.iter().map(|m| m.throughput_median).collect())?,
        power_median: stats::median(members.iter().map(|m| m.power_median).collect())?,
        ttft_median: stats::median(members.iter().filter_map(|m| m.ttft_median).collect()),
        itl_median: stats::median(members.iter().filter_map(|m| m.itl_median).collect()),
        concurrency_median: stats::median(
            members
                .iter()
                .filter_map(|m| m.concurrency_median)
                .collect(),
        ),
        prefill_share_median: stats::median(
            members
                .iter()
                .filter_map(|m| m.prefill_share_median)
                .collect(),
        ),
        iterations: members.iter().map(|m| u64::from(m.iterations)).sum(),
        submissions: members.len() as u64,
        submitters: submitters.len() as u64,
        in_review: members
            .iter()
            .filter(|m| m.status == Status::NeedsReview)
            .count() as u64,
        evidence: members
            .iter()
            .take(EVIDENCE_KEPT)
            .map(|m| m.submission_id)
            .collect(),
        intervals: FigureIntervals {
            energy_per_request_j: group_interval(
                members,
                |m| m.epr_median,
                |i| i.energy_per_request_j,
            ),
            throughput_tok_s: group_interval(
                members,
                |m| Some(m.throughput_median),
                |i| i.throughput_tok_s,
            ),
            ttft_p50_s: group_interval(members, |m| m.ttft_median, |i| i.ttft_p50_s),
            itl_s: group_interval(members, |m| m.itl_median, |i| i.itl_s),
            mean_concurrency: group_interval(
                members,
                |m| m.concurrency_median,
                |i| i.mean_concurrency,
            ),
            prefill_energy_share: group_interval(
                members,
                |m| m.prefill_share_median,
                |i| i.prefill_energy_share,
            ),
        },
    })
}

/// A group as first seen: its key and what the read model describes it by.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupInfo {
    pub key: GroupKey,
    pub gpu_name: String,
    pub protocol_label: String,
    pub reference: bool,
    pub size_class: Option<SizeClass>,
}

/// The group a submission's configuration belongs to. GPUs the catalogue
/// does not know get an id derived from their NVML name.
pub fn group_of(
    gpu_id: Option<&str>,
    gpu_name: &str,
    is_demo: bool,
    protocol: &Protocol,
    c: &ConfigurationMetrics,
) -> GroupInfo {
    GroupInfo {
        key: GroupKey {
            gpu_id: gpu_id
                .map(str::to_string)
                .unwrap_or_else(|| wattcounts_rules::catalog::gpu_id(gpu_name)),
            model: c.model.clone(),
            scenario: ScenarioKey {
                scenario: c.scenario,
                lambda_qps: c.lambda_qps,
            },
            protocol_id: protocol.id(c.scenario),
            origin: Origin::of_demo(is_demo),
        },
        gpu_name: gpu_name.to_string(),
        protocol_label: protocol.label(c.scenario),
        reference: protocol.is_reference(c.scenario),
        size_class: SizeClass::of_model(&c.model),
    }
}

/// A configuration's figures as the read model stores them per member.
pub struct MemberFigures {
    pub ept_interval: Interval,
    pub epr_median: Option<f64>,
    pub ttft_median: Option<f64>,
    pub itl_median: Option<f64>,
    pub concurrency_median: Option<f64>,
    pub prefill_share_median: Option<f64>,
    pub intervals: FigureIntervals,
}

pub fn member_figures(c: &ConfigurationMetrics) -> MemberFigures {
    let n = c.iterations;
    MemberFigures {
        ept_interval: c.energy_per_token_j.median_interval(n),
        epr_median: c.energy_per_request_j.map(|s| s.median),
        ttft_median: c.ttft_p50_s.map(|s| s.median),
        itl_median: c.itl_s.map(|s| s.median),
        concurrency_median: c.mean_concurrency.map(|s| s.median),
        prefill_share_median: c.prefill_energy_share.map(|s| s.median),
        intervals: FigureIntervals {
            energy_per_request_j: c.energy_per_request_j.map(|s| s.median_interval(n)),
            throughput_tok_s: Some(c.throughput_tok_s.median_interval(n)),
            ttft_p50_s: c.ttft_p50_s.map(|s| s.median_interval(n)),
            itl_s: c.itl_s.map(|s| s.median_interval(n)),
            mean_concurrency: c.mean_concurrency.map(|s| s.median_interval(n)),
            prefill_energy_share: c.prefill_energy_share.map(|s| s.median_interval(n)),
        },
    }
}

/// One leaderboard row: a group as the read model holds it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct LeaderboardRow {
    pub gpu_id: String,
    pub gpu_name: String,
    pub model: String,
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
    /// The protocol's id for this scenario and how it reads.
    pub protocol_id: String,
    pub protocol: String,
    pub reference_protocol: bool,
    pub origin: Origin,
    /// Median over submissions of each submission's median over iterations.
    pub energy_per_token_j: f64,
    pub energy_per_token_interval: Interval,
    /// Largest coefficient of variation over iterations among the submissions.
    pub energy_per_token_cv: f64,
    pub energy_per_request_j: Option<f64>,
    pub throughput_tok_s: f64,
    pub power_mean_w: f64,
    pub ttft_p50_s: Option<f64>,
    /// Batch: the run's duration over the tokens it generated (time per
    /// output token); server: the median inter-token latency. Seconds.
    pub itl_s: Option<f64>,
    /// Server: requests in the system on average (Little's law: Σ
    /// end-to-end latency ÷ measurement window), median as above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_concurrency: Option<f64>,
    /// Server: the share of energy attributed to prefill by time (Σ TTFT ÷
    /// Σ end-to-end latency; the rest is decode), median as above. An
    /// attribution, not a measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_energy_share: Option<f64>,
    /// Intervals of the figures above, like `energy_per_token_interval`.
    pub intervals: FigureIntervals,
    pub iterations: u64,
    pub submissions: u64,
    pub submitters: u64,
    /// 1-based rank of this row among the GPUs that measured the same
    /// model in the same scenario and view, by the query's sort; set by
    /// leaderboard queries only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank_in_model: Option<u64>,
    /// Kept for links that read it: origin == demo.
    pub demo: bool,
    pub needs_review: bool,
    /// The oldest submission of the group.
    pub evidence: uuid::Uuid,
    /// Up to [`EVIDENCE_KEPT`] submissions, oldest first (only the first
    /// where the query did not ask for the list).
    pub evidence_ids: Vec<uuid::Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    EnergyPerToken,
    EnergyPerRequest,
    Throughput,
    Ttft,
    Itl,
}

impl SortKey {
    pub const ALL: [(&'static str, SortKey, &'static str); 5] = [
        (
            "energy_per_token",
            SortKey::EnergyPerToken,
            "energy per token",
        ),
        (
            "energy_per_request",
            SortKey::EnergyPerRequest,
            "energy per request",
        ),
        ("throughput", SortKey::Throughput, "throughput"),
        ("ttft", SortKey::Ttft, "TTFT p50"),
        ("itl", SortKey::Itl, "inter-token latency"),
    ];
    pub fn parse(s: &str) -> Option<SortKey> {
        Self::ALL
            .iter()
            .find(|(n, _, _)| *n == s)
            .map(|(_, k, _)| *k)
    }
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k, _)| *k == self)
            .map(|(n, _, _)| *n)
            .unwrap_or("energy_per_token")
    }
}

/// Model size classes by parameter count (catalogue models only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SizeClass {
    /// Under 10 B parameters.
    Small,
    /// 10 to 30 B.
    Medium,
    /// Over 30 B.
    Large,
}

impl SizeClass {
    pub const ALL: [(&'static str, SizeClass, &'static str); 3] = [
        ("small", SizeClass::Small, "small (< 10 B)"),
        ("medium", SizeClass::Medium, "medium (10–30 B)"),
        ("large", SizeClass::Large, "large (> 30 B)"),
    ];
    pub fn parse(s: &str) -> Option<SizeClass> {
        Self::ALL
            .iter()
            .find(|(n, _, _)| *n == s)
            .map(|(_, k, _)| *k)
    }
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k, _)| *k == self)
            .map(|(n, _, _)| *n)
            .unwrap_or("small")
    }
    pub fn of_model(model: &str) -> Option<SizeClass> {
        let p = wattcounts_rules::catalog::model_by_id(model)?.params_b;
        Some(if p < 10.0 {
            SizeClass::Small
        } else if p <= 30.0 {
            SizeClass::Medium
        } else {
            SizeClass::Large
        })
    }
}

/// Which protocol a view shows.
#[derive(Debug, Clone, PartialEq)]
pub enum ProtocolFilter {
    /// The paper's protocol (the default view).
    Reference,
    /// One protocol id (per scenario, as rows show it).
    Id(String),
    /// Every protocol, each in its own rows (exports).
    Any,
}

/// Which groups to read. `origin: None` means "decide for me": real data
/// where the reference protocol has any, the demo otherwise.
#[derive(Debug, Clone)]
pub struct Query {
    pub scenario: Option<Scenario>,
    pub size: Option<SizeClass>,
    pub lambda_qps: Option<f64>,
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub sort: SortKey,
    pub include_review: bool,
    pub origin: Option<Origin>,
    pub protocol: ProtocolFilter,
    pub page: usize,
    pub per_page: usize,
    /// Read each row's list of evidence ids (the leaderboard shows them;
    /// pages that compare whole views need only the first).
    pub evidence_list: bool,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            scenario: None,
            size: None,
            lambda_qps: None,
            model: None,
            gpu: None,
            sort: SortKey::EnergyPerToken,
            include_review: false,
            origin: None,
            protocol: ProtocolFilter::Reference,
            page: 1,
            per_page: 100,
            evidence_list: true,
        }
    }
}

/// One view of the read model: origin × protocol × scenario.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct GroupView {
    pub origin: wattcounts_rules::domain::Origin,
    pub protocol_id: String,
    pub protocol_label: String,
    pub reference: bool,
    pub scenario: wattcounts_rules::domain::ScenarioKey,
    pub groups: u64,
}

/// What one view holds, for filter controls.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Facets {
    pub models: Vec<String>,
    /// (id, NVML name)
    pub gpus: Vec<(String, String)>,
    pub rates: Vec<f64>,
}

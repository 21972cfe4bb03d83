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

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn iv(lo: f64, hi: f64, confidence: f64) -> Interval {
        Interval { lo, hi, confidence }
    }

    /// A member with these figures; its own intervals say (0, 1) at 0.5 so
    /// that a group of one shows them and a larger group never does.
    #[allow(clippy::too_many_arguments)]
    fn member(
        n: u128,
        submitter_id: i64,
        status: Status,
        iterations: u32,
        ept: f64,
        cv: f64,
        epr: Option<f64>,
        throughput: f64,
        power: f64,
        ttft: Option<f64>,
    ) -> Member {
        let own = Some(iv(0.0, 1.0, 0.5));
        Member {
            submission_id: Uuid::from_u128(n),
            submitter_id,
            status,
            iterations,
            ept_median: ept,
            ept_interval: iv(ept * 0.9, ept * 1.1, 0.75),
            ept_cv: cv,
            epr_median: epr,
            throughput_median: throughput,
            power_median: power,
            ttft_median: ttft,
            itl_median: None,
            concurrency_median: (n == 1).then_some(1.0),
            prefill_share_median: (n == 1).then_some(0.01),
            intervals: FigureIntervals {
                energy_per_request_j: own,
                throughput_tok_s: own,
                ttft_p50_s: own,
                itl_s: own,
                mean_concurrency: own,
                prefill_energy_share: own,
            },
        }
    }

    fn four() -> Vec<Member> {
        use Status::*;
        vec![
            member(
                1,
                1,
                Accepted,
                3,
                1.0,
                0.05,
                Some(10.0),
                100.0,
                50.0,
                Some(0.1),
            ),
            member(2, 2, NeedsReview, 5, 3.0, 0.2, None, 300.0, 70.0, Some(0.3)),
            member(3, 1, Accepted, 3, 2.0, 0.1, Some(30.0), 200.0, 60.0, None),
            member(
                4,
                3,
                Accepted,
                4,
                10.0,
                0.01,
                Some(20.0),
                400.0,
                80.0,
                Some(0.2),
            ),
        ]
    }

    #[test]
    fn four_members_worked_by_hand() {
        let f = aggregate(&four()).unwrap();
        // Energy per token: members' medians sorted 1, 2, 3, 10; the median
        // of an even count is the mean of the middle two, 2.5. Deviations
        // from it 1.5, 0.5, 0.5, 7.5 → sorted 0.5, 0.5, 1.5, 7.5 → MAD 1.0.
        assert_eq!((f.ept_median, f.ept_mad), (2.5, 1.0));
        // n = 4: (x(2), x(3)) covers 1 − 2·P(Bin(4, ½) ≤ 1) = 1 − 2·5/16 =
        // 0.375 < 0.95, so min–max: 1 − 2/16 = 0.875.
        assert_eq!(f.ept_interval, iv(1.0, 10.0, 0.875));
        // The largest CV; J/request over the three that have one: 10, 20,
        // 30 → 20, and min–max of three covers 1 − 2/8 = 0.75.
        assert_eq!(f.ept_cv, 0.2);
        assert_eq!(f.epr_median, Some(20.0));
        assert_eq!(f.intervals.energy_per_request_j, Some(iv(10.0, 30.0, 0.75)));
        // Throughput 100, 200, 300, 400 → 250; power 50…80 → 65.
        assert_eq!((f.throughput_median, f.power_median), (250.0, 65.0));
        assert_eq!(f.intervals.throughput_tok_s, Some(iv(100.0, 400.0, 0.875)));
        // TTFT over the three that have one: 0.1, 0.2, 0.3.
        assert_eq!(f.ttft_median, Some(0.2));
        assert_eq!(f.intervals.ttft_p50_s, Some(iv(0.1, 0.3, 0.75)));
        // Nobody has an ITL: no figure and no interval.
        assert_eq!((f.itl_median, f.intervals.itl_s), (None, None));
        // One member of four has a concurrency: its value, an interval
        // that claims nothing (a single value), never its own interval.
        assert_eq!(f.concurrency_median, Some(1.0));
        assert_eq!(f.intervals.mean_concurrency, Some(iv(1.0, 1.0, 0.0)));
        assert_eq!(f.prefill_share_median, Some(0.01));
        assert_eq!(f.intervals.prefill_energy_share, Some(iv(0.01, 0.01, 0.0)));
        // 3 + 5 + 3 + 4 iterations; submitters 1, 2, 1, 3 are three; one
        // member awaits review; evidence in the members' order.
        assert_eq!(
            (f.iterations, f.submissions, f.submitters, f.in_review),
            (15, 4, 3, 1)
        );
        let ids: Vec<u128> = f.evidence.iter().map(|u| u.as_u128()).collect();
        assert_eq!(ids, vec![1, 2, 3, 4]);
    }

    #[test]
    fn one_member_keeps_its_own_intervals_and_none_is_no_group() {
        assert_eq!(aggregate(&[]), None);
        let one = &four()[1..2];
        let f = aggregate(one).unwrap();
        assert_eq!((f.ept_median, f.ept_mad), (3.0, 0.0));
        assert_eq!(f.ept_interval, one[0].ept_interval);
        assert_eq!(f.intervals, one[0].intervals);
        assert_eq!(
            (f.submissions, f.submitters, f.in_review, f.iterations),
            (1, 1, 1, 5)
        );
    }

    #[test]
    fn evidence_keeps_the_first_twenty() {
        let members: Vec<Member> = (1..=25)
            .map(|n| {
                member(
                    n,
                    1,
                    Status::Accepted,
                    3,
                    n as f64,
                    0.0,
                    None,
                    1.0,
                    1.0,
                    None,
                )
            })
            .collect();
        let f = aggregate(&members).unwrap();
        assert_eq!(f.evidence.len(), EVIDENCE_KEPT);
        assert_eq!(f.evidence[19], Uuid::from_u128(20));
        // 25 values 1..25: median 13. P(Bin(25, ½) ≤ 7) = 0.0216 and ≤ 8 is
        // 0.0539, so the 8th and 18th values are the narrowest pair covering
        // 95 %: 1 − 2·0.02164 = 0.95671 (Python: sum of C(25, i), i < 8, / 2^25).
        assert_eq!(f.ept_median, 13.0);
        assert_eq!((f.ept_interval.lo, f.ept_interval.hi), (8.0, 18.0));
        assert!((f.ept_interval.confidence - 0.956_714_749_336_242_7).abs() < 1e-12);
        assert_eq!(f.submissions, 25);
    }

    #[test]
    fn sort_and_size_names_read_back() {
        for (name, key, _) in SortKey::ALL {
            assert_eq!(SortKey::parse(name), Some(key));
            assert_eq!(key.name(), name);
        }
        assert_eq!(SortKey::parse("watts"), None);
        for (name, class, _) in SizeClass::ALL {
            assert_eq!(SizeClass::parse(name), Some(class));
            assert_eq!(class.name(), name);
        }
        assert_eq!(SizeClass::parse("huge"), None);
        // The classes' edges, on catalogue models: 9 B is small, 10.7 B
        // medium, 30 B still medium; a model outside the catalogue has none.
        assert_eq!(
            SizeClass::of_model("01-ai/Yi-1.5-9B-Chat"),
            Some(SizeClass::Small)
        );
        assert_eq!(
            SizeClass::of_model("upstage/SOLAR-10.7B-Instruct-v1.0"),
            Some(SizeClass::Medium)
        );
        assert_eq!(
            SizeClass::of_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
            Some(SizeClass::Medium)
        );
        assert_eq!(SizeClass::of_model("nobody/none"), None);
    }

    #[test]
    fn a_configuration_s_group_and_member_figures() {
        use wattcounts_rules::derived::Spread;
        let spread = |m: f64| Spread::of(&[m * 0.9, m, m * 1.1]).unwrap();
        let c = ConfigurationMetrics {
            model: "01-ai/Yi-1.5-9B-Chat".into(),
            scenario: Scenario::Server,
            lambda_qps: Some(0.33),
            iterations: 3,
            energy_per_token_j: spread(1.0),
            energy_per_request_j: Some(spread(100.0)),
            throughput_tok_s: spread(50.0),
            power_mean_w: spread(60.0),
            itl_s: Some(spread(0.02)),
            ttft_p50_s: None,
            e2e_p50_s: None,
            mean_concurrency: Some(spread(2.0)),
            prefill_energy_share: None,
        };
        let p = Protocol::reference();
        let g = group_of(Some("l4"), "NVIDIA L4", false, &p, &c);
        assert_eq!(
            g.key.canonical(),
            r#"["l4","01-ai/Yi-1.5-9B-Chat","server",0.33,"09bea327e761","real"]"#
        );
        assert_eq!(
            (g.gpu_name.as_str(), g.protocol_label.as_str(), g.reference),
            ("NVIDIA L4", "reference", true)
        );
        assert_eq!(g.size_class, Some(SizeClass::Small));
        // A GPU the catalogue lacks gets the id its NVML name derives; demo
        // data its own origin.
        let g = group_of(None, "NVIDIA Future GPU", true, &p, &c);
        assert_eq!(
            g.key.gpu_id,
            wattcounts_rules::catalog::gpu_id("NVIDIA Future GPU")
        );
        assert_eq!(g.key.origin, Origin::Demo);
        let m = member_figures(&c);
        assert_eq!(m.ept_interval, c.energy_per_token_j.median_interval(3));
        assert_eq!(
            (m.epr_median, m.itl_median, m.ttft_median),
            (Some(100.0), Some(0.02), None)
        );
        assert_eq!(
            (m.concurrency_median, m.prefill_share_median),
            (Some(2.0), None)
        );
        // Three iterations: min–max, 1 − 2/8 = 0.75.
        assert_eq!(
            m.intervals.throughput_tok_s,
            Some(iv(45.0, 55.00000000000001, 0.75))
        );
        assert_eq!(m.intervals.ttft_p50_s, None);
        assert!(m.intervals.energy_per_request_j.is_some() && m.intervals.itl_s.is_some());
        assert!(
            m.intervals.mean_concurrency.is_some() && m.intervals.prefill_energy_share.is_none()
        );
        let json = m.intervals.to_json();
        assert!(
            json.contains("\"ttft_p50_s\":null") && !json.contains("prefill_energy_share"),
            "{json}"
        );
    }
}

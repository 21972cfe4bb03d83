//! The leaderboard: configurations of stored submissions, grouped by GPU,
//! model, scenario and arrival rate, filtered and sorted. Pure: rows in,
//! rows out.

use serde::Serialize;

use crate::bundle::harness::Scenario;
use crate::metrics::ConfigurationMetrics;
use crate::store::Status;

/// One configuration of one stored submission.
#[derive(Debug, Clone)]
pub struct SourceRow {
    pub submission_id: uuid::Uuid,
    pub status: Status,
    pub is_demo: bool,
    pub gpu_id: Option<String>,
    pub gpu_name: String,
    pub config: ConfigurationMetrics,
}

impl SourceRow {
    /// The catalogue id, or one derived from the NVML name for GPUs the
    /// catalogue does not know.
    pub fn gpu_key(&self) -> String {
        self.gpu_id
            .clone()
            .unwrap_or_else(|| crate::catalog::gpu_id(&self.gpu_name))
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Entry {
    pub gpu_id: String,
    pub gpu_name: String,
    pub model: String,
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
    /// Median over submissions of each submission's median over iterations.
    pub energy_per_token_j: f64,
    /// Largest coefficient of variation over iterations among the submissions.
    pub energy_per_token_cv: f64,
    pub energy_per_request_j: Option<f64>,
    pub throughput_tok_s: f64,
    pub power_mean_w: f64,
    pub ttft_p50_s: Option<f64>,
    pub itl_s: Option<f64>,
    pub iterations: u32,
    pub submissions: u32,
    pub demo: bool,
    pub needs_review: bool,
    /// A submission to show as evidence (the first one seen).
    pub evidence: uuid::Uuid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    pub fn of_model(model: &str) -> Option<SizeClass> {
        let p = crate::catalog::model_by_id(model)?.params_b;
        Some(if p < 10.0 {
            SizeClass::Small
        } else if p <= 30.0 {
            SizeClass::Medium
        } else {
            SizeClass::Large
        })
    }
}

#[derive(Debug, Clone)]
pub struct Query {
    pub scenario: Option<Scenario>,
    pub size: Option<SizeClass>,
    pub lambda_qps: Option<f64>,
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub sort: SortKey,
    pub include_review: bool,
    pub include_demo: bool,
    pub page: usize,
    pub per_page: usize,
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
            include_demo: true,
            page: 1,
            per_page: 100,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::metrics::percentile_sorted(&v, 0.5)
}

fn median_opt(v: Vec<Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = v.into_iter().flatten().collect();
    (!v.is_empty()).then(|| median(v))
}

/// GPU id, model, scenario, arrival rate (as bits, to hash it).
type GroupKey = (String, String, Scenario, Option<u64>);

/// Groups, filters and sorts; returns one page and the total row count.
pub fn build(rows: &[SourceRow], q: &Query) -> (Vec<Entry>, usize) {
    let mut groups: Vec<(GroupKey, Vec<&SourceRow>)> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for r in rows {
        let visible = match r.status {
            Status::Accepted => true,
            Status::NeedsReview => q.include_review,
            Status::Rejected => false,
        };
        let c = &r.config;
        let gpu_id = r.gpu_key();
        if !visible
            || (!q.include_demo && r.is_demo)
            || q.scenario.is_some_and(|s| s != c.scenario)
            || q.lambda_qps
                .is_some_and(|l| c.lambda_qps.is_none_or(|x| (x - l).abs() > 1e-9))
            || q.model.as_ref().is_some_and(|m| *m != c.model)
            || q.size
                .is_some_and(|s| SizeClass::of_model(&c.model) != Some(s))
            || q.gpu.as_ref().is_some_and(|g| *g != gpu_id)
        {
            continue;
        }
        let key = (
            gpu_id,
            c.model.clone(),
            c.scenario,
            c.lambda_qps.map(f64::to_bits),
        );
        let i = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(r);
    }
    let mut entries: Vec<Entry> = groups
        .into_iter()
        .map(|((gpu_id, model, scenario, lambda), g)| Entry {
            gpu_id,
            gpu_name: g[0].gpu_name.clone(),
            model,
            scenario,
            lambda_qps: lambda.map(f64::from_bits),
            energy_per_token_j: median(
                g.iter()
                    .map(|r| r.config.energy_per_token_j.median)
                    .collect(),
            ),
            energy_per_token_cv: g
                .iter()
                .map(|r| r.config.energy_per_token_j.cv)
                .fold(0.0, f64::max),
            energy_per_request_j: median_opt(
                g.iter()
                    .map(|r| r.config.energy_per_request_j.map(|s| s.median))
                    .collect(),
            ),
            throughput_tok_s: median(g.iter().map(|r| r.config.throughput_tok_s.median).collect()),
            power_mean_w: median(g.iter().map(|r| r.config.power_mean_w.median).collect()),
            ttft_p50_s: median_opt(
                g.iter()
                    .map(|r| r.config.ttft_p50_s.map(|s| s.median))
                    .collect(),
            ),
            itl_s: median_opt(g.iter().map(|r| r.config.itl_s.map(|s| s.median)).collect()),
            iterations: g.iter().map(|r| r.config.iterations).sum(),
            submissions: g.len() as u32,
            demo: g.iter().all(|r| r.is_demo),
            needs_review: g.iter().any(|r| r.status == Status::NeedsReview),
            evidence: g[0].submission_id,
        })
        .collect();
    let key = |e: &Entry| -> f64 {
        match q.sort {
            SortKey::EnergyPerToken => e.energy_per_token_j,
            SortKey::EnergyPerRequest => e.energy_per_request_j.unwrap_or(f64::INFINITY),
            // Higher is better: sort descending.
            SortKey::Throughput => -e.throughput_tok_s,
            SortKey::Ttft => e.ttft_p50_s.unwrap_or(f64::INFINITY),
            SortKey::Itl => e.itl_s.unwrap_or(f64::INFINITY),
        }
    };
    entries.sort_by(|a, b| {
        key(a)
            .total_cmp(&key(b))
            .then_with(|| a.model.cmp(&b.model))
            .then_with(|| a.gpu_id.cmp(&b.gpu_id))
    });
    let total = entries.len();
    let start = (q.page.max(1) - 1) * q.per_page;
    let page = entries.into_iter().skip(start).take(q.per_page).collect();
    (page, total)
}

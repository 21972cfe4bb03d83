//! Reproducibility and plausibility checks: pure functions over a parsed
//! bundle, one file per family. Each check has a stable id, a severity
//! (hard: the bundle is `rejected`; soft: it `needs_review`), a threshold
//! from [`Thresholds`], and reports the figure behind its verdict: the
//! worst instance (iteration or configuration) it saw, with where it was.
//!
//! Nothing here knows SQL or HTTP; `ingest` feeds the checks and stores
//! what they say.

mod apart;
mod arithmetic;
mod arrivals;
mod consistency;
mod identity;
mod method;
mod physics;
mod repeatability;
mod sampling;
#[cfg(test)]
pub(crate) mod test_support;
mod thresholds;

pub use apart::{set_apart, Kept};

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bundle::harness::{IterationRow, Scenario};
use crate::bundle::manifest::Manifest;
use crate::bundle::system_info::SystemInfo;
use crate::catalog::GpuSpec;
use crate::derived::{ConfigurationMetrics, IterationMetrics};

pub use consistency::{consistency, PeerGroup};
pub use physics::{idle_floor_observed, ObservedIdle, OBSERVED_IDLE_SUBMITTERS};
pub use thresholds::Thresholds;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A failure rejects the bundle.
    Hard,
    /// A failure sends the bundle to a maintainer.
    Soft,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckOutcome {
    Pass,
    /// A soft check failed.
    Warn,
    /// A hard check failed.
    Fail,
    /// Nothing to check (no server runs, GPU unknown, too few peers).
    Skip,
}

impl CheckOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutcome::Pass => "pass",
            CheckOutcome::Warn => "warn",
            CheckOutcome::Fail => "fail",
            CheckOutcome::Skip => "skip",
        }
    }
}

use crate::domain::Status;

/// Where in the bundle a figure comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Scenario>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lambda_qps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
}

impl Location {
    pub fn file(file: &str) -> Self {
        Location {
            file: Some(file.to_string()),
            ..Default::default()
        }
    }
    pub fn of_row(r: &IterationRow) -> Self {
        Location {
            file: Some(r.file.clone()),
            row: Some(r.line),
            model: Some(r.model.clone()),
            scenario: Some(r.scenario),
            lambda_qps: r.lambda_qps,
            iteration: Some(r.iteration),
        }
    }
    pub fn of_configuration(c: &ConfigurationMetrics) -> Self {
        Location {
            model: Some(c.model.clone()),
            scenario: Some(c.scenario),
            lambda_qps: c.lambda_qps,
            ..Default::default()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(file) = &self.file {
            match self.row {
                Some(r) => parts.push(format!("{file} row {r}")),
                None => parts.push(file.clone()),
            }
        }
        if let Some(m) = &self.model {
            parts.push(m.clone());
        }
        match (self.scenario, self.lambda_qps) {
            (Some(s), Some(l)) => parts.push(format!("{} at {l} req/s", s.as_str())),
            (Some(s), None) => parts.push(s.as_str().to_string()),
            _ => {}
        }
        if let Some(i) = self.iteration {
            parts.push(format!("iteration {i}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// One check's verdict on one submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckResult {
    /// Stable id, `family.name`.
    pub id: String,
    pub severity: Severity,
    pub outcome: CheckOutcome,
    /// The worst figure seen (or the only one).
    pub figure: Option<f64>,
    /// The limit the figure was held to.
    pub threshold: Option<f64>,
    pub unit: String,
    /// Instances (iterations, configurations, files) looked at, and how many broke the rule.
    pub evaluated: u32,
    pub failing: u32,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// Set on a result that rejected one configuration on its own (the
    /// one its location names): that configuration's iterations were not
    /// stored, and the bundle's other configurations were judged without
    /// it. Absent on the bundle's own results.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejects_configuration: bool,
}

impl CheckResult {
    pub fn family(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }
    pub fn is_problem(&self) -> bool {
        matches!(self.outcome, CheckOutcome::Warn | CheckOutcome::Fail)
    }
}

/// A rule's static description, for `wattcounts checks` and the docs.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    /// What must hold, in words.
    pub rule: &'static str,
    pub unit: &'static str,
}

impl Rule {
    /// A broken rule fails (hard) or warns (soft); a kept one passes.
    pub fn outcome(&self, broken: bool) -> CheckOutcome {
        match (broken, self.severity) {
            (false, _) => CheckOutcome::Pass,
            (true, Severity::Hard) => CheckOutcome::Fail,
            (true, Severity::Soft) => CheckOutcome::Warn,
        }
    }
}

/// A result whose limit rests on a guessed figure (a catalogue GPU's idle
/// power at 15 % of TDP): a broken rule warns instead of failing, so a
/// person judges it, and the message names the guess either way. A guess
/// is no ground to reject an honest run.
pub(crate) fn on_a_guess(mut r: CheckResult, guess: &str) -> CheckResult {
    if r.outcome == CheckOutcome::Fail {
        r.outcome = CheckOutcome::Warn;
        r.severity = Severity::Soft;
    }
    if r.outcome != CheckOutcome::Skip {
        r.message = format!(
            "{} (The limit rests on a guess: {guess}; a guess never rejects, a maintainer reviews.)",
            r.message
        );
    }
    r
}

/// Collects one rule's instances and keeps the worst.
pub(crate) struct Tally {
    rule: Rule,
    threshold: Option<f64>,
    evaluated: u32,
    failing: u32,
    /// (badness, figure, location, failed, note); badness orders
    /// instances; the note is what the message says of the worst beyond
    /// its figure (see [`Tally::observe_noted`]).
    worst: Option<(f64, f64, Location, bool, String)>,
    /// Why the rule was skipped if nothing was observed.
    empty: &'static str,
    /// What was missing, when the worst instance is data the rule needs
    /// and the bundle lacks: the rule fails rather than passing by absence.
    missing: Option<String>,
}

impl Tally {
    pub fn new(rule: Rule, threshold: Option<f64>) -> Self {
        Tally {
            rule,
            threshold,
            evaluated: 0,
            failing: 0,
            worst: None,
            empty: "nothing in the bundle to check",
            missing: None,
        }
    }

    /// An instance the rule cannot evaluate because its data is missing:
    /// it counts as breaking the rule, and the message says what is missing.
    pub fn missing(&mut self, what: impl Into<String>, at: impl FnOnce() -> Location) {
        self.evaluated += 1;
        self.failing += 1;
        if self.missing.is_none() {
            self.missing = Some(what.into());
            self.worst = Some((f64::INFINITY, f64::NAN, at(), true, String::new()));
        }
    }

    /// Words the skip when no instance turns up (e.g. "no server runs").
    pub fn when_empty(mut self, why: &'static str) -> Self {
        self.empty = why;
        self
    }

    pub fn evaluated(&self) -> u32 {
        self.evaluated
    }

    /// One instance: its figure, how bad it is (larger is worse) and
    /// whether it breaks the rule.
    pub fn observe(
        &mut self,
        figure: f64,
        badness: f64,
        failed: bool,
        at: impl FnOnce() -> Location,
    ) {
        self.observe_noted(figure, badness, failed, at, String::new);
    }

    /// [`Tally::observe`] with a note about the instance (the figures
    /// behind its figure), kept while it is the worst and handed to
    /// [`Tally::finish_noted`].
    pub fn observe_noted(
        &mut self,
        figure: f64,
        badness: f64,
        failed: bool,
        at: impl FnOnce() -> Location,
        note: impl FnOnce() -> String,
    ) {
        self.evaluated += 1;
        if failed {
            self.failing += 1;
        }
        let replace = match &self.worst {
            None => true,
            // A failure always outranks a pass.
            Some((b, _, _, f, _)) => (failed && !f) || (failed == *f && badness > *b),
        };
        if replace {
            self.worst = Some((badness, figure, at(), failed, note()));
        }
    }

    /// Checks `figure ≤ limit` (larger is worse).
    pub fn at_most(&mut self, figure: f64, limit: f64, at: impl FnOnce() -> Location) {
        self.observe(figure, figure, !le(figure, limit), at);
    }

    /// Checks `figure ≥ limit` (smaller is worse).
    pub fn at_least(&mut self, figure: f64, limit: f64, at: impl FnOnce() -> Location) {
        self.observe(figure, -figure, !le(limit, figure), at);
    }

    /// [`Tally::at_most`] with a note (see [`Tally::observe_noted`]).
    pub fn at_most_noted(
        &mut self,
        figure: f64,
        limit: f64,
        at: impl FnOnce() -> Location,
        note: impl FnOnce() -> String,
    ) {
        self.observe_noted(figure, figure, !le(figure, limit), at, note);
    }

    /// The verdict; `describe` words the worst figure for the message.
    pub fn finish(self, describe: impl FnOnce(f64) -> String) -> CheckResult {
        self.finish_noted(|figure, _| describe(figure))
    }

    /// The verdict; `describe` words the worst figure and its note.
    pub fn finish_noted(self, describe: impl FnOnce(f64, &str) -> String) -> CheckResult {
        let Some((_, figure, location, failed, note)) = self.worst else {
            return skip(self.rule, self.empty);
        };
        let outcome = self.rule.outcome(failed);
        let limit = self
            .threshold
            .map(|t| format!("; limit {}", fmt_figure(t, self.rule.unit)))
            .unwrap_or_default();
        let message = if let (true, Some(what)) = (failed, &self.missing) {
            let more = if self.failing > 1 {
                format!(" ({} of {} instances)", self.failing, self.evaluated)
            } else {
                String::new()
            };
            format!("{location}: {what}{more}. Rule: {}", self.rule.rule)
        } else if failed {
            let more = if self.failing > 1 {
                format!(
                    " ({} of {} instances break the rule)",
                    self.failing, self.evaluated
                )
            } else {
                String::new()
            };
            format!(
                "{}: {}{limit}{more}. Rule: {}",
                location,
                describe(figure, &note),
                self.rule.rule
            )
        } else {
            format!(
                "all {} pass; worst {} at {}{limit}",
                self.evaluated,
                describe(figure, &note),
                location
            )
        };
        CheckResult {
            id: self.rule.id.to_string(),
            severity: self.rule.severity,
            outcome,
            figure: figure.is_finite().then_some(figure),
            threshold: self.threshold,
            unit: self.rule.unit.to_string(),
            evaluated: self.evaluated,
            failing: self.failing,
            message,
            location: Some(location),
            rejects_configuration: false,
        }
    }
}

/// `a ≤ b`, false when either is NaN: a NaN figure breaks every rule.
pub(crate) fn le(a: f64, b: f64) -> bool {
    a.partial_cmp(&b).is_some_and(|o| o.is_le())
}

pub(crate) fn skip(rule: Rule, why: &str) -> CheckResult {
    CheckResult {
        id: rule.id.to_string(),
        severity: rule.severity,
        outcome: CheckOutcome::Skip,
        figure: None,
        threshold: None,
        unit: rule.unit.to_string(),
        evaluated: 0,
        failing: 0,
        message: format!("skipped: {why}"),
        location: None,
        rejects_configuration: false,
    }
}

/// A figure with its unit, rounded for reading.
pub fn fmt_figure(v: f64, unit: &str) -> String {
    let digits = if v.fract() == 0.0 && v.abs() < 1e15 {
        0
    } else if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        4
    };
    let n = format!("{v:.digits$}");
    match unit {
        "" => n,
        "%" => format!("{n} %"),
        u => format!("{n} {u}"),
    }
}

/// Everything the checks read.
pub struct CheckInput<'a> {
    pub manifest: &'a Manifest,
    /// When the service received the bundle (the manifest's date is
    /// judged against it).
    pub received_at: chrono::DateTime<chrono::Utc>,
    /// The models' config.json files the bundle carries, read.
    pub bundled_models: &'a [crate::model_config::BundledModel],
    /// `system_info.txt`, when the bundle has one.
    pub system_info: Option<&'a SystemInfo>,
    /// The catalogue entry of the manifest's GPU, when it has one.
    pub gpu: Option<&'a GpuSpec>,
    pub rows: &'a [IterationRow],
    pub runs: &'a [IterationMetrics],
    pub configurations: &'a [ConfigurationMetrics],
}

/// Every check that needs only the bundle (consistency needs stored peers:
/// see [`consistency`]).
pub fn evaluate(input: &CheckInput, t: &Thresholds) -> Vec<CheckResult> {
    let mut out = Vec::new();
    out.extend(identity::checks(input, t));
    out.extend(arithmetic::checks(input, t));
    out.extend(sampling::checks(input, t));
    out.extend(physics::checks(input, t));
    out.extend(method::checks(input, t));
    out.extend(repeatability::checks(input, t));
    out
}

/// Every rule, in the order `evaluate` reports them, consistency last.
pub fn rules() -> Vec<Rule> {
    let mut r = Vec::new();
    r.extend_from_slice(identity::RULES);
    r.extend_from_slice(arithmetic::RULES);
    r.extend_from_slice(sampling::RULES);
    r.extend_from_slice(physics::RULES);
    r.extend_from_slice(method::RULES);
    r.extend_from_slice(repeatability::RULES);
    r.push(consistency::RULE);
    r
}

/// One configuration (model × scenario × rate) that broke a hard rule on
/// its own, with the results that say how.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedConfiguration {
    pub configuration: ConfigurationMetrics,
    /// Its failing results, `rejects_configuration` set, located at it.
    pub failing: Vec<CheckResult>,
}

/// Rules whose failure means a configuration is incomplete (the harness
/// logs a model that crashed and goes on, keeping the iterations it saved;
/// a crash can also cut a server test or the power trace short). Only
/// these reject a configuration on its own. Every other hard rule is about
/// the bundle's integrity (its numbers disagree with its own traces, the
/// GPU is not the one stated, the physics is impossible): one such
/// failure rejects the whole bundle, as nothing in it can be trusted more
/// than the rest.
pub const COMPLETENESS_RULES: &[&str] = &[
    "method.iterations_minimum",
    "sampling.server_duration",
    "sampling.power_samples",
];

/// Judges each configuration alone (its rows, runs and figures, with the
/// bundle's manifest and system info) and returns those whose hard
/// failures are all of [`COMPLETENESS_RULES`]. `None` when some
/// configuration fails another hard rule: then the bundle is judged whole.
pub fn rejected_configurations(
    input: &CheckInput,
    t: &Thresholds,
) -> Option<Vec<RejectedConfiguration>> {
    let mut out = Vec::new();
    for c in input.configurations {
        let rows: Vec<IterationRow> = input
            .rows
            .iter()
            .filter(|r| c.is_of(&r.model, r.scenario, r.lambda_qps))
            .cloned()
            .collect();
        let runs: Vec<IterationMetrics> = input
            .runs
            .iter()
            .filter(|r| c.is_of(&r.model, r.scenario, r.lambda_qps))
            .cloned()
            .collect();
        let alone = CheckInput {
            manifest: input.manifest,
            received_at: input.received_at,
            bundled_models: input.bundled_models,
            system_info: input.system_info,
            gpu: input.gpu,
            rows: &rows,
            runs: &runs,
            configurations: std::slice::from_ref(c),
        };
        let failing: Vec<CheckResult> = evaluate(&alone, t)
            .into_iter()
            .filter(|r| r.outcome == CheckOutcome::Fail)
            .map(|mut r| {
                r.rejects_configuration = true;
                let here = Location::of_configuration(c);
                let loc = r.location.get_or_insert_with(Location::default);
                loc.model = here.model;
                loc.scenario = here.scenario;
                loc.lambda_qps = here.lambda_qps;
                r
            })
            .collect();
        if failing
            .iter()
            .any(|r| !COMPLETENESS_RULES.contains(&r.id.as_str()))
        {
            return None;
        }
        if !failing.is_empty() {
            out.push(RejectedConfiguration {
                configuration: c.clone(),
                failing,
            });
        }
    }
    Some(out)
}

/// Hard failure → rejected; soft warning → needs review; else accepted.
/// Results that rejected one configuration on its own do not decide the
/// bundle's status.
pub fn status_from_checks(results: &[CheckResult]) -> Status {
    let results: Vec<&CheckResult> = results
        .iter()
        .filter(|r| !r.rejects_configuration)
        .collect();
    if results.iter().any(|r| r.outcome == CheckOutcome::Fail) {
        Status::Rejected
    } else if results.iter().any(|r| r.outcome == CheckOutcome::Warn) {
        Status::NeedsReview
    } else {
        Status::Accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule {
        id: "test.rule",
        severity: Severity::Hard,
        rule: "x ≤ 1",
        unit: "W",
    };

    /// A soft rule's bare result with this id and outcome.
    fn result(id: &str, outcome: CheckOutcome) -> CheckResult {
        CheckResult {
            id: id.into(),
            severity: Severity::Soft,
            outcome,
            figure: None,
            threshold: None,
            unit: String::new(),
            evaluated: 0,
            failing: 0,
            message: String::new(),
            location: None,
            rejects_configuration: false,
        }
    }

    #[test]
    fn tally_keeps_the_worst_failure() {
        let mut t = Tally::new(RULE, Some(1.0));
        t.at_most(0.5, 1.0, || Location::file("a"));
        t.at_most(3.0, 1.0, || Location::file("b"));
        t.at_most(2.0, 1.0, || Location::file("c"));
        let r = t.finish(|v| format!("x {v}"));
        assert_eq!(r.outcome, CheckOutcome::Fail);
        assert_eq!(r.figure, Some(3.0));
        assert_eq!(r.failing, 2);
        assert_eq!(r.evaluated, 3);
        assert!(r.message.starts_with("b: x 3"), "{}", r.message);
        assert!(r.message.contains("2 of 3"), "{}", r.message);
    }

    #[test]
    fn tally_passes_with_the_closest_figure() {
        let mut t = Tally::new(RULE, Some(1.0));
        t.at_least(5.0, 1.0, || Location::file("a"));
        t.at_least(2.0, 1.0, || Location::file("b"));
        let r = t.finish(|v| format!("x {v}"));
        assert_eq!(r.outcome, CheckOutcome::Pass);
        assert_eq!(r.figure, Some(2.0));
    }

    #[test]
    fn of_two_equally_bad_instances_the_first_is_named() {
        let mut t = Tally::new(RULE, Some(1.0));
        t.at_most(3.0, 1.0, || Location::file("first"));
        t.at_most(3.0, 1.0, || Location::file("second"));
        let r = t.finish(|v| format!("x {v}"));
        assert!(r.message.starts_with("first: x 3"), "{}", r.message);
    }

    #[test]
    fn missing_data_breaks_the_rule_once_per_instance() {
        let mut t = Tally::new(RULE, Some(1.0));
        t.at_most(0.5, 1.0, || Location::file("a"));
        t.missing("no samples", || Location::file("b"));
        t.missing("no samples either", || Location::file("c"));
        assert_eq!(t.evaluated(), 3);
        let r = t.finish(|v| format!("x {v}"));
        assert_eq!((r.evaluated, r.failing), (3, 2));
        assert_eq!(r.outcome, CheckOutcome::Fail);
        assert!(
            r.message.contains("b: no samples (2 of 3 instances)"),
            "{}",
            r.message
        );
        assert_eq!(Tally::new(RULE, None).evaluated(), 0);
    }

    #[test]
    fn outcomes_and_families_have_stable_names() {
        let names: Vec<&str> = [
            CheckOutcome::Pass,
            CheckOutcome::Warn,
            CheckOutcome::Fail,
            CheckOutcome::Skip,
        ]
        .iter()
        .map(|o| o.as_str())
        .collect();
        assert_eq!(names, ["pass", "warn", "fail", "skip"]);
        let r = result;
        assert_eq!(
            r("physics.mean_power", CheckOutcome::Pass).family(),
            "physics"
        );
        let problems: Vec<bool> = [
            CheckOutcome::Pass,
            CheckOutcome::Warn,
            CheckOutcome::Fail,
            CheckOutcome::Skip,
        ]
        .into_iter()
        .map(|o| r("a.b", o).is_problem())
        .collect();
        assert_eq!(problems, [false, true, true, false]);
    }

    #[test]
    fn locations_name_file_row_model_scenario_rate_and_iteration() {
        let row =
            crate::checks::test_support::row_of(Scenario::Server, 300.0, &[50.0], &[40.0], 10);
        let at = Location::of_row(&row);
        assert_eq!(
            at.to_string(),
            "m/llm_server_optimized_results.csv row 2, Qwen/Qwen2.5-0.5B-Instruct, server at 0.33 req/s, iteration 0"
        );
        let runs = vec![crate::derived::derive(&row)];
        let c = &crate::derived::aggregate(&runs)[0];
        assert_eq!(
            Location::of_configuration(c).to_string(),
            "Qwen/Qwen2.5-0.5B-Instruct, server at 0.33 req/s"
        );
        let batch = crate::checks::test_support::row(&[50.0], &[40.0], 10);
        let runs = vec![crate::derived::derive(&batch)];
        let c = &crate::derived::aggregate(&runs)[0];
        assert_eq!(
            Location::of_configuration(c).to_string(),
            "Qwen/Qwen2.5-0.5B-Instruct, batch"
        );
    }

    #[test]
    fn figures_keep_the_digits_their_size_needs() {
        assert_eq!(fmt_figure(3.0, ""), "3");
        assert_eq!(fmt_figure(2.0, "%"), "2 %");
        assert_eq!(fmt_figure(-65.0, "°C"), "-65 °C");
        assert_eq!(fmt_figure(122.45, "W"), "122.5 W");
        assert_eq!(fmt_figure(100.0 + 1e-9, "W"), "100.0 W");
        assert_eq!(fmt_figure(79.2, "W"), "79.20 W");
        assert_eq!(fmt_figure(1.0 + 1e-9, "J"), "1.00 J");
        assert_eq!(fmt_figure(-1.5, "z"), "-1.50 z");
        assert_eq!(fmt_figure(0.0125, "J"), "0.0125 J");
        assert_eq!(fmt_figure(1e16 + 0.0, ""), "10000000000000000.0");
        // Whole numbers print without decimals below 10^15 only.
        assert_eq!(fmt_figure(1e15, ""), "1000000000000000.0");
        assert_eq!(fmt_figure(1e15 - 1.0, ""), "999999999999999");
    }

    #[test]
    fn one_failure_is_not_counted_aloud() {
        let mut t = Tally::new(RULE, Some(1.0));
        t.at_most(0.5, 1.0, || Location::file("a"));
        t.at_most(3.0, 1.0, || Location::file("b"));
        let r = t.finish(|v| format!("x {v}"));
        assert_eq!(r.message, "b: x 3; limit 1 W. Rule: x ≤ 1");
        let mut t = Tally::new(RULE, Some(1.0));
        t.missing("no samples", || Location::file("c"));
        assert_eq!(
            t.finish(|v| format!("x {v}")).message,
            "c: no samples. Rule: x ≤ 1"
        );
    }

    #[test]
    fn every_rule_is_listed_once() {
        let ids: Vec<&str> = rules().iter().map(|r| r.id).collect();
        // identity 5, arithmetic 3, sampling 3, physics 5, method 4,
        // repeatability 2, arrivals 2, consistency 1.
        assert_eq!(ids.len(), 25, "{ids:?}");
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
        assert!(ids.contains(&"consistency.robust_z") && ids.contains(&"arrivals.poisson"));
    }

    #[test]
    fn an_incomplete_configuration_is_rejected_on_its_own() {
        use crate::checks::test_support::{iterations, row};
        // Qwen with its 3 iterations, GPT-2 with 2 (the minimum is 3).
        // A row every bundle-wide rule passes: greedy with a seed, the
        // meter's 50 J (10 intervals of 0.1 s at 50 W), system_info.txt.
        let mut good = row(&[50.0; 11], &[40.0], 100);
        good.sampling_params = "SamplingParams(temperature=0.0, seed=1)".into();
        good.reported_gpu_energy_j = 50.0;
        let qwen = iterations(3, &good);
        let mut gpt2 = good.clone();
        gpt2.model = "openai-community/gpt2".into();
        let mut rows = qwen.clone();
        rows.extend(iterations(2, &gpt2));
        let judge = |rows: Vec<IterationRow>| {
            test_support::on_l4(&rows, |input| {
                rejected_configurations(input, &Thresholds::default())
            })
        };
        let rejected = judge(rows.clone()).expect("only a completeness rule broke");
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].configuration.model, "openai-community/gpt2");
        let f = &rejected[0].failing;
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "method.iterations_minimum");
        assert!(f[0].rejects_configuration);
        assert_eq!(
            f[0].location.as_ref().unwrap().model.as_deref(),
            Some("openai-community/gpt2")
        );
        // Complete: nothing rejected.
        assert_eq!(judge(qwen).unwrap(), vec![]);
        // A rule of another kind broken too (the mean power over 1.1 ×
        // the L4's 72 W): the bundle is judged whole, not trimmed.
        let mut hot = rows;
        for r in hot
            .iter_mut()
            .filter(|r| r.model == "openai-community/gpt2")
        {
            r.power_w = crate::bundle::harness::SeriesStats::of(&[90.0; 11]);
        }
        assert_eq!(judge(hot), None);
    }

    #[test]
    fn nan_breaks_the_rule() {
        let mut t = Tally::new(RULE, Some(1.0));
        t.at_most(f64::NAN, 1.0, Location::default);
        assert_eq!(t.finish(|_| String::new()).outcome, CheckOutcome::Fail);
    }

    #[test]
    fn status_follows_the_worst_outcome() {
        let mk = |o| result("a.b", o);
        assert_eq!(
            status_from_checks(&[mk(CheckOutcome::Pass), mk(CheckOutcome::Skip)]),
            Status::Accepted
        );
        assert_eq!(
            status_from_checks(&[mk(CheckOutcome::Pass), mk(CheckOutcome::Warn)]),
            Status::NeedsReview
        );
        assert_eq!(
            status_from_checks(&[mk(CheckOutcome::Warn), mk(CheckOutcome::Fail)]),
            Status::Rejected
        );
    }
}

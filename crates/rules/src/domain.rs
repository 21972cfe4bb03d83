//! The ground floor: the words every other module shares. What a
//! submission's status is, what a scenario is and how readers name it, which
//! protocol a run followed, where data comes from, and what counts as one
//! leaderboard group. No I/O, no SQL, no HTTP.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// What the service decided about a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Accepted,
    NeedsReview,
    Rejected,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Accepted => "accepted",
            Status::NeedsReview => "needs_review",
            Status::Rejected => "rejected",
        }
    }
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "accepted" => Some(Status::Accepted),
            "needs_review" => Some(Status::NeedsReview),
            "rejected" => Some(Status::Rejected),
            _ => None,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    Batch,
    Server,
}

impl Scenario {
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Batch => "batch",
            Scenario::Server => "server",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "batch" => Some(Scenario::Batch),
            "server" => Some(Scenario::Server),
            _ => None,
        }
    }
}

/// A scenario as readers pick it: batch, or server at one arrival rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScenarioKey {
    pub scenario: Scenario,
    pub lambda_qps: Option<f64>,
}

impl ScenarioKey {
    /// `batch` or `server@0.33`, as the `scenario` query parameter takes it.
    pub fn param(&self) -> String {
        match self.lambda_qps {
            Some(l) => format!("server@{l}"),
            None => self.scenario.as_str().to_string(),
        }
    }
    /// [`ScenarioKey::param`] usable as an HTML id or anchor
    /// (`server-0-33`).
    pub fn slug(&self) -> String {
        self.param().replace(['@', '.'], "-")
    }
    /// The one reader-facing name of a scenario.
    pub fn label(&self) -> String {
        match self.lambda_qps {
            Some(l) => format!("server at {l} req/s"),
            None => self.scenario.as_str().to_string(),
        }
    }
    /// The one parser of [`ScenarioKey::param`]: `batch`, `server@RATE`.
    /// A bare `server` is not a key (it names no rate); callers that accept
    /// it as "any rate" handle it before calling this.
    pub fn parse(s: &str) -> Option<ScenarioKey> {
        if s == "batch" {
            return Some(ScenarioKey {
                scenario: Scenario::Batch,
                lambda_qps: None,
            });
        }
        let rate: f64 = s.strip_prefix("server@")?.parse().ok()?;
        (rate.is_finite() && rate > 0.0).then_some(ScenarioKey {
            scenario: Scenario::Server,
            lambda_qps: Some(rate),
        })
    }
    pub fn same(&self, other: &ScenarioKey) -> bool {
        self.scenario == other.scenario
            && match (self.lambda_qps, other.lambda_qps) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                (None, None) => true,
                _ => false,
            }
    }
}

/// Where data comes from. Demo data (the service's synthetic load) and
/// real submissions are never merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Real,
    Demo,
}

impl Origin {
    pub fn of_demo(is_demo: bool) -> Origin {
        if is_demo {
            Origin::Demo
        } else {
            Origin::Real
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Real => "real",
            Origin::Demo => "demo",
        }
    }
    pub fn parse(s: &str) -> Option<Origin> {
        match s {
            "real" => Some(Origin::Real),
            "demo" => Some(Origin::Demo),
            _ => None,
        }
    }
}

/// What makes two results comparable, as derived from a bundle (and, where
/// bundles do not carry it yet, optional manifest fields). Stored per
/// submission. Each scenario compares only the fields that shape it
/// ([`Protocol::projection`]): a batch run's prompt count does not make its
/// server results incomparable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Protocol {
    /// The harness protocol version (manifest `run.protocol_version`, "1"
    /// when absent: the protocol of the paper's harness).
    pub version: String,
    /// Prompts per batch iteration (`queries_submitted`), if the bundle has batch runs.
    pub batch_prompts: Option<u64>,
    /// `MAX_TEST_DURATION` of server runs, seconds, if the bundle has server runs.
    pub server_duration_s: Option<f64>,
    /// `max_tokens` of `sampling_params`.
    pub max_tokens: Option<u64>,
    /// `temperature` of `sampling_params`.
    pub temperature: Option<f64>,
    /// `CONTEXT_LENGTH` of the run config.
    pub context_length: Option<u64>,
    /// `harness` when the weights ran in the harness's precision for the
    /// GPU (fp16 on V100 and T4, bf16 elsewhere), else the precision named
    /// by the manifest (`run.precision`).
    pub precision: String,
}

/// The value of a protocol field that a bundle does not state.
const UNSTATED: &str = "unstated";

impl Protocol {
    /// The paper's protocol: 1,000 prompts per batch iteration, 300 s server
    /// tests, max_tokens 256, greedy sampling, context 1024, harness precision.
    pub fn reference() -> Protocol {
        Protocol {
            version: "1".into(),
            batch_prompts: Some(1000),
            server_duration_s: Some(300.0),
            max_tokens: Some(256),
            temperature: Some(0.0),
            context_length: Some(1024),
            precision: "harness".into(),
        }
    }

    /// The canonical text of what makes a `scenario` result comparable.
    pub fn projection(&self, scenario: Scenario) -> String {
        fn opt<T: fmt::Display>(v: &Option<T>) -> String {
            v.as_ref()
                .map_or_else(|| UNSTATED.to_string(), |x| x.to_string())
        }
        let shape = match scenario {
            Scenario::Batch => format!("prompts={}", opt(&self.batch_prompts)),
            Scenario::Server => format!("duration_s={}", opt(&self.server_duration_s)),
        };
        format!(
            "wattcounts-protocol;version={};scenario={};{shape};max_tokens={};temperature={};context={};precision={}",
            self.version,
            scenario.as_str(),
            opt(&self.max_tokens),
            opt(&self.temperature),
            opt(&self.context_length),
            self.precision
        )
    }

    /// A short stable id of the projection (12 hex digits of its sha256).
    pub fn id(&self, scenario: Scenario) -> String {
        let d = Sha256::digest(self.projection(scenario).as_bytes());
        hex::encode(&d[..6])
    }

    pub fn is_reference(&self, scenario: Scenario) -> bool {
        self.projection(scenario) == Protocol::reference().projection(scenario)
    }

    /// What a reader sees: "reference", or how this protocol differs from it.
    pub fn label(&self, scenario: Scenario) -> String {
        if self.is_reference(scenario) {
            return "reference".into();
        }
        let r = Protocol::reference();
        let mut diffs = Vec::new();
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| UNSTATED.into());
        let mut diff = |name: &str, mine: Option<String>, theirs: Option<String>| {
            if mine != theirs {
                diffs.push(format!("{name} {}", show(&mine)));
            }
        };
        if self.version != r.version {
            diff(
                "protocol",
                Some(self.version.clone()),
                Some(r.version.clone()),
            );
        }
        match scenario {
            Scenario::Batch => diff(
                "prompts/iteration",
                self.batch_prompts.map(|v| v.to_string()),
                r.batch_prompts.map(|v| v.to_string()),
            ),
            Scenario::Server => diff(
                "test duration s",
                self.server_duration_s.map(|v| v.to_string()),
                r.server_duration_s.map(|v| v.to_string()),
            ),
        }
        diff(
            "max_tokens",
            self.max_tokens.map(|v| v.to_string()),
            r.max_tokens.map(|v| v.to_string()),
        );
        diff(
            "temperature",
            self.temperature.map(|v| v.to_string()),
            r.temperature.map(|v| v.to_string()),
        );
        diff(
            "context",
            self.context_length.map(|v| v.to_string()),
            r.context_length.map(|v| v.to_string()),
        );
        if self.precision != r.precision {
            diffs.push(format!("precision {}", self.precision));
        }
        diffs.join(", ")
    }
}

/// What counts as the same configuration: one leaderboard row.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupKey {
    pub gpu_id: String,
    pub model: String,
    pub scenario: ScenarioKey,
    pub protocol_id: String,
    pub origin: Origin,
}

impl GroupKey {
    /// The stored key: a JSON array, so no model id can collide with a
    /// separator, and the arrival rate is written the one way serde_json
    /// writes an f64.
    pub fn canonical(&self) -> String {
        serde_json::to_string(&(
            &self.gpu_id,
            &self.model,
            self.scenario.scenario.as_str(),
            self.scenario.lambda_qps,
            &self.protocol_id,
            self.origin.as_str(),
        ))
        .expect("strings and numbers serialise")
    }
}

/// A distribution-free interval for a median, from order statistics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    /// The coverage the chosen order statistics achieve (e.g. 0.9375 for
    /// min–max of five values).
    pub confidence: f64,
}

/// The confidence aimed at; with few values the best achievable is stated.
pub const TARGET_CONFIDENCE: f64 = 0.95;

/// A stored submission as the service hands it out.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionRecord {
    pub id: Uuid,
    pub bundle_sha256: String,
    pub handle: String,
    pub status: Status,
    pub received_at: DateTime<Utc>,
    pub gpu_name: String,
    pub gpu_id: Option<String>,
    pub run_name: String,
    pub is_demo: bool,
    pub bundle_bytes: u64,
    pub blob_path: String,
    pub iterations: u64,
    pub power_samples: u64,
    /// None only for rows stored before protocols were recorded and not yet rebuilt.
    pub protocol: Option<Protocol>,
    pub content_sha256: Option<String>,
    /// Set by `db rebuild` when an older submission holds the same run content.
    pub duplicate_of: Option<Uuid>,
    /// The submission's leaf in the transparency log (None only before
    /// the start-up backfill has run).
    pub log_index: Option<u64>,
    /// The energy rule its runs were derived by
    /// ([`crate::derived::ENERGY_RULE_VERSION`] once `db rebuild` has run).
    pub energy_rule: i64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct TableCounts {
    pub submitters: u64,
    pub keys: u64,
    pub submissions: u64,
    pub runs: u64,
    pub configurations: u64,
}

/// Who decided, when and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Actor {
    pub name: String,
    pub at: DateTime<Utc>,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct DatasetCounts {
    pub submissions: u64,
    pub demo_submissions: u64,
    pub gpus: u64,
    pub models: u64,
    pub iterations: u64,
    pub power_samples: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_keys_parse_what_they_print() {
        for k in [
            ScenarioKey {
                scenario: Scenario::Batch,
                lambda_qps: None,
            },
            ScenarioKey {
                scenario: Scenario::Server,
                lambda_qps: Some(0.33),
            },
        ] {
            assert!(ScenarioKey::parse(&k.param()).unwrap().same(&k));
        }
        for bad in ["server", "server@", "server@-1", "server@nan", "Batch"] {
            assert!(ScenarioKey::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn names_read_back_as_they_are_written() {
        for st in [Status::Accepted, Status::NeedsReview, Status::Rejected] {
            assert_eq!(Status::parse(st.as_str()), Some(st));
            assert_eq!(st.to_string(), st.as_str());
        }
        assert_eq!(Status::NeedsReview.as_str(), "needs_review");
        assert_eq!(Status::parse("Accepted"), None);
        for sc in [Scenario::Batch, Scenario::Server] {
            assert_eq!(Scenario::parse(sc.as_str()), Some(sc));
        }
        assert_eq!(Scenario::parse("offline"), None);
        assert_eq!(Origin::of_demo(true), Origin::Demo);
        assert_eq!(Origin::of_demo(false), Origin::Real);
        for o in [Origin::Real, Origin::Demo] {
            assert_eq!(Origin::parse(o.as_str()), Some(o));
        }
        assert_eq!(
            (Origin::Real.as_str(), Origin::parse("peer")),
            ("real", None)
        );
    }

    #[test]
    fn a_scenario_key_s_names_and_sameness() {
        let server = ScenarioKey {
            scenario: Scenario::Server,
            lambda_qps: Some(0.33),
        };
        let batch = ScenarioKey {
            scenario: Scenario::Batch,
            lambda_qps: None,
        };
        assert_eq!(
            (server.param(), server.slug(), server.label()),
            (
                "server@0.33".into(),
                "server-0-33".into(),
                "server at 0.33 req/s".into()
            )
        );
        assert_eq!(
            (batch.param(), batch.slug(), batch.label()),
            ("batch".into(), "batch".into(), "batch".into())
        );
        // A rate must be a positive number.
        for bad in ["server@0", "server@inf", "server@0.33x"] {
            assert!(ScenarioKey::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(
            ScenarioKey::parse("server@0.5").unwrap().lambda_qps,
            Some(0.5)
        );
        // One rate within 1e-9 is the same key; more apart is not.
        let near = ScenarioKey {
            lambda_qps: Some(0.33 + 1e-10),
            ..server
        };
        let far = ScenarioKey {
            lambda_qps: Some(0.33 + 1e-8),
            ..server
        };
        assert!(server.same(&near) && !server.same(&far));
        // Exactly 1e-9 apart is apart.
        let zero = ScenarioKey {
            lambda_qps: Some(0.0),
            ..server
        };
        let nano = ScenarioKey {
            lambda_qps: Some(1e-9),
            ..server
        };
        assert!(!zero.same(&nano));
        assert!(batch.same(&batch) && !batch.same(&server) && !server.same(&batch));
        let rateless = ScenarioKey {
            lambda_qps: None,
            ..server
        };
        assert!(!server.same(&rateless) && !rateless.same(&server));
    }

    #[test]
    fn the_reference_protocol_s_text_and_ids() {
        let r = Protocol::reference();
        assert_eq!(
            r.projection(Scenario::Batch),
            "wattcounts-protocol;version=1;scenario=batch;prompts=1000;max_tokens=256;temperature=0;context=1024;precision=harness"
        );
        // The first 12 hex digits of those texts' sha256 (Python hashlib);
        // the ids every stored reference row carries.
        assert_eq!(r.id(Scenario::Batch), "04768740c41a");
        assert_eq!(r.id(Scenario::Server), "09bea327e761");
        let unstated = Protocol {
            version: "2".into(),
            max_tokens: None,
            temperature: Some(0.7),
            context_length: None,
            precision: "fp16".into(),
            ..Protocol::reference()
        };
        assert_eq!(
            unstated.projection(Scenario::Server),
            "wattcounts-protocol;version=2;scenario=server;duration_s=300;max_tokens=unstated;temperature=0.7;context=unstated;precision=fp16"
        );
        assert_eq!(
            unstated.label(Scenario::Batch),
            "protocol 2, max_tokens unstated, temperature 0.7, context unstated, precision fp16"
        );
        assert!(!unstated.is_reference(Scenario::Batch));
    }

    #[test]
    fn a_group_key_is_one_json_array() {
        let key = |lambda: Option<f64>| GroupKey {
            gpu_id: "l4".into(),
            model: "a/\"b\"".into(),
            scenario: ScenarioKey {
                scenario: if lambda.is_some() {
                    Scenario::Server
                } else {
                    Scenario::Batch
                },
                lambda_qps: lambda,
            },
            protocol_id: "04768740c41a".into(),
            origin: Origin::Demo,
        };
        assert_eq!(
            key(Some(0.33)).canonical(),
            r#"["l4","a/\"b\"","server",0.33,"04768740c41a","demo"]"#
        );
        assert_eq!(
            key(None).canonical(),
            r#"["l4","a/\"b\"","batch",null,"04768740c41a","demo"]"#
        );
    }

    #[test]
    fn protocols_compare_per_scenario() {
        let r = Protocol::reference();
        assert_eq!(r.label(Scenario::Batch), "reference");
        let small = Protocol {
            batch_prompts: Some(40),
            server_duration_s: Some(20.0),
            ..Protocol::reference()
        };
        assert_ne!(small.id(Scenario::Batch), r.id(Scenario::Batch));
        assert_eq!(small.label(Scenario::Batch), "prompts/iteration 40");
        assert_eq!(small.label(Scenario::Server), "test duration s 20");
        // A batch-only bundle's server shape does not matter for its batch rows.
        let batch_only = Protocol {
            server_duration_s: None,
            ..Protocol::reference()
        };
        assert!(batch_only.is_reference(Scenario::Batch));
        assert!(!batch_only.is_reference(Scenario::Server));
    }
}

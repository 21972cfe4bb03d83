//! The query parameters of the read pages and their JSON twins: one struct
//! per set, deriving both the OpenAPI description (`IntoParams`) and what
//! handlers read (`Deserialize`), so what is documented is what is
//! accepted. [`Params`] extracts them: a parameter the struct does not
//! name is a 400 `unknown_parameter` naming it and the ones taken.
//!
//! Values arrive as the text the reader typed (`value_type` documents what
//! they must be); each handler's parser turns them into the domain's types
//! with a 400 `bad_parameter` that names the parameter, the value and what
//! was expected, and an empty value counts as absent (forms send them).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::Deserialize;
use utoipa::openapi::path::ParameterIn;
use utoipa::IntoParams;

use crate::error::{ApiError, PageError};

/// A set of query parameters a handler reads.
pub trait QuerySet: Sized {
    /// The parameter names it takes, as documented.
    fn names() -> Vec<&'static str>;
    /// The set read from a raw query string; the error says why not.
    fn from_query(query: &str) -> Result<Self, String>;
}

/// `QuerySet` for structs that derive `IntoParams` and `Deserialize`.
macro_rules! query_set {
    ($($set:ty),* $(,)?) => {$(
        impl QuerySet for $set {
            fn names() -> Vec<&'static str> {
                // Read from the documentation once, not on every request.
                static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
                NAMES
                    .get_or_init(|| {
                        <$set as IntoParams>::into_params(|| Some(ParameterIn::Query))
                            .into_iter()
                            .map(|p| p.name)
                            .collect()
                    })
                    .iter()
                    .map(String::as_str)
                    .collect()
            }
            fn from_query(query: &str) -> Result<Self, String> {
                serde_html_form::from_str(query).map_err(|e| e.to_string())
            }
        }
    )*};
}

query_set!(
    ViewParams,
    LeaderboardParams,
    ScenarioParam,
    GpuParams,
    CompareParams,
    ModelSearchParams,
    DeadlineParams,
    InclusionParams,
    ConsistencyParams,
    EntriesParams,
    NoticeParam,
    EstimateParams,
    PeerParams,
    PeerEstimateParams,
);

/// Two sets read from one query (a page's own parameters and its view).
impl<A: QuerySet, B: QuerySet> QuerySet for (A, B) {
    fn names() -> Vec<&'static str> {
        let mut names = A::names();
        names.extend(B::names());
        names
    }
    fn from_query(query: &str) -> Result<Self, String> {
        Ok((A::from_query(query)?, B::from_query(query)?))
    }
}

/// The extractor: `Params(p): Params<LeaderboardParams>`.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: QuerySet> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let names = T::names();
        let pairs: Vec<(String, String)> = serde_html_form::from_str(query)
            .map_err(|e| ApiError::bad_request("bad_query", format!("query string: {e}")))?;
        if let Some((unknown, _)) = pairs.iter().find(|(k, _)| !names.contains(&k.as_str())) {
            return Err(ApiError::bad_request(
                "unknown_parameter",
                format!(
                    "unknown parameter '{unknown}'; this page takes {}",
                    names.join(", ")
                ),
            ));
        }
        T::from_query(query)
            .map(Params)
            .map_err(|e| ApiError::bad_request("bad_parameter", e))
    }
}

/// The same for an HTML page: a refusal is the error page, not JSON.
pub struct PageParams<T>(pub T);

impl<S: Send + Sync, T: QuerySet> FromRequestParts<S> for PageParams<T> {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let Params(p) = Params::from_request_parts(parts, state).await?;
        Ok(PageParams(p))
    }
}

/// A value the reader gave, or None for an absent or empty one.
pub fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|v| !v.trim().is_empty())
}

/// `origin` and `protocol`: which view a page reads. Views are never
/// merged; the reference protocol of real data is the default.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ViewParams {
    /// `real` or `demo`; real when real data measured the protocol, else demo.
    #[param(value_type = Option<wattcounts_rules::domain::Origin>)]
    pub origin: Option<String>,
    /// `reference` (default) or a 12-digit protocol id from `views`.
    #[param(pattern = "^(reference|[0-9a-fA-F]{12})$")]
    pub protocol: Option<String>,
}

/// The leaderboard's filters, sort and page.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeaderboardParams {
    /// `batch`, `server` (every rate) or `server@RATE`.
    #[param(pattern = "^(batch|server(@[0-9]+(\\.[0-9]+)?)?)$")]
    pub scenario: Option<String>,
    /// Server arrival rate, requests per second.
    #[param(value_type = Option<f64>, minimum = 0.0, exclusive_minimum = 0.0)]
    pub rate: Option<String>,
    /// A model's Hugging Face id, or `all` for every model (the default of
    /// the API; the bare `/leaderboard` page opens on the most-measured
    /// model and says so).
    pub model: Option<String>,
    #[param(value_type = Option<wattcounts_analytics::leaderboard::SizeClass>)]
    pub size: Option<String>,
    /// A catalogue GPU id.
    pub gpu: Option<String>,
    #[param(value_type = Option<wattcounts_analytics::leaderboard::SortKey>)]
    pub sort: Option<String>,
    /// Also show groups waiting for a maintainer's review.
    #[param(value_type = Option<bool>)]
    pub include_review: Option<String>,
    /// `real` or `demo`.
    #[param(value_type = Option<wattcounts_rules::domain::Origin>)]
    pub origin: Option<String>,
    /// Deprecated, for older links: `false` means `origin=real`.
    #[param(value_type = Option<bool>)]
    pub include_demo: Option<String>,
    /// `reference` (default) or a 12-digit protocol id.
    #[param(pattern = "^(reference|[0-9a-fA-F]{12})$")]
    pub protocol: Option<String>,
    #[param(value_type = Option<u64>, minimum = 1, maximum = 1000000)]
    pub page: Option<String>,
    #[param(value_type = Option<u64>, minimum = 1, maximum = 1000)]
    pub per_page: Option<String>,
}

impl LeaderboardParams {
    /// Each parameter's name and the value given for it.
    pub fn named(&self) -> [(&'static str, &Option<String>); 12] {
        [
            ("scenario", &self.scenario),
            ("rate", &self.rate),
            ("model", &self.model),
            ("size", &self.size),
            ("gpu", &self.gpu),
            ("sort", &self.sort),
            ("include_review", &self.include_review),
            ("origin", &self.origin),
            ("include_demo", &self.include_demo),
            ("protocol", &self.protocol),
            ("page", &self.page),
            ("per_page", &self.per_page),
        ]
    }

    /// Only the view's two, as the leaderboard parses them.
    pub fn of_view(view: &ViewParams) -> LeaderboardParams {
        LeaderboardParams {
            origin: view.origin.clone(),
            protocol: view.protocol.clone(),
            ..Default::default()
        }
    }
}

/// `scenario`: one the data measured (the first when absent).
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScenarioParam {
    /// `batch` or `server@RATE`.
    #[param(pattern = "^(batch|server@[0-9]+(\\.[0-9]+)?)$")]
    pub scenario: Option<String>,
}

/// A GPU page's scenario and where its submissions list starts.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GpuParams {
    /// `batch` or `server@RATE`.
    #[param(pattern = "^(batch|server@[0-9]+(\\.[0-9]+)?)$")]
    pub scenario: Option<String>,
    /// List the accepted submissions received before this one (the id
    /// `older_submissions` gives); the newest when absent.
    pub before: Option<String>,
}

/// `/compare`'s GPUs, scenario and reference.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompareParams {
    /// Catalogue GPU ids, repeated (`gpu=a&gpu=b`); every GPU with data when absent.
    #[serde(default)]
    #[param(value_type = Option<Vec<String>>)]
    pub gpu: Vec<String>,
    /// Deprecated, the older form: ids separated by commas.
    pub gpus: Option<String>,
    /// `batch` or `server@RATE`.
    #[param(pattern = "^(batch|server@[0-9]+(\\.[0-9]+)?)$")]
    pub scenario: Option<String>,
    /// The GPU the headline's savings are measured against (one compared).
    #[serde(rename = "ref")]
    #[param(rename = "ref")]
    pub reference: Option<String>,
}

/// `/models`' search.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ModelSearchParams {
    /// Case-insensitive part of a model id.
    pub q: Option<String>,
    /// A model id (the front page's picker).
    pub model: Option<String>,
}

/// Deadlines a reader sets: the lowest-energy GPU that meets each.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeadlineParams {
    /// Median time to first token at most this, ms (server).
    #[param(value_type = Option<f64>, exclusive_minimum = 0.0)]
    pub ttft_ms: Option<String>,
    /// Median inter-token latency at most this, ms.
    #[param(value_type = Option<f64>, exclusive_minimum = 0.0)]
    pub itl_ms: Option<String>,
    /// Throughput at least this, tokens per second (batch).
    #[param(value_type = Option<f64>, exclusive_minimum = 0.0)]
    pub min_tok_s: Option<String>,
    /// An energy budget beside the deadline: J/token at most this; every
    /// deadline's pick must meet both ("none meets both" is an answer).
    #[param(value_type = Option<f64>, exclusive_minimum = 0.0)]
    pub max_j_per_token: Option<String>,
    /// The model page's reference GPU (a catalogue id, e.g. `l4`): each
    /// scenario says the saving against it. The JSON lists every GPU's
    /// figures with their intervals, so a client computes any saving.
    pub reference: Option<String>,
}

impl DeadlineParams {
    /// Each deadline's name and the value given for it.
    pub fn named(&self) -> [(&'static str, &Option<String>); 3] {
        [
            ("ttft_ms", &self.ttft_ms),
            ("itl_ms", &self.itl_ms),
            ("min_tok_s", &self.min_tok_s),
        ]
    }
}

/// `/api/v1/log/inclusion`'s query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InclusionParams {
    /// The submission whose leaf to prove.
    #[param(value_type = Option<uuid::Uuid>)]
    pub submission_id: Option<String>,
    /// Or a leaf index.
    #[param(value_type = Option<u64>)]
    pub index: Option<String>,
    /// The tree size to prove against.
    #[param(value_type = Option<u64>)]
    pub size: Option<String>,
}

/// `/api/v1/log/consistency`'s query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConsistencyParams {
    /// The older tree size.
    #[param(value_type = u64)]
    pub from: Option<String>,
    /// The newer one; the published checkpoint's size when absent.
    #[param(value_type = Option<u64>)]
    pub to: Option<String>,
}

/// `/api/v1/log/entries`' query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EntriesParams {
    /// First index, 0 when absent.
    #[param(value_type = Option<u64>)]
    pub start: Option<String>,
    /// One past the last; `start + 100` when absent.
    #[param(value_type = Option<u64>)]
    pub end: Option<String>,
}

/// `done`: what a maintainer's form just did (the admin page's notice).
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NoticeParam {
    pub done: Option<String>,
}

/// The question.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EstimateParams {
    /// The Hugging Face id of a catalogue model.
    pub model: Option<String>,
    /// The site's GPU id (`a100-sxm4-40gb`) or its NVML name.
    pub gpu: Option<String>,
    /// `batch`, `server` (with `rate`) or `server@RATE`.
    #[param(pattern = "^(batch|server(@[0-9]+(\\.[0-9]+)?)?)$")]
    pub scenario: Option<String>,
    /// Server arrival rate, requests per second.
    pub rate: Option<String>,
    /// The intervals' level, between 0 and 1 (the configured one, 0.8 by
    /// default, when absent).
    pub level: Option<String>,
}

/// A configuration to estimate under a peer's protocol.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PeerEstimateParams {
    /// One of the peer's tasks (`lm-arena-chat` when absent).
    pub task: Option<String>,
    /// A Hugging Face id the peer published or the catalogue holds.
    pub model: Option<String>,
    /// The site's GPU id (`b200`) or its NVML name.
    pub gpu: Option<String>,
    /// GPUs the model is spread over (1 when absent).
    #[param(value_type = Option<u32>)]
    pub num_gpus: Option<String>,
    /// The batch-size cap (vLLM `max_num_seqs`): the peer's load variable.
    #[param(value_type = Option<u32>)]
    pub max_num_seqs: Option<String>,
    /// Tensor-parallel degree (all GPUs for a dense model when absent).
    #[param(value_type = Option<u32>)]
    pub tensor_parallel: Option<String>,
    /// Expert-parallel degree (all GPUs for a mixture of experts when absent).
    #[param(value_type = Option<u32>)]
    pub expert_parallel: Option<String>,
    /// `bfloat16`, `float16`, `fp8` or `mxfp4` (the peer's for a model it
    /// published, else bfloat16).
    pub weight_precision: Option<String>,
}

/// A peer table's filters, sort and page.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PeerParams {
    /// A stored release id (the newest when absent).
    #[param(value_type = Option<i64>)]
    pub release: Option<String>,
    /// One task of the release (the one with most configurations when absent).
    pub task: Option<String>,
    /// A GPU as the publisher names it (`H100`, `B200`).
    pub gpu: Option<String>,
    /// A model's Hugging Face id.
    pub model: Option<String>,
    #[param(value_type = Option<wattcounts_rules::peer::PeerSort>)]
    pub sort: Option<String>,
    #[param(value_type = Option<u64>, minimum = 1, maximum = 1000000)]
    pub page: Option<String>,
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub per_page: Option<String>,
}

//! The query parameters of the read pages and their JSON twins, as the
//! OpenAPI document describes them. Handlers read their query strings
//! through allow-lists (a 400 names an unknown or bad parameter), so these
//! structs describe the query strings rather than extract them.

use utoipa::IntoParams;

/// `origin` and `protocol`: which view a page reads. Views are never
/// merged; the reference protocol of real data is the default.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ViewParams {
    /// `real` or `demo`; real when real data measured the protocol, else demo.
    #[param(value_type = Option<crate::domain::Origin>)]
    origin: Option<String>,
    /// `reference` (default) or a 12-digit protocol id from `views`.
    #[param(pattern = "^(reference|[0-9a-fA-F]{12})$")]
    protocol: Option<String>,
}

/// The leaderboard's filters, sort and page.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LeaderboardParams {
    /// `batch`, `server` (every rate) or `server@RATE`.
    #[param(pattern = "^(batch|server(@[0-9]+(\\.[0-9]+)?)?)$")]
    scenario: Option<String>,
    /// Server arrival rate, requests per second.
    #[param(minimum = 0.0, exclusive_minimum = 0.0)]
    rate: Option<f64>,
    /// A model's Hugging Face id.
    model: Option<String>,
    #[param(value_type = Option<crate::leaderboard::SizeClass>)]
    size: Option<String>,
    /// A catalogue GPU id.
    gpu: Option<String>,
    #[param(value_type = Option<crate::leaderboard::SortKey>)]
    sort: Option<String>,
    /// Also show groups waiting for a maintainer's review.
    include_review: Option<bool>,
    /// `real` or `demo`.
    #[param(value_type = Option<crate::domain::Origin>)]
    origin: Option<String>,
    /// Deprecated, for older links: `false` means `origin=real`.
    include_demo: Option<bool>,
    /// `reference` (default) or a 12-digit protocol id.
    #[param(pattern = "^(reference|[0-9a-fA-F]{12})$")]
    protocol: Option<String>,
    #[param(minimum = 1, maximum = 1000000)]
    page: Option<u64>,
    #[param(minimum = 1, maximum = 1000)]
    per_page: Option<u64>,
}

/// `scenario`: one the data measured (the first when absent).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ScenarioParam {
    /// `batch` or `server@RATE`.
    #[param(pattern = "^(batch|server@[0-9]+(\\.[0-9]+)?)$")]
    scenario: Option<String>,
}

/// `/compare`'s GPUs, scenario and reference.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct CompareParams {
    /// Catalogue GPU ids, repeated (`gpu=a&gpu=b`); every GPU with data when absent.
    gpu: Option<Vec<String>>,
    /// Deprecated, the older form: ids separated by commas.
    gpus: Option<String>,
    /// `batch` or `server@RATE`.
    #[param(pattern = "^(batch|server@[0-9]+(\\.[0-9]+)?)$")]
    scenario: Option<String>,
    /// The GPU the headline's savings are measured against (one compared).
    #[param(rename = "ref")]
    reference: Option<String>,
}

/// `/models`' search.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ModelSearchParams {
    /// Case-insensitive part of a model id.
    q: Option<String>,
    /// A model id (the front page's picker).
    model: Option<String>,
}

/// Deadlines a reader sets: the lowest-energy GPU that meets each.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct DeadlineParams {
    /// Median time to first token at most this, ms (server).
    #[param(exclusive_minimum = 0.0)]
    ttft_ms: Option<f64>,
    /// Median inter-token latency at most this, ms.
    #[param(exclusive_minimum = 0.0)]
    itl_ms: Option<f64>,
    /// Throughput at least this, tokens per second (batch).
    #[param(exclusive_minimum = 0.0)]
    min_tok_s: Option<f64>,
}

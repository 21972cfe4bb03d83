//! The API's OpenAPI 3.1 document, derived from the handlers' `#[utoipa::path]`
//! attributes and the types they answer with, served at
//! `/api/openapi.json`, and the `/api` reference page rendered from it.
//!
//! Handlers read their query strings through allow-lists (a 400 names an
//! unknown or bad parameter), so the parameter structs below describe the
//! query strings rather than extract them.

use askama::Template;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
use utoipa::{IntoParams, Modify, OpenApi};

use super::pages::{render, VERSION};
use super::{admin_api, api, explore, guide_pages, models_pages, pages, snapshots, tlog_pages};
use super::{csv_export, AppState};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "wattcounts",
        description = "The open submission service for the Watt Counts benchmark of LLM-inference energy on GPUs: upload signed result bundles, read leaderboards and per-GPU and per-model comparisons, download snapshots, verify the transparency log. Every error is the `ErrorBody` envelope, with a stable `code`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        api::healthz, api::readyz, api::register, api::submit, api::submission,
        pages::leaderboard_json, pages::stats_json, csv_export::leaderboard_csv,
        explore::gpus_json, explore::gpu_json, explore::compare_json,
        models_pages::models_json, models_pages::model_json,
        guide_pages::checks_json,
        snapshots::list_json, snapshots::snapshot_json, snapshots::create_api,
        tlog_pages::well_known, tlog_pages::log_json, tlog_pages::inclusion,
        tlog_pages::consistency, tlog_pages::entries, tlog_pages::publish,
        admin_api::queue, admin_api::decide, admin_api::suspend, admin_api::revoke,
    ),
    // Types named only by a parameter's `#[param(value_type)]` are not
    // collected from the handlers: list them, or their `$ref` dangles.
    components(schemas(super::error::ErrorBody, crate::leaderboard::SortKey)),
    modifiers(&Maintainers, &CommonErrors),
    tags(
        (name = "submissions", description = "Upload bundles, read receipts and the checks"),
        (name = "submitters", description = "Register a handle and a key"),
        (name = "leaderboard", description = "Groups of comparable results"),
        (name = "models", description = "Which GPU for a model"),
        (name = "gpus", description = "One GPU, and GPUs side by side"),
        (name = "snapshots", description = "Immutable dataset releases"),
        (name = "log", description = "The transparency log and its proofs"),
        (name = "maintainers", description = "Moderation and publishing (bearer token)"),
        (name = "service", description = "Health for operators"),
    )
)]
pub struct ApiDoc;

/// The maintainer bearer token (`--admin-token NAME:SHA256` holds its hash).
struct Maintainers;

impl Modify for Maintainers {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "maintainer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Answers any route can give, from the layers in front of every handler
/// rather than the handler itself: a bad path or parameter (400), the
/// request deadline (408), a fault (500), the database away (503).
struct CommonErrors;

const COMMON: [(&str, &str); 4] = [
    (
        "400",
        "A parameter, path or body that is not allowed; the message names it",
    ),
    ("408", "The request ran past its deadline"),
    ("500", "An internal error (logged, never echoed)"),
    (
        "503",
        "The database is not answering or the service is at capacity; see Retry-After",
    ),
];

impl Modify for CommonErrors {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        for item in doc.paths.paths.values_mut() {
            for op in [&mut item.get, &mut item.post].into_iter().flatten() {
                for (code, why) in COMMON {
                    op.responses
                        .responses
                        .entry(code.to_string())
                        .or_insert_with(|| error_response(why));
                }
            }
        }
    }
}

fn error_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            Content::new(Some(Ref::from_schema_name("ErrorBody"))),
        )
        .build()
        .into()
}

/// The document, as served and pinned by the snapshot test.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// `/api/openapi.json`.
pub async fn openapi_json() -> Response {
    match document().to_pretty_json() {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "OpenAPI document");
            super::error::ApiError::internal().into_response()
        }
    }
}

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

/// One operation as the reference page lists it.
struct OperationRow {
    method: String,
    path: String,
    anchor: String,
    summary: String,
    description: String,
    auth: bool,
    params: Vec<(String, String, bool, String)>,
    body: String,
    responses: Vec<(String, String, String)>,
}

struct TagSection {
    name: String,
    description: String,
    operations: Vec<OperationRow>,
}

#[derive(Template)]
#[template(path = "api.html")]
struct ApiPage {
    tags: Vec<TagSection>,
    schemas: Vec<String>,
    demo: bool,
    version: &'static str,
}

/// The schema a body or answer names, as a short word.
fn schema_name(content: &Value) -> String {
    let Some(map) = content.as_object() else {
        return String::new();
    };
    map.iter()
        .map(|(media, c)| {
            let s = &c["schema"];
            let name = s["$ref"]
                .as_str()
                .map(|r| r.rsplit('/').next().unwrap_or(r).to_string())
                .or_else(|| s["type"].as_str().map(str::to_string))
                .unwrap_or_default();
            if name.is_empty() {
                media.clone()
            } else {
                format!("{name} ({media})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The reference page's sections, one per tag, from the document itself.
fn sections(doc: &Value) -> Vec<TagSection> {
    let mut tags: Vec<TagSection> = doc["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| TagSection {
            name: text(&t["name"]),
            description: text(&t["description"]),
            operations: Vec::new(),
        })
        .collect();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in ["get", "post"] {
            let op = &item[method];
            if op.is_null() {
                continue;
            }
            let tag = op["tags"][0].as_str().unwrap_or_default();
            let row = OperationRow {
                method: method.to_uppercase(),
                path: path.clone(),
                anchor: format!("{method}-{}", path.replace(['/', '{', '}', '.'], "-")),
                summary: text(&op["summary"]),
                description: text(&op["description"]),
                auth: op.get("security").is_some(),
                params: op["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        (
                            text(&p["name"]),
                            text(&p["in"]),
                            p["required"].as_bool().unwrap_or(false),
                            text(&p["description"]),
                        )
                    })
                    .collect(),
                body: schema_name(&op["requestBody"]["content"]),
                responses: op["responses"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(code, r)| {
                        (
                            code.clone(),
                            text(&r["description"]),
                            schema_name(&r["content"]),
                        )
                    })
                    .collect(),
            };
            match tags.iter_mut().find(|t| t.name == tag) {
                Some(t) => t.operations.push(row),
                None => tags.push(TagSection {
                    name: tag.to_string(),
                    description: String::new(),
                    operations: vec![row],
                }),
            }
        }
    }
    tags.retain(|t| !t.operations.is_empty());
    tags
}

/// `/api`: the reference, server-rendered from the same document.
pub async fn api_page(State(_s): State<AppState>) -> Response {
    let doc = match serde_json::to_value(document()) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "OpenAPI document");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let schemas = doc["components"]["schemas"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    render(
        StatusCode::OK,
        &ApiPage {
            tags: sections(&doc),
            schemas,
            demo: false,
            version: VERSION,
        },
    )
}

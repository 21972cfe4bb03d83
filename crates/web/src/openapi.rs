//! The API's OpenAPI 3.1 document: what it says of itself (title, tags,
//! security, the errors every route can give) here, its paths from the
//! route table (routes.rs registers each handler with its
//! `#[utoipa::path]`), served at `/api/openapi.json` (the `/api` page
//! that renders it is pages/api_guide.rs; the query parameters' descriptions
//! are extract/query.rs).

use std::sync::Arc;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "wattcounts",
        description = "The open submission service for the Watt Counts benchmark of LLM-inference energy on GPUs: upload signed result bundles, read leaderboards and per-GPU and per-model comparisons, download snapshots, verify the transparency log. Every error is the `ErrorBody` envelope, with a stable `code`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    // Types named only by a parameter's `#[param(value_type)]` are not
    // collected from the handlers: list them, or their `$ref` dangles.
    components(schemas(crate::error::ErrorBody, wattcounts_analytics::leaderboard::SortKey)),
    modifiers(&Maintainers),
    tags(
        (name = "submissions", description = "Upload bundles, read receipts and the checks"),
        (name = "submitters", description = "Register a handle and a key"),
        (name = "leaderboard", description = "Groups of comparable results"),
        (name = "models", description = "Which GPU for a model"),
        (name = "gpus", description = "One GPU, and GPUs side by side"),
        (name = "insights", description = "The paper's findings recomputed from the data"),
        (name = "estimates", description = "Estimates (never measurements) for GPU × model pairs nobody has measured, and the estimator behind them"),
        (name = "peers", description = "Published measurements of other benchmarks (ML.ENERGY v3), each its own origin and protocol, never merged with Watt Counts groups"),
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

/// The document as served: the head above with the route table's paths,
/// each operation given the errors every route can give. Rendered once.
pub struct Document {
    pub json: String,
    pub value: serde_json::Value,
}

impl Document {
    pub fn new(paths: utoipa::openapi::OpenApi) -> anyhow::Result<Document> {
        let mut doc = ApiDoc::openapi();
        doc.merge(paths);
        CommonErrors.modify(&mut doc);
        Ok(Document {
            json: doc.to_pretty_json()?,
            value: serde_json::to_value(&doc)?,
        })
    }
}

/// `/api/openapi.json`.
pub async fn openapi_json(Extension(doc): Extension<Arc<Document>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.json.clone(),
    )
        .into_response()
}

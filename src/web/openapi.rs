//! The API's OpenAPI 3.1 document, derived from the handlers' `#[utoipa::path]`
//! attributes and the types they answer with, served at
//! `/api/openapi.json` (the `/api` page that renders it is api_page.rs;
//! the query parameters' descriptions are params.rs).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use super::csv_export;
use super::{admin_api, api, explore, guide_pages, models_pages, pages, snapshots, tlog_pages};

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

//! `/api`: the API reference page, rendered from the OpenAPI document.

use std::sync::Arc;

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use serde_json::Value;

use crate::error::render;
use crate::openapi::Document;

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
    layout: crate::layout::Layout,
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
pub async fn api_page(Extension(document): Extension<Arc<Document>>) -> Response {
    let doc = &document.value;
    let schemas = doc["components"]["schemas"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    render(
        StatusCode::OK,
        &ApiPage {
            tags: sections(doc),
            schemas,
            layout: crate::layout::Layout::of(false),
        },
    )
}

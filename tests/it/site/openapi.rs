//! The OpenAPI document: pinned by a snapshot, complete (every JSON route
//! of the router is in it, with the error answers it can give), rendered
//! as the `/api` page, and checked against a live server by schemathesis.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

use crate::common::*;

const PINNED: &str = "docs/openapi.json";

async fn document(app: &TestApp) -> Value {
    let (status, headers, body) = app
        .raw(
            Request::get("/api/openapi.json")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    serde_json::from_slice(&body).unwrap()
}

/// `UPDATE_OPENAPI=1 cargo test openapi` rewrites the pinned copy after a
/// deliberate change; review its diff like code. Never under CI: there the
/// rewrite would make the comparison below pass whatever was served.
#[tokio::test]
async fn the_document_is_pinned() {
    let app = TestApp::new().await;
    let served = document(&app).await;
    assert_eq!(served["openapi"], "3.1.0");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PINNED);
    let text = format!("{}\n", serde_json::to_string_pretty(&served).unwrap());
    if std::env::var("UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        assert!(
            std::env::var_os("CI").is_none(),
            "UPDATE_OPENAPI is refused when CI is set: CI compares against the committed file"
        );
        std::fs::write(&path, &text).unwrap();
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        pinned == text,
        "the served OpenAPI document differs from {PINNED}; if the change is meant, run \
         UPDATE_OPENAPI=1 cargo test openapi and commit the file"
    );
}

/// The router's routes under /api/, /healthz, /readyz and /.well-known/.
async fn json_routes() -> BTreeSet<(String, String)> {
    router_routes()
        .await
        .into_iter()
        .filter(|(_, path)| wattcounts::web::routes::is_api_path(path))
        .collect()
}

/// The route table refuses an API path registered as a page: it could not
/// be in the document.
#[tokio::test]
#[should_panic(expected = "is an API path: register it with Table::api")]
async fn an_api_route_without_documentation_cannot_be_registered() {
    let app = TestApp::new().await;
    let cfg = test_config(app.dir.path(), |_| {});
    let state = wattcounts::app::with_store(app.store.clone(), &cfg, AUDIENCE.into()).unwrap();
    let _ = wattcounts::web::routes::Table::new(&state).get(
        "/api/v1/undocumented",
        wattcounts::web::layers::cache_policy::CachePolicy::NoStore,
        || async { "no" },
    );
}

/// What the document says a route reads is what it accepts, as one list:
/// each documented query parameter, even empty (as a form sends it), is
/// never an `unknown_parameter`; a name it does not document is refused
/// with one that names it. Both on every documented GET with a query.
#[tokio::test]
async fn documented_query_parameters_are_the_accepted_ones() {
    let app = TestApp::new().await;
    let doc = document(&app).await;
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("get") else { continue };
        let names: Vec<&str> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        if names.is_empty() {
            continue;
        }
        // Path parameters filled so their extractors pass (a UUID where
        // one is read); the query is read before any lookup.
        let url = path.replace("{id}", "00000000-0000-4000-8000-000000000000");
        let all: Vec<String> = names.iter().map(|n| format!("{n}=")).collect();
        let (status, body) = app.get(&format!("{url}?{}", all.join("&"))).await;
        assert_ne!(
            body["error"]["code"], "unknown_parameter",
            "{path} refused a documented parameter ({status}): {body}"
        );
        let (status, body) = app.get(&format!("{url}?undocumented_name=1")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], "unknown_parameter", "{path}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("'undocumented_name'"), "{path}: {message}");
        for name in &names {
            assert!(
                message.contains(name),
                "{path} does not list {name}: {message}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} routes document a query");
}

#[tokio::test]
async fn every_json_route_is_in_it_with_its_errors() {
    let app = TestApp::new().await;
    let doc = document(&app).await;
    let paths = doc["paths"].as_object().unwrap();
    let routes = json_routes().await;
    assert!(routes.len() >= 27, "the route scan found {routes:?}");
    let mut documented = BTreeSet::new();
    for (path, item) in paths {
        for method in ["get", "post"] {
            if item.get(method).is_some() {
                documented.insert((method.to_string(), path.clone()));
            }
        }
    }
    assert_eq!(
        routes, documented,
        "router (left) and document (right) differ"
    );

    let mut codes = BTreeSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            // What the layers in front of every handler can answer.
            for code in ["400", "408", "500", "503"] {
                assert!(responses.contains_key(code), "{method} {path} lacks {code}");
            }
            for (code, r) in responses {
                codes.insert(code.clone());
                if code.starts_with('4') || code.starts_with('5') {
                    assert_eq!(
                        r["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/ErrorBody",
                        "{method} {path} {code}"
                    );
                }
            }
            let auth = op.get("security").is_some();
            assert_eq!(
                auth,
                path.contains("/admin/"),
                "{method} {path}: maintainer routes, and only they, need the token"
            );
            if auth {
                assert!(responses.contains_key("401"), "{method} {path}");
            }
        }
    }
    for code in ["401", "404", "409", "413", "422", "429", "503"] {
        assert!(codes.contains(code), "no operation documents {code}");
    }
    // A path parameter named in the path is declared, and only those.
    for (path, item) in paths {
        for op in item.as_object().unwrap().values() {
            let declared: BTreeSet<&str> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            let named: BTreeSet<&str> = path
                .split('{')
                .skip(1)
                .map(|s| &s[..s.find('}').unwrap()])
                .collect();
            assert_eq!(declared, named, "{path}");
        }
    }
}

/// Every `$ref` in the document points at a schema it holds (a dangling
/// one makes clients and fuzzers skip what it describes).
#[tokio::test]
async fn every_reference_resolves() {
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let app = TestApp::new().await;
    let doc = document(&app).await;
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(found.len() > 50, "{} references", found.len());
    let dangling: BTreeSet<&str> = found
        .into_iter()
        .filter(|r| {
            let pointer = r.strip_prefix('#').unwrap_or("not local");
            doc.pointer(pointer).is_none()
        })
        .collect();
    assert!(dangling.is_empty(), "dangling references: {dangling:?}");
}

#[tokio::test]
async fn the_api_page_lists_every_operation() {
    let app = TestApp::new().await;
    let doc = document(&app).await;
    let (status, headers, body) = app
        .raw(Request::get("/api").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = scraper::Html::parse_document(std::str::from_utf8(&body).unwrap());
    let heading = scraper::Selector::parse("article h3 code").unwrap();
    let shown: BTreeSet<String> = html.select(&heading).map(|e| e.text().collect()).collect();
    let mut want = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            want.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    assert_eq!(shown, want);
    // Each operation's table names every status it documents.
    let article = scraper::Selector::parse("article#post--api-v1-submissions td").unwrap();
    let cells: Vec<String> = html.select(&article).map(|e| e.text().collect()).collect();
    for code in ["201", "200", "403", "409", "413", "422", "429"] {
        assert!(cells.contains(&code.to_string()), "{code} in {cells:?}");
    }
    let link = scraper::Selector::parse("nav a[href='/api']").unwrap();
    assert!(
        html.select(&link).next().is_some(),
        "every page links to /api"
    );
}

/// schemathesis (its own venv: `.ci/run` makes target/stenv), or
/// WATTCOUNTS_SCHEMATHESIS, or `st` on the PATH.
fn schemathesis() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/stenv/bin/st");
    [
        std::env::var_os("WATTCOUNTS_SCHEMATHESIS").map(PathBuf::from),
        Some(venv),
        Some(PathBuf::from("st")),
    ]
    .into_iter()
    .flatten()
    .find(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Fixture data behind a live server: submissions accepted, one held for
/// review, a snapshot; schemathesis then sends generated requests (valid
/// and invalid) to every operation, with the maintainer token, and checks
/// every answer against the document.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schemathesis_finds_no_server_error_and_no_answer_off_the_document() {
    let Some(st) = schemathesis() else {
        let msg =
            "schemathesis is not installed (.ci/run installs it: python3 -m venv target/stenv && \
                   target/stenv/bin/pip install -r scripts/api/requirements.txt)";
        skip(Need::Schemathesis, msg);
        return;
    };
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let mut accepted = Vec::new();
    for i in 0..3 {
        let gz = BundleBuilder::fixture()
            .marked(i + 1)
            .by("alice", &key)
            .build();
        let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        accepted.push(body["submission_id"].as_str().unwrap().to_string());
    }
    let gz = BundleBuilder::faulty(wattcounts::synth::Fault::WarmStart, 42)
        .by("alice", &key)
        .build();
    let (status, held) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(held["status"], "needs_review", "{status} {held}");
    let (status, snapshot) = app
        .admin_post("/api/v1/admin/snapshots", serde_json::json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{snapshot}");
    let model = fixture_model_id(&app).await;
    let token = format!("Authorization: Bearer {ADMIN_TOKEN}");
    let server = app.spawn_serve(&["--admin-token", &admin_token_flag()]);
    let report = tempfile::tempdir().unwrap();
    // Real identifiers for the path parameters, so generated requests reach
    // the stored data rather than only the 404 for an unknown id.
    let config = report.path().join("schemathesis.toml");
    let operation = |name: &str, param: &str, value: &str| {
        format!("[[operations]]\ninclude-name = \"{name}\"\nparameters = {{ {param} = \"{value}\" }}\n\n")
    };
    std::fs::write(
        &config,
        [
            operation("GET /api/v1/submissions/{id}", "id", &accepted[0]),
            operation(
                "POST /api/v1/admin/submissions/{id}/decision",
                "id",
                held["submission_id"].as_str().unwrap(),
            ),
            operation(
                "GET /api/v1/snapshots/{id}",
                "id",
                snapshot["snapshot_id"].as_str().unwrap(),
            ),
            operation("GET /api/v1/gpus/{id}", "id", "l4"),
            operation("GET /api/v1/models/{id}", "id", &model),
            operation(
                "POST /api/v1/admin/submitters/{handle}/suspend",
                "handle",
                "alice",
            ),
        ]
        .concat(),
    )
    .unwrap();
    let out = tokio::task::spawn_blocking({
        let url = server.url.clone();
        let report = report.path().to_path_buf();
        move || {
            std::process::Command::new(st)
                .arg("--config-file")
                .arg(&config)
                .args(["run", &format!("{url}/api/openapi.json")])
                .args([
                    "--checks",
                    "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
                    "--max-examples",
                    "25",
                    "--seed",
                    "20261202",
                    // One worker: CPython 3.11 before 3.11.8 keeps the AST
                    // recursion counter in state shared by threads, and two
                    // workers parsing at once fail with "AST constructor
                    // recursion depth mismatch" (CPython gh-106905).
                    "--workers",
                    "1",
                    "--request-timeout",
                    "30",
                    "--suppress-health-check",
                    "all",
                    "--report",
                    "junit",
                    "--report-dir",
                ])
                .arg(&report)
                .args(["-H", &token])
                // It keeps a cache in its working directory: not the checkout.
                .current_dir(&report)
                .env("NO_COLOR", "1")
                .env("SCHEMATHESIS_TELEMETRY", "false")
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "schemathesis found problems (exit {:?}):\n{stdout}\n{stderr}",
        out.status.code()
    );
    // It ran: every operation was exercised, none errored or was skipped.
    assert!(
        !stdout.contains("Unresolvable references"),
        "the document has references schemathesis cannot resolve:\n{stdout}"
    );
    // The report is junit-<timestamp>.xml.
    let junit = std::fs::read_dir(report.path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("junit"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap_or_else(|| panic!("no junit report in {}:\n{stdout}", report.path().display()));
    let cases = junit.matches("<testcase").count();
    assert!(cases >= 27, "schemathesis ran {cases} operations:\n{junit}");
    assert!(
        !junit.contains("<failure") && !junit.contains("<error"),
        "{junit}"
    );
    // A phase or operation it skipped tested nothing there.
    assert!(
        !junit.contains("<skipped"),
        "schemathesis skipped:
{junit}"
    );
}

/// A model the fixture measured, as the models index names it.
async fn fixture_model_id(app: &TestApp) -> String {
    let (status, models) = app.get("/api/v1/models").await;
    assert_eq!(status, StatusCode::OK, "{models}");
    models["models"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["gpus_measured"].as_u64() > Some(0)))
        .and_then(|m| m["model"].as_str())
        .unwrap_or_else(|| panic!("no measured model in {models}"))
        .to_string()
}

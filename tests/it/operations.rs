//! Operating it (issue #16, first part): Prometheus metrics on their own
//! listener, scraped from a real `serve` and parsed as the exposition
//! format; `/readyz` answering 200 only when the database and the blob
//! store do.

use std::collections::BTreeMap;

use axum::http::StatusCode;

use crate::common::*;

/// One sample of the text exposition format.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses every line; panics naming a line that is not the format.
fn parse_exposition(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels: {line}"));
                let mut labels = BTreeMap::new();
                let mut chars = body.chars().peekable();
                while chars.peek().is_some() {
                    let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
                    assert_eq!(chars.next(), Some('"'), "label value not quoted: {line}");
                    let mut value = String::new();
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => value.push(chars.next().unwrap()),
                            '"' => break,
                            c => value.push(c),
                        }
                    }
                    if chars.peek() == Some(&',') {
                        chars.next();
                    }
                    assert!(
                        key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            && !key.is_empty(),
                        "bad label name '{key}' in {line}"
                    );
                    labels.insert(key, value);
                }
                (name, labels)
            }
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line}"
        );
        out.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    out
}

fn find<'a>(samples: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    samples
        .iter()
        .filter(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found = find(samples, name, labels);
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    found[0].value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_ingest_stages_routes_and_outcomes() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = spawn_server(&[
        "--data-dir",
        app.dir.path().to_str().unwrap(),
        "--database-url",
        &format!("sqlite:{}", app.dir.path().join("test.db").display()),
        "--public-url",
        AUDIENCE,
        "--metrics-bind",
        &format!("127.0.0.1:{port}"),
    ]);
    let client = reqwest::Client::new();
    let upload = |bundle: Vec<u8>, sig: Vec<u8>| {
        let form = reqwest::multipart::Form::new()
            .part(
                "bundle",
                reqwest::multipart::Part::bytes(bundle).file_name("b.tar.gz"),
            )
            .part(
                "signature",
                reqwest::multipart::Part::bytes(sig).file_name("b.sig"),
            );
        client
            .post(format!("{}/api/v1/submissions", server.url))
            .multipart(form)
            .send()
    };
    let gz = bundle("alice", &key);
    assert_eq!(
        upload(gz.clone(), sign(&key, &gz)).await.unwrap().status(),
        201
    );
    assert_eq!(
        upload(gz.clone(), sign(&key, &gz)).await.unwrap().status(),
        200
    );
    // New bytes with the signature of other bytes: refused before anything is unpacked.
    let other = distinct_bundle("alice", &key, 1);
    assert_eq!(upload(other, sign(&key, &gz)).await.unwrap().status(), 403);
    for path in [
        "/leaderboard",
        "/leaderboard",
        "/no/such/page",
        "/another/missing/1",
        "/readyz",
    ] {
        client
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .unwrap();
    }

    let scrape = client
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scrape.status(), 200);
    assert!(scrape.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let samples = parse_exposition(&scrape.text().await.unwrap());

    // Every ingest stage that ran is a histogram with buckets.
    // (An upload is digested while it streams in: no separate hash stage.)
    for stage in ["verify", "decompress", "parse", "derive", "checks", "store"] {
        let count = value(
            &samples,
            "wattcounts_ingest_stage_seconds_count",
            &[("stage", stage)],
        );
        assert!(count >= 1.0, "{stage}: {count}");
        let inf = value(
            &samples,
            "wattcounts_ingest_stage_seconds_bucket",
            &[("stage", stage), ("le", "+Inf")],
        );
        assert_eq!(inf, count, "{stage}");
    }
    assert_eq!(
        value(
            &samples,
            "wattcounts_submissions_total",
            &[("outcome", "created"), ("status", "accepted")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &samples,
            "wattcounts_submissions_total",
            &[("outcome", "replayed"), ("status", "accepted")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &samples,
            "wattcounts_rejections_total",
            &[("code", "bad_signature")]
        ),
        1.0
    );
    let posts = [("route", "/api/v1/submissions"), ("method", "POST")];
    assert_eq!(
        value(
            &samples,
            "wattcounts_http_requests_total",
            &[posts[0], posts[1], ("status", "201")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &samples,
            "wattcounts_http_requests_total",
            &[posts[0], posts[1], ("status", "403")]
        ),
        1.0
    );
    // Unknown paths share one label, whatever they were.
    assert_eq!(
        value(
            &samples,
            "wattcounts_http_requests_total",
            &[("route", "unmatched"), ("status", "404")]
        ),
        2.0
    );
    assert!(find(&samples, "wattcounts_http_requests_total", &[])
        .iter()
        .all(|s| !s.labels["route"].contains("no/such")));
    let lb = value(
        &samples,
        "wattcounts_http_request_duration_seconds_count",
        &[
            ("route", "/leaderboard"),
            ("method", "GET"),
            ("status", "200"),
        ],
    );
    assert_eq!(lb, 2.0);
    assert!(
        value(
            &samples,
            "wattcounts_response_cache_total",
            &[("result", "hit")]
        ) >= 1.0
    );
    assert!(
        value(
            &samples,
            "wattcounts_response_cache_total",
            &[("result", "miss")]
        ) >= 1.0
    );
    assert_eq!(
        value(
            &samples,
            "wattcounts_error_answers_total",
            &[("code", "bad_signature"), ("status", "403")]
        ),
        1.0
    );
    let in_use = value(
        &samples,
        "wattcounts_db_pool_connections",
        &[("state", "in_use")],
    );
    let idle = value(
        &samples,
        "wattcounts_db_pool_connections",
        &[("state", "idle")],
    );
    assert!(in_use >= 0.0 && idle >= 1.0, "{in_use} {idle}");
}

#[tokio::test]
async fn readyz_needs_the_database_and_the_blob_store() {
    let app = TestApp::new().await;
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ready");
    // The blob store's folder replaced by a file: nothing can be staged.
    let blobs = app.dir.path().join("blobs");
    std::fs::rename(&blobs, app.dir.path().join("blobs.away")).unwrap();
    std::fs::write(&blobs, b"not a folder").unwrap();
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("not ready: blob store"),
        "{body}"
    );
    // /healthz (is the process up?) still answers.
    assert_eq!(app.get("/healthz").await.0, StatusCode::OK);
}

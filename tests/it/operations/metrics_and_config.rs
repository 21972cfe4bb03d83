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
    // Port 0: the server binds a free port and says which.
    let server = app.spawn_serve(&["--metrics-bind", "127.0.0.1:0"]);
    let metrics_url = server
        .metrics_url
        .clone()
        .expect("serve names its metrics address");
    let client = reqwest::Client::new();
    let upload = |bundle: Vec<u8>, sig: Vec<u8>| {
        let (client, url) = (&client, &server.url);
        async move { submit_over_http(client, url, bundle, sig).await.0 }
    };
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    assert_eq!(upload(gz.clone(), sign(&key, &gz)).await, 201);
    assert_eq!(upload(gz.clone(), sign(&key, &gz)).await, 200);
    // New bytes with the signature of other bytes: refused before anything is unpacked.
    let other = BundleBuilder::fixture().marked(1).by("alice", &key).build();
    assert_eq!(upload(other, sign(&key, &gz)).await, 403);
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

    let scrape = client.get(&metrics_url).send().await.unwrap();
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
    let requests = find(&samples, "wattcounts_http_requests_total", &[]);
    assert!(requests.len() >= 3, "{}", requests.len());
    assert!(requests
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
    // Whole connections of the SQLite pool (8 at most), one idle at least
    // between requests: a gauge that counted anything else would fail here.
    assert!(
        in_use.fract() == 0.0 && idle.fract() == 0.0,
        "{in_use} {idle}"
    );
    assert!(
        idle >= 1.0 && in_use + idle <= 8.0,
        "{in_use} in use, {idle} idle"
    );
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

/// Under the configured floor of free disk space the instance says it is
/// not ready, and names the figure; a floor of 0 is not checked.
#[tokio::test]
async fn readyz_answers_503_under_the_free_space_floor() {
    // More than any disk holds: always under it.
    let floor = 1u64 << 62;
    let app = TestApp::configured(|c| c.min_free_disk_bytes = floor).await;
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("not ready: data dir: ")
            && message.contains(&format!("under the floor of {floor}")),
        "{body}"
    );
    let app = TestApp::configured(|c| c.min_free_disk_bytes = 0).await;
    assert_eq!(app.get("/readyz").await.0, StatusCode::OK);
}

/// `wattcounts ARGS` in `dir` with no WATTCOUNTS_* of the caller's
/// environment but `env`: (exit code, stdout, stderr).
fn wattcounts_in(
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"));
    cmd.current_dir(dir).args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("WATTCOUNTS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn one_configuration_file_layered_under_env_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("wattcounts.toml"),
        r#"
data_dir = "from-file"
database_url = "postgres://wc:s3cret@db.example/wattcounts"
admin_token = ["alice:0123abcd", "bob:4567ef01"]
pue = 1.4
grid_g_per_kwh = 500
demo = true

[checks]
batch_energy_cv_pct = 7.5

[estimator]
threads = 2

[estimator.power]
max_depth = 6
l2 = 150.0
trees = 120
learning_rate = 0.3
"#,
    )
    .unwrap();
    let (code, out, err) = wattcounts_in(
        dir.path(),
        &["config", "print", "--grid-g-per-kwh", "300"],
        &[("WATTCOUNTS_PUE", "1.3")],
    );
    assert_eq!(code, Some(0), "{err}");
    let line = |key: &str| {
        out.lines()
            .find(|l| {
                l.starts_with(&format!("{key} = ")) || l.starts_with(&format!("# {key} (unset)"))
            })
            .unwrap_or_else(|| panic!("no {key} in\n{out}"))
            .to_string()
    };
    assert_eq!(line("data_dir"), r#"data_dir = "from-file"  # file"#);
    assert_eq!(line("grid_g_per_kwh"), "grid_g_per_kwh = 300.0  # flag");
    assert_eq!(line("pue"), "pue = 1.3  # env WATTCOUNTS_PUE");
    assert_eq!(line("demo"), "demo = true  # file");
    assert_eq!(line("bind"), r#"bind = "127.0.0.1:8080"  # default"#);
    // Secrets never printed.
    assert!(
        !out.contains("s3cret") && !out.contains("0123abcd"),
        "{out}"
    );
    assert_eq!(
        line("database_url"),
        r#"database_url = "postgres://wc:<redacted>@db.example/wattcounts"  # file"#
    );
    assert_eq!(
        line("admin_token"),
        r#"admin_token = ["alice:<redacted>", "bob:<redacted>"]  # file"#
    );
    assert!(
        out.contains("[checks]  # file [checks]\n") && out.contains("batch_energy_cv_pct = 7.5\n"),
        "{out}"
    );

    assert!(
        out.contains("# [estimator] from the file\n[estimator]\n")
            && out.contains("threads = 2\n")
            && out.contains("[estimator.power]\n")
            && out.contains("trees = 120\n"),
        "{out}"
    );

    // Another subcommand reads the same file: snapshot list (snapshots are
    // listed from the database) goes to the file's database, whose host
    // does not exist here.
    let (code, out, err) = wattcounts_in(dir.path(), &["snapshot", "list"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(err.contains("database"), "{err}");

    // Unknown keys are errors naming the key, in the file or in [checks].
    std::fs::write(dir.path().join("typo.toml"), "dta_dir = \"x\"\n").unwrap();
    let (code, _, err) = wattcounts_in(
        dir.path(),
        &["--config-file", "typo.toml", "config", "print"],
        &[],
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("typo.toml: unknown key 'dta_dir'"), "{err}");
    std::fs::write(dir.path().join("typo.toml"), "[checks]\nbatch_cv = 1\n").unwrap();
    let (code, _, err) = wattcounts_in(
        dir.path(),
        &["config", "print"],
        &[("WATTCOUNTS_CONFIG", "typo.toml")],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains("typo.toml: [checks]: unknown field `batch_cv`"),
        "{err}"
    );
    // [estimator]: an unknown key or a value that cannot work, named.
    let refused = |table: &str| {
        std::fs::write(dir.path().join("typo.toml"), table).unwrap();
        let (code, _, err) = wattcounts_in(
            dir.path(),
            &["--config-file", "typo.toml", "config", "print"],
            &[],
        );
        assert_eq!(code, Some(2), "{table}");
        err
    };
    let err = refused("[estimator]\nlevle = 0.9\n");
    assert!(
        err.contains("[estimator]") && err.contains("unknown field `levle`"),
        "{err}"
    );
    let err = refused("[estimator]\nlevel = 2\n");
    assert!(
        err.contains("[estimator] level = 2: expected a share between 0 and 1"),
        "{err}"
    );
    let (code, _, err) = wattcounts_in(
        dir.path(),
        &["--config-file", "missing.toml", "config", "print"],
        &[],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains("reading the configuration file missing.toml"),
        "{err}"
    );
}

/// The configuration table of docs/operating.md and `config print` list
/// the same settings.
#[test]
fn the_readme_table_lists_every_setting_config_print_shows() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = wattcounts_in(dir.path(), &["config", "print"], &[]);
    assert_eq!(code, Some(0), "{err}");
    let printed: std::collections::BTreeSet<String> = out
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with("# wattcounts"))
        .map(|l| {
            l.trim_start_matches("# ")
                .split([' ', '='])
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operating.md")).unwrap();
    let section = readme.split("\n## Configuration\n").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    let documented: std::collections::BTreeSet<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `--"))
        .map(|l| l.split('`').next().unwrap().replace('-', "_"))
        .filter(|k| k != "config_file")
        .collect();
    assert_eq!(printed, documented);
}

/// The configuration tools and tests run with is `serve`'s own, setting
/// by setting, but for the overrides it names with their reasons (issue
/// #56): a default is written once, on its flag.
#[test]
fn tool_defaults_are_the_flags_defaults_but_for_the_named_overrides() {
    use clap::Parser;
    let cli = wattcounts::cli::Cli::try_parse_from(["wattcounts", "serve"]).unwrap();
    let wattcounts::cli::Command::Serve(flags) = cli.command else {
        panic!("not serve")
    };
    let mut flags = serde_json::to_value(&*flags).unwrap();
    let mut tools = serde_json::to_value(wattcounts::config::ServeConfig::defaults(
        std::path::Path::new("x"),
    ))
    .unwrap();
    // What `serve` with no flag runs with, from `serve --help`.
    assert_eq!(flags["bind"], "127.0.0.1:8080");
    assert_eq!(flags["submit_limit_per_ip"], 30);
    assert_eq!(tools["bind"], "127.0.0.1:0");
    assert_eq!(tools["submit_limit_per_ip"], 0);
    for (name, why) in wattcounts::config::TOOL_OVERRIDES {
        assert_ne!(flags[name], tools[name], "{name} ({why}) is not overridden");
        flags.as_object_mut().unwrap().remove(*name);
        tools.as_object_mut().unwrap().remove(*name);
    }
    assert_eq!(flags, tools);
}

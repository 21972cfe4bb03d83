//! Hardening (issue #13): what a second writer, an attacker or a crash
//! must not be able to do.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::json;

use crate::common::*;

/// Two writers on one SQLite file (two stores, each with its own pool and
/// in-process lock, as two processes would be): decisions in one while the
/// other takes submissions. Write transactions take the lock up front
/// (BEGIN IMMEDIATE) and wait their turn: no "database is locked", no 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writers_on_one_sqlite_file_take_turns() {
    let a = Arc::new(TestApp::new().await);
    let key = a.register("alice").await;
    let url = format!("sqlite:{}", a.dir.path().join("test.db").display());
    let b = Arc::new(TestApp::with_store(
        Arc::new(
            wattcounts::store::sqlite::SqliteStore::open(&url)
                .await
                .unwrap(),
        ),
        tempfile::tempdir().unwrap(),
        256 << 20,
    ));
    let review = a
        .insert_copies(
            &BundleBuilder::fixture().by("alice", &key).build(),
            &key,
            40,
            wattcounts::domain::Status::NeedsReview,
        )
        .await;
    let mut jobs = tokio::task::JoinSet::new();
    for n in 0..8 {
        let (a, gz) = (
            a.clone(),
            BundleBuilder::fixture().marked(n).by("alice", &key).build(),
        );
        let sig = sign(&key, &gz);
        jobs.spawn(async move { a.submit(&gz, &sig).await });
    }
    for (i, id) in review.iter().enumerate() {
        let b = b.clone();
        let decision = if i % 2 == 0 { "approve" } else { "reject" };
        let path = format!("/api/v1/admin/submissions/{id}/decision");
        jobs.spawn(async move {
            b.admin_post(
                &path,
                json!({"decision": decision, "reason": "two writers"}),
            )
            .await
        });
    }
    let mut ok = 0;
    while let Some(r) = jobs.join_next().await {
        let (status, body) = r.unwrap();
        assert!(
            status == StatusCode::OK || status == StatusCode::CREATED,
            "{status}: {body}"
        );
        ok += 1;
    }
    assert_eq!(ok, 48);
    let c = a.counts().await;
    assert_eq!(c.submissions, 48);
    let counts = a.store.dataset_counts().await.unwrap();
    assert_eq!(counts.submissions, 8 + 20, "8 new, 20 approved");
}

/// Every answer, HTML pages and error pages included, carries a policy
/// that allows no inline script or style, and refuses framing and sniffing.
#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = TestApp::new().await;
    for path in [
        "/",
        "/leaderboard",
        "/no/such/page",
        "/api/v1/leaderboard",
        "/static/style.css",
    ] {
        let (_, h, _) = app
            .raw(
                axum::http::Request::get(path)
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await;
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "same-origin", "{path}");
        // The test service's public URL is https: HSTS too.
        assert_eq!(h["strict-transport-security"], "max-age=31536000", "{path}");
    }
}

/// The sign-in form from another site would plant a session cookie: it is
/// refused, with no cookie set.
#[tokio::test]
async fn sign_in_from_another_site_sets_no_cookie() {
    let app = TestApp::new().await;
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("origin", "null"),
        ("referer", "https://evil.example/x"),
    ] {
        let req = axum::http::Request::post("/admin/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header(name, value)
            .body(axum::body::Body::from(format!("token={ADMIN_TOKEN}")))
            .unwrap();
        let (status, h, body) = app.raw(req).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}: {value}");
        assert!(h.get("set-cookie").is_none());
        assert!(String::from_utf8_lossy(&body)
            .contains("must be sent from a page of https://wattcounts.test"));
    }
    let req = axum::http::Request::post("/admin/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", AUDIENCE)
        .body(axum::body::Body::from(format!("token={ADMIN_TOKEN}")))
        .unwrap();
    let (status, h, _) = app.raw(req).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(h.get("set-cookie").is_some());
}

/// Every route answers a 4xx, never a 500, whatever byte a percent-encoded
/// path holds.
#[tokio::test]
async fn no_path_byte_makes_a_500() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
    let id = r["submission_id"].as_str().unwrap().to_string();
    let templates = [
        "/snapshots/latest/{}".to_string(),
        "/snapshots/{}".to_string(),
        "/snapshots/{}/runs.csv".to_string(),
        "/models/{}".to_string(),
        "/api/v1/models/a{}b".to_string(),
        "/gpus/{}".to_string(),
        "/submissions/{}".to_string(),
        format!("/submissions/{id}/{{}}"),
        "/api/v1/submissions/{}".to_string(),
        "/{}".to_string(),
    ];
    for t in &templates {
        for b in 0..=255u8 {
            let path = t.replace("{}", &format!("%{b:02X}"));
            let (status, _, body) = app
                .raw(
                    axum::http::Request::get(path.as_str())
                        .body(axum::body::Body::empty())
                        .unwrap(),
                )
                .await;
            assert!(
                status.as_u16() < 500,
                "{path}: {status} {}",
                String::from_utf8_lossy(&body)
            );
            if b < 0x20 || b == 0x7f {
                assert_eq!(status, StatusCode::BAD_REQUEST, "{path}");
            }
        }
    }
}

/// Submits `gz`, expecting a 422 with `code`; nothing may be stored.
async fn refused(
    app: &TestApp,
    key: &ssh_key::PrivateKey,
    gz: &[u8],
    code: &str,
) -> serde_json::Value {
    let before = app.stored().await;
    let (status, body) = app.submit(gz, &sign(key, gz)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, code);
    app.assert_nothing_stored_since(&before).await;
    body
}

#[tokio::test]
async fn control_characters_and_unsafe_integers_in_the_manifest_are_refused() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let mut nul = m.clone();
    nul["run"]["name"] = json!("run\u{0}name");
    let mut bell = m.clone();
    bell["software"]["vllm"] = json!("0.14\u{7}");
    let mut big = m.clone();
    big["system"]["memory_gib"] = json!(9_007_199_254_740_993u64);
    let mut huge = m.clone();
    huge["system"]["gpu"]["count"] = json!(1e300);
    for (doc, pointer, says) in [
        (nul, "/run/name", "U+0000"),
        (bell, "/software/vllm", "U+0007"),
        (big, "/system/memory_gib", "2^53"),
        (huge, "/system/gpu/count", "2^53"),
    ] {
        let text = serde_json::to_vec(&doc).unwrap();
        let gz = archive(&text, &fixture().files);
        let body = refused(&app, &key, &gz, "manifest_bad_value").await;
        let d = first_detail(&body);
        assert_eq!(d["pointer"], pointer, "{body}");
        assert_eq!(d["file"], "wattcounts.json");
        assert!(d["message"].as_str().unwrap().contains(says), "{body}");
    }
}

#[tokio::test]
async fn a_control_character_in_a_model_id_is_refused() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture()
        .edit(
            "Qwen2_5-0_5B-Instruct__/llm_batch_optimized_results.csv",
            |t| {
                t.replace(
                    "Qwen/Qwen2.5-0.5B-Instruct",
                    "Qwen/Qwen2.5\u{0}-0.5B-Instruct",
                )
            },
        )
        .by("alice", &key)
        .build();
    let body = refused(&app, &key, &gz, "csv_control_character").await;
    let d = first_detail(&body);
    assert_eq!(d["column"], "model");
    assert_eq!(d["row"], 2);
    assert!(d["message"].as_str().unwrap().contains("U+0000"));
}

/// A power trace of finite but huge values overflows the mean: refused
/// with the file and row, never stored as a figure that cannot be read.
#[tokio::test]
async fn a_trace_whose_figures_overflow_is_refused() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let files = edit_cells(BATCH_QWEN, |i, col, cell| {
        (i == 0 && col == "gpu_0_power_draw_watts").then(|| {
            let n = cell.matches(',').count() + 1;
            format!("[{}]", vec!["1.7e308"; n].join(", "))
        })
    });
    let gz = BundleBuilder::fixture()
        .files(files)
        .by("alice", &key)
        .build();
    let body = refused(&app, &key, &gz, "figure_not_finite").await;
    let d = first_detail(&body);
    assert_eq!(d["row"], 2);
    assert!(d["file"]
        .as_str()
        .unwrap()
        .ends_with("llm_batch_optimized_results.csv"));
}

/// After a crash: staging files and blobs no row references are removed
/// on start (once past the grace period), and nothing a row needs is.
#[tokio::test]
async fn recovery_removes_orphans_and_keeps_what_rows_reference() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
    let blobs = app.dir.path().join("blobs");
    std::fs::create_dir_all(blobs.join("tmp")).unwrap();
    std::fs::write(blobs.join("tmp/.tmpCRASH"), vec![1u8; 1000]).unwrap();
    std::fs::create_dir_all(blobs.join("sha256/ff")).unwrap();
    let orphan = blobs.join(format!("sha256/ff/{}.tar.gz", "f".repeat(64)));
    std::fs::write(&orphan, vec![2u8; 500]).unwrap();
    // Young files are left alone (another instance may be storing them).
    let young = app
        .service
        .recover(std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(young, (0, 0));
    let swept = app
        .service
        .recover(std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(swept, (2, 1500));
    assert!(!orphan.exists());
    // The stored bundle is still there and downloads as it was sent.
    let id = r["submission_id"].as_str().unwrap();
    let (status, _, bytes) = app
        .raw(
            axum::http::Request::get(format!("/submissions/{id}/bundle.tar.gz"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes.to_vec(), gz);
}

const BATCH_QWEN: &str = "Qwen2_5-0_5B-Instruct__/llm_batch_optimized_results.csv";

/// The fixture with cells of one results file rewritten: `edit(row index,
/// column, cell)` returns the new text, or None to keep it.
fn edit_cells(
    suffix: &str,
    edit: impl Fn(usize, &str, &str) -> Option<String>,
) -> Vec<(String, Vec<u8>)> {
    BundleBuilder::fixture()
        .edit(suffix, |t| {
            let mut r = csv::Reader::from_reader(t.as_bytes());
            let header = r.headers().unwrap().clone();
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(&header).unwrap();
            for (i, rec) in r.records().enumerate() {
                let rec: Vec<String> = rec
                    .unwrap()
                    .iter()
                    .zip(header.iter())
                    .map(|(cell, col)| edit(i, col, cell).unwrap_or_else(|| cell.to_string()))
                    .collect();
                w.write_record(&rec).unwrap();
            }
            String::from_utf8(w.into_inner().unwrap()).unwrap()
        })
        .bundle_files()
}

fn check<'a>(receipt: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    receipt["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

async fn stored(
    app: &TestApp,
    key: &ssh_key::PrivateKey,
    files: Vec<(String, Vec<u8>)>,
) -> serde_json::Value {
    let gz = BundleBuilder::fixture()
        .files(files)
        .by("alice", key)
        .build();
    let (status, body) = app.submit(&gz, &sign(key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// A rule whose data is missing fails or warns and says what is missing;
/// it never passes because there was nothing to look at.
#[tokio::test]
async fn checks_never_pass_by_absence() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;

    // An empty temperature list.
    let r = stored(
        &app,
        &key,
        edit_cells(BATCH_QWEN, |i, col, _| {
            (i == 1 && col == "gpu_0_temp").then(|| "[]".to_string())
        }),
    )
    .await;
    for id in ["physics.temperature", "method.start_temperature"] {
        let c = check(&r, id);
        assert_ne!(c["outcome"], "pass", "{c:#}");
        assert_ne!(c["outcome"], "skip", "{c:#}");
        assert!(
            c["message"]
                .as_str()
                .unwrap()
                .contains("no GPU temperature samples"),
            "{c:#}"
        );
        assert_eq!(c["location"]["row"], 3, "{c:#}");
    }
    assert_eq!(
        r["status"], "rejected",
        "the temperature band is a hard rule"
    );

    // A configuration none of whose iterations generated tokens.
    let r = stored(
        &app,
        &key,
        edit_cells(BATCH_QWEN, |_, col, cell| match col {
            "generation_tokens_total" => Some("0".into()),
            "request_generation_tokens" => {
                let n = cell.matches(',').count() + 1;
                Some(format!("[{}]", vec!["0"; n].join(", ")))
            }
            _ => None,
        }),
    )
    .await;
    let c = check(&r, "method.iterations_configured");
    assert_eq!(c["outcome"], "warn", "{c:#}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("none of its 3 iterations generated tokens"),
        "{c:#}"
    );
    assert_ne!(r["status"], "accepted");

    // No power-limit lines in system_info.txt, and a limit that differs from it.
    let without = BundleBuilder::fixture()
        .edit("system_info.txt", |t| {
            t.lines()
                .filter(|l| !l.contains("Power Limit"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .bundle_files();
    // `pack` reads the limits from system_info.txt (and refuses without
    // them): a hand-made manifest, still saying 72 W, brings these bundles.
    let r = with_manifest_of_fixture(&app, &key, without).await;
    let c = check(&r, "identity.power_limit");
    assert_eq!(c["outcome"], "warn", "{c:#}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("has no 'Current Power Limit' line"),
        "{c:#}"
    );
    let lowered = BundleBuilder::fixture()
        .edit("system_info.txt", |t| {
            t.replacen(
                "Current Power Limit               : 72.00 W",
                "Current Power Limit               : 60.00 W",
                1,
            )
        })
        .bundle_files();
    let r = with_manifest_of_fixture(&app, &key, lowered).await;
    let c = check(&r, "identity.power_limit");
    assert_eq!(c["outcome"], "warn", "{c:#}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("says 72 W but system_info.txt shows a current power limit of 60 W"),
        "{c:#}"
    );
}

/// `files` under the fixture's own manifest (its claims unchanged), with
/// the edited files' sizes and digests brought up to date.
async fn with_manifest_of_fixture(
    app: &TestApp,
    key: &ssh_key::PrivateKey,
    files: Vec<(String, Vec<u8>)>,
) -> serde_json::Value {
    let mut m = BundleBuilder::fixture().by("alice", key).manifest_json();
    for f in m["files"].as_array_mut().unwrap() {
        let data = &files.iter().find(|(p, _)| *p == f["path"]).unwrap().1;
        f["bytes"] = json!(data.len());
        f["sha256"] = json!(hex::encode(<sha2::Sha256 as sha2::Digest>::digest(data)));
    }
    let gz = archive(&serde_json::to_vec(&m).unwrap(), &files);
    let (status, r) = app.submit(&gz, &sign(key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    r
}

/// A multipart part whose headers never end (issue #53): a 1 MiB header
/// line in the bundle part, and one in the signature part after a whole
/// bundle, are refused 431 before the parser buffers them, and nothing
/// is stored; the same upload with ordinary headers is stored.
#[tokio::test]
async fn a_part_header_over_8_kib_is_refused_with_nothing_stored() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let boundary = "b0undaryOfTheTest";
    let body = |long_in: &str| {
        let mut body = Vec::new();
        for (name, data) in [("bundle", &gz[..]), ("signature", &sig[..])] {
            let extra = if name == long_in {
                format!("X-Padding: {}\r\n", "p".repeat(1 << 20))
            } else {
                String::new()
            };
            body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n{extra}Content-Type: application/octet-stream\r\n\r\n").as_bytes());
            body.extend_from_slice(data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        axum::http::Request::post("/api/v1/submissions")
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(axum::body::Body::from(body))
            .unwrap()
    };
    let before = app.stored().await;
    for part in ["bundle", "signature"] {
        let (status, _, bytes) = app.raw(body(part)).await;
        let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            status,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "{part}: {answer}"
        );
        assert_error(&answer, "part_header_too_large");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("8192 bytes"),
            "{answer}"
        );
    }
    app.assert_nothing_stored_since(&before).await;
    let (status, _, bytes) = app.raw(body("neither")).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
}

/// A snapshot file name that decodes to a path (issue #53): `..%2f` was
/// redirected from `latest` into a Location header. Such names answer
/// 400, for `latest` and for a snapshot id alike, and no answer carries a
/// Location.
#[tokio::test]
async fn a_snapshot_file_name_that_is_a_path_is_refused() {
    let app = TestApp::new().await;
    for path in [
        "/snapshots/latest/..%2f..%2fadmin",
        "/snapshots/latest/..%2Fmanifest.json",
        "/snapshots/latest/a%5Cb",
        "/snapshots/0123/..%2fmanifest.json",
    ] {
        let req = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let (status, headers, body) = app.raw(req).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(headers.get("location").is_none(), "{path}: {headers:?}");
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_error(&answer, "bad_file_name");
    }
}

/// An unknown path or a method a path does not take (issue #55): a browser
/// (Accept: text/html) gets an HTML page with the status; the API and tools
/// get the JSON envelope, `/api/…` always.
#[tokio::test]
async fn unknown_pages_answer_a_browser_in_html_and_the_api_in_json() {
    let app = TestApp::new().await;
    let ask = |method: &str, path: &str, accept: Option<&str>| {
        let mut req = axum::http::Request::builder().method(method).uri(path);
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        req.body(axum::body::Body::empty()).unwrap()
    };
    let html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    for (method, path, accept, status, is_html, code) in [
        ("GET", "/no-such-page", Some(html), 404, true, ""),
        ("GET", "/no-such-page", None, 404, false, "not_found"),
        (
            "GET",
            "/api/v1/no-such-endpoint",
            Some(html),
            404,
            false,
            "not_found",
        ),
        ("POST", "/leaderboard", Some(html), 405, true, ""),
        (
            "DELETE",
            "/api/v1/leaderboard",
            None,
            405,
            false,
            "method_not_allowed",
        ),
    ] {
        let (got, headers, body) = app.raw(ask(method, path, accept)).await;
        assert_eq!(got.as_u16(), status, "{method} {path}");
        let kind = headers["content-type"].to_str().unwrap();
        let text = String::from_utf8_lossy(&body);
        if is_html {
            assert!(kind.starts_with("text/html"), "{method} {path}: {kind}");
            assert!(text.contains("<main id=\"content\""), "{text}");
            assert!(text.contains("class=\"skip\""), "{text}");
        } else {
            assert!(
                kind.starts_with("application/json"),
                "{method} {path}: {kind}"
            );
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_error(&v, code);
        }
    }
}

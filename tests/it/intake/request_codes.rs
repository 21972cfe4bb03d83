//! Refusals of the request itself that no other test met (issue #40, item
//! 1): each sent as a client would send it, with the status, the code, what
//! the message names, and nothing stored.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use wattcounts::signing;

use crate::common::*;

/// Sends `req` to a fresh app with alice registered; expects `status` and
/// `code`, and that nothing was stored. Returns the body.
async fn refused(app: &TestApp, req: Request<Body>, status: StatusCode, code: &str) -> Value {
    let before = app.stored().await;
    let (got, body) = app.send(req).await;
    assert_eq!(got, status, "{body:#}");
    assert_error(&body, code);
    app.assert_nothing_stored_since(&before).await;
    body
}

fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap()
}

#[tokio::test]
async fn an_upload_that_is_not_multipart() {
    let app = TestApp::new().await;
    let req = Request::post("/api/v1/submissions")
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "bad_multipart").await;
    assert!(message(&body).contains("multipart/form-data"), "{body}");
}

#[tokio::test]
async fn a_part_sent_twice() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let req = multipart(&[
        ("bundle", &gz),
        ("bundle", &gz),
        ("signature", &sign(&key, &gz)),
    ]);
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "duplicate_part").await;
    assert!(message(&body).contains("'bundle'"), "{body}");
}

#[tokio::test]
async fn a_part_the_upload_does_not_take() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let req = multipart(&[
        ("bundle", &gz),
        ("signature", &sign(&key, &gz)),
        ("comment", b"hello"),
    ]);
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "unknown_part").await;
    assert!(message(&body).contains("'comment'"), "{body}");
}

#[tokio::test]
async fn a_signature_part_over_64_kib() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    // One byte over the 64 KiB a .sig file never approaches.
    let huge = vec![b'A'; 64 * 1024 + 1];
    let req = multipart(&[("bundle", &gz), ("signature", &huge)]);
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "signature_too_large").await;
    assert!(message(&body).contains("65536 bytes"), "{body}");
}

/// A registration of `handle` with a fresh key and `display_name`.
fn registration(handle: &str, display_name: &str) -> Request<Body> {
    let key = new_key();
    let public = key.public_key();
    let fp = signing::fingerprint(public);
    let proof = signing::sign(
        &key,
        signing::REGISTER_NAMESPACE,
        signing::registration_message(handle, AUDIENCE, &fp).as_bytes(),
    )
    .unwrap();
    Request::post("/api/v1/submitters")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({
                "handle": handle,
                "display_name": display_name,
                "public_key": public.to_openssh().unwrap(),
                "proof": proof,
            })
            .to_string(),
        ))
        .unwrap()
}

/// A display name of 101 characters, or with a control character, is
/// refused before anything is registered; 100 characters register.
#[tokio::test]
async fn a_display_name_over_100_characters_or_with_a_control_character() {
    let app = TestApp::new().await;
    for name in ["é".repeat(101), "tab\there".to_string()] {
        let body = refused(
            &app,
            registration("bob", &name),
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_display_name",
        )
        .await;
        assert!(message(&body).contains("at most 100 characters"), "{body}");
    }
    let (status, body) = app.send(registration("bob", &"é".repeat(100))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A results CSV with its header and no row.
#[tokio::test]
async fn a_results_csv_with_no_rows() {
    refused_csv(|t| format!("{}\n", t.lines().next().unwrap()), "csv_empty").await;
}

/// The "nothing stored" check itself sees a write in any table: a
/// registration adds a submitter and a key, and nothing else.
#[tokio::test]
async fn the_nothing_stored_check_sees_a_registration() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    assert!(before.tables.len() >= 20, "{:?}", before.tables.keys());
    app.register("alice").await;
    let after = app.stored().await;
    let changed: Vec<&str> = after
        .tables
        .iter()
        .filter(|(t, v)| before.tables.get(*t) != Some(v))
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(changed, ["keys", "submitters"]);
    let refused = std::panic::AssertUnwindSafe(app.assert_nothing_stored_since(&before));
    let caught = futures_util::FutureExt::catch_unwind(refused).await;
    assert!(
        caught.is_err(),
        "a registration must not read as nothing stored"
    );
}

/// Stored bytes sent again are answered with their receipt only when the
/// signature is one the key that stored them made over them: an empty,
/// garbage or other registered key's signature is refused as on a first
/// upload, and nothing is stored either way.
#[tokio::test]
async fn a_replay_is_answered_only_with_its_signers_signature() {
    let app = TestApp::new().await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    let gz = BundleBuilder::fixture().by("alice", &alice).build();
    let (status, body) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let before = app.stored().await;
    let (status, body) = app.submit(&gz, b"").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "bad_signature_format");
    let (status, body) = app.submit(&gz, b"not a signature").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "bad_signature_format");
    // Bob's valid signature over alice's stored bytes.
    let (status, body) = app.submit(&gz, &sign(&bob, &gz)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "bad_signature");
    let detail = body["error"]["details"].to_string();
    assert!(
        detail.contains(&signing::fingerprint(bob.public_key()))
            && detail.contains(&signing::fingerprint(alice.public_key())),
        "{body}"
    );
    // Alice's key over other bytes.
    let (status, body) = app.submit(&gz, &sign(&alice, b"other bytes")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "bad_signature");
    app.assert_nothing_stored_since(&before).await;

    // Her own signature again (a fresh one: Ed25519 signs the same way).
    let (status, body) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Alice's bundle with `edit` applied to its batch results CSV, submitted:
/// refused with `code` (422), nothing stored. Returns the first detail.
async fn refused_csv(edit: impl Fn(&str) -> String + 'static, code: &str) -> Value {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture()
        .edit("llm_batch_optimized_results.csv", edit)
        .by("alice", &key)
        .build();
    let req = multipart(&[("bundle", &gz), ("signature", &sign(&key, &gz))]);
    let body = refused(&app, req, StatusCode::UNPROCESSABLE_ENTITY, code).await;
    let d = first_detail(&body).clone();
    assert!(
        d["file"]
            .as_str()
            .unwrap()
            .ends_with("llm_batch_optimized_results.csv"),
        "{body}"
    );
    d
}

/// The first data row cut after its third cell: the detail names the row
/// and a column the row no longer reaches.
#[tokio::test]
async fn a_results_row_with_cells_missing() {
    let d = refused_csv(
        |t| {
            let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
            let cut: Vec<&str> = lines[1].splitn(4, ',').take(3).collect();
            lines[1] = cut.join(",");
            lines.join("\n") + "\n"
        },
        "csv_bad_row",
    )
    .await;
    assert_eq!(d["row"], 2, "{d}");
    // Any column after the third: the row has three cells.
    let columns = "measurement_duration,measurement_timestamp,measurement_datetime";
    let named = d["column"].as_str().unwrap();
    assert!(
        !named.is_empty() && !columns.split(',').any(|c| c == named),
        "{d}"
    );
    assert!(d["message"].as_str().unwrap().contains("3 cells"), "{d}");
}

/// A results CSV whose last row names another model than the rest.
#[tokio::test]
async fn a_results_csv_naming_two_models() {
    let d = refused_csv(
        |t| {
            let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
            let last = lines.len() - 1;
            assert!(lines[last].contains(QWEN), "the fixture's rows name {QWEN}");
            lines[last] = lines[last].replace(QWEN, "Qwen/Qwen2.5-1.5B-Instruct");
            lines.join("\n") + "\n"
        },
        "csv_mixed_models",
    )
    .await;
    assert!(d.to_string().contains("Qwen2.5-1.5B-Instruct"), "{d}");
}

/// A bundle whose folders hold no results CSV at all.
#[tokio::test]
async fn a_bundle_without_results() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let builder = BundleBuilder::fixture().by("alice", &key);
    let kept: Vec<(String, Vec<u8>)> = builder
        .bundle_files()
        .into_iter()
        .filter(|(p, _)| !p.ends_with("_results.csv") && !p.ends_with("_details.csv"))
        .collect();
    assert!(!kept.is_empty(), "the fixture holds more than its CSVs");
    let gz = builder.files(kept).build();
    let req = multipart(&[("bundle", &gz), ("signature", &sign(&key, &gz))]);
    let body = refused(&app, req, StatusCode::UNPROCESSABLE_ENTITY, "no_results").await;
    assert!(
        message(&body).contains("llm_batch_optimized_results.csv"),
        "{body}"
    );
}

/// A registration whose public key is not an OpenSSH key line.
#[tokio::test]
async fn a_registration_with_a_key_that_does_not_parse() {
    let app = TestApp::new().await;
    let req = Request::post("/api/v1/submitters")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({
                "handle": "bob",
                "public_key": "ssh-ed25519 not-base64!",
                "proof": "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----",
            })
            .to_string(),
        ))
        .unwrap();
    let body = refused(
        &app,
        req,
        StatusCode::UNPROCESSABLE_ENTITY,
        "bad_public_key",
    )
    .await;
    assert!(
        message(&body).contains("not an OpenSSH public key line"),
        "{body}"
    );
}

/// A bundle signed with alice's key whose manifest names bob as its
/// submitter: the key's owner decides who submitted, and a manifest that
/// says otherwise is refused (403), whoever bob is.
#[tokio::test]
async fn a_manifest_naming_another_handle_than_the_keys_owner() {
    let app = TestApp::new().await;
    let alice = app.register("alice").await;
    app.register("bob").await;
    let gz = BundleBuilder::fixture().by("bob", &alice).build();
    let req = multipart(&[("bundle", &gz), ("signature", &sign(&alice, &gz))]);
    let body = refused(&app, req, StatusCode::FORBIDDEN, "handle_mismatch").await;
    assert!(
        message(&body).contains("names submitter 'bob' but the signing key belongs to 'alice'"),
        "{body}"
    );
    let d = first_detail(&body);
    assert_eq!(d["file"], "wattcounts.json", "{body}");
    assert_eq!(d["pointer"], "/submitter/handle", "{body}");
}

/// A sampling parameter that is not a number (`max_tokens=abc`): the
/// protocol cannot be read, and the detail names the row and the column.
#[tokio::test]
async fn a_sampling_parameter_that_is_not_a_number() {
    let d = refused_csv(
        |t| t.replacen("max_tokens=256", "max_tokens=abc", 1),
        "protocol_unreadable",
    )
    .await;
    assert_eq!(d["column"], "sampling_params", "{d}");
    assert!(d["row"].as_u64().is_some(), "{d}");
}

/// A results cell whose bytes are not UTF-8 (0xFF inside the first data
/// row's model id): refused by file, row and column.
#[tokio::test]
async fn a_results_cell_that_is_not_utf8() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let mut files = BundleBuilder::fixture().bundle_files();
    let (_, bytes) = files
        .iter_mut()
        .find(|(p, _)| p.ends_with("llm_batch_optimized_results.csv"))
        .unwrap();
    // Inside the first data row's model id (a text cell).
    let header_end = bytes.iter().position(|b| *b == b'\n').unwrap();
    let model = b"Qwen/Qwen2.5";
    let at = header_end
        + bytes[header_end..]
            .windows(model.len())
            .position(|w| w == model)
            .unwrap();
    bytes.insert(at + 4, 0xFF);
    let gz = BundleBuilder::fixture()
        .files(files)
        .by("alice", &key)
        .build();
    let req = multipart(&[("bundle", &gz), ("signature", &sign(&key, &gz))]);
    let body = refused(&app, req, StatusCode::UNPROCESSABLE_ENTITY, "csv_bad_text").await;
    let d = first_detail(&body);
    assert!(
        d["file"]
            .as_str()
            .unwrap()
            .ends_with("llm_batch_optimized_results.csv"),
        "{body}"
    );
    assert_eq!(d["row"], 2, "{body}");
    assert_eq!(d["column"], "model", "{body}");
}

/// A path holding a control byte names no page: 400 `bad_path`, before
/// any handler runs.
#[tokio::test]
async fn a_path_with_a_control_byte() {
    let app = TestApp::new().await;
    let req = Request::get("/models/qwen%00evil")
        .body(Body::empty())
        .unwrap();
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "bad_path").await;
    assert!(message(&body).contains("no page has such a name"), "{body}");
}

/// The codes the service can answer with, read from its sources (test
/// modules and the peer importer's CLI errors left out): the literal each
/// way of making a refusal is given.
fn refusal_codes_in_sources() -> std::collections::BTreeMap<String, String> {
    const MAKERS: &[&str] = &[
        "Rejection::new(",
        "Rejection::retry_later(",
        "Rejection::invalid(",
        "Rejection::malformed(",
        "Rejection::forbidden(",
        "ApiError::new(",
        "ApiError::timeout(",
        "ApiError::bad_request(",
        "Self::new(",
        ".err(",
        "code: ",
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = walk_files(&root.join("crates"));
    files.extend(walk_files(&root.join("src")));
    let mut codes = std::collections::BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if !rel.ends_with(".rs") || rel.contains("/peer/") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap();
        for maker in MAKERS {
            for (at, _) in text.match_indices(maker) {
                let mut rest = text[at + maker.len()..].trim_start();
                // A kind or status first: `RejectKind::Invalid, "code"`.
                if let Some(kind) = rest
                    .strip_prefix("RejectKind::")
                    .or_else(|| rest.strip_prefix("StatusCode::"))
                {
                    let Some(comma) = kind.find(',') else {
                        continue;
                    };
                    rest = kind[comma + 1..].trim_start();
                }
                let Some(lit) = rest.strip_prefix('"') else {
                    continue;
                };
                let Some(end) = lit.find('"') else { continue };
                let code = &lit[..end];
                if !code.is_empty()
                    && code
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                {
                    codes.entry(code.to_string()).or_insert_with(|| rel.clone());
                }
            }
        }
    }
    codes
}

/// docs/testing.md lists every refusal code with the test that meets it:
/// a new code without a row fails here, as does a row whose code is gone
/// or whose named test does not exist or never names the code.
#[test]
fn every_refusal_code_has_a_row_here() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/testing.md")).unwrap();
    let table = doc
        .split("<!-- refusal-codes -->")
        .nth(1)
        .and_then(|t| t.split("<!-- /refusal-codes -->").next())
        .expect("docs/testing.md has the refusal-codes table");
    let mut rows = std::collections::BTreeMap::new();
    let mut raised_in = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let code = cells[0].trim_start_matches("| ").trim_matches('`');
        let test = cells
            .last()
            .unwrap()
            .trim_end_matches(" |")
            .trim_end_matches('|');
        assert!(
            rows.insert(code.to_string(), test.to_string()).is_none(),
            "{code} has two rows"
        );
        raised_in.push((code.to_string(), cells[1].to_string()));
    }
    let codes = refusal_codes_in_sources();
    assert!(codes.len() > 80, "the source scan found only {codes:?}");
    let mut problems = Vec::new();
    // "raised in" names `crate/path.rs` under crates/<crate>/src: each file
    // named still holds the code (outside its tests), so a rule that moves
    // takes its row along.
    for (code, files) in &raised_in {
        for rel in files.split(", ") {
            let (krate, path) = rel.split_once('/').unwrap_or(("", rel));
            let src = std::fs::read_to_string(root.join(format!("crates/{krate}/src/{path}")))
                .unwrap_or_default();
            let src = src.split("#[cfg(test)]").next().unwrap();
            if !src.contains(&format!("\"{code}\"")) {
                problems.push(format!("{code}: raised in {rel}, which does not name it"));
            }
        }
    }
    for (code, file) in &codes {
        if !rows.contains_key(code) {
            problems.push(format!("{code} (raised in {file}) has no row"));
        }
    }
    for (code, test) in &rows {
        if !codes.contains_key(code) {
            problems.push(format!("{code} has a row but no source raises it"));
        }
        if test.starts_with("not reachable") {
            continue;
        }
        let named: Vec<&str> = test
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|t| t.contains("::"))
            .collect();
        if named.is_empty() {
            problems.push(format!("{code}: the row names no test"));
        }
        for t in named {
            // `folder::file::test`, as the harness names it: the file is
            // tests/it/folder/file.rs, or a folder's mod.rs.
            let (module, name) = t.rsplit_once("::").unwrap();
            let module = module.replace("::", "/");
            let file = root.join(format!("tests/it/{module}.rs"));
            let path = if file.exists() {
                file
            } else {
                root.join(format!("tests/it/{module}/mod.rs"))
            };
            let Ok(src) = std::fs::read_to_string(&path) else {
                problems.push(format!("{code}: {t}: no tests/it/{module}.rs"));
                continue;
            };
            let Some(at) = src.find(&format!("fn {name}(")) else {
                problems.push(format!("{code}: {t}: no such test"));
                continue;
            };
            // The code is named in the test, or in the function it calls
            // (the row names the case; a shared helper may check it).
            if !src.contains(code.as_str()) {
                problems.push(format!("{code}: {t} (from byte {at}) never names it"));
            }
        }
    }
    assert!(problems.is_empty(), "docs/testing.md: {problems:#?}");
}

//! Every bad input named by the intake issue: the status, the error code,
//! the file / pointer / row / column named, and nothing stored.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::json;
use serde_json::Value;
use ssh_key::PrivateKey;
use wattcounts::signing;

async fn setup() -> (TestApp, PrivateKey) {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    (app, key)
}

/// Submits `bundle` signed by `key`, expects a refusal, checks nothing was stored.
async fn refuse(
    app: &TestApp,
    key: &PrivateKey,
    bundle: &[u8],
    status: StatusCode,
    code: &str,
) -> Value {
    let before = app.stored().await;
    let (got, body) = app.submit(bundle, &sign(key, bundle)).await;
    assert_eq!(got, status, "{body:#}");
    assert_error(&body, code);
    app.assert_nothing_stored_since(&before).await;
    body
}

async fn refuse_invalid(app: &TestApp, key: &PrivateKey, bundle: &[u8], code: &str) -> Value {
    refuse(app, key, bundle, StatusCode::UNPROCESSABLE_ENTITY, code).await
}

/// A gzip tar with one raw entry.
fn one_entry(name: &[u8], kind: tar::EntryType, data: &[u8], link: Option<&[u8]>) -> Vec<u8> {
    raw_targz(&[RawEntry {
        name,
        kind,
        data,
        link,
    }])
}

fn manifest_bundle(m: &Value) -> Vec<u8> {
    archive(serde_json::to_vec(m).unwrap().as_slice(), &fixture().files)
}

#[tokio::test]
async fn not_gzip() {
    let (app, key) = setup().await;
    refuse(
        &app,
        &key,
        b"PK\x03\x04 this is a zip",
        StatusCode::BAD_REQUEST,
        "not_gzip",
    )
    .await;
}

#[tokio::test]
async fn tar_entry_with_parent_traversal() {
    let (app, key) = setup().await;
    let gz = one_entry(
        b"../../etc/cron.d/x",
        tar::EntryType::Regular,
        b"boom",
        None,
    );
    let body = refuse_invalid(&app, &key, &gz, "parent_traversal").await;
    assert_eq!(first_detail(&body)["file"], "../../etc/cron.d/x");
}

#[tokio::test]
async fn tar_entry_with_absolute_path() {
    let (app, key) = setup().await;
    let gz = one_entry(b"/etc/passwd", tar::EntryType::Regular, b"root", None);
    let body = refuse_invalid(&app, &key, &gz, "absolute_path").await;
    assert_eq!(first_detail(&body)["file"], "/etc/passwd");
}

#[tokio::test]
async fn tar_symlink() {
    let (app, key) = setup().await;
    let gz = one_entry(
        b"system_info.txt",
        tar::EntryType::Symlink,
        b"",
        Some(b"/etc/shadow"),
    );
    let body = refuse_invalid(&app, &key, &gz, "link_entry").await;
    assert_eq!(first_detail(&body)["file"], "system_info.txt");
}

#[tokio::test]
async fn tar_duplicate_entry() {
    let (app, key) = setup().await;
    let gz = raw_targz(&[
        RawEntry {
            name: b"system_info.txt",
            kind: tar::EntryType::Regular,
            data: b"a",
            link: None,
        },
        RawEntry {
            name: b"./system_info.txt",
            kind: tar::EntryType::Regular,
            data: b"b",
            link: None,
        },
    ]);
    let body = refuse_invalid(&app, &key, &gz, "duplicate_entry").await;
    assert_eq!(first_detail(&body)["file"], "system_info.txt");
}

#[tokio::test]
async fn non_utf8_entry_name() {
    let (app, key) = setup().await;
    let gz = one_entry(b"caf\xe9.csv", tar::EntryType::Regular, b"a", None);
    refuse_invalid(&app, &key, &gz, "non_utf8_name").await;
}

#[tokio::test]
async fn empty_bundle() {
    let (app, key) = setup().await;
    let gz = raw_targz(&[]);
    refuse_invalid(&app, &key, &gz, "empty_bundle").await;
}

#[tokio::test]
async fn file_missing_from_manifest() {
    let (app, key) = setup().await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let mut files = fixture().files.clone();
    files.push(("notes/extra.txt".into(), b"not listed".to_vec()));
    let gz = archive(serde_json::to_vec(&m).unwrap().as_slice(), &files);
    let body = refuse_invalid(&app, &key, &gz, "file_not_in_manifest").await;
    assert_eq!(first_detail(&body)["file"], "notes/extra.txt");
}

#[tokio::test]
async fn file_listed_but_absent() {
    let (app, key) = setup().await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let files: Vec<_> = fixture()
        .files
        .iter()
        .filter(|(p, _)| p != "system_info.txt")
        .cloned()
        .collect();
    let gz = archive(serde_json::to_vec(&m).unwrap().as_slice(), &files);
    let body = refuse_invalid(&app, &key, &gz, "file_missing").await;
    assert_eq!(first_detail(&body)["file"], "system_info.txt");
    assert!(first_detail(&body)["pointer"]
        .as_str()
        .unwrap()
        .starts_with("/files/"));
}

#[tokio::test]
async fn digest_mismatch() {
    let (app, key) = setup().await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    // Same size, one byte changed after the manifest was made.
    let files = BundleBuilder::fixture()
        .edit("system_info.txt", |t| t.replacen("AMD", "AMX", 1))
        .bundle_files();
    let gz = archive(serde_json::to_vec(&m).unwrap().as_slice(), &files);
    let body = refuse_invalid(&app, &key, &gz, "digest_mismatch").await;
    let d = first_detail(&body);
    assert_eq!(d["file"], "system_info.txt");
    assert!(d["pointer"].as_str().unwrap().ends_with("/sha256"));
    assert!(d["message"].as_str().unwrap().contains("expected sha256"));
}

#[tokio::test]
async fn size_mismatch() {
    let (app, key) = setup().await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let files = BundleBuilder::fixture()
        .edit("system_info.txt", |t| format!("{t}\nextra line"))
        .bundle_files();
    let gz = archive(serde_json::to_vec(&m).unwrap().as_slice(), &files);
    let body = refuse_invalid(&app, &key, &gz, "size_mismatch").await;
    assert!(first_detail(&body)["pointer"]
        .as_str()
        .unwrap()
        .ends_with("/bytes"));
}

#[tokio::test]
async fn manifest_missing() {
    let (app, key) = setup().await;
    let gz = one_entry(b"system_info.txt", tar::EntryType::Regular, b"x", None);
    refuse_invalid(&app, &key, &gz, "manifest_missing").await;
}

#[tokio::test]
async fn manifest_not_json() {
    let (app, key) = setup().await;
    let gz = archive(
        b"schema_version: 1\nthis is yaml, not json\n",
        &fixture().files,
    );
    let body = refuse_invalid(&app, &key, &gz, "manifest_not_json").await;
    assert_eq!(first_detail(&body)["file"], "wattcounts.json");
}

#[tokio::test]
async fn manifest_duplicate_keys() {
    let (app, key) = setup().await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let text = serde_json::to_string(&m).unwrap();
    // A second "name" inside system.gpu: readers would disagree on the GPU.
    let text = text.replacen(
        "\"name\":\"NVIDIA L4\"",
        "\"name\":\"NVIDIA L4\",\"name\":\"NVIDIA H100 PCIe\"",
        1,
    );
    let gz = archive(text.as_bytes(), &fixture().files);
    let body = refuse_invalid(&app, &key, &gz, "manifest_duplicate_key").await;
    assert_eq!(first_detail(&body)["pointer"], "/system/gpu");
    assert!(first_detail(&body)["message"]
        .as_str()
        .unwrap()
        .contains("\"name\""));
}

#[tokio::test]
async fn manifest_nan() {
    let (app, key) = setup().await;
    let m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let text = serde_json::to_string(&m).unwrap();
    let text = text.replacen("\"power_limit_w\":72.0", "\"power_limit_w\":NaN", 1);
    assert!(text.contains("NaN"));
    let gz = archive(text.as_bytes(), &fixture().files);
    let body = refuse_invalid(&app, &key, &gz, "manifest_not_json").await;
    assert!(first_detail(&body)["message"]
        .as_str()
        .unwrap()
        .contains("NaN and Infinity"));
}

#[tokio::test]
async fn manifest_wrong_types() {
    let (app, key) = setup().await;
    let mut m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    m["system"]["gpu"]["count"] = Value::String("one".into());
    m["harness"]["config"]["ITERATIONS"] = Value::from(2.5);
    let body = refuse(
        &app,
        &key,
        &manifest_bundle(&m),
        StatusCode::UNPROCESSABLE_ENTITY,
        "manifest_schema",
    )
    .await;
    let pointers: Vec<&str> = body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/system/gpu/count"), "{pointers:?}");
    assert!(
        pointers.contains(&"/harness/config/ITERATIONS"),
        "{pointers:?}"
    );
}

#[tokio::test]
async fn manifest_unknown_schema_version() {
    let (app, key) = setup().await;
    let mut m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    m["schema_version"] = Value::from(2);
    let body = refuse(
        &app,
        &key,
        &manifest_bundle(&m),
        StatusCode::UNPROCESSABLE_ENTITY,
        "unsupported_schema_version",
    )
    .await;
    assert_eq!(first_detail(&body)["pointer"], "/schema_version");
}

#[tokio::test]
async fn audience_of_another_service() {
    let (app, key) = setup().await;
    let mut m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    m["audience"] = Value::String("https://other.example".into());
    let body = refuse(
        &app,
        &key,
        &manifest_bundle(&m),
        StatusCode::FORBIDDEN,
        "audience_mismatch",
    )
    .await;
    assert_eq!(first_detail(&body)["pointer"], "/audience");
}

#[tokio::test]
async fn unregistered_key() {
    let (app, _) = setup().await;
    let stranger = new_key();
    let gz = BundleBuilder::fixture().by("alice", &stranger).build();
    let body = refuse(&app, &stranger, &gz, StatusCode::FORBIDDEN, "unknown_key").await;
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&signing::fingerprint(stranger.public_key())));
}

#[tokio::test]
async fn signature_over_other_bytes() {
    let (app, key) = setup().await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, &sign(&key, b"some other file")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "bad_signature");
    assert_eq!(first_detail(&body)["file"], "signature");
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn wrong_namespace() {
    let (app, key) = setup().await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = signing::sign(&key, "file", &gz).unwrap();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, sig.as_bytes()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "wrong_namespace");
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn garbage_signature() {
    let (app, key) = setup().await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let before = app.stored().await;
    let (status, body) = app.submit(&gz, b"not a signature").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_error(&body, "bad_signature_format");
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn revoked_key_but_earlier_bundles_stay() {
    let (app, key) = setup().await;
    let early = BundleBuilder::fixture().by("alice", &key).build();
    let (status, receipt) = app.submit(&early, &sign(&key, &early)).await;
    assert_eq!(status, StatusCode::CREATED);
    let fp = signing::fingerprint(key.public_key());
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/keys/revoke",
            json!({"fingerprint": fp, "reason": "laptop stolen"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["rejected_submissions"], json!([]));
    let late = BundleBuilder::fixture().by("alice", &key).build();
    let (status, body) = app.submit(&late, &sign(&key, &late)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "key_revoked");
    assert_eq!(app.counts().await.submissions, 1);
    let id = receipt["submission_id"].as_str().unwrap();
    let (status, again) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["status"], "accepted");
}

#[tokio::test]
async fn manifest_names_another_key() {
    let (app, key) = setup().await;
    let other = app.register("bob").await;
    // Packed for bob's key but signed by alice.
    let gz = BundleBuilder::fixture().by("bob", &other).build();
    refuse(&app, &key, &gz, StatusCode::FORBIDDEN, "key_mismatch").await;
}

async fn refuse_csv(suffix: &str, edit: impl Fn(&str) -> String, code: &str) -> Value {
    let (app, key) = setup().await;
    let gz = BundleBuilder::fixture()
        .edit(suffix, edit)
        .by("alice", &key)
        .build();
    refuse(&app, &key, &gz, StatusCode::UNPROCESSABLE_ENTITY, code).await
}

#[tokio::test]
async fn csv_missing_column() {
    let body = refuse_csv(
        "llm_batch_optimized_results.csv",
        |t| t.replacen("gpu_energy,", "gpu_energy_x,", 1),
        "csv_missing_column",
    )
    .await;
    let d = first_detail(&body);
    assert!(d["file"]
        .as_str()
        .unwrap()
        .ends_with("/llm_batch_optimized_results.csv"));
    assert_eq!(d["column"], "gpu_energy");
    assert_eq!(d["row"], 1);
}

/// Replaces the `col`-th cell of data line `line` (1 = header) in a CSV text.
fn set_cell(text: &str, line: usize, col: &str, value: &str) -> String {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    let idx = rows[0].iter().position(|h| h == col).unwrap();
    let mut w = csv::Writer::from_writer(Vec::new());
    for (i, r) in rows.iter().enumerate() {
        let mut cells: Vec<String> = r.iter().map(str::to_string).collect();
        if i + 1 == line {
            cells[idx] = value.to_string();
        }
        w.write_record(&cells).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

#[tokio::test]
async fn csv_unparsable_number() {
    let body = refuse_csv(
        "llm_server_optimized_results.csv",
        |t| set_cell(t, 3, "measurement_duration", "twenty"),
        "csv_bad_number",
    )
    .await;
    let d = first_detail(&body);
    assert_eq!(d["row"], 3);
    assert_eq!(d["column"], "measurement_duration");
    assert!(d["message"].as_str().unwrap().contains("twenty"));
}

#[tokio::test]
async fn csv_malformed_list_cell() {
    let body = refuse_csv(
        "llm_batch_optimized_results.csv",
        |t| set_cell(t, 2, "gpu_0_power_draw_watts", "[61.2, 63.9, oops, 70.1]"),
        "csv_bad_list",
    )
    .await;
    let d = first_detail(&body);
    assert_eq!(d["row"], 2);
    assert_eq!(d["column"], "gpu_0_power_draw_watts");
    assert!(d["message"].as_str().unwrap().contains("element 3"), "{d}");
}

#[tokio::test]
async fn csv_list_cell_without_brackets() {
    let body = refuse_csv(
        "llm_server_optimized_results.csv",
        |t| set_cell(t, 2, "request_generation_tokens", "12, 40"),
        "csv_bad_list",
    )
    .await;
    assert_eq!(first_detail(&body)["column"], "request_generation_tokens");
}

#[tokio::test]
async fn details_disagree_with_results() {
    let body = refuse_csv(
        "llm_server_optimized_details.csv",
        |t| {
            // Drop the last request row.
            let mut lines: Vec<&str> = t.lines().collect();
            lines.pop();
            lines.join("\n") + "\n"
        },
        "details_mismatch",
    )
    .await;
    assert!(first_detail(&body)["file"]
        .as_str()
        .unwrap()
        .ends_with("llm_server_optimized_details.csv"));
}

#[tokio::test]
async fn missing_multipart_part() {
    let (app, _) = setup().await;
    let before = app.stored().await;
    let (status, body) = app.send(multipart(&[("bundle", b"x")])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "missing_part");
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn compression_bomb() {
    let (app, key) = setup().await;
    let zeros = vec![0u8; 16 << 20];
    let gz = one_entry(b"zeros.bin", tar::EntryType::Regular, &zeros, None);
    refuse(
        &app,
        &key,
        &gz,
        StatusCode::PAYLOAD_TOO_LARGE,
        "compression_ratio",
    )
    .await;
}

/// Gzip holding bytes that are no tar: the archive cannot be read.
#[tokio::test]
async fn corrupt_archive() {
    let (app, key) = setup().await;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &[b'x'; 1024]).unwrap();
    let gz = gz.finish().unwrap();
    let body = refuse(&app, &key, &gz, StatusCode::BAD_REQUEST, "corrupt_archive").await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("tar"),
        "{body}"
    );
}

/// A FIFO among the entries, and an entry type the unpacker does not take.
#[tokio::test]
async fn device_and_unknown_entries() {
    let (app, key) = setup().await;
    for (kind, code) in [
        (tar::EntryType::Fifo, "special_entry"),
        (tar::EntryType::new(b'V'), "unsupported_entry"),
    ] {
        let gz = one_entry(b"system_info.txt", kind, b"", None);
        let body = refuse_invalid(&app, &key, &gz, code).await;
        assert_eq!(first_detail(&body)["file"], "system_info.txt", "{code}");
    }
}

/// The unpacker's count and size limits, as configured: the fixture is
/// refused by each, and the message gives the limit.
#[tokio::test]
async fn too_many_entries_and_too_large_unpacked() {
    type Tweak = fn(&mut wattcounts::config::ServeConfig);
    let cases: [(Tweak, &str, &str); 2] = [
        (|c| c.max_entries = 3, "too_many_entries", "3"),
        (
            |c| c.max_unpacked_bytes = 64 << 10,
            "too_large_unpacked",
            "65536",
        ),
    ];
    for (tweak, code, limit) in cases {
        let app = TestApp::configured(tweak).await;
        let key = app.register("alice").await;
        let gz = BundleBuilder::fixture().by("alice", &key).build();
        let body = refuse(&app, &key, &gz, StatusCode::PAYLOAD_TOO_LARGE, code).await;
        assert!(
            body["error"]["message"].as_str().unwrap().contains(limit),
            "{body}"
        );
    }
}

/// The manifest lists one file twice (the archive holds it once).
#[tokio::test]
async fn manifest_duplicate_path() {
    let (app, key) = setup().await;
    let mut m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let files = m["files"].as_array_mut().unwrap();
    let first = files[0].clone();
    files.push(first.clone());
    let n = files.len() - 1;
    let gz = manifest_bundle(&m);
    let body = refuse_invalid(&app, &key, &gz, "manifest_duplicate_path").await;
    let d = first_detail(&body);
    assert_eq!(d["file"], "wattcounts.json");
    assert_eq!(d["pointer"], format!("/files/{n}/path"));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(first["path"].as_str().unwrap()),
        "{body}"
    );
}

/// Every iteration of every configuration generated no token (the
/// counters and the per-request lists agree): nothing to measure.
#[tokio::test]
async fn no_iteration_generated_a_token() {
    let (app, key) = setup().await;
    let zero = |t: &str| {
        let mut rdr = csv::Reader::from_reader(t.as_bytes());
        let header = rdr.headers().unwrap().clone();
        let total = header
            .iter()
            .position(|h| h == "generation_tokens_total")
            .unwrap();
        let list = header
            .iter()
            .position(|h| h == "request_generation_tokens")
            .unwrap();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&header).unwrap();
        for r in rdr.records() {
            let mut cells: Vec<String> = r.unwrap().iter().map(str::to_string).collect();
            cells[total] = "0".into();
            cells[list] = "[]".into();
            w.write_record(&cells).unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    };
    let files: Vec<(String, Vec<u8>)> = fixture()
        .files
        .iter()
        .map(|(p, data)| {
            let data = if p.ends_with("_results.csv") {
                zero(std::str::from_utf8(data).unwrap()).into_bytes()
            } else {
                data.clone()
            };
            (p.clone(), data)
        })
        .collect();
    let gz = BundleBuilder::fixture()
        .files(files)
        .by("alice", &key)
        .build();
    let body = refuse_invalid(&app, &key, &gz, "no_tokens").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tokens"),
        "{body}"
    );
}

/// A registration with an RSA key: only Ed25519 and ECDSA keys sign here.
#[tokio::test]
async fn a_registration_with_an_rsa_key() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    let (status, body) = app
        .send(
            axum::http::Request::post("/api/v1/submitters")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    json!({
                        "handle": "bob",
                        "public_key": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7oLQN3li5wE7fmA7zi1My5Ek5HSh6JaTOphiizYHGtnjfkPraA2jUhpIy84svLKie+28YpUTZkcgdpFijFmKgYscywZU8ulRVMQf9R67CjoZRqWRNkN8iQeG7HpcCDPzFEtXdeeAIGzMDG2oIEIVLoZMDKJ9yI5vQFdc6r2D84Q== test",
                        "proof": "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----",
                    })
                    .to_string(),
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "unsupported_key_type");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ssh-rsa"),
        "{body}"
    );
    app.assert_nothing_stored_since(&before).await;
}

//! How snapshots are served and verified (issue #6): ETags, ranges and the
//! moving `latest`; `verify` names the file that differs.

use super::*;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use wattcounts::snapshot::verify::{self, Location};

#[tokio::test]
async fn downloads_carry_etag_and_ranges_and_latest_moves() {
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let first = create_snapshot(&app, false).await;
    let id = first["snapshot_id"].as_str().unwrap();
    let dir = snapshot_dir(&app, &first);
    let on_disk = std::fs::read(dir.join("runs.csv")).unwrap();
    let url = format!("/snapshots/{id}/runs.csv");

    let get = |range: Option<&str>, extra: &[(&str, &str)]| {
        let mut b = Request::get(&url).header("accept-encoding", "gzip");
        if let Some(r) = range {
            b = b.header(header::RANGE, r);
        }
        for (k, v) in extra {
            b = b.header(*k, *v);
        }
        b.body(Body::empty()).unwrap()
    };
    let (status, h, body) = app.raw(get(None, &[])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body.as_ref(),
        on_disk.as_slice(),
        "sent as stored, not re-encoded"
    );
    assert!(h.get(header::CONTENT_ENCODING).is_none());
    let etag = format!(
        "\"{}\"",
        file(&first, "runs.csv")["sha256"].as_str().unwrap()
    );
    assert_eq!(h[header::ETAG], etag.as_str());
    assert_eq!(sha256_hex(&body), file(&first, "runs.csv")["sha256"]);
    assert!(h[header::CACHE_CONTROL]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(h[header::ACCEPT_RANGES], "bytes");
    assert!(h[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));

    let (status, _, body) = app.raw(get(None, &[("if-none-match", &etag)])).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());

    let (status, h, body) = app.raw(get(Some("bytes=10-19"), &[])).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body.as_ref(), &on_disk[10..20]);
    assert_eq!(
        h[header::CONTENT_RANGE],
        format!("bytes 10-19/{}", on_disk.len()).as_str()
    );
    let (status, _, body) = app.raw(get(Some("bytes=-5"), &[])).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body.as_ref(), &on_disk[on_disk.len() - 5..]);
    // A range of another version of the file: the whole file instead.
    let (status, _, body) = app
        .raw(get(
            Some("bytes=0-9"),
            &[("if-range", "\"someotherdigest\"")],
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.len(), on_disk.len());
    let (status, _, _) = app
        .raw(get(Some(&format!("bytes={}-", on_disk.len() + 10)), &[]))
        .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);

    // A name that decodes to a path is refused as such (400).
    let (status, _, _) = app
        .raw(
            Request::get(format!("/snapshots/{id}/..%2F..%2Ftest.db"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Only the listed files, only snapshot ids.
    for bad in [
        format!("/snapshots/{id}/wattcounts.db"),
        "/snapshots/..%2Fblobs/x".to_string(),
        "/snapshots/wc-nothere/runs.csv".to_string(),
        "/api/v1/snapshots/wc-nothere".to_string(),
    ] {
        let (status, _, _) = app
            .raw(Request::get(&bad).body(Body::empty()).unwrap())
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{bad}");
    }

    // The list and `latest`, before and after a second snapshot.
    let (_, list) = app.get("/api/v1/snapshots").await;
    assert_eq!(list["latest"], id);
    let second = create_snapshot(&app, false).await;
    let second_id = second["snapshot_id"].as_str().unwrap();
    assert_ne!(second_id, id);
    let (_, list) = app.get("/api/v1/snapshots").await;
    assert_eq!(list["latest"], second_id);
    assert_eq!(list["snapshots"].as_array().unwrap().len(), 2);
    let (status, h, _) = app
        .raw(
            Request::get("/snapshots/latest/runs.parquet")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(status.is_redirection(), "{status}");
    assert_eq!(
        h[header::LOCATION],
        format!("/snapshots/{second_id}/runs.parquet").as_str()
    );
    assert_eq!(h[header::CACHE_CONTROL], "no-cache");
    let (status, latest) = app.get("/api/v1/snapshots/latest").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(latest["snapshot_id"], second_id);
    // Same data, same files: the digests of the data files repeat.
    for f in [
        "runs.parquet",
        "runs.csv",
        "configurations.parquet",
        "submissions.csv",
    ] {
        assert_eq!(file(&first, f)["sha256"], file(&second, f)["sha256"], "{f}");
    }

    // The page lists both, newest first, with the manifest digest.
    let (status, doc) = html_page(&app, "/snapshots").await;
    assert_eq!(status, StatusCode::OK);
    let links = texts(&doc, "tbody td:first-child a");
    assert_eq!(links, vec![second_id.to_string(), id.to_string()]);
    let digests = texts(&doc, "code.digest");
    assert_eq!(digests[0], second["manifest_sha256"].as_str().unwrap());
    let (status, doc) = html_page(&app, &format!("/snapshots/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!texts(&doc, "td a")
        .iter()
        .any(|t| t.starts_with("power_traces")));
    assert!(texts(&doc, "pre.card")[0].contains("## Columns"));
}

#[tokio::test]
async fn verify_names_the_file_that_differs() {
    let app = TestApp::new().await;
    populate(&app, &bundles()).await;
    let view = create_snapshot(&app, false).await;
    let dir = snapshot_dir(&app, &view);
    let manifest_sha = view["manifest_sha256"].as_str().unwrap();

    let report = verify::verify(
        &Location::Dir(dir.clone()),
        Some(manifest_sha),
        &Default::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(report.ok(), "{report:?}");
    // runs ×2, configurations ×2, submissions.csv, gpus.csv, log.jsonl,
    // the card, the citation, croissant.json.
    assert_eq!(report.files.len(), 10);

    // A copy with one changed byte, a missing file and a cut Parquet file.
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
        let mut p = std::fs::metadata(copy.path().join(e.file_name()))
            .unwrap()
            .permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        p.set_readonly(false);
        std::fs::set_permissions(copy.path().join(e.file_name()), p).unwrap();
    }
    let csv = copy.path().join("configurations.csv");
    let mut bytes = std::fs::read(&csv).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&csv, bytes).unwrap();
    std::fs::remove_file(copy.path().join("submissions.csv")).unwrap();
    let parquet = copy.path().join("runs.parquet");
    let len = std::fs::metadata(&parquet).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&parquet)
        .unwrap()
        .set_len(len - 100)
        .unwrap();

    let report = verify::verify(
        &Location::Dir(copy.path().to_path_buf()),
        Some("0".repeat(64).as_str()),
        &Default::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(!report.ok());
    let bad: Vec<&str> = report
        .files
        .iter()
        .filter(|f| !f.problems.is_empty())
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        bad,
        vec!["runs.parquet", "configurations.csv", "submissions.csv"]
    );
    let problems = |name: &str| {
        report
            .files
            .iter()
            .find(|f| f.path == name)
            .unwrap()
            .problems
            .join("; ")
    };
    assert!(
        problems("configurations.csv").contains("sha256 is"),
        "{}",
        problems("configurations.csv")
    );
    assert!(problems("runs.parquet").contains(&format!("size is {} bytes", len - 100)));
    assert!(problems("runs.parquet").contains("not readable as Parquet"));
    assert!(problems("submissions.csv").contains("cannot read"));
    assert!(report.manifest_problems[0].contains("expected 0000"));

    // Over HTTP from a real server, by its root URL (its latest snapshot).
    let server = app.spawn_serve(&[]);
    // With the log key, the log part is checked over HTTP too.
    let log = verify::LogOptions {
        verifier_key: Some(test_log_verifier()),
        previous: None,
    };
    let report = verify::verify(
        &Location::parse(&server.url),
        Some(manifest_sha),
        &log,
        |_| {},
    )
    .await
    .unwrap();
    assert!(report.ok(), "{report:?}");
    assert!(report.log.as_ref().unwrap().submissions > 0, "{report:?}");
    assert_eq!(report.snapshot_id, view["snapshot_id"].as_str().unwrap());
    // The command line says the same, with exit codes.
    let cli = |target: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
            .args(["verify", "snapshot", target])
            .output()
            .unwrap()
    };
    let ok = cli(&format!("{}/snapshots/latest", server.url));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let bad = cli(copy.path().to_str().unwrap());
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(out.contains("DIFFERS  configurations.csv"), "{out}");
    assert!(out.contains("3 file(s) differ"), "{out}");
}

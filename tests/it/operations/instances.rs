//! Several `serve` processes on one PostgreSQL database and one data dir
//! (issue #7): the same bundle sent to two instances at once is stored once
//! and both answer with the same receipt; 64 distinct bundles spread over
//! both instances all land. Real processes, real PostgreSQL; skipped without
//! WATTCOUNTS_TEST_PG_URL.

use crate::common::*;
use sha2::Digest;
use wattcounts::store::{postgres::PgStore, Intake};

fn start(database_url: &str, data: &std::path::Path) -> Server {
    spawn_server(&[
        "--public-url",
        AUDIENCE,
        "--database-url",
        database_url,
        "--data-dir",
        data.to_str().unwrap(),
    ])
}

/// A fresh schema of the test PostgreSQL with alice registered: its store,
/// alice's key, and the database URL that puts a `serve` in that schema.
/// None (the reason printed) without WATTCOUNTS_TEST_PG_URL.
async fn alice_in_a_fresh_schema() -> Option<(PgStore, ssh_key::PrivateKey, String)> {
    let base = pg_url()?;
    let schema = pg_schema();
    let store = PgStore::open(&base, Some(&schema)).await.unwrap();
    let key = new_key();
    add_submitter(&store, "alice", &key).await;
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    Some((store, key, url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_one_database() {
    let Some((store, key, url)) = alice_in_a_fresh_schema().await else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let a = start(&url, data.path());
    let b = start(&url, data.path());
    let client = reqwest::Client::new();

    // One bundle, both instances, at the same moment.
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let (ra, rb) = tokio::join!(
        submit_over_http(&client, &a.url, gz.clone(), sig.clone()),
        submit_over_http(&client, &b.url, gz.clone(), sig.clone())
    );
    let mut statuses = [ra.0, rb.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 201], "{} / {}", ra.1, rb.1);
    assert_eq!(ra.1, rb.1, "both answer with the same receipt");
    assert_eq!(store.counts().await.unwrap().submissions, 1);

    // 64 distinct bundles spread over both, 16 in flight at a time.
    let mut pending: Vec<(String, Vec<u8>, Vec<u8>)> = (0..64)
        .map(|i| {
            let gz = BundleBuilder::fixture()
                .marked(i + 1)
                .by("alice", &key)
                .build();
            let sig = sign(&key, &gz);
            let server = if i % 2 == 0 { &a.url } else { &b.url };
            (server.clone(), gz, sig)
        })
        .collect();
    let mut created = 0;
    while !pending.is_empty() {
        let batch: Vec<_> = pending.drain(..pending.len().min(16)).collect();
        let mut set = tokio::task::JoinSet::new();
        for (server, gz, sig) in batch {
            let client = client.clone();
            set.spawn(async move { submit_over_http(&client, &server, gz, sig).await });
        }
        while let Some(r) = set.join_next().await {
            let (status, body) = r.unwrap();
            assert_eq!(status, 201, "{body}");
            created += 1;
        }
    }
    assert_eq!(created, 64);
    let counts = store.counts().await.unwrap();
    assert_eq!((counts.submissions, counts.runs), (65, 65 * 18));
    // Both instances wrote to the same groups at once, each holding the
    // group's row lock: no submission is lost from any group, and the
    // counters agree.
    let board = get_json(
        &client,
        format!("{}/api/v1/leaderboard?per_page=1000", a.url),
    )
    .await;
    let entries = board["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 6, "2 models × 3 scenarios: {board}");
    assert!(
        entries
            .iter()
            .all(|e| e["submissions"] == 65 && e["iterations"] == 65 * 3),
        "{board}"
    );
    let stats = get_json(&client, format!("{}/api/v1/stats", b.url)).await;
    assert_eq!(stats["counts"]["submissions"], 65);
    assert_eq!(stats["counts"]["iterations"], 65 * 18);
    // Every receipt is readable from either instance.
    let (_, r) = submit_over_http(&client, &b.url, gz, sig).await;
    assert_eq!(r, ra.1);
}

/// Two `serve` processes on PostgreSQL and one S3 bucket, each with its own
/// data dir (scratch only) and the same log key file: a bundle sent to one
/// and a snapshot published by one download from the other, proxied from
/// the bucket with the SHA-256 as ETag, a 304 for it, one byte range, a
/// whole file for a stale If-Range and a 416 past the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_postgres_and_s3_serve_each_others_files() {
    let Some((store, key, url)) = alice_in_a_fresh_schema().await else {
        return;
    };
    let s3 = s3::shared();
    let bucket = s3.fresh_url();
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("log.key");
    std::fs::write(&key_file, test_log_secret()).unwrap();
    let token = admin_token_flag();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |dir: &std::path::Path| {
        spawn_server_with_env(
            &[
                "--public-url",
                AUDIENCE,
                "--database-url",
                &url,
                "--data-dir",
                dir.to_str().unwrap(),
                "--blob-url",
                &bucket,
                "--log-key-file",
                key_file.to_str().unwrap(),
                "--admin-token",
                &token,
            ],
            &s3.env(),
        )
    };
    let (a, b) = (start(dir_a.path()), start(dir_b.path()));
    let client = reqwest::Client::new();

    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let (status, receipt) = submit_over_http(&client, &a.url, gz.clone(), sign(&key, &gz)).await;
    assert_eq!(status, 201, "{receipt}");
    assert_eq!(store.counts().await.unwrap().submissions, 1);
    let id = receipt["submission_id"].as_str().unwrap();
    let sha = receipt["bundle_sha256"].as_str().unwrap();
    assert_eq!(sha, hex::encode(sha2::Sha256::digest(&gz)));
    // The bytes are in the bucket and in neither data dir.
    let on_disk = |dir: &std::path::Path| {
        walk_files(dir)
            .into_iter()
            .any(|p| std::fs::read(&p).is_ok_and(|d| d == gz))
    };
    assert!(walk_files(s3.root.path())
        .iter()
        .any(|p| std::fs::read(p).is_ok_and(|d| d == gz)));
    assert!(!on_disk(dir_a.path()) && !on_disk(dir_b.path()));
    check_download(
        &client,
        &format!("{}/submissions/{id}/bundle.tar.gz", b.url),
        &gz,
        sha,
    )
    .await;

    let created: serde_json::Value = client
        .post(format!("{}/api/v1/admin/snapshots", a.url))
        .bearer_auth(ADMIN_TOKEN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let snap = created["snapshot_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    let listed = get_json(&client, format!("{}/api/v1/snapshots/latest", b.url)).await;
    assert_eq!(listed["snapshot_id"], snap, "{listed}");
    let csv = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "submissions.csv")
        .unwrap_or_else(|| panic!("{listed}"));
    let file_url = format!("{}/snapshots/{snap}/submissions.csv", b.url);
    let whole = client
        .get(&file_url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(std::str::from_utf8(&whole).unwrap().contains(id));
    check_download(&client, &file_url, &whole, csv["sha256"].as_str().unwrap()).await;
}

/// `url` answers `want` with the ETag "`sha`", 304 for that ETag, one byte
/// range, the whole file under a stale If-Range, and 416 past the end.
async fn check_download(client: &reqwest::Client, url: &str, want: &[u8], sha: &str) {
    assert_eq!(hex::encode(sha2::Sha256::digest(want)), sha);
    assert!(want.len() > 40, "{} bytes", want.len());
    let etag = format!("\"{sha}\"");
    let r = client.get(url).send().await.unwrap();
    assert_eq!(r.status(), 200, "{url}");
    assert_eq!(r.headers()["etag"], etag.as_str());
    assert_eq!(r.headers()["accept-ranges"], "bytes");
    assert_eq!(r.bytes().await.unwrap(), want);

    let r = client
        .get(url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304, "{url}");
    assert!(r.bytes().await.unwrap().is_empty());

    let r = client
        .get(url)
        .header("range", "bytes=10-39")
        .header("if-range", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206, "{url}");
    assert_eq!(
        r.headers()["content-range"],
        format!("bytes 10-39/{}", want.len()).as_str()
    );
    assert_eq!(r.bytes().await.unwrap(), &want[10..40]);

    let r = client
        .get(url)
        .header("range", "bytes=-7")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206, "{url}");
    assert_eq!(r.bytes().await.unwrap(), &want[want.len() - 7..]);

    let r = client
        .get(url)
        .header("range", "bytes=10-39")
        .header("if-range", "\"an-older-version\"")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        200,
        "a stale If-Range gets the whole file: {url}"
    );
    assert_eq!(r.bytes().await.unwrap(), want);

    let past = format!("bytes={}-", want.len() + 5);
    let r = client.get(url).header("range", past).send().await.unwrap();
    assert_eq!(r.status(), 416, "{url}");
}

/// GET `url` and read its JSON answer.
async fn get_json(client: &reqwest::Client, url: String) -> serde_json::Value {
    let resp = client.get(&url).send().await.unwrap();
    resp.json()
        .await
        .unwrap_or_else(|e| panic!("{url}: not JSON: {e}"))
}

/// A GPU added through one instance (with `wattcounts admin gpu add`, the
/// real binary against its maintainer API) is known to the other within its
/// data-stamp poll: a bundle from that GPU sent there is judged with the
/// GPU's figures at once, not held for review.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gpu_added_on_one_instance_judges_bundles_on_the_other() {
    let Some((_store, key, url)) = alice_in_a_fresh_schema().await else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let token = admin_token_flag();
    let args = [
        "--public-url",
        AUDIENCE,
        "--database-url",
        &url,
        "--data-dir",
        data.path().to_str().unwrap(),
        "--admin-token",
        &token,
    ];
    let a = spawn_server(&args);
    let b = spawn_server(&args);
    let name = "NVIDIA Test Accelerator Fleet 24GB";
    // An L4's figures under another name: the run below is an L4's.
    let row = serde_json::json!({
        "nvml_name": name, "architecture": "Ada Lovelace", "form_factor": "PCIe",
        "release_date": "2026-03-01", "release_year": 2026.0, "tdp_w": 72.0,
        "idle_w": 24.0, "idle_basis": "measured", "memory_gb": 24.0,
        "memory_type": "GDDR6", "memory_bus_bits": 192.0,
        "memory_bandwidth_gb_s": 300.0, "fp16_tflops": 30.29, "tensor_tflops": 121.0,
        "base_clock_mhz": 795.0, "boost_clock_mhz": 2040.0,
        "transistor_count_m": 35800.0,
        "source": "https://example.org/datasheets/fleet.pdf",
    });
    let file = data.path().join("gpu.json");
    std::fs::write(&file, row.to_string()).unwrap();
    let add = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
            .args([
                "admin", "gpu", "add", "--server", &a.url, "--reason", "issue 41",
            ])
            .arg("--file")
            .arg(&file)
            .env("WATTCOUNTS_ADMIN_TOKEN", ADMIN_TOKEN)
            .output()
            .unwrap()
    };
    let out = add();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("added '{name}' as catalogue version 1")),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 waiting submission(s) judged again"),
        "{stdout}"
    );
    let again = add();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("gpu_exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // B polls the data stamp every 2 s; the addition moved it.
    tokio::time::sleep(std::time::Duration::from_millis(3_000)).await;
    let gz = BundleBuilder::faulty(wattcounts::synth::Fault::UnknownGpu, 42)
        .edit("system_info.txt", |s| {
            s.replace(": NVIDIA B300 Ultra Prototype\n", &format!(": {name}\n"))
        })
        .by("alice", &key)
        .build();
    let client = reqwest::Client::new();
    let (status, r) = submit_over_http(&client, &b.url, gz.clone(), sign(&key, &gz)).await;
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["status"], "accepted", "{r:#}");
    assert_eq!(
        r["gpu"]["id"],
        wattcounts::catalog::gpu_id(name).as_str(),
        "{r:#}"
    );
}

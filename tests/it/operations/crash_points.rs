//! Crash consistency at named points (issue #40, item 5). A real `serve`
//! (a debug build, where `WATTCOUNTS_CRASH_AT` is read) kills itself with
//! SIGKILL after a bundle's blob is written, after its row commits but
//! before the answer, or inside a checkpoint's transaction. Started again
//! on the same data, on SQLite and on PostgreSQL:
//! - every acknowledged submission answers, with its digest;
//! - every row's blob exists and hashes to the row's digest, and no blob or
//!   staging file is left that no row names;
//! - the log monitor, which kept the checkpoint published before the crash,
//!   accepts the one after it (the log only grew), and the stored tree
//!   hashes equal a tree recomputed from the leaves;
//! - the read model equals what `db rebuild` makes of the stored runs;
//! - the bundle whose answer the crash cut off, sent again, is stored once.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use sha2::Digest;

use crate::common::*;

/// Where the crash leaves the bundle whose request it cut off.
#[derive(Clone, Copy, PartialEq)]
enum Cut {
    /// Its blob was written, its row not: gone after the restart's sweep.
    BeforeRow,
    /// Its row committed: present after the restart, a replay answers 200.
    AfterRow,
    /// A checkpoint was being written; every bundle was acknowledged.
    Checkpoint,
}

struct Deployment {
    app: TestApp,
    /// `--database-url` for a `serve` on this app's database.
    database_url: String,
}

impl Deployment {
    async fn sqlite() -> Deployment {
        let app = TestApp::new().await;
        let database_url = format!("sqlite:{}", app.dir.path().join("test.db").display());
        Deployment { app, database_url }
    }

    async fn postgres() -> Option<Deployment> {
        let base = pg_url()?;
        let schema = pg_schema();
        let app = TestApp::postgres_in(&schema, |_| {}).await?;
        let sep = if base.contains('?') { '&' } else { '?' };
        let database_url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
        Some(Deployment { app, database_url })
    }

    /// A `serve` on this deployment's data; `crash_at` arms a point.
    fn serve(&self, crash_at: Option<&str>) -> Server {
        let admin = admin_token_flag();
        let args = [
            "--data-dir",
            self.app.dir.path().to_str().unwrap(),
            "--database-url",
            &self.database_url,
            "--public-url",
            AUDIENCE,
            "--admin-token",
            &admin,
            // Checkpoints only when this test asks for one.
            "--log-publish-secs",
            "3600",
            // The restart sweeps what the crash left at once.
            "--orphan-grace-secs",
            "0",
        ];
        let env: Vec<(&str, String)> = crash_at
            .map(|p| vec![("WATTCOUNTS_CRASH_AT", p.to_string())])
            .unwrap_or_default();
        spawn_server_with_env(&args, &env)
    }
}

/// POST a bundle; Err when the connection ended without an answer.
async fn try_submit(
    client: &reqwest::Client,
    url: &str,
    gz: &[u8],
    sig: &[u8],
) -> Result<(u16, serde_json::Value), reqwest::Error> {
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(gz.to_vec()).file_name("b.tar.gz"),
        )
        .part(
            "signature",
            reqwest::multipart::Part::bytes(sig.to_vec()).file_name("b.sig"),
        );
    let resp = client
        .post(format!("{url}/api/v1/submissions"))
        .multipart(form)
        .send()
        .await?;
    let status = resp.status().as_u16();
    Ok((status, resp.json().await?))
}

async fn publish_checkpoint(client: &reqwest::Client, url: &str) -> reqwest::Result<u16> {
    let resp = client
        .post(format!("{url}/api/v1/admin/log/checkpoint"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await?;
    Ok(resp.status().as_u16())
}

/// `wattcounts verify log` against `url`, keeping its state in `state`:
/// (exit code, what it printed).
fn monitor(url: &str, state: &std::path::Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
        .args(["verify", "log", "--server", url, "--state"])
        .arg(state)
        .args(["--log-key", &test_log_verifier()])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Every submission row's (bundle digest, blob path).
async fn rows_and_blobs(app: &TestApp) -> Vec<(String, String)> {
    const SQL: &str = "SELECT bundle_sha256, blob_path FROM submissions ORDER BY id";
    match app.raw.as_ref().unwrap() {
        RawDb::Sqlite(pool) => sqlx::query_as(SQL).fetch_all(pool).await.unwrap(),
        RawDb::Pg(pool) => sqlx::query_as(SQL).fetch_all(pool).await.unwrap(),
    }
}

async fn crash_and_restart(deployment: Deployment, point: &str, cut: Cut) {
    let app = &deployment.app;
    let key = new_key();
    add_submitter(app.store.as_ref(), "crash", &key).await;
    // The first checkpoint (of the empty log) exists before the server
    // starts, so its start-up publishes nothing and every pass of the
    // checkpoint point is one this test asks for.
    app.service.start_log().await.unwrap();
    let bundles: Vec<(Vec<u8>, Vec<u8>)> = (0..3)
        .map(|i| {
            let gz = BundleBuilder::fixture().marked(i).by("crash", &key).build();
            let sig = sign(&key, &gz);
            (gz, sig)
        })
        .collect();
    let digest = |gz: &[u8]| hex::encode(sha2::Sha256::digest(gz));

    // The third pass of a submission point is the third bundle; the
    // checkpoint point's second pass is the second checkpoint asked for.
    let armed = match cut {
        Cut::Checkpoint => format!("{point}@2"),
        _ => format!("{point}@3"),
    };
    let mut server = deployment.serve(Some(&armed));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut acknowledged = Vec::new();
    for (gz, sig) in &bundles[..2] {
        let (status, body) = try_submit(&client, &server.url, gz, sig).await.unwrap();
        assert_eq!(status, 201, "{body}");
        acknowledged.push((
            body["submission_id"].as_str().unwrap().to_string(),
            digest(gz),
        ));
    }
    assert_eq!(publish_checkpoint(&client, &server.url).await.unwrap(), 200);
    let state = app.dir.path().join("monitor.json");
    let (code, out) = monitor(&server.url, &state);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("first checkpoint kept (2 leaves)"), "{out}");

    let (gz, sig) = &bundles[2];
    let third = try_submit(&client, &server.url, gz, sig).await;
    if cut == Cut::Checkpoint {
        let (status, body) = third.unwrap();
        assert_eq!(status, 201, "{body}");
        acknowledged.push((
            body["submission_id"].as_str().unwrap().to_string(),
            digest(gz),
        ));
        assert!(
            publish_checkpoint(&client, &server.url).await.is_err(),
            "the checkpoint was answered: the crash point was never reached"
        );
    } else {
        assert!(third.is_err(), "answered: {:?}", third.unwrap());
    }
    let exit = server.wait_for_exit(Duration::from_secs(10));
    assert_eq!(exit.signal(), Some(libc::SIGKILL), "{point}: {exit:?}");

    // Started again on the same data, nothing armed.
    let server = deployment.serve(None);
    for (id, sha) in &acknowledged {
        let resp = client
            .get(format!("{}/api/v1/submissions/{id}", server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{point}: acknowledged {id} lost");
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["bundle_sha256"], sha.as_str(), "{body}");
    }
    let stored = rows_and_blobs(app).await;
    let expected_rows = match cut {
        Cut::BeforeRow => 2,
        Cut::AfterRow | Cut::Checkpoint => 3,
    };
    assert_eq!(stored.len(), expected_rows, "{point}: {stored:?}");
    let blob_root = app.dir.path().join("blobs");
    for (sha, path) in &stored {
        let bytes = std::fs::read(blob_root.join(path))
            .unwrap_or_else(|e| panic!("{point}: the blob of {sha} at {path}: {e}"));
        assert_eq!(&digest(&bytes), sha, "{point}: {path}");
    }
    // What the crash left unnamed went in the restart's sweep.
    let named: std::collections::HashSet<_> =
        stored.iter().map(|(_, p)| blob_root.join(p)).collect();
    let unnamed: Vec<_> = walk_files_if_any(&blob_root)
        .into_iter()
        .filter(|f| !named.contains(f))
        .collect();
    assert!(unnamed.is_empty(), "{point}: left behind {unnamed:?}");

    // The log grew from the checkpoint kept before the crash, and its
    // stored hashes are the tree of its leaves.
    assert_eq!(publish_checkpoint(&client, &server.url).await.unwrap(), 200);
    let (code, out) = monitor(&server.url, &state);
    assert_eq!(code, Some(0), "{point}: {out}");
    let grown = match cut {
        Cut::BeforeRow => "unchanged at 2 leaves",
        Cut::AfterRow | Cut::Checkpoint => "grew from 2 to 3 leaves",
    };
    assert!(out.contains(grown), "{point}: {out}");
    let log = log_tables(app.store.as_ref()).await;
    assert_eq!(log.0.len(), expected_rows, "{point}");
    let tree = memory_tree(&leaves_of(&log));
    let n = log.1.len() as u64;
    assert_eq!(
        tlog_tiles::HashReader::read_hashes(&tree, &(0..n).collect::<Vec<_>>()).unwrap(),
        log.1,
        "{point}"
    );

    // The bundle the crash cut off, sent again: stored once.
    let (status, body) = try_submit(&client, &server.url, gz, sig).await.unwrap();
    let again = match cut {
        Cut::BeforeRow => 201,
        Cut::AfterRow | Cut::Checkpoint => 200,
    };
    assert_eq!(status, again, "{point}: {body}");
    assert_eq!(rows_and_blobs(app).await.len(), 3, "{point}");
    drop(server);

    // The read model as the crashed and restarted writers left it is what
    // a rebuild from the stored runs makes.
    let kept = read_model(app).await;
    assert!(!kept.0.is_empty(), "{point}: no accepted group");
    app.service.rebuild(|_| {}).await.unwrap();
    assert_eq!(read_model(app).await, kept, "{point}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_after_the_blob_write() {
    crash_and_restart(
        Deployment::sqlite().await,
        "after_blob_write",
        Cut::BeforeRow,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_after_the_commit_before_the_answer() {
    crash_and_restart(Deployment::sqlite().await, "after_commit", Cut::AfterRow).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_during_a_checkpoint_write() {
    crash_and_restart(
        Deployment::sqlite().await,
        "during_checkpoint_write",
        Cut::Checkpoint,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_after_the_blob_write() {
    let Some(d) = Deployment::postgres().await else {
        return;
    };
    crash_and_restart(d, "after_blob_write", Cut::BeforeRow).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_after_the_commit_before_the_answer() {
    let Some(d) = Deployment::postgres().await else {
        return;
    };
    crash_and_restart(d, "after_commit", Cut::AfterRow).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_during_a_checkpoint_write() {
    let Some(d) = Deployment::postgres().await else {
        return;
    };
    crash_and_restart(d, "during_checkpoint_write", Cut::Checkpoint).await;
}

/// A misspelt point stops `serve` at start-up, naming the points there are,
/// rather than arming nothing in silence.
#[test]
fn a_misspelt_crash_point_is_refused_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    share_log_key(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("WATTCOUNTS_CRASH_AT", "after_comit")
        .env_remove("WATTCOUNTS_DATABASE_URL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("WATTCOUNTS_CRASH_AT=after_comit: no crash point 'after_comit' (there are after_blob_write, after_commit, during_checkpoint_write)"),
        "{err}"
    );
}

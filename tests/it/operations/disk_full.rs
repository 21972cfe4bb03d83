//! A full disk under the data dir (issue #40, item 6): an upload is
//! answered 507 `insufficient_storage` with Retry-After, not a 500 or a
//! closed connection; nothing is stored; and once space is freed the same
//! upload is stored, without a restart. The data dir (database, staging,
//! blobs) is a 16 MiB tmpfs the test mounts (root) and fills.

use std::io::Write;
use std::path::{Path, PathBuf};

use axum::http::StatusCode;

use crate::common::*;

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Option<Tmpfs> {
        let path = tempfile::tempdir().unwrap().keep();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { path }),
            Ok(o) => {
                let _ = std::fs::remove_dir(&path);
                skip(
                    Need::Tmpfs,
                    &format!(
                        "mounting a tmpfs failed ({}): the test needs root",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                );
                None
            }
            Err(e) => {
                let _ = std::fs::remove_dir(&path);
                skip(Need::Tmpfs, &format!("mount cannot run: {e}"));
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    /// Lazily: the database pool may still hold its files open for a
    /// moment after the app is dropped.
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// Writes one file until the disk refuses another byte.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 64 << 10];
    loop {
        match f.write_all(&block).and_then(|_| f.sync_all()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    path
}

#[tokio::test]
async fn a_full_disk_answers_507_and_recovers_without_a_restart() {
    let Some(fs) = Tmpfs::mount(16 << 20) else {
        return;
    };
    let dir = tempfile::tempdir_in(&fs.path).unwrap();
    let app = TestApp::configured_in(dir, |_| {}).await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let signature = sign(&key, &gz);

    let before = app.stored().await;
    let filler = fill(&fs.path);
    let (status, headers, body) = app
        .raw(multipart(&[("bundle", &gz), ("signature", &signature)]))
        .await;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
    assert_error(&body, "insufficient_storage");
    assert_eq!(headers["retry-after"], "60");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disk is full"),
        "{body}"
    );
    app.assert_nothing_stored_since(&before).await;

    // Space back, same process: the same upload is stored.
    std::fs::remove_file(filler).unwrap();
    let (status, body) = app.submit(&gz, &signature).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Issue #53: full again, with a little more room left each time (0 to
    // 336 KiB), so the write fails where the space runs out; never a 500.
    // Then, with the space back, 20 uploads in a row are all stored. (On
    // this tmpfs the staging file takes the last space before the
    // database does; `failed_writes_leave_every_pooled_connection_clean`
    // below fails the database's own transaction on purpose.)
    for room in 0..8u64 {
        let filler = fill(&fs.path);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&filler)
            .unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(room * (48 << 10))).unwrap();
        drop(f);
        let gz = BundleBuilder::fixture()
            .marked(format!("full {room}"))
            .by("alice", &key)
            .build();
        let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
        assert!(
            status == StatusCode::INSUFFICIENT_STORAGE
                || status == StatusCode::SERVICE_UNAVAILABLE
                || status == StatusCode::CREATED,
            "room {room}: {status} {body}"
        );
        std::fs::remove_file(filler).unwrap();
    }
    for n in 0..20 {
        let gz = BundleBuilder::fixture()
            .marked(format!("after {n}"))
            .by("alice", &key)
            .build();
        let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "upload {n} after the disk was freed: {body}"
        );
    }
    drop(app);
}

/// Writes that fail inside the intake's transaction leave no pooled
/// connection inside it (issue #53): SQLite rolls such a transaction back
/// itself (here a trigger's `RAISE(ROLLBACK)`, as it does on a full disk
/// or an I/O error), so the ROLLBACK sqlx sends after fails and it still
/// counts the connection inside a transaction; the next upload on it used
/// to answer 500 ("begin_with at non-zero transaction depth"). PostgreSQL
/// gets the error a full disk raises (53100). Each failed upload stores
/// nothing; once writes work again, 20 uploads in a row are all stored.
async fn failed_writes_leave_every_pooled_connection_clean(app: TestApp) {
    let key = app.register("alice").await;
    let raw = app.raw.as_ref().unwrap();
    let fail = match raw {
        RawDb::Sqlite(_) => vec![
            "CREATE TRIGGER fail_writes BEFORE INSERT ON runs BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END",
        ],
        RawDb::Pg(_) => vec![
            "CREATE FUNCTION fail_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$",
            "CREATE TRIGGER fail_writes BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION fail_writes()",
        ],
    };
    for sql in fail {
        raw.exec(sql).await;
    }
    let before = app.stored().await;
    // More failures than the pool has connections (SQLite 8, PostgreSQL 16).
    for n in 0..20 {
        let gz = BundleBuilder::fixture().marked(n).by("alice", &key).build();
        let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
        // PostgreSQL's disk_full is the database unavailable (503); the
        // SQLite trigger's error is its own (a constraint), an internal one.
        let expected = match raw {
            RawDb::Pg(_) => status == StatusCode::SERVICE_UNAVAILABLE,
            RawDb::Sqlite(_) => status.is_server_error(),
        };
        assert!(expected, "upload {n} while writes fail: {status} {body}");
    }
    // No row of any table. (Each bundle's blob was written before its
    // transaction failed: content-addressed, it serves a retry, and the
    // start-up sweep removes it once no row names it past its grace, as
    // for a crash between the two writes.)
    assert_eq!(app.stored().await.tables, before.tables, "rows written");

    raw.exec(match raw {
        RawDb::Sqlite(_) => "DROP TRIGGER fail_writes",
        RawDb::Pg(_) => "DROP TRIGGER fail_writes ON runs",
    })
    .await;
    for n in 100..120 {
        let gz = BundleBuilder::fixture().marked(n).by("alice", &key).build();
        let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "upload {n} after recovery: {body}"
        );
    }
    assert_eq!(app.counts().await.submissions, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failed_writes_leave_the_sqlite_pool_clean() {
    failed_writes_leave_every_pooled_connection_clean(TestApp::new().await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failed_writes_leave_the_postgres_pool_clean() {
    if let Some(app) = TestApp::postgres().await {
        failed_writes_leave_every_pooled_connection_clean(app).await
    }
}

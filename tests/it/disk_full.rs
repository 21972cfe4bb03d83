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
    drop(app);
}

//! `db backup` and `db restore` (crates/service/src/backup.rs). A backup
//! taken while submissions keep arriving holds every submission
//! acknowledged before it began, with its bundle, the published snapshot
//! and the log. Restored into a fresh data dir (SQLite) or an empty
//! PostgreSQL schema, the service answers for all of them, its log's stored
//! hashes equal a tree recomputed here from its leaves, and its read model
//! equals `db rebuild`'s. A damaged backup is refused before anything is
//! written. And no table is left out of the copy by accident: every table
//! the migrations make is copied or excluded with its reason.

use std::path::Path;
use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::json;
use sha2::Digest;

use crate::common::*;
use wattcounts::service::backup::{self, Database, RestoreDb, Target};
use wattcounts::store::objects::Objects;

async fn submit_marked(app: &TestApp, key: &ssh_key::PrivateKey, i: usize) -> String {
    let gz = BundleBuilder::fixture().marked(i).by("alice", key).build();
    let (status, body) = app.submit(&gz, &sign(key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["submission_id"].as_str().unwrap().to_string()
}

/// Writes a backup of `app` (whose database `db` is) while more bundles
/// arrive; returns the ids acknowledged before it began and all ids.
async fn backup_under_writes(
    app: &TestApp,
    db: Database<'_>,
    to: &Path,
    log_key: Option<&Path>,
) -> (Vec<String>, Vec<String>) {
    let key = app.register("alice").await;
    let mut before = Vec::new();
    for i in 0..3 {
        before.push(submit_marked(app, &key, i).await);
    }
    let (status, snap) = app
        .admin_post("/api/v1/admin/snapshots", json!({ "traces": false }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{snap}");
    let blobs = wattcounts::store::blobs::BlobStore::new(app.dir.path().join("blobs")).unwrap();
    let library = wattcounts::snapshot::Library::new(app.dir.path().join("snapshots")).unwrap();
    let writer = async {
        let mut ids = Vec::new();
        for i in 100..104 {
            ids.push(submit_marked(app, &key, i).await);
        }
        ids
    };
    let (report, during) = tokio::join!(
        backup::backup(db, &blobs, &library, to, log_key, |_| {}),
        writer
    );
    let report = report.unwrap();
    assert!(report.submissions >= 3, "{report:?}");
    assert_eq!(report.bundles, report.submissions);
    // The snapshot: its manifest, card, citation, Croissant and tables.
    assert!(report.snapshot_files >= 4, "{report:?}");
    let mut all = before.clone();
    all.extend(during);
    (before, all)
}

/// The restored deployment answers for every submission the backup holds
/// (at least those acknowledged before it began), with its bundle; its log
/// is the original's prefix and verifies; its read model is `db rebuild`'s.
async fn check_restored(
    original: &TestApp,
    restored: &TestApp,
    manifest: &backup::BackupManifest,
    before: &[String],
) {
    assert_eq!(
        restored.store.blob_paths().await.unwrap().len() as u64,
        manifest.submissions
    );
    for id in before {
        let (status, sub) = restored.get(&format!("/api/v1/submissions/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{id}: {sub}");
        let (_, orig) = original.get(&format!("/api/v1/submissions/{id}")).await;
        assert_eq!(sub["configurations"], orig["configurations"], "{id}");
        assert_eq!(sub["status"], orig["status"], "{id}");
    }
    // Every bundle is in the restored blob folder with its digest.
    for path in restored.store.blob_paths().await.unwrap() {
        let bytes = std::fs::read(restored.dir.path().join("blobs").join(&path)).unwrap();
        let sha = hex::encode(sha2::Sha256::digest(&bytes));
        assert!(path.contains(&sha), "{path} holds bytes with SHA-256 {sha}");
    }
    // The log: the original's first `log_size` leaves, the same key, and
    // stored hashes equal to a tree recomputed from the leaves.
    let restored_log = log_tables(restored.store.as_ref()).await;
    let original_log = log_tables(original.store.as_ref()).await;
    let n = restored_log.0.len();
    assert_eq!(n as u64, manifest.log_size);
    assert_eq!(restored_log.0[..], original_log.0[..n]);
    assert_eq!(restored_log.2, original_log.2);
    let tree = memory_tree(&leaves_of(&restored_log));
    let stored = restored_log.1.len() as u64;
    assert_eq!(
        tlog_tiles::HashReader::read_hashes(&tree, &(0..stored).collect::<Vec<_>>()).unwrap(),
        restored_log.1
    );
    // The snapshot is served, its manifest byte for byte.
    let (status, list) = restored.get("/api/v1/snapshots").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let (_, orig_list) = original.get("/api/v1/snapshots").await;
    assert_eq!(list, orig_list);
    // The read model as kept equals a rebuild's.
    let kept = read_model(restored).await;
    assert!(!kept.0.is_empty());
    restored.service.rebuild(|_| {}).await.unwrap();
    assert_eq!(read_model(restored).await, kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sqlite_backup_under_writes_restores_whole() {
    let app = TestApp::new().await;
    let url = format!("sqlite:{}", app.dir.path().join("test.db").display());
    let source = wattcounts::store::sqlite::SqliteStore::open(&url)
        .await
        .unwrap();
    let to = tempfile::tempdir().unwrap();
    let folder = to.path().join("backup");
    let (before, _) = backup_under_writes(&app, Database::Sqlite(&source), &folder, None).await;
    let manifest = backup::verify(&folder).unwrap();
    assert_eq!(manifest.source, "sqlite");
    assert!(!manifest.log_key_included && !folder.join(backup::LOG_KEY).exists());

    // Restored into a fresh data dir, as `db restore --data-dir` does.
    let dir = tempfile::tempdir().unwrap();
    let target = Target {
        database: RestoreDb::SqliteFile(&dir.path().join("test.db")),
        blobs: &Objects::local(dir.path().join("blobs")).unwrap(),
        snapshots: &Objects::local(dir.path().join("snapshots")).unwrap(),
        log_key: dir.path().join("log.key"),
        scratch: dir.path().join("scratch"),
    };
    let report = backup::restore(&folder, &target, |_| {}).await.unwrap();
    assert_eq!(report.files as usize, manifest.files.len());
    assert!(!report.log_key_restored);
    let restored = TestApp::configured_in(dir, |_| {}).await;
    check_restored(&app, &restored, &manifest, &before).await;

    // Restoring again over what is there is refused.
    let again = Target {
        database: RestoreDb::SqliteFile(&restored.dir.path().join("test.db")),
        blobs: &Objects::local(restored.dir.path().join("blobs")).unwrap(),
        snapshots: &Objects::local(restored.dir.path().join("snapshots")).unwrap(),
        log_key: restored.dir.path().join("log.key"),
        scratch: restored.dir.path().join("scratch"),
    };
    let err = backup::restore(&folder, &again, |_| {}).await.unwrap_err();
    assert!(format!("{err:#}").contains("exists"), "{err:#}");

    // A backup into a folder that is not empty is refused.
    let err = backup::backup(
        Database::Sqlite(&source),
        &wattcounts::store::blobs::BlobStore::new(app.dir.path().join("blobs")).unwrap(),
        &wattcounts::snapshot::Library::new(app.dir.path().join("snapshots")).unwrap(),
        &folder,
        None,
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("not empty"), "{err:#}");

    // One flipped byte in a bundle of the backup: refused before anything
    // is written, naming the file and both digests.
    let blob = manifest
        .files
        .iter()
        .find(|f| f.path.starts_with("blobs/"))
        .unwrap();
    let path = folder.join(&blob.path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let target = Target {
        database: RestoreDb::SqliteFile(&fresh.path().join("test.db")),
        blobs: &Objects::local(fresh.path().join("blobs")).unwrap(),
        snapshots: &Objects::local(fresh.path().join("snapshots")).unwrap(),
        log_key: fresh.path().join("log.key"),
        scratch: fresh.path().join("scratch"),
    };
    let err = format!(
        "{:#}",
        backup::restore(&folder, &target, |_| {}).await.unwrap_err()
    );
    assert!(
        err.contains(&blob.path) && err.contains(&blob.sha256),
        "{err}"
    );
    assert!(!fresh.path().join("test.db").exists());
    assert!(walk_files_if_any(&fresh.path().join("blobs")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_backup_under_writes_restores_into_an_empty_database() {
    let Some(url) = pg_url() else { return };
    let schema = pg_schema();
    let Some(app) = TestApp::postgres_in(&schema, |_| {}).await else {
        return;
    };
    let source = wattcounts::store::postgres::PgStore::open(&url, Some(&schema))
        .await
        .unwrap();
    let to = tempfile::tempdir().unwrap();
    let folder = to.path().join("backup");
    // The shared test key, which every test instance signs with; this
    // time in the backup, as `--with-log-key` asks.
    let key_file = app.dir.path().join("log.key");
    let (before, _) =
        backup_under_writes(&app, Database::Postgres(&source), &folder, Some(&key_file)).await;
    let manifest = backup::verify(&folder).unwrap();
    assert_eq!(manifest.source, "postgres");
    assert!(manifest.log_key_included);

    let target_schema = pg_schema();
    let target_store = wattcounts::store::postgres::PgStore::open(&url, Some(&target_schema))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let target = Target {
        database: RestoreDb::Postgres(&target_store),
        blobs: &Objects::local(dir.path().join("blobs")).unwrap(),
        snapshots: &Objects::local(dir.path().join("snapshots")).unwrap(),
        log_key: dir.path().join("log.key"),
        scratch: dir.path().join("scratch"),
    };
    let report = backup::restore(&folder, &target, |_| {}).await.unwrap();
    assert!(report.log_key_restored);
    assert_eq!(
        std::fs::read(dir.path().join("log.key")).unwrap(),
        std::fs::read(&key_file).unwrap()
    );
    let restored = TestApp::with_store_config(Arc::new(target_store), dir, |_| {});
    check_restored(&app, &restored, &manifest, &before).await;
}

/// Tables `db copy` and `db backup` leave out on purpose, each with why.
const NOT_COPIED: &[&str] = &["admin_sessions", "estimator_fits", "rate_counters"];

#[tokio::test]
async fn every_table_is_copied_or_left_out_with_its_reason() {
    let app = TestApp::new().await;
    let raw = app.raw.as_ref().unwrap();
    let RawDb::Sqlite(pool) = raw else {
        unreachable!()
    };
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table'
           AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let copied = wattcounts::store::copy::table_names();
    let left_out: Vec<&str> = wattcounts::store::copy::NOT_COPIED
        .iter()
        .map(|(t, why)| {
            assert!(why.len() > 20, "{t}: say why");
            *t
        })
        .collect();
    assert_eq!(left_out, NOT_COPIED);
    let mut problems = Vec::new();
    for t in &tables {
        let t = t.as_str();
        if !(copied.contains(&t) || left_out.contains(&t) || t == "log_head") {
            problems.push(format!(
                "table {t} is neither copied by db copy / db backup nor left out with a reason"
            ));
        }
        if !copied.contains(&t) {
            continue;
        }
        // Every column, too: a column added by a migration and not copied
        // would be lost by a backup.
        let columns: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT name FROM pragma_table_info('{t}') ORDER BY cid"
        ))
        .fetch_all(pool)
        .await
        .unwrap();
        let listed = wattcounts::store::copy::column_names(t);
        for c in &columns {
            if !listed.contains(&c.as_str()) {
                problems.push(format!("column {t}.{c} is not copied"));
            }
        }
        for c in &listed {
            if !columns.iter().any(|k| k == c) {
                problems.push(format!("{t}.{c} is copied but is no column"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "crates/store/src/copy.rs: {problems:#?}"
    );
}

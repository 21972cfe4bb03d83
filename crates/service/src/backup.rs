//! `db backup` and `db restore`: a deployment's whole state in one folder,
//! whatever its backend.
//!
//! - `wattcounts.db`: the database as one SQLite file, consistent as of one
//!   moment while `serve` keeps writing (SQLite: `VACUUM INTO`; PostgreSQL:
//!   every table read in one REPEATABLE READ transaction);
//! - `blobs/…`: every bundle that copy of the database names, each checked
//!   against its SHA-256 (bundles are written before the row that names
//!   them commits, so all of them exist);
//! - `snapshots/<id>/…`: every published snapshot's files, each checked
//!   against its manifest;
//! - `log.key`: the log's signing key, only when asked (it is a secret;
//!   the manifest always carries its public half);
//! - `backup.json`, written last: format, source, counts, the log's size
//!   and verifier key, and every file's size and SHA-256. A folder without
//!   it is a backup that did not finish.
//!
//! `restore` checks every digest before it writes anything, then fills an
//! empty database (SQLite or PostgreSQL: migrations run, so an older
//! backup is upgraded) and the data dir or bucket.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wattcounts_rules::digest::sha256_hex;

use wattcounts_snapshot::Library;
use wattcounts_store::backup::{PublishedSnapshot, StoredBundle};
use wattcounts_store::blobs::BlobStore;
use wattcounts_store::objects::Objects;
use wattcounts_store::postgres::PgStore;
use wattcounts_store::sqlite::SqliteStore;

pub const FORMAT: &str = "wattcounts-backup/1";
pub const MANIFEST: &str = "backup.json";
pub const DATABASE: &str = "wattcounts.db";
pub const LOG_KEY: &str = "log.key";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackedUpFile {
    /// Relative to the backup folder, `/`-separated.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackupManifest {
    pub format: String,
    /// RFC 3339, UTC: when the database copy began.
    pub created_at: String,
    pub service_version: String,
    /// `sqlite` or `postgres`.
    pub source: String,
    pub database: BackedUpFile,
    /// Rows per table in the database copy.
    pub tables: Vec<(String, u64)>,
    pub submissions: u64,
    /// Leaves in the transparency log of the copy.
    pub log_size: u64,
    /// The log's name and verifier key (its public half), if it has one.
    pub log_origin: Option<String>,
    pub log_verifier_key: Option<String>,
    /// Whether `log.key` (the private key) is in the folder.
    pub log_key_included: bool,
    /// Bundles, then snapshot files.
    pub files: Vec<BackedUpFile>,
}

/// Where a deployment's database is.
pub enum Database<'a> {
    Sqlite(&'a SqliteStore),
    Postgres(&'a PgStore),
}

/// Writes `bytes` to `path` through a temporary file and an fsync, so a
/// crash leaves the old file or the new one.
fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("partial");
    let mut f = std::fs::File::create(&tmp)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(())
}

fn file_entry(root: &Path, rel: &str) -> anyhow::Result<BackedUpFile> {
    let bytes = std::fs::read(root.join(rel))
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", root.join(rel).display()))?;
    Ok(BackedUpFile {
        path: rel.to_string(),
        bytes: bytes.len() as u64,
        sha256: sha256_hex(&bytes),
    })
}

/// Copies the database into `<to>/wattcounts.db` as of one moment.
async fn copy_database(db: &Database<'_>, to: &Path) -> anyhow::Result<()> {
    let target = to.join(DATABASE);
    let partial = to.join(format!("{DATABASE}.partial"));
    match db {
        Database::Sqlite(s) => wattcounts_store::backup::sqlite_into_file(s, &partial).await?,
        Database::Postgres(pg) => {
            wattcounts_store::backup::postgres_into_file(pg, &partial).await?
        }
    }
    std::fs::rename(&partial, &target)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", target.display()))?;
    Ok(())
}

#[derive(Debug, Default)]
pub struct BackupReport {
    pub submissions: u64,
    pub bundles: u64,
    pub snapshot_files: u64,
    pub bytes: u64,
    pub log_size: u64,
}

/// Backs up `db`, its bundles in `blobs` and the snapshots in `library`
/// into the empty (or new) folder `to`; with `log_key`, the signing key
/// too. `progress` hears a line per step.
pub async fn backup(
    db: Database<'_>,
    blobs: &BlobStore,
    library: &Library,
    to: &Path,
    log_key: Option<&Path>,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<BackupReport> {
    if to.exists() && std::fs::read_dir(to)?.next().is_some() {
        anyhow::bail!("{} is not empty: back up into a new folder", to.display());
    }
    std::fs::create_dir_all(to).map_err(|e| anyhow::anyhow!("creating {}: {e}", to.display()))?;
    let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let source = match db {
        Database::Sqlite(_) => "sqlite",
        Database::Postgres(_) => "postgres",
    };
    copy_database(&db, to).await?;
    let database = file_entry(to, DATABASE)?;
    progress(&format!(
        "database copied ({source}): {:.1} MB",
        database.bytes as f64 / 1e6
    ));

    // Everything else is read from the copy (read-only, so its bytes stay
    // as digested), so it names exactly the bundles and snapshots of that
    // moment.
    let contents = wattcounts_store::backup::contents(&to.join(DATABASE)).await?;
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{side}", to.join(DATABASE).display()));
    }
    let bundles = &contents.bundles;
    let snapshots = &contents.snapshots;

    let mut report = BackupReport {
        submissions: bundles.len() as u64,
        log_size: contents.log_size,
        ..Default::default()
    };
    let mut files = Vec::new();
    for (
        i,
        StoredBundle {
            id,
            bundle_sha256: sha256,
            blob_path,
        },
    ) in bundles.iter().enumerate()
    {
        let bytes = blobs.objects().read(blob_path).await.map_err(|e| {
            anyhow::anyhow!("reading the bundle of submission {id} ({blob_path}): {e}")
        })?;
        let got = sha256_hex(&bytes);
        anyhow::ensure!(
            &got == sha256,
            "the bundle of submission {id} ({blob_path}) has SHA-256 {got}; the database says {sha256}: \
             the stored copy is damaged, and a backup of it would be too"
        );
        let rel = format!("blobs/{blob_path}");
        write_file(&to.join(&rel), &bytes)?;
        report.bytes += bytes.len() as u64;
        files.push(BackedUpFile {
            path: rel,
            bytes: bytes.len() as u64,
            sha256: got,
        });
        report.bundles += 1;
        if (i + 1) % 500 == 0 {
            progress(&format!("{} of {} bundles", i + 1, bundles.len()));
        }
    }
    progress(&format!(
        "{} bundles copied ({:.1} MB)",
        report.bundles,
        report.bytes as f64 / 1e6
    ));

    for PublishedSnapshot {
        id,
        manifest,
        manifest_sha256,
    } in snapshots
    {
        let published: wattcounts_rules::snapshot_manifest::Manifest =
            serde_json::from_str(manifest)
                .map_err(|e| anyhow::anyhow!("snapshot {id}: its manifest does not read: {e}"))?;
        let mut wanted = vec![(
            wattcounts_rules::snapshot_manifest::FILE_NAME.to_string(),
            manifest_sha256.clone(),
        )];
        wanted.extend(
            published
                .files
                .iter()
                .map(|f| (f.path.clone(), f.sha256.clone())),
        );
        for (name, sha256) in wanted {
            let stored = format!("{id}/{name}");
            let bytes = library
                .objects()
                .read(&stored)
                .await
                .map_err(|e| anyhow::anyhow!("reading snapshot file {stored}: {e}"))?;
            let got = sha256_hex(&bytes);
            anyhow::ensure!(
                got == sha256,
                "snapshot file {stored} has SHA-256 {got}; its manifest says {sha256}"
            );
            let rel = format!("snapshots/{stored}");
            write_file(&to.join(&rel), &bytes)?;
            report.bytes += bytes.len() as u64;
            report.snapshot_files += 1;
            files.push(BackedUpFile {
                path: rel,
                bytes: bytes.len() as u64,
                sha256: got,
            });
        }
    }
    progress(&format!(
        "{} snapshots ({} files) copied",
        snapshots.len(),
        report.snapshot_files
    ));

    if let Some(key) = log_key {
        let bytes = std::fs::read(key)
            .map_err(|e| anyhow::anyhow!("reading the log key {}: {e}", key.display()))?;
        write_file(&to.join(LOG_KEY), &bytes)?;
        restrict(&to.join(LOG_KEY))?;
        progress("log key copied (keep this folder as secret as the key)");
    }

    let manifest = BackupManifest {
        format: FORMAT.into(),
        created_at,
        service_version: env!("CARGO_PKG_VERSION").into(),
        source: source.into(),
        database,
        tables: contents.tables,
        submissions: report.submissions,
        log_size: report.log_size,
        log_origin: contents.log_origin,
        log_verifier_key: contents.log_verifier_key,
        log_key_included: log_key.is_some(),
        files,
    };
    write_file(
        &to.join(MANIFEST),
        &serde_json::to_vec_pretty(&manifest).expect("plain data serialises"),
    )?;
    Ok(report)
}

fn restrict(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| anyhow::anyhow!("restricting {}: {e}", path.display()))
}

/// Reads and checks a backup folder: its manifest, the database's and
/// every file's size and SHA-256. Nothing is written.
pub fn verify(from: &Path) -> anyhow::Result<BackupManifest> {
    let text = std::fs::read(from.join(MANIFEST)).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; a folder without {MANIFEST} is a backup that did not finish",
            from.join(MANIFEST).display()
        )
    })?;
    let manifest: BackupManifest = serde_json::from_slice(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", from.join(MANIFEST).display()))?;
    anyhow::ensure!(
        manifest.format == FORMAT,
        "{}: format {} is not {FORMAT}",
        from.join(MANIFEST).display(),
        manifest.format
    );
    for want in std::iter::once(&manifest.database).chain(&manifest.files) {
        anyhow::ensure!(
            !want.path.split('/').any(|p| p == ".." || p.is_empty()) && !want.path.starts_with('/'),
            "{MANIFEST} lists the path {:?}, which leaves the backup folder",
            want.path
        );
        let got = file_entry(from, &want.path)?;
        anyhow::ensure!(
            got.sha256 == want.sha256 && got.bytes == want.bytes,
            "{}: {} bytes with SHA-256 {}; {MANIFEST} says {} bytes with SHA-256 {}",
            want.path,
            got.bytes,
            got.sha256,
            want.bytes,
            want.sha256
        );
    }
    if manifest.log_key_included {
        anyhow::ensure!(
            from.join(LOG_KEY).is_file(),
            "{MANIFEST} says the log key is included, but {LOG_KEY} is missing"
        );
    }
    Ok(manifest)
}

/// The database a restore fills.
pub enum RestoreDb<'a> {
    /// A new SQLite file (it must not exist yet).
    SqliteFile(&'a Path),
    /// An empty PostgreSQL database, opened (so migrated).
    Postgres(&'a PgStore),
}

/// Where a restore writes.
pub struct Target<'a> {
    pub database: RestoreDb<'a>,
    pub blobs: &'a Objects,
    pub snapshots: &'a Objects,
    /// Where the log key goes when the backup holds it (`<data-dir>/log.key`).
    pub log_key: PathBuf,
    /// A local folder for the database's working copy (PostgreSQL).
    pub scratch: PathBuf,
}

#[derive(Debug)]
pub struct RestoreReport {
    pub manifest: BackupManifest,
    pub files: u64,
    pub log_key_restored: bool,
}

/// Restores the backup in `from` into `target`, after [`verify`] passed.
pub async fn restore(
    from: &Path,
    target: &Target<'_>,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<RestoreReport> {
    let manifest = verify(from)?;
    progress(&format!(
        "backup of {} checked: {} submissions, {} files, log of {} leaves",
        manifest.created_at,
        manifest.submissions,
        manifest.files.len(),
        manifest.log_size
    ));
    match &target.database {
        RestoreDb::SqliteFile(path) => {
            anyhow::ensure!(
                !path.exists(),
                "{} exists: restore into a new database file (or move it away first)",
                path.display()
            );
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::copy(from.join(DATABASE), path)
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
            // Opening migrates a backup made by an older version.
            SqliteStore::open(&format!("sqlite:{}", path.display()))
                .await?
                .pool()
                .close()
                .await;
        }
        RestoreDb::Postgres(pg) => {
            wattcounts_store::backup::file_into_postgres(
                &from.join(DATABASE),
                &target.scratch,
                pg.pool(),
            )
            .await?
        }
    }
    progress("database restored");

    let mut files = 0;
    for f in &manifest.files {
        let (objects, name) = if let Some(name) = f.path.strip_prefix("blobs/") {
            (target.blobs, name)
        } else if let Some(name) = f.path.strip_prefix("snapshots/") {
            (target.snapshots, name)
        } else {
            anyhow::bail!("{MANIFEST} lists {}, outside blobs/ and snapshots/", f.path);
        };
        // put_file moves a local file into place: hand it a copy, so the
        // backup stays whole.
        std::fs::create_dir_all(&target.scratch)?;
        let staged = target.scratch.join("restoring");
        std::fs::copy(from.join(&f.path), &staged)
            .map_err(|e| anyhow::anyhow!("copying {}: {e}", f.path))?;
        objects
            .put_file(name, &staged)
            .await
            .map_err(|e| anyhow::anyhow!("writing {name} into {}: {e}", objects.describe()))?;
        let _ = std::fs::remove_file(&staged);
        files += 1;
    }
    progress(&format!("{files} bundles and snapshot files restored"));

    let mut log_key_restored = false;
    if manifest.log_key_included && !target.log_key.exists() {
        let bytes = std::fs::read(from.join(LOG_KEY))?;
        write_file(&target.log_key, &bytes)?;
        restrict(&target.log_key)?;
        log_key_restored = true;
    }
    Ok(RestoreReport {
        manifest,
        files,
        log_key_restored,
    })
}

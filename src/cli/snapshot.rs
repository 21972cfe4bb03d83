//! `snapshot create|list` (maintainers) and `verify snapshot` (anyone).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use wattcounts_snapshot::{self as snapshot, Library};
use wattcounts_store::blobs::BlobStore;

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Publish an immutable snapshot of the accepted data: runs, configurations
    /// (Parquet + CSV), submissions.csv, a dataset card, CITATION.cff and
    /// manifest.json, in <data-dir>/snapshots/<id>/ (or the --blob-url
    /// bucket). The running service lists it at once.
    Create(CreateArgs),
    /// List the published snapshots, newest first.
    List(StorageArgs),
}

#[derive(Debug, Args)]
pub struct StorageArgs {
    /// The service's data folder (snapshots go to <data-dir>/snapshots).
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Database URL; defaults to sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    /// The service's bucket, s3://BUCKET[/PREFIX], when bundles and
    /// snapshots are kept there (AWS_* variables as for serve).
    #[arg(long, env = "WATTCOUNTS_BLOB_URL")]
    pub blob_url: Option<String>,
}

impl StorageArgs {
    async fn open(
        &self,
    ) -> anyhow::Result<(
        std::sync::Arc<dyn wattcounts_store::Store>,
        BlobStore,
        Library,
    )> {
        let url =
            crate::config::existing_database_url(&self.data_dir, self.database_url.as_deref())?;
        let store = wattcounts_store::open(&url).await?;
        let (blobs, library) =
            crate::config::file_stores(&self.data_dir, self.blob_url.as_deref())?;
        // Folders published before the database listed snapshots.
        library.import_folders(store.as_ref()).await?;
        Ok((store, blobs, library))
    }
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Also write power_traces-<gpu>.parquet (one per GPU): every 10 Hz power sample, read back
    /// from the stored bundles (about 10× the size of the rest).
    #[arg(long)]
    pub traces: bool,
    /// The service's public origin, for links in the card and CITATION.cff.
    #[arg(long, env = "WATTCOUNTS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Who publishes it, recorded in the manifest.
    #[arg(long, default_value = "maintainer (command line)")]
    pub by: String,
    /// The transparency log's key (the service's --log-key-file); defaults
    /// to <data-dir>/log.key. The snapshot records a checkpoint signed with it.
    #[arg(long, env = "WATTCOUNTS_LOG_KEY_FILE")]
    pub log_key_file: Option<PathBuf>,
}

fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

pub async fn run(cmd: SnapshotCommand) -> anyhow::Result<()> {
    match cmd {
        SnapshotCommand::Create(a) => {
            let data_dir = &a.storage.data_dir;
            let (store, blobs, library) = a.storage.open().await?;
            let key_path = a
                .log_key_file
                .clone()
                .unwrap_or_else(|| data_dir.join("log.key"));
            let key = crate::config::load_log_key(&key_path, "", false)?;
            if let Some((origin, recorded)) = store.log_key().await? {
                anyhow::ensure!(
                    recorded == key.verifier_key(),
                    "{} holds the key {}, but the database's log '{origin}' is signed with {recorded}",
                    key_path.display(),
                    key.verifier_key()
                );
            }
            let options = snapshot::Options {
                traces: a.traces,
                created_by: a.by.clone(),
                public_url: a.public_url.clone(),
                log_key: Some(std::sync::Arc::new(key)),
                estimator: None,
            };
            let start = std::time::Instant::now();
            let created =
                snapshot::create(store.as_ref(), &blobs, &library, &options, move |line| {
                    eprintln!("[{:>6.1} s] {line}", start.elapsed().as_secs_f64())
                })
                .await?;
            let m = &created.published.manifest;
            println!("snapshot {}", m.snapshot_id);
            for f in &m.files {
                println!(
                    "  {:<24} {:>10} {:>12}  sha256 {}",
                    f.path,
                    f.rows.map_or(String::new(), |r| format!("{r} rows")),
                    mb(f.bytes),
                    f.sha256
                );
            }
            println!(
                "  {:<24} {:>10} {:>12}  sha256 {}  (cite this)",
                "manifest.json",
                "",
                mb(created.published.manifest_bytes),
                created.published.manifest_sha256
            );
            println!(
                "total {} in {:.2} s (reading the database {:.2} s, writing {:.2} s)",
                mb(m.total_bytes() + created.published.manifest_bytes),
                (created.read_time + created.write_time).as_secs_f64(),
                created.read_time.as_secs_f64(),
                created.write_time.as_secs_f64()
            );
            Ok(())
        }
        SnapshotCommand::List(a) => {
            if a.database_url.is_none() && !crate::config::sqlite_path(&a.data_dir).exists() {
                println!(
                    "no snapshots in {} (no database yet)",
                    a.data_dir.join("snapshots").display()
                );
                return Ok(());
            }
            let (store, _, library) = a.open().await?;
            let list = library.list(store.as_ref()).await?;
            if list.is_empty() {
                println!("no snapshots in {}", library.objects().describe());
            }
            for p in list {
                let m = &p.manifest;
                println!(
                    "{}  {}  {} submissions, {} iterations{}  {}  manifest sha256 {}",
                    m.snapshot_id,
                    m.created_at,
                    m.coverage.submissions,
                    m.coverage.iterations,
                    if m.includes_power_traces {
                        ", traces"
                    } else {
                        ""
                    },
                    mb(m.total_bytes()),
                    p.manifest_sha256
                );
            }
            Ok(())
        }
    }
}

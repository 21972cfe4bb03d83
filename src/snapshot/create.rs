//! Creating a snapshot: read the accepted data in one transaction, write
//! every file into an unfinished folder, fsync, and rename the folder into
//! place. A crash at any point leaves no folder under a snapshot id.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::card::{self, CardInput};
use super::columns::{self, ColumnDoc, RunRow};
use super::library::{Library, Published};
use super::manifest::{self, ColumnEntry, Coverage, FileEntry, Manifest};
use super::tables::{self, Target, Written};
use crate::leaderboard::{self, Entry};
use crate::store::blobs::BlobStore;
use crate::store::{SnapshotSource, Store};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Also write `power_traces.parquet` (read back from the stored bundles).
    pub traces: bool,
    /// Who asked for it (a maintainer's name), recorded in the manifest.
    pub created_by: String,
    /// The service's public origin, for the card and citation.
    pub public_url: Option<String>,
}

/// A finished snapshot and how long its parts took.
#[derive(Debug, Clone)]
pub struct Created {
    pub published: Published,
    pub read_time: Duration,
    pub write_time: Duration,
}

/// Test hook: `WATTCOUNTS_CRASH_AT=<point>` aborts the process there, as a
/// power cut or `kill -9` would, so tests can prove nothing partial remains.
fn crash_point(point: &str) {
    if std::env::var("WATTCOUNTS_CRASH_AT").is_ok_and(|v| v == point) {
        eprintln!("WATTCOUNTS_CRASH_AT={point}: aborting");
        std::process::abort();
    }
}

/// Reads the accepted data and writes a snapshot. `progress` hears each
/// step, for a command line or a log.
pub async fn create(
    store: &dyn Store,
    blobs: &BlobStore,
    library: &Library,
    options: &Options,
    progress: impl FnMut(&str) + Send + 'static,
) -> anyhow::Result<Created> {
    let started = Instant::now();
    let source = store.snapshot_source().await?;
    let read_time = started.elapsed();
    let blobs = blobs.clone();
    let library = library.clone();
    let options = options.clone();
    let published = tokio::task::spawn_blocking(move || {
        write(&source, &blobs, &library, &options, Utc::now(), progress)
    })
    .await??;
    Ok(Created {
        published,
        read_time,
        write_time: started.elapsed() - read_time,
    })
}

/// The leaderboard's rows for every accepted configuration, by model,
/// scenario, arrival rate and energy per token.
fn configuration_rows(source: &SnapshotSource) -> Vec<Entry> {
    let (mut rows, _) = leaderboard::build(
        &source.configurations,
        &leaderboard::Query {
            include_review: false,
            include_demo: true,
            per_page: usize::MAX,
            ..Default::default()
        },
    );
    rows.sort_by(|a, b| {
        a.model
            .cmp(&b.model)
            .then(a.scenario.as_str().cmp(b.scenario.as_str()))
            .then(
                a.lambda_qps
                    .unwrap_or(0.0)
                    .total_cmp(&b.lambda_qps.unwrap_or(0.0)),
            )
            .then(a.energy_per_token_j.total_cmp(&b.energy_per_token_j))
            .then(a.gpu_id.cmp(&b.gpu_id))
    });
    rows
}

fn coverage(source: &SnapshotSource, configurations: usize) -> Coverage {
    let gpus: BTreeSet<&str> = source
        .submissions
        .iter()
        .map(|s| s.gpu_name.as_str())
        .collect();
    let models: BTreeSet<&str> = source.runs.iter().map(|(_, r)| r.model.as_str()).collect();
    Coverage {
        submissions: source.submissions.len() as u64,
        demo_submissions: source.submissions.iter().filter(|s| s.is_demo).count() as u64,
        gpus: gpus.len() as u64,
        models: models.len() as u64,
        iterations: source.runs.len() as u64,
        configurations: configurations as u64,
        power_samples: source.runs.iter().map(|(_, r)| r.power_samples).sum(),
    }
}

fn entry(name: &str, written: Written, docs: &[ColumnDoc]) -> FileEntry {
    FileEntry {
        path: name.to_string(),
        media_type: manifest::media_type(name).to_string(),
        bytes: written.bytes,
        sha256: written.sha256,
        rows: written.rows,
        columns: docs
            .iter()
            .map(|c| ColumnEntry {
                name: c.name.to_string(),
                kind: c.kind.arrow_name().to_string(),
                unit: c.unit.to_string(),
            })
            .collect(),
    }
}

/// The data files written so far, with what each holds and its columns.
struct Files<'a> {
    dir: &'a Path,
    files: Vec<(FileEntry, &'static str, &'a [ColumnDoc])>,
}

impl<'a> Files<'a> {
    /// Writes one table as Parquet or CSV (by the name's extension).
    fn table<R>(
        &mut self,
        name: &str,
        what: &'static str,
        fields: &[columns::Field<R>],
        docs: &'a [ColumnDoc],
        rows: &[R],
    ) -> anyhow::Result<()> {
        let path = self.dir.join(name);
        let written = if name.ends_with(".parquet") {
            tables::write_parquet(&mut tables::frame(fields, rows, Target::Parquet)?, &path)?
        } else {
            tables::write_csv(&mut tables::frame(fields, rows, Target::Csv)?, &path)?
        };
        self.files.push((entry(name, written, docs), what, docs));
        Ok(())
    }
}

fn make_read_only(path: &Path) -> std::io::Result<()> {
    let mut perms = std::fs::metadata(path)?.permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(path, perms)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn write(
    source: &SnapshotSource,
    blobs: &BlobStore,
    library: &Library,
    options: &Options,
    now: DateTime<Utc>,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<Published> {
    library.remove_stale()?;
    let (id, tmp) = library.reserve(&format!("wc-{}", now.format("%Y%m%dT%H%M%SZ")))?;
    let result = write_into(source, blobs, options, now, &id, &tmp, &mut progress);
    if result.is_err() {
        // An error (not a crash): take the unfinished folder away now.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result?;
    crash_point("snapshot-before-rename");
    let dir = library.root().join(&id);
    std::fs::rename(&tmp, &dir)?;
    sync_dir(library.root())?;
    progress(&format!("published {}", dir.display()));
    library
        .get(&id)?
        .ok_or_else(|| anyhow::anyhow!("snapshot {id} vanished after its rename"))
}

fn write_into(
    source: &SnapshotSource,
    blobs: &BlobStore,
    options: &Options,
    now: DateTime<Utc>,
    id: &str,
    tmp: &Path,
    progress: &mut impl FnMut(&str),
) -> anyhow::Result<()> {
    let by_id: HashMap<uuid::Uuid, &crate::store::SubmissionRecord> =
        source.submissions.iter().map(|s| (s.id, s)).collect();
    let run_rows = source
        .runs
        .iter()
        .map(|(sid, run)| {
            let submission = by_id
                .get(sid)
                .ok_or_else(|| anyhow::anyhow!("run of unknown submission {sid}"))?;
            Ok(RunRow { submission, run })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let configurations = configuration_rows(source);
    let coverage = coverage(source, configurations.len());
    progress(&format!(
        "{id}: {} accepted submissions, {} iterations, {} configurations",
        coverage.submissions, coverage.iterations, coverage.configurations
    ));

    let run_fields = columns::runs();
    let config_fields = columns::configurations();
    let submission_fields = columns::submissions();
    let run_docs = columns::docs(&run_fields);
    let config_docs = columns::docs(&config_fields);
    let submission_docs = columns::docs(&submission_fields);

    let mut out = Files {
        dir: tmp,
        files: Vec::new(),
    };
    out.table(
        "runs.parquet",
        "One row per measured iteration.",
        &run_fields,
        &run_docs,
        &run_rows,
    )?;
    crash_point("snapshot-after-runs");
    out.table(
        "runs.csv",
        "The same rows as runs.parquet.",
        &run_fields,
        &run_docs,
        &run_rows,
    )?;
    progress(&format!("runs: {} rows", run_rows.len()));
    let what = "The leaderboard: one row per GPU × model × scenario × arrival rate.";
    out.table(
        "configurations.parquet",
        what,
        &config_fields,
        &config_docs,
        &configurations,
    )?;
    let what = "The same rows as configurations.parquet.";
    out.table(
        "configurations.csv",
        what,
        &config_fields,
        &config_docs,
        &configurations,
    )?;
    let what = "Provenance: one row per accepted submission.";
    out.table(
        "submissions.csv",
        what,
        &submission_fields,
        &submission_docs,
        &source.submissions,
    )?;
    progress(&format!(
        "configurations: {} rows; submissions: {} rows",
        configurations.len(),
        source.submissions.len()
    ));
    let mut files = out.files;

    if options.traces {
        let total = source.submissions.len();
        let written = super::traces::write(
            blobs,
            &source.submissions,
            &tmp.join("power_traces.parquet"),
            |done| progress(&format!("power traces: {done}/{total} submissions")),
        )?;
        anyhow::ensure!(
            written.rows == Some(coverage.power_samples),
            "the stored bundles hold {:?} power samples, the database {}",
            written.rows,
            coverage.power_samples
        );
        files.push((
            entry("power_traces.parquet", written, columns::POWER_TRACES),
            "Every 10 Hz GPU power sample, long format.",
            columns::POWER_TRACES,
        ));
    }

    let created_at = crate::store::ts(&now);
    let mut handles: BTreeMap<String, u64> = BTreeMap::new();
    for s in &source.submissions {
        *handles.entry(s.handle.clone()).or_default() += 1;
    }
    let card_input = CardInput {
        snapshot_id: id,
        created_at: &created_at,
        service_version: env!("CARGO_PKG_VERSION"),
        url: options
            .public_url
            .as_ref()
            .map(|u| format!("{}/snapshots/{id}", u.trim_end_matches('/'))),
        coverage,
        submitters: handles.into_iter().collect(),
        files: files
            .iter()
            .map(|(f, what, docs)| (f, *what, *docs))
            .collect(),
    };
    let readme = tables::write_bytes(&tmp.join("README.md"), card::readme(&card_input).as_bytes())?;
    let citation = tables::write_bytes(
        &tmp.join("CITATION.cff"),
        card::citation(&card_input).as_bytes(),
    )?;
    drop(card_input);
    let mut entries: Vec<FileEntry> = files.into_iter().map(|(f, _, _)| f).collect();
    entries.push(entry("README.md", readme, &[]));
    entries.push(entry("CITATION.cff", citation, &[]));

    let manifest = Manifest {
        format: manifest::FORMAT.to_string(),
        snapshot_id: id.to_string(),
        created_at,
        created_by: options.created_by.clone(),
        service_version: env!("CARGO_PKG_VERSION").to_string(),
        includes_power_traces: options.traces,
        coverage,
        files: entries,
    };
    let mut json = serde_json::to_vec_pretty(&manifest)?;
    json.push(b'\n');
    tables::write_bytes(&tmp.join(manifest::FILE_NAME), &json)?;
    for f in manifest
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain([manifest::FILE_NAME])
    {
        make_read_only(&tmp.join(f))?;
    }
    sync_dir(tmp)?;
    Ok(())
}

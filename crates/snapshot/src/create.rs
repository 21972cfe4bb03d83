//! Creating a snapshot: reserve its id, read the accepted data in one
//! transaction, write every file into an unfinished folder, fsync, put the
//! files in place (manifest last) and mark it published (see `library`). A
//! crash at any point leaves nothing listed under a snapshot id.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::card::{self, CardInput};
use super::columns::{self, ColumnDoc, RunRow};
use super::library::{Library, Published};
use super::manifest::{self, ColumnEntry, Coverage, FileEntry, Manifest};
use super::tables::{self, DigestFile, Target, Written};
use tokio::sync::mpsc::Receiver;
use wattcounts_store::blobs::BlobStore;
use wattcounts_store::{SnapshotPart, Store, SubmissionRecord};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Also write `power_traces.parquet` (read back from the stored bundles).
    pub traces: bool,
    /// Who asked for it (a maintainer's name), recorded in the manifest.
    pub created_by: String,
    /// The service's public origin, for the card and citation.
    pub public_url: Option<String>,
    /// The transparency log's key: the snapshot records a checkpoint,
    /// signed with it, of the log as the snapshot's read saw it.
    pub log_key: Option<std::sync::Arc<wattcounts_rules::tlog::checkpoint::LogKey>>,
    /// The card's section on the energy estimator fitted on this data (its
    /// version and validation table), Markdown; the service fills it in.
    pub estimator: Option<String>,
}

/// The checkpoint the newest earlier snapshot covers.
#[derive(Debug, Clone)]
struct Previous {
    snapshot_id: String,
    size: u64,
    checkpoint: String,
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

/// Runs read from the database per batch: what the snapshot holds in
/// memory at once, whatever the dataset's size.
pub const RUN_BATCH: usize = 50_000;

/// Reads the accepted data and writes a snapshot. `progress` hears each
/// step, for a command line or a log. The store streams the runs into the
/// writer through a bounded channel, so memory stays flat.
pub async fn create(
    store: &dyn Store,
    blobs: &BlobStore,
    library: &Library,
    options: &Options,
    progress: impl FnMut(&str) + Send + 'static,
) -> anyhow::Result<Created> {
    let started = Instant::now();
    anyhow::ensure!(
        options.log_key.is_some(),
        "a snapshot records a signed log checkpoint: the log key is needed (--log-key-file, or the data dir's log.key)"
    );
    // Whatever was stored before the log existed gets its leaf first, so
    // every submission in the snapshot is in the log it records.
    store.backfill_log().await?;
    library.remove_stale(store).await?;
    let previous = library.list(store).await?.into_iter().find_map(|p| {
        p.manifest.log.map(|l| Previous {
            snapshot_id: p.manifest.snapshot_id,
            size: l.size,
            checkpoint: l.checkpoint,
        })
    });
    let previous_size = previous.as_ref().map(|p| p.size);
    let now = Utc::now();
    let (id, tmp) = library
        .reserve(store, &format!("wc-{}", now.format("%Y%m%dT%H%M%SZ")))
        .await?;
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let writer = {
        let (blobs, options, id, tmp) = (blobs.clone(), options.clone(), id.clone(), tmp.clone());
        tokio::task::spawn_blocking(move || {
            let mut progress = progress;
            let done = write_into(
                rx,
                &blobs,
                &options,
                previous,
                now,
                &id,
                &tmp,
                &mut progress,
            );
            (done, progress)
        })
    };
    let read = store.snapshot_source(tx, RUN_BATCH, previous_size).await;
    let read_time = started.elapsed();
    let (written, mut progress) = writer.await?;
    // Whichever side failed first says why: a failed read ends the stream
    // early (the writer then refuses to publish), a failed write stops the
    // read.
    let outcome = match (read, written) {
        (Ok(()), w) => w,
        (Err(_), Ok(_)) => Err(anyhow::anyhow!(
            "the snapshot was written from an unfinished read"
        )),
        (Err(r), Err(w)) if w.to_string().starts_with("the database read") => Err(r.into()),
        (Err(_), Err(w)) => Err(w),
    };
    if let Err(e) = outcome {
        // An error (not a crash): take the unfinished work away now.
        library.abandon(store, &id, &tmp).await;
        return Err(e);
    }
    crash_point("snapshot-before-rename");
    let published = match library.publish(store, &id, &tmp).await {
        Ok(p) => p,
        Err(e) => {
            library.abandon(store, &id, &tmp).await;
            return Err(e);
        }
    };
    progress(&format!(
        "published {id} in {}",
        library.objects().describe()
    ));
    Ok(Created {
        published,
        read_time,
        write_time: started.elapsed().saturating_sub(read_time),
    })
}

/// What the files hold, counted while the runs stream past.
#[derive(Default)]
struct Tally {
    iterations: u64,
    power_samples: u64,
    models: BTreeSet<String>,
}

fn coverage(submissions: &[SubmissionRecord], tally: &Tally, configurations: usize) -> Coverage {
    let gpus: BTreeSet<&str> = submissions.iter().map(|s| s.gpu_name.as_str()).collect();
    Coverage {
        submissions: submissions.len() as u64,
        demo_submissions: submissions.iter().filter(|s| s.is_demo).count() as u64,
        gpus: gpus.len() as u64,
        models: tally.models.len() as u64,
        iterations: tally.iterations,
        configurations: configurations as u64,
        power_samples: tally.power_samples,
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

/// The next part of the stream, which must be there.
fn next_part(rx: &mut Receiver<SnapshotPart>, what: &str) -> anyhow::Result<SnapshotPart> {
    rx.blocking_recv()
        .ok_or_else(|| anyhow::anyhow!("the database read ended before {what}"))
}

/// runs.parquet and runs.csv, written batch by batch as the rows arrive.
struct RunFiles<'a> {
    parquet: polars::io::parquet::write::BatchedWriter<&'a mut DigestFile>,
    csv: polars::io::csv::write::BatchedWriter<&'a mut DigestFile>,
}

#[allow(clippy::too_many_arguments)]
fn write_into(
    mut rx: Receiver<SnapshotPart>,
    blobs: &BlobStore,
    options: &Options,
    previous: Option<Previous>,
    now: DateTime<Utc>,
    id: &str,
    tmp: &Path,
    progress: &mut impl FnMut(&str),
) -> anyhow::Result<()> {
    let rx = &mut rx;
    let SnapshotPart::Submissions(submissions) = next_part(rx, "the submissions")? else {
        anyhow::bail!("the database read sent its parts out of order");
    };
    let SnapshotPart::Groups(configurations) = next_part(rx, "the groups")? else {
        anyhow::bail!("the database read sent its parts out of order");
    };
    let by_id: HashMap<uuid::Uuid, &SubmissionRecord> =
        submissions.iter().map(|s| (s.id, s)).collect();
    progress(&format!(
        "{id}: {} accepted submissions, {} configurations; streaming runs",
        submissions.len(),
        configurations.len()
    ));

    let run_fields = columns::runs();
    let config_fields = columns::configurations();
    let submission_fields = columns::submissions();
    let run_docs = columns::docs(&run_fields);
    let config_docs = columns::docs(&config_fields);
    let submission_docs = columns::docs(&submission_fields);

    let mut tally = Tally::default();
    let log_head;
    let mut parquet_file = DigestFile::create(&tmp.join("runs.parquet"))?;
    let mut csv_file = DigestFile::create(&tmp.join("runs.csv"))?;
    {
        let empty: Vec<RunRow> = Vec::new();
        let fields = columns::runs();
        let pq_schema = tables::frame(&fields, &empty, Target::Parquet)?
            .schema()
            .clone();
        let csv_schema = tables::frame(&fields, &empty, Target::Csv)?
            .schema()
            .clone();
        let mut out = RunFiles {
            parquet: tables::parquet_writer(&mut parquet_file, &pq_schema).batched(&pq_schema)?,
            csv: tables::csv_writer(&mut csv_file).batched(&csv_schema)?,
        };
        loop {
            match next_part(rx, "the end of the runs")? {
                SnapshotPart::Runs(batch) => {
                    let rows = batch
                        .iter()
                        .map(|(sid, run)| {
                            let submission = by_id.get(sid).ok_or_else(|| {
                                anyhow::anyhow!("run of unknown submission {sid}")
                            })?;
                            Ok(RunRow { submission, run })
                        })
                        .collect::<anyhow::Result<Vec<_>>>()?;
                    for (_, r) in &batch {
                        tally.iterations += 1;
                        tally.power_samples += r.power_samples;
                        if !tally.models.contains(&r.model) {
                            tally.models.insert(r.model.clone());
                        }
                    }
                    // The fields borrow this batch's rows: one list per batch.
                    let fields = columns::runs();
                    out.parquet
                        .write_batch(&tables::frame(&fields, &rows, Target::Parquet)?)?;
                    out.csv
                        .write_batch(&tables::frame(&fields, &rows, Target::Csv)?)?;
                    progress(&format!("runs: {} rows", tally.iterations));
                }
                SnapshotPart::LogHead {
                    size,
                    root,
                    consistency,
                } => {
                    log_head = (size, root, consistency);
                    break;
                }
                _ => anyhow::bail!("the database read sent its parts out of order"),
            }
        }
        out.parquet.finish()?;
        out.csv.finish()?;
    }
    let runs_parquet = parquet_file.finish(Some(tally.iterations))?;
    crash_point("snapshot-after-runs");
    let runs_csv = csv_file.finish(Some(tally.iterations))?;
    let log_file = write_log(rx, tmp, &log_head, progress)?;
    let coverage = coverage(&submissions, &tally, configurations.len());

    let mut out = Files {
        dir: tmp,
        files: vec![
            (
                entry("runs.parquet", runs_parquet, &run_docs),
                "One row per measured iteration.",
                &run_docs[..],
            ),
            (
                entry("runs.csv", runs_csv, &run_docs),
                "The same rows as runs.parquet.",
                &run_docs[..],
            ),
        ],
    };
    let what = "The leaderboard: one row per group (GPU × model × scenario × arrival rate × protocol × origin).";
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
        &submissions,
    )?;
    // The catalogue rows of the GPUs the submissions ran on: what their
    // checks read (TDP, idle power) and the estimator's features.
    let gpu_fields = columns::gpus();
    let gpu_docs = columns::docs(&gpu_fields);
    let on: std::collections::BTreeSet<String> = submissions.iter().map(columns::gpu_id).collect();
    let gpus: Vec<wattcounts_rules::catalog::GpuSpec> = wattcounts_rules::catalog::gpus()
        .iter()
        .filter(|g| on.contains(&g.id))
        .cloned()
        .collect();
    out.table(
        "gpus.csv",
        "The GPU catalogue's rows for the GPUs in this snapshot (TDP, idle power, memory and compute figures the checks and the estimator read), shipped or added by a maintainer, each with its source.",
        &gpu_fields,
        &gpu_docs,
        &gpus,
    )?;
    progress(&format!(
        "configurations: {} rows; submissions: {} rows",
        configurations.len(),
        submissions.len()
    ));
    let mut files = out.files;

    if options.traces {
        // One file per GPU: each stays a size a reader can open whole.
        let mut by_gpu: BTreeMap<String, Vec<SubmissionRecord>> = BTreeMap::new();
        for s in &submissions {
            by_gpu
                .entry(columns::gpu_id(s))
                .or_default()
                .push(s.clone());
        }
        let total = submissions.len();
        let mut done = 0usize;
        let mut samples = 0u64;
        for (gpu, subs) in &by_gpu {
            let name = format!("power_traces-{gpu}.parquet");
            let written = super::traces::write(blobs, subs, &tmp.join(&name), |n| {
                progress(&format!("power traces: {}/{total} submissions", done + n))
            })?;
            done += subs.len();
            samples += written.rows.unwrap_or(0);
            files.push((
                entry(&name, written, columns::POWER_TRACES),
                "Every 10 Hz GPU power sample of one GPU's submissions, long format.",
                columns::POWER_TRACES,
            ));
        }
        anyhow::ensure!(
            samples == coverage.power_samples,
            "the stored bundles hold {samples} power samples, the database {}",
            coverage.power_samples
        );
    }

    files.push((
        entry(manifest::LOG_ENTRIES_FILE, log_file, &[]),
        "The transparency log's leaves (RFC 8785 JSON), one per line in index order, up to the signed checkpoint in manifest.json; submissions.csv's log_index points into it.",
        &[],
    ));

    let created_at = wattcounts_rules::timestamp::ts(&now);
    let mut handles: BTreeMap<String, u64> = BTreeMap::new();
    for s in &submissions {
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
        estimator: options.estimator.clone(),
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
    let readme = entry("README.md", readme, &[]);
    let citation = entry("CITATION.cff", citation, &[]);
    let mut croissant_json = serde_json::to_vec_pretty(&super::croissant::document(
        &card_input,
        &[
            (&readme.path, readme.bytes, &readme.sha256),
            (&citation.path, citation.bytes, &citation.sha256),
        ],
    ))?;
    croissant_json.push(b'\n');
    let croissant = tables::write_bytes(&tmp.join(super::croissant::FILE_NAME), &croissant_json)?;
    drop(card_input);
    let mut entries: Vec<FileEntry> = files.into_iter().map(|(f, _, _)| f).collect();
    entries.push(readme);
    entries.push(citation);
    entries.push(entry(super::croissant::FILE_NAME, croissant, &[]));
    let log = snapshot_log(options, previous, log_head)?;

    let manifest = Manifest {
        format: manifest::FORMAT.to_string(),
        snapshot_id: id.to_string(),
        created_at,
        created_by: options.created_by.clone(),
        service_version: env!("CARGO_PKG_VERSION").to_string(),
        includes_power_traces: options.traces,
        coverage,
        files: entries,
        log: Some(log),
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

/// log.jsonl: the log's leaves, one per line in index order, streamed from
/// the read and checked against the root the database holds.
fn write_log(
    rx: &mut Receiver<SnapshotPart>,
    tmp: &Path,
    head: &(
        u64,
        wattcounts_rules::tlog::Hash,
        Option<wattcounts_rules::tlog::TreeProof>,
    ),
    progress: &mut impl FnMut(&str),
) -> anyhow::Result<Written> {
    use std::io::Write;
    let mut file = DigestFile::create(&tmp.join(manifest::LOG_ENTRIES_FILE))?;
    let mut tree = wattcounts_rules::tlog::RootBuilder::default();
    loop {
        match next_part(rx, "the end of the log")? {
            SnapshotPart::LogEntries(leaves) => {
                for leaf in &leaves {
                    anyhow::ensure!(!leaf.contains('\n'), "a log leaf holds a line break");
                    tree.push(leaf.as_bytes());
                    file.write_all(leaf.as_bytes())?;
                    file.write_all(b"\n")?;
                }
            }
            SnapshotPart::Done => break,
            _ => anyhow::bail!("the database read sent its parts out of order"),
        }
    }
    anyhow::ensure!(
        tree.size() == head.0 && tree.root() == head.1,
        "the log's stored leaves ({}) do not hash to its stored root (size {}): the log tables disagree",
        tree.size(),
        head.0
    );
    progress(&format!("log: {} leaves", tree.size()));
    Ok(file.finish(Some(tree.size()))?)
}

/// The checkpoint the snapshot records, signed now, and the proof that
/// the log extends the previous snapshot's.
fn snapshot_log(
    options: &Options,
    previous: Option<Previous>,
    (size, root, consistency): (
        u64,
        wattcounts_rules::tlog::Hash,
        Option<wattcounts_rules::tlog::TreeProof>,
    ),
) -> anyhow::Result<manifest::SnapshotLog> {
    use base64::prelude::{Engine, BASE64_STANDARD};
    let key = options
        .log_key
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("no log key"))?;
    let checkpoint = String::from_utf8(
        key.sign_checkpoint(size, root)
            .map_err(anyhow::Error::msg)?,
    )?;
    let previous = previous.map(|p| manifest::PreviousLog {
        consistency: consistency
            .iter()
            .flatten()
            .map(|h| BASE64_STANDARD.encode(h.0))
            .collect(),
        snapshot_id: p.snapshot_id,
        size: p.size,
        checkpoint: p.checkpoint,
    });
    Ok(manifest::SnapshotLog {
        origin: key.origin().to_string(),
        verifier_key: key.verifier_key().to_string(),
        size,
        root: BASE64_STANDARD.encode(root.0),
        checkpoint,
        entries_file: manifest::LOG_ENTRIES_FILE.to_string(),
        previous,
    })
}

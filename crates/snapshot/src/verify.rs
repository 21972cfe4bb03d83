//! `wattcounts verify snapshot DIR_OR_URL`: checks a downloaded (or served)
//! snapshot against its manifest: every file's size, SHA-256 and row count,
//! and the Parquet columns. Says which file differs and how.

use std::path::PathBuf;

use polars::prelude::*;

use super::manifest::{self, FileEntry, Manifest};
use wattcounts_rules::digest::sha256_hex;

/// Where the snapshot is read from.
#[derive(Debug, Clone)]
pub enum Location {
    Dir(PathBuf),
    /// Base URL of the snapshot (`…/snapshots/ID`), without a trailing `/`.
    Url(String),
}

impl Location {
    /// A folder path, or an `http(s)://` URL: a snapshot's page
    /// (`…/snapshots/ID`), `…/snapshots/latest`, or the service's root
    /// (meaning its latest snapshot).
    pub fn parse(target: &str) -> Location {
        if target.starts_with("http://") || target.starts_with("https://") {
            let t = target.trim_end_matches('/');
            let t = t.strip_suffix("/manifest.json").unwrap_or(t);
            if t.contains("/snapshots/") {
                Location::Url(t.to_string())
            } else {
                Location::Url(format!("{t}/snapshots/latest"))
            }
        } else {
            Location::Dir(PathBuf::from(target))
        }
    }
}

/// What was found for one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCheck {
    pub path: String,
    pub expected: FileEntry,
    pub bytes: Option<u64>,
    pub sha256: Option<String>,
    pub rows: Option<u64>,
    /// Empty when the file matches its manifest entry.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub snapshot_id: String,
    pub manifest_sha256: String,
    pub files: Vec<FileCheck>,
    /// Problems with the manifest itself (the expected digest differs).
    pub manifest_problems: Vec<String>,
    /// The transparency-log check, when a log key was given.
    pub log: Option<crate::log_check::SnapshotLogCheck>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.manifest_problems.is_empty()
            && self.files.iter().all(|f| f.problems.is_empty())
            && self.log.as_ref().is_none_or(|l| l.problems.is_empty())
    }
}

/// What `verify` checks beyond the files: the log, with the key the
/// reader trusts, and the previous snapshot the reader holds.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    pub verifier_key: Option<String>,
    pub previous: Option<Location>,
}

/// Reads files by name, from a folder or over HTTP.
enum Reader {
    Dir(PathBuf),
    Http {
        client: reqwest::Client,
        base: String,
    },
}

impl Reader {
    async fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        match self {
            Reader::Dir(d) => {
                let p = d.join(name);
                std::fs::read(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))
            }
            Reader::Http { client, base } => {
                let url = format!("{base}/{name}");
                let resp = client
                    .get(&url)
                    .send()
                    .await
                    .map_err(|e| format!("GET {url}: {e}"))?;
                if !resp.status().is_success() {
                    return Err(format!("GET {url}: HTTP {}", resp.status()));
                }
                resp.bytes()
                    .await
                    .map(|b| b.to_vec())
                    .map_err(|e| format!("GET {url}: {e}"))
            }
        }
    }
}

/// Data rows in a CSV (the header excluded), counting quoted line breaks
/// as part of their cell.
fn csv_rows(bytes: &[u8]) -> Result<u64, String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let mut n = 0;
    let mut rec = csv::ByteRecord::new();
    while rdr
        .read_byte_record(&mut rec)
        .map_err(|e| format!("not readable as CSV: {e}"))?
    {
        n += 1;
    }
    Ok(n)
}

/// Row count and column names of a Parquet file.
fn parquet_shape(bytes: &[u8]) -> Result<(u64, Vec<String>), String> {
    let mut r = ParquetReader::new(std::io::Cursor::new(bytes));
    let rows = r
        .num_rows()
        .map_err(|e| format!("not readable as Parquet: {e}"))?;
    let schema = r
        .schema()
        .map_err(|e| format!("not readable as Parquet: {e}"))?;
    let names = schema.iter_names().map(|n| n.to_string()).collect();
    Ok((rows as u64, names))
}

fn check_file(expected: &FileEntry, bytes: Result<&[u8], &String>) -> FileCheck {
    let mut c = FileCheck {
        path: expected.path.clone(),
        expected: expected.clone(),
        bytes: None,
        sha256: None,
        rows: None,
        problems: Vec::new(),
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            c.problems.push(e.clone());
            return c;
        }
    };
    let digest = sha256_hex(bytes);
    if bytes.len() as u64 != expected.bytes {
        c.problems.push(format!(
            "size is {} bytes, the manifest says {}",
            bytes.len(),
            expected.bytes
        ));
    }
    if digest != expected.sha256 {
        c.problems.push(format!(
            "sha256 is {digest}, the manifest says {}",
            expected.sha256
        ));
    }
    c.bytes = Some(bytes.len() as u64);
    c.sha256 = Some(digest);
    let Some(want_rows) = expected.rows else {
        return c;
    };
    let shape = if expected.path.ends_with(".parquet") {
        parquet_shape(bytes).map(|(rows, names)| (rows, Some(names)))
    } else if expected.path.ends_with(".jsonl") {
        // One JSON document per line, each ending in a line break.
        Ok((bytes.iter().filter(|b| **b == b'\n').count() as u64, None))
    } else {
        csv_rows(bytes).map(|rows| (rows, None))
    };
    match shape {
        Err(e) => c.problems.push(e),
        Ok((rows, names)) => {
            c.rows = Some(rows);
            if rows != want_rows {
                c.problems
                    .push(format!("holds {rows} rows, the manifest says {want_rows}"));
            }
            let want: Vec<&str> = expected.columns.iter().map(|c| c.name.as_str()).collect();
            if let Some(names) = names {
                if !want.is_empty() && names != want {
                    c.problems.push(format!(
                        "columns are [{}], the manifest says [{}]",
                        names.join(", "),
                        want.join(", ")
                    ));
                }
            }
        }
    }
    c
}

/// Verifies a snapshot. `expected_manifest_sha256` is the digest the
/// reader cited or was given; without it the manifest is taken as found.
pub async fn verify(
    location: &Location,
    expected_manifest_sha256: Option<&str>,
    log: &LogOptions,
    mut progress: impl FnMut(&FileCheck),
) -> anyhow::Result<Report> {
    let reader = open(location).await?;
    let (manifest_bytes, manifest) = read_manifest(&reader).await?;
    let manifest_sha256 = sha256_hex(&manifest_bytes);
    let mut manifest_problems = Vec::new();
    if let Some(want) = expected_manifest_sha256 {
        if !want.eq_ignore_ascii_case(&manifest_sha256) {
            manifest_problems.push(format!(
                "manifest.json has sha256 {manifest_sha256}, expected {want}"
            ));
        }
    }
    let mut files = Vec::new();
    // The log check reads these two again from what was digested.
    let mut kept: std::collections::HashMap<String, Vec<u8>> = Default::default();
    for f in &manifest.files {
        let bytes = reader.read(&f.path).await;
        let check = check_file(f, bytes.as_deref());
        progress(&check);
        files.push(check);
        if let Ok(b) = bytes {
            if log.verifier_key.is_some()
                && (f.path == manifest::LOG_ENTRIES_FILE || f.path == "submissions.csv")
            {
                kept.insert(f.path.clone(), b);
            }
        }
    }
    let log_check = match &log.verifier_key {
        None => None,
        Some(key) => {
            let previous = match &log.previous {
                Some(l) => Some(read_manifest(&open(l).await?).await?.1),
                None => None,
            };
            let get = |name: &str| kept.get(name).map(Vec::as_slice).unwrap_or_default();
            Some(crate::log_check::check_snapshot_log(
                &manifest,
                get(manifest::LOG_ENTRIES_FILE),
                get("submissions.csv"),
                key,
                previous.as_ref(),
            ))
        }
    };
    Ok(Report {
        snapshot_id: manifest.snapshot_id,
        manifest_sha256,
        files,
        manifest_problems,
        log: log_check,
    })
}

async fn read_manifest(reader: &Reader) -> anyhow::Result<(Vec<u8>, Manifest)> {
    let bytes = reader
        .read(manifest::FILE_NAME)
        .await
        .map_err(anyhow::Error::msg)?;
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("manifest.json is not a snapshot manifest: {e}"))?;
    Ok((bytes, manifest))
}

async fn open(location: &Location) -> anyhow::Result<Reader> {
    Ok(match location {
        Location::Dir(d) => Reader::Dir(d.clone()),
        Location::Url(u) => {
            let client = reqwest::Client::new();
            // `latest` moves: pin the snapshot it names now, so every file
            // comes from the same one.
            let resp = client
                .get(format!("{u}/{}", manifest::FILE_NAME))
                .send()
                .await?;
            let final_url = resp.url().to_string();
            anyhow::ensure!(
                resp.status().is_success(),
                "GET {final_url}: HTTP {}",
                resp.status()
            );
            let base = final_url
                .strip_suffix(&format!("/{}", manifest::FILE_NAME))
                .unwrap_or(u)
                .to_string();
            Reader::Http { client, base }
        }
    })
}

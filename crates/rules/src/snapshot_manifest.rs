//! `manifest.json`: what a snapshot holds, with a digest and row count per
//! file. The manifest's own SHA-256 is the snapshot's fingerprint: cite it,
//! and `wattcounts verify snapshot` proves a copy matches it. The format
//! is defined here, with the rules, so that whoever reads a snapshot (the
//! service's pages, a verifier) needs no part of the crate that writes one.

use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "wattcounts-snapshot/1";
pub const FILE_NAME: &str = "manifest.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Manifest {
    pub format: String,
    pub snapshot_id: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub created_by: String,
    pub service_version: String,
    pub includes_power_traces: bool,
    pub coverage: Coverage,
    pub files: Vec<FileEntry>,
    /// The transparency log the snapshot covers (absent in snapshots made
    /// before the log existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<SnapshotLog>,
}

/// A published snapshot as readers see it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Published {
    pub manifest: Manifest,
    /// SHA-256 of `manifest.json`: the snapshot's fingerprint.
    pub manifest_sha256: String,
    pub manifest_bytes: u64,
}

/// The log checkpoint a snapshot covers: every submission in it is a leaf
/// of this tree, whose leaves are `entries_file` (one per line, in order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SnapshotLog {
    pub origin: String,
    pub verifier_key: String,
    pub size: u64,
    /// Base64 root hash.
    pub root: String,
    /// The signed checkpoint (c2sp.org/tlog-checkpoint as a signed note).
    pub checkpoint: String,
    pub entries_file: String,
    /// The previous snapshot's checkpoint and the proof that this log
    /// extends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<PreviousLog>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PreviousLog {
    pub snapshot_id: String,
    pub size: u64,
    pub checkpoint: String,
    /// Base64 hashes of the RFC 6962 consistency proof from `size`.
    pub consistency: Vec<String>,
}

/// The log's leaves in a snapshot.
pub const LOG_ENTRIES_FILE: &str = "log.jsonl";

/// The accepted data the snapshot holds, counted when it was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Coverage {
    pub submissions: u64,
    pub demo_submissions: u64,
    pub gpus: u64,
    pub models: u64,
    pub iterations: u64,
    pub configurations: u64,
    pub power_samples: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileEntry {
    pub path: String,
    pub media_type: String,
    pub bytes: u64,
    pub sha256: String,
    /// Data rows (header excluded); absent for the card and citation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    /// Columns, for the data files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ColumnEntry {
    pub name: String,
    /// Arrow type name, as pyarrow prints it.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
}

impl Manifest {
    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files.iter().find(|f| f.path == path)
    }
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Media type of a snapshot file, by its extension.
pub fn media_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("parquet") => "application/vnd.apache.parquet",
        Some("csv") => "text/csv; charset=utf-8",
        Some("md") => "text/markdown; charset=utf-8",
        Some("cff") => "text/plain; charset=utf-8",
        Some("json") => "application/json",
        Some("jsonl") => "application/jsonl",
        _ => "application/octet-stream",
    }
}

/// Snapshot ids are made by the service (`wc-YYYYMMDDTHHMMSSZ`, maybe with
/// a `-N` suffix); anything else is refused before it reaches a path.
pub fn valid_id(id: &str) -> bool {
    id.starts_with("wc-")
        && (4..=40).contains(&id.len())
        && id[3..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_name_other_paths() {
        assert!(valid_id("wc-20261201T041233Z"));
        assert!(valid_id("wc-20261201T041233Z-2"));
        for bad in ["", "wc-", "../etc", "wc-../x", "wc-a/b", "wc-a.b", "latest"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}

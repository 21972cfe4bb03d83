//! A peer release read from a folder (or the copy shipped for the demo),
//! checked by `wattcounts_rules::peer` and stored with its provenance and
//! log leaf.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use wattcounts_rules::peer::{
    FilesInMemory, GpuStatements, PeerError, PeerFile, PeerFolder, PeerImportOutcome,
    PeerProvenance, PeerRelease, PeerSource,
};

use crate::{Service, ServiceError};

/// The ML.ENERGY v3 LLM files shipped with the service (see
/// `crates/service/peers/mlenergy-v3/README.md` for their provenance).
const BUNDLED_MLENERGY_V3: [(&str, &[u8]); 4] = [
    (
        "index.json",
        include_bytes!("../../peers/mlenergy-v3/index.json"),
    ),
    (
        "tasks/gpqa.json",
        include_bytes!("../../peers/mlenergy-v3/tasks/gpqa.json"),
    ),
    (
        "tasks/lm-arena-chat.json",
        include_bytes!("../../peers/mlenergy-v3/tasks/lm-arena-chat.json"),
    ),
    (
        "tasks/sourcegraph-fim.json",
        include_bytes!("../../peers/mlenergy-v3/tasks/sourcegraph-fim.json"),
    ),
];
const MLENERGY_V3_LICENCE: &str = include_str!("../../peers/mlenergy-v3/LICENSE");
/// The shipped copy's commit and retrieval date (its README).
const BUNDLED_MLENERGY_V3_REF: &str = "0cd52dab897c5d91a45f4d413038f3b8b4251b0f";
const BUNDLED_MLENERGY_V3_RETRIEVED: &str = "2026-12-06T00:00:00Z";

/// The largest file an import reads: v3's largest is 0.4 MB.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Where an import's files come from.
#[derive(Debug, Clone)]
pub enum PeerFiles {
    /// The published folder (e.g. a checkout's `public/data`).
    Folder(PathBuf),
    /// The copy shipped with the service (the demo's).
    Bundled,
}

#[derive(Debug, Clone)]
pub struct PeerImportRequest {
    pub source: PeerSource,
    pub files: PeerFiles,
    /// The commit or date the operator states for the files.
    pub source_ref: String,
    pub retrieved_at: DateTime<Utc>,
    /// The licence's text; the publisher's stated licence when absent.
    pub licence_text: Option<String>,
    pub actor: String,
    /// The operator's statements of which catalogue GPU a published GPU
    /// name is (`--gpu A100=NVIDIA A100-SXM4-40GB`; v1 only).
    pub gpus: GpuStatements,
}

/// What an import read and did.
#[derive(Debug, Clone)]
pub struct PeerImportReport {
    pub origin: &'static str,
    pub label: String,
    pub files: Vec<PeerFile>,
    pub files_sha256: String,
    pub configurations: usize,
    pub skipped: Vec<String>,
    pub outcome: PeerImportOutcome,
}

#[derive(Debug, thiserror::Error)]
pub enum PeerImportError {
    /// A file is missing, unreadable or breaks a rule: nothing was stored.
    #[error("{0}; nothing was imported")]
    Read(PeerError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] ServiceError),
}
crate::error::store_error_into!(PeerImportError);

/// The licence text a source ships under, as the publisher states it.
fn stated_licence(source: PeerSource) -> String {
    match source {
        PeerSource::MlEnergyV3 => MLENERGY_V3_LICENCE.to_string(),
        // The repository's LICENSE is the Apache-2.0 text (the same as
        // v3's); its docs say otherwise, and both are kept.
        PeerSource::MlEnergyV2 | PeerSource::MlEnergyV1 => format!(
            "{}\n\n{MLENERGY_V3_LICENCE}",
            source.info().licence_statement
        ),
    }
}

/// The most files an import lists (v2 has 502).
const MAX_FILES: usize = 100_000;

/// A published folder on disk. Symbolic links are not followed: a release
/// is the files in its folder.
pub struct FolderOnDisk<'a>(pub &'a Path);

impl PeerFolder for FolderOnDisk<'_> {
    fn read(&mut self, path: &str) -> Result<Vec<u8>, String> {
        let full = self.0.join(path);
        let len = std::fs::metadata(&full).map_err(|e| e.to_string())?.len();
        if len > MAX_FILE_BYTES {
            return Err(format!(
                "{len} bytes, above the {MAX_FILE_BYTES}-byte limit"
            ));
        }
        std::fs::read(&full).map_err(|e| e.to_string())
    }

    fn list(&mut self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let mut stack = vec![self.0.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
                let e = e.map_err(|e| e.to_string())?;
                let kind = e.file_type().map_err(|e| e.to_string())?;
                if kind.is_dir() {
                    stack.push(e.path());
                } else if kind.is_file() {
                    let rel = e.path();
                    let rel = rel.strip_prefix(self.0).map_err(|e| e.to_string())?;
                    let parts: Option<Vec<&str>> = rel.iter().map(|c| c.to_str()).collect();
                    out.push(parts.ok_or("a file name that is not UTF-8")?.join("/"));
                    if out.len() > MAX_FILES {
                        return Err(format!("more than {MAX_FILES} files"));
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

fn read_folder(
    source: PeerSource,
    dir: &Path,
    gpus: &GpuStatements,
) -> Result<PeerRelease, PeerImportError> {
    if !dir.is_dir() {
        return Err(PeerImportError::Usage(format!(
            "{} is not a folder (give the published folder, e.g. a checkout's {})",
            dir.display(),
            source.info().path
        )));
    }
    source
        .read_stated(&mut FolderOnDisk(dir), gpus)
        .map_err(PeerImportError::Read)
}

fn read_bundled(source: PeerSource) -> Result<PeerRelease, PeerImportError> {
    let files = match source {
        PeerSource::MlEnergyV3 => &BUNDLED_MLENERGY_V3,
        PeerSource::MlEnergyV2 | PeerSource::MlEnergyV1 => {
            return Err(PeerImportError::Usage(format!(
                "no copy of {} is shipped (its terms are disputed); import it from a checkout",
                source.info().name
            )))
        }
    };
    let files = files
        .iter()
        .map(|(p, b)| (p.to_string(), b.to_vec()))
        .collect();
    source
        .read(&mut FilesInMemory(files))
        .map_err(PeerImportError::Read)
}

impl PeerImportRequest {
    /// The demo's import: the shipped copy, with its README's provenance.
    pub fn bundled(source: PeerSource, actor: &str) -> PeerImportRequest {
        PeerImportRequest {
            source,
            files: PeerFiles::Bundled,
            source_ref: BUNDLED_MLENERGY_V3_REF.into(),
            retrieved_at: BUNDLED_MLENERGY_V3_RETRIEVED
                .parse()
                .expect("a valid RFC 3339 date"),
            licence_text: None,
            actor: actor.into(),
            gpus: GpuStatements::new(),
        }
    }
}

impl Service {
    /// Reads, checks and stores a peer release. A release whose files are
    /// stored already changes nothing; any file or figure that breaks a
    /// rule stores nothing.
    pub async fn import_peer(
        &self,
        req: PeerImportRequest,
    ) -> Result<PeerImportReport, PeerImportError> {
        if req.source_ref.trim().is_empty() {
            return Err(PeerImportError::Usage(
                "state the files' commit or date (--source-ref): readers check the import against it".into(),
            ));
        }
        let source = req.source;
        let release = match &req.files {
            PeerFiles::Folder(dir) => {
                let dir = dir.clone();
                let gpus = req.gpus.clone();
                tokio::task::spawn_blocking(move || read_folder(source, &dir, &gpus))
                    .await
                    .map_err(|e| PeerImportError::Usage(format!("reader stopped: {e}")))??
            }
            PeerFiles::Bundled => read_bundled(source)?,
        };
        let provenance = PeerProvenance {
            source_ref: req.source_ref.trim().to_string(),
            retrieved_at: req.retrieved_at,
            imported_at: Utc::now(),
            licence_text: req.licence_text.unwrap_or_else(|| stated_licence(source)),
            actor: req.actor,
        };
        let outcome = self
            .store
            .import_peer_release(&release, &provenance)
            .await?;
        if matches!(outcome, PeerImportOutcome::Stored { .. }) {
            self.changed();
        }
        Ok(PeerImportReport {
            origin: source.origin(),
            label: release.label.clone(),
            files_sha256: release.files_sha256(),
            files: release.files,
            configurations: release.configs.len(),
            skipped: release.skipped,
            outcome,
        })
    }
}

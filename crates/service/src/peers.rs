//! Peer imports and their views (issue #39): a published peer release read
//! from a folder (or the copy shipped for the demo), checked by
//! `wattcounts_rules::peer`, stored with its provenance and log leaf; and
//! the page models that show one release's figures, or one model's, always
//! apart from the Watt Counts views.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use wattcounts_rules::peer::{
    Facet, FilesInMemory, GpuStatements, PeerConfig, PeerError, PeerFile, PeerFolder,
    PeerImportOutcome, PeerPage, PeerProvenance, PeerQuery, PeerRelease, PeerReleaseRecord,
    PeerSort, PeerSource, SourceInfo,
};

use crate::views::ViewError;
use crate::{Service, ServiceError};

/// The ML.ENERGY v3 LLM files shipped with the service (see
/// `crates/service/peers/mlenergy-v3/README.md` for their provenance).
const BUNDLED_MLENERGY_V3: [(&str, &[u8]); 4] = [
    (
        "index.json",
        include_bytes!("../peers/mlenergy-v3/index.json"),
    ),
    (
        "tasks/gpqa.json",
        include_bytes!("../peers/mlenergy-v3/tasks/gpqa.json"),
    ),
    (
        "tasks/lm-arena-chat.json",
        include_bytes!("../peers/mlenergy-v3/tasks/lm-arena-chat.json"),
    ),
    (
        "tasks/sourcegraph-fim.json",
        include_bytes!("../peers/mlenergy-v3/tasks/sourcegraph-fim.json"),
    ),
];
const MLENERGY_V3_LICENCE: &str = include_str!("../peers/mlenergy-v3/LICENSE");
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

/// A peer origin as the data control offers it: its newest release.
#[derive(Debug, Clone)]
pub struct PeerOrigin {
    pub info: &'static SourceInfo,
    pub label: String,
    pub configurations: u64,
    /// The GPUs measured, as the publisher names them.
    pub gpus: Vec<String>,
}

/// One release's table: one task at a time (tasks are different
/// workloads), filtered by GPU and model, a page at a time.
#[derive(Debug, Clone, Default)]
pub struct PeerViewRequest {
    pub release: Option<i64>,
    pub task: Option<String>,
    pub gpu: Option<String>,
    pub model: Option<String>,
    pub sort: Option<String>,
    pub page: u64,
    pub per_page: u32,
}

#[derive(Debug, Clone)]
pub struct PeerView {
    pub info: &'static SourceInfo,
    pub release: PeerReleaseRecord,
    /// Every stored release of this origin, newest first.
    pub releases: Vec<PeerReleaseRecord>,
    pub newest: bool,
    pub task: Facet,
    pub gpu: Option<String>,
    pub model: Option<String>,
    pub sort: PeerSort,
    pub page: u64,
    pub per_page: u32,
    pub rows: Vec<PeerConfig>,
    pub total: u64,
}

/// A model's configurations in one peer origin's newest release.
#[derive(Debug, Clone)]
pub struct PeerModelNote {
    pub info: &'static SourceInfo,
    pub release: PeerReleaseRecord,
    pub rows: Vec<PeerConfig>,
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

    /// Every stored release, newest first within each origin.
    pub async fn peer_releases(&self) -> Result<Vec<PeerReleaseRecord>, ServiceError> {
        Ok(self.store.peer_releases().await?)
    }

    /// The stored releases' ids, sorted: a stored release never changes,
    /// so a new id is the only news an import brings.
    async fn peer_release_ids(&self) -> Result<Vec<i64>, ServiceError> {
        let mut ids: Vec<i64> = self.peer_releases().await?.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Notices releases another process stored in this database (`wattcounts
    /// peer import` beside a running `serve`, or another instance's import):
    /// every `every`, reads the stored releases' ids and marks the data
    /// changed when they moved, so the cached answers, the data control's
    /// origins and the estimator's real-hardware table follow. The store's
    /// data stamp, which `watch_other_writers` polls, counts submissions and
    /// decisions only: an import does not move it. Runs until the process
    /// ends.
    pub async fn watch_peer_imports(self: Arc<Self>, every: Duration) {
        let mut last: Option<Vec<i64>> = None;
        loop {
            match self.peer_release_ids().await {
                Ok(ids) => {
                    // The first look is news too: what was read before it
                    // (the estimator's table, at start) may predate an
                    // import made meanwhile. One extra refresh at start.
                    if last.as_ref() != Some(&ids) {
                        self.changed();
                    }
                    last = Some(ids);
                }
                Err(e) => tracing::warn!(error = %e, "peer releases unavailable"),
            }
            tokio::time::sleep(every).await;
        }
    }

    /// The files a release read, with their digests.
    pub async fn peer_files(&self, release_id: i64) -> Result<Vec<PeerFile>, ServiceError> {
        Ok(self.store.peer_files(release_id).await?)
    }

    /// Each imported origin's newest release, for the data control. Read
    /// once per change of the data, not per page.
    pub async fn peer_origins(&self) -> Result<Arc<Vec<PeerOrigin>>, ServiceError> {
        let version = self.data_version();
        if let Some((v, cached)) = &*self.peer_origins.read().await {
            if *v == version {
                return Ok(cached.clone());
            }
        }
        let mut origins: Vec<PeerOrigin> = Vec::new();
        for r in self.store.peer_releases().await? {
            if origins.iter().any(|o| o.info.origin == r.source.origin()) {
                continue;
            }
            origins.push(PeerOrigin {
                info: r.source.info(),
                gpus: r.facets.gpus.iter().map(|g| g.value.clone()).collect(),
                label: r.label,
                configurations: r.configurations,
            });
        }
        let origins = Arc::new(origins);
        *self.peer_origins.write().await = Some((version, origins.clone()));
        Ok(origins)
    }

    /// A peer origin's release (the newest when `release` is None), with
    /// every stored release of that origin, newest first.
    async fn peer_release(
        &self,
        slug: &str,
        release: Option<i64>,
    ) -> Result<
        (
            &'static SourceInfo,
            PeerReleaseRecord,
            Vec<PeerReleaseRecord>,
        ),
        ViewError,
    > {
        let source = PeerSource::parse(slug).ok_or_else(|| {
            ViewError::NotFound(format!(
                "no peer dataset '{slug}'; known: {}",
                PeerSource::ALL.map(|p| p.info().slug).join(", ")
            ))
        })?;
        let info = source.info();
        let releases: Vec<PeerReleaseRecord> = self
            .peer_releases()
            .await?
            .into_iter()
            .filter(|r| r.source == source)
            .collect();
        let release = match release {
            None => releases.first().cloned().ok_or_else(|| {
                ViewError::NotFound(format!(
                    "{} is not imported here; an operator runs `wattcounts peer import {} <folder>`",
                    info.name, info.slug
                ))
            })?,
            Some(id) => releases.iter().find(|r| r.id == id).cloned().ok_or_else(|| {
                ViewError::NotFound(format!(
                    "{} has no release {id}; stored: {}",
                    info.name,
                    releases.iter().map(|r| r.id.to_string()).collect::<Vec<_>>().join(", ")
                ))
            })?,
        };
        Ok((info, release, releases))
    }

    /// One page of one release of a peer origin (`mlenergy-v3`).
    pub async fn peer_view(
        &self,
        slug: &str,
        req: &PeerViewRequest,
    ) -> Result<PeerView, ViewError> {
        let (info, release, releases) = self.peer_release(slug, req.release).await?;
        let facets = &release.facets;
        let pick = |name: &str,
                    wanted: Option<&String>,
                    list: &[Facet]|
         -> Result<Option<Facet>, ViewError> {
            match wanted.filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(v) => list
                    .iter()
                    .find(|f| &f.value == v)
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| {
                        ViewError::BadParameter(format!(
                            "{name}='{v}' is not in {} release {}; expected one of {}",
                            info.name,
                            release.label,
                            list.iter()
                                .map(|f| f.value.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    }),
            }
        };
        // One task at a time; the one with the most configurations first.
        let task = match pick("task", req.task.as_ref(), &facets.tasks)? {
            Some(t) => t,
            None => facets
                .tasks
                .iter()
                .max_by(|a, b| a.n.cmp(&b.n).then(b.value.cmp(&a.value)))
                .cloned()
                .ok_or_else(|| {
                    ViewError::NotFound(format!(
                        "{} release {} holds no task",
                        info.name, release.label
                    ))
                })?,
        };
        let gpu = pick("gpu", req.gpu.as_ref(), &facets.gpus)?.map(|f| f.value);
        let model = pick("model", req.model.as_ref(), &facets.models)?.map(|f| f.value);
        let sort = match req.sort.as_deref().filter(|s| !s.is_empty()) {
            None => PeerSort::default(),
            Some(s) => PeerSort::parse(s).ok_or_else(|| {
                ViewError::BadParameter(format!(
                    "sort='{s}' is not a column; expected one of {}",
                    PeerSort::ALL.map(|k| k.as_str()).join(", ")
                ))
            })?,
        };
        let per_page = req.per_page.clamp(1, 1000);
        let page = req.page.max(1);
        let PeerPage { rows, total } = self
            .store
            .peer_configurations(&PeerQuery {
                release_id: release.id,
                task: Some(task.value.clone()),
                gpu_model: gpu.clone(),
                model_id: model.clone(),
                sort,
                limit: per_page,
                offset: (page - 1) * u64::from(per_page),
            })
            .await
            .map_err(ServiceError::from)?;
        let newest = releases.first().map(|r| r.id) == Some(release.id);
        Ok(PeerView {
            info,
            release,
            releases,
            newest,
            task,
            gpu,
            model,
            sort,
            page,
            per_page,
            rows,
            total,
        })
    }

    /// A model's rows in each peer origin's newest release (the model
    /// page's "also measured by"), at most `limit` in all.
    pub async fn peers_of_model(
        &self,
        model_id: &str,
        limit: u32,
    ) -> Result<Vec<PeerModelNote>, ServiceError> {
        let rows = self
            .store
            .peer_configurations_of_model(model_id, limit)
            .await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let releases = self.peer_releases().await?;
        let mut notes: Vec<PeerModelNote> = Vec::new();
        for (release_id, row) in rows {
            match notes.iter_mut().find(|n| n.release.id == release_id) {
                Some(n) => n.rows.push(row),
                None => {
                    let Some(release) = releases.iter().find(|r| r.id == release_id) else {
                        continue;
                    };
                    notes.push(PeerModelNote {
                        info: release.source.info(),
                        release: release.clone(),
                        rows: vec![row],
                    });
                }
            }
        }
        Ok(notes)
    }
}

/// The estimator judged on a peer's real measurements: the newest
/// release's table, computed once per release.
#[derive(Debug, Clone)]
pub struct RealHardwareValidation {
    pub info: &'static SourceInfo,
    pub release_id: i64,
    pub release_label: String,
    pub rows: usize,
    pub models: usize,
    pub seconds: f64,
    pub lines: Vec<wattcounts_analytics::estimator::peer::PeerLine>,
    /// Why the table is empty: a release too large for the background job.
    pub why_not: Option<String>,
    /// The same rows fitted per task, answering under the peer's protocol
    /// (`crate::peer_estimates`); None with `why_not`.
    pub estimator: Option<Arc<wattcounts_analytics::estimator::peer::PeerEstimator>>,
}

/// The most rows the background job scores: leave-one-LLM-out fits once
/// per LLM on all the others, so its cost grows with rows × LLMs (v3: 565
/// rows, 27 LLMs, 1.9 s). A larger release is named, not scored.
pub const VALIDATION_MAX_ROWS: usize = 10_000;

/// The peer whose rows the estimator is judged on.
const VALIDATED_ON: PeerSource = PeerSource::MlEnergyV3;

/// Every configuration of a release, task by task (bounded by the
/// release's size: v3 holds 565).
const RELEASE_ROWS_CAP: u32 = 100_000;

/// What a peer release says, within itself: the newer GPU against the
/// older one per model, and the size exponent of its dense models.
#[derive(Debug, Clone)]
pub struct PeerInsightsView {
    pub info: &'static SourceInfo,
    pub release: PeerReleaseRecord,
    pub insights: Arc<wattcounts_analytics::peer_insights::PeerInsights>,
}

impl Service {
    /// Every configuration of a release, task by task (a release is a few
    /// hundred rows; the cap bounds a malformed one).
    async fn release_configs(
        &self,
        release: &PeerReleaseRecord,
    ) -> Result<Vec<PeerConfig>, ServiceError> {
        let mut configs = Vec::new();
        for task in &release.facets.tasks {
            let page = self
                .store
                .peer_configurations(&PeerQuery {
                    release_id: release.id,
                    task: Some(task.value.clone()),
                    limit: RELEASE_ROWS_CAP,
                    ..Default::default()
                })
                .await?;
            configs.extend(page.rows);
        }
        Ok(configs)
    }

    /// The insights of a peer origin's newest release.
    pub async fn peer_insights(&self, slug: &str) -> Result<PeerInsightsView, ViewError> {
        let (info, release, _) = self.peer_release(slug, None).await?;
        // A release never changes: its insights are read and computed once
        // (56,500 rows took 0.77 s a request before this cache).
        if let Some(done) = self.peer_insights.read().await.get(&release.id) {
            return Ok(PeerInsightsView {
                info,
                insights: done.clone(),
                release,
            });
        }
        let configs = self.release_configs(&release).await?;
        // The older board is the reference: GPUs by catalogue release date.
        let mut gpus: Vec<(String, String)> = release
            .facets
            .gpus
            .iter()
            .map(|g| {
                let date = wattcounts_rules::catalog::gpu_by_nvml_name(&g.label)
                    .map(|s| s.release_date.clone())
                    .unwrap_or_default();
                (date, g.value.clone())
            })
            .collect();
        gpus.sort();
        let insights = match (gpus.first(), gpus.last()) {
            (Some(a), Some(b)) if a.1 != b.1 => {
                wattcounts_analytics::peer_insights::peer_insights(&configs, &a.1, &b.1)
            }
            _ => wattcounts_analytics::peer_insights::PeerInsights {
                savings: Vec::new(),
                exponents: wattcounts_analytics::peer_insights::size_exponents(&configs),
            },
        };
        let insights = Arc::new(insights);
        self.peer_insights
            .write()
            .await
            .insert(release.id, insights.clone());
        Ok(PeerInsightsView {
            info,
            release,
            insights,
        })
    }

    /// The table for the newest v3 release, if it has been computed.
    pub async fn real_hardware_validation(&self) -> Option<Arc<RealHardwareValidation>> {
        self.peer_validation.read().await.clone()
    }

    /// Computes the table when the newest v3 release has none yet (after
    /// an import, and at start). A second call for the same release does
    /// nothing but read the release list. True when it swapped a table in
    /// (and so bumped the data version once).
    pub async fn refresh_real_hardware_validation(
        &self,
        settings: wattcounts_analytics::estimator::Settings,
    ) -> Result<bool, ServiceError> {
        let Some(release) = self
            .peer_releases()
            .await?
            .into_iter()
            .find(|r| r.source == VALIDATED_ON)
        else {
            return Ok(false);
        };
        if self
            .peer_validation
            .read()
            .await
            .as_ref()
            .is_some_and(|v| v.release_id == release.id)
        {
            return Ok(false);
        }
        let label = release.label.clone();
        let id = release.id;
        if release.configurations as usize > VALIDATION_MAX_ROWS {
            *self.peer_validation.write().await = Some(Arc::new(RealHardwareValidation {
                info: VALIDATED_ON.info(),
                release_id: id,
                rows: release.configurations as usize,
                models: release.facets.models.len(),
                why_not: Some(format!(
                    "release {label} holds {} configurations, above the {VALIDATION_MAX_ROWS} the background job scores (examples/peer_estimator_bench scores any folder)",
                    release.configurations
                )),
                release_label: label,
                seconds: 0.0,
                lines: Vec::new(),
                estimator: None,
            }));
            self.changed();
            return Ok(true);
        }
        let configs = self.release_configs(&release).await?;
        let computed = tokio::task::spawn_blocking(move || {
            use wattcounts_analytics::estimator::peer::{peer_rows, validate_and_fit};
            let start = std::time::Instant::now();
            let rows = peer_rows(&configs);
            let mut models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
            models.sort_unstable();
            models.dedup();
            let models = models.len();
            let count = rows.len();
            let (lines, estimator) = validate_and_fit(rows, &settings)?;
            let seconds = start.elapsed().as_secs_f64();
            Ok::<_, wattcounts_analytics::estimator::EstimatorError>(RealHardwareValidation {
                info: VALIDATED_ON.info(),
                release_id: id,
                release_label: label,
                rows: count,
                models,
                seconds,
                lines,
                why_not: None,
                estimator: Some(Arc::new(estimator)),
            })
        })
        .await
        .map_err(|e| ServiceError {
            kind: crate::ErrorKind::Internal,
            message: format!("real-hardware validation stopped: {e}"),
        })?
        .map_err(|e| ServiceError {
            kind: crate::ErrorKind::Internal,
            message: format!("real-hardware validation: {e}"),
        })?;
        tracing::info!(
            release = %computed.release_label,
            rows = computed.rows,
            seconds = computed.seconds,
            "estimator validated on ML.ENERGY v3"
        );
        *self.peer_validation.write().await = Some(Arc::new(computed));
        self.changed();
        Ok(true)
    }
}

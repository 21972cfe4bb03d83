//! The page models of one release's table and of one model's peer rows,
//! always apart from the Watt Counts views.

use wattcounts_rules::peer::{
    Facet, PeerConfig, PeerPage, PeerQuery, PeerReleaseRecord, PeerSort, PeerSource, SourceInfo,
};

use crate::views::ViewError;
use crate::{Service, ServiceError};

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
    /// A peer origin's release (the newest when `release` is None), with
    /// every stored release of that origin, newest first.
    pub(super) async fn peer_release(
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

//! The GPU pages' models: every catalogue GPU with what one view measured
//! on it, and one GPU's groups in one scenario with its newest submissions.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;
use wattcounts_analytics::compare::{self, ScenarioKey};
use wattcounts_analytics::leaderboard::{LeaderboardRow, Query};
use wattcounts_rules::catalog;
use wattcounts_rules::domain::SubmissionRecord;

use super::{pick_scenario, ViewError};
use crate::Board;

/// A catalogue GPU and how much of one view was measured on it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GpuSummary {
    pub id: String,
    pub name: String,
    pub architecture: String,
    pub tdp_w: f64,
    pub memory_gb: f64,
    pub idle_w: f64,
    /// Where `idle_w` comes from, in words: measured, or a guess (15 % of
    /// TDP), which the checks only warn on.
    pub idle_basis: String,
    /// The loaded idle its accepted submissions of this view's origin
    /// showed (issue #54): the lowest, over how many submissions and
    /// submitters; from three submitters on, the idle-floor check uses it
    /// in place of a guessed `idle_w`. Only on the GPU's own page.
    pub observed_idle: Option<wattcounts_rules::checks::ObservedIdle>,
    /// Groups of the view measured on it.
    pub configurations: usize,
    pub models: usize,
}

/// Every catalogue GPU, in catalogue order, with its share of `rows`.
fn summaries(rows: &[LeaderboardRow]) -> Vec<GpuSummary> {
    catalog::gpus()
        .iter()
        .map(|g| {
            let mine: Vec<&LeaderboardRow> = rows.iter().filter(|e| e.gpu_id == g.id).collect();
            let mut models: Vec<&str> = mine.iter().map(|e| e.model.as_str()).collect();
            models.sort_unstable();
            models.dedup();
            GpuSummary {
                id: g.id.clone(),
                name: g.nvml_name.clone(),
                architecture: g.architecture.clone(),
                tdp_w: g.tdp_w,
                memory_gb: g.memory_gb,
                idle_w: g.idle_w,
                idle_basis: g.idle_basis_words(),
                observed_idle: None,
                configurations: mine.len(),
                models: models.len(),
            }
        })
        .collect()
}

/// How many accepted submissions a GPU page lists at a time, newest first;
/// older ones are a `before=` link away (issue #55: at 1,600 copies of the
/// demo, listing 500 made `/gpus/l4` 5.8 times its demo-scale time).
pub const GPU_SUBMISSIONS_PAGE: u32 = 50;

/// One GPU in one scenario of a view.
pub struct GpuData {
    pub gpu: GpuSummary,
    /// The scenarios measured on it, the picked one among them.
    pub present: Vec<ScenarioKey>,
    pub scenario: Option<ScenarioKey>,
    /// Its groups in that scenario, least energy per token first.
    pub rows: Vec<LeaderboardRow>,
    /// A page of its accepted submissions, newest first: the newest, or
    /// those listed after `before`.
    pub submissions: Vec<SubmissionRecord>,
    /// The last one listed, when older ones follow it (the next page's
    /// `before`).
    pub older: Option<Uuid>,
}

impl crate::Service {
    /// Every catalogue GPU with what the view `q` measured on it.
    pub async fn gpus_view(&self, q: &Query) -> Result<(Vec<GpuSummary>, Board), ViewError> {
        let (rows, board) = self.view_rows(q).await?;
        Ok((summaries(&rows), board))
    }

    /// The GPU `id` in the scenario asked for (its first when none is).
    pub async fn gpu_view(
        &self,
        q: &Query,
        id: &str,
        scenario: Option<&str>,
        before: Option<&str>,
    ) -> Result<(GpuData, Board), ViewError> {
        let q = Query {
            gpu: Some(id.to_string()),
            ..q.clone()
        };
        let (mine, board) = self.view_rows(&q).await?;
        let mut gpu = summaries(&mine)
            .into_iter()
            .find(|g| g.id == id)
            .ok_or_else(|| {
                ViewError::NotFound(format!("no GPU '{id}' in the catalogue; see /gpus"))
            })?;
        let demo = board.origin == wattcounts_rules::domain::Origin::Demo;
        gpu.observed_idle = self
            .store
            .observed_idle(id, demo)
            .await
            .map_err(crate::ServiceError::from)?;
        let present = compare::scenarios(&mine);
        let scenario = pick_scenario(scenario, &present)?;
        let mut rows: Vec<LeaderboardRow> = mine
            .into_iter()
            .filter(|e| scenario.is_some_and(|k| compare::key_of(e) == k))
            .collect();
        rows.sort_by(|a, b| a.energy_per_token_j.total_cmp(&b.energy_per_token_j));
        let before = match before {
            Some(b) => Some(self.listed_on_gpu(id, b).await?),
            None => None,
        };
        let mut submissions = self
            .submissions_on_gpu(id, before, GPU_SUBMISSIONS_PAGE + 1)
            .await?;
        let older = (submissions.len() > GPU_SUBMISSIONS_PAGE as usize).then(|| {
            submissions.truncate(GPU_SUBMISSIONS_PAGE as usize);
            submissions.last().map(|r| r.id)
        });
        Ok((
            GpuData {
                gpu,
                present,
                scenario,
                rows,
                submissions,
                older: older.flatten(),
            },
            board,
        ))
    }

    /// `before=`'s submission: an accepted one measured on the GPU `id`,
    /// else a 400 that says which of those it is not.
    async fn listed_on_gpu(&self, id: &str, before: &str) -> Result<Uuid, ViewError> {
        let bad = |why: &str| {
            ViewError::BadParameter(format!(
                "before={before}: {why}; it takes the id of an accepted submission on this GPU, as the page's \"older submissions\" link gives it"
            ))
        };
        let uuid = Uuid::parse_str(before).map_err(|_| bad("not a submission id"))?;
        let record = self
            .store
            .submission(uuid)
            .await
            .map_err(crate::ServiceError::from)?
            .ok_or_else(|| bad("no such submission"))?;
        if record.gpu_id.as_deref() != Some(id) {
            return Err(bad("that submission was measured on another GPU"));
        }
        if record.status != wattcounts_rules::domain::Status::Accepted {
            return Err(bad("that submission is not accepted"));
        }
        Ok(uuid)
    }
}

//! The model pages' models: every model of one view with its best GPU per
//! scenario (`/models`), and one model's groups per scenario with the
//! lowest-energy GPU that meets the reader's deadlines and budget
//! (`wattcounts_analytics::compare::model_summary_within`).

use wattcounts_analytics::compare::{self, ModelListing, ModelScenario, ScenarioKey};
use wattcounts_analytics::deadline::Deadline;
use wattcounts_analytics::leaderboard::Query;

use super::ViewError;
use crate::Board;

impl crate::Service {
    /// Every model of the view `q`, sorted case-insensitively, with its
    /// best GPU per scenario; the scenarios are the columns.
    pub async fn models_view(
        &self,
        q: &Query,
    ) -> Result<((Vec<ScenarioKey>, Vec<ModelListing>), Board), ViewError> {
        let (rows, board) = self.view_rows(q).await?;
        Ok((compare::model_index(&rows), board))
    }

    /// The model `id` in the view `q`, judged against `deadlines` and an
    /// energy `budget` (J per token); None when the view holds no group of
    /// it.
    pub async fn model_view(
        &self,
        q: &Query,
        id: &str,
        deadlines: &[Deadline],
        budget: Option<f64>,
    ) -> Result<(Option<Vec<ModelScenario>>, Board), ViewError> {
        let q = Query {
            model: Some(id.to_string()),
            ..q.clone()
        };
        let (rows, board) = self.view_rows(&q).await?;
        let summary =
            (!rows.is_empty()).then(|| compare::model_summary_within(&rows, id, deadlines, budget));
        Ok((summary, board))
    }
}

//! The read side's page models: what the GPU, compare, model and insights
//! pages show, selected and computed here from one view of the read model (one
//! origin, one protocol: views are never merged). The web parses the
//! request, makes one call here, and renders the answer as HTML, JSON or
//! CSV; it computes no figure of its own.

mod compare;
mod gpus;
mod insights;
mod model;

pub use compare::{CompareRequest, Compared};
pub use gpus::{GpuData, GpuSummary};
pub use insights::InsightsData;

use wattcounts_analytics::compare::ScenarioKey;
use wattcounts_analytics::leaderboard::{LeaderboardRow, Query};

use crate::{Board, ServiceError};

/// Why a page model could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A parameter names what the view does not hold (a 400).
    #[error("{0}")]
    BadParameter(String),
    /// Nothing to show for what was asked (a 404).
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// `scenario=batch` or `server@RATE`, one of those present in the data
/// (the first when none is asked for).
pub fn pick_scenario(
    wanted: Option<&str>,
    present: &[ScenarioKey],
) -> Result<Option<ScenarioKey>, ViewError> {
    match wanted.filter(|v| !v.is_empty()) {
        None => Ok(present.first().copied()),
        Some(v) => present
            .iter()
            .find(|k| k.param() == v)
            .copied()
            .map(Some)
            .ok_or_else(|| {
                ViewError::BadParameter(format!(
                    "scenario='{v}' is not in the data; expected one of {}",
                    present
                        .iter()
                        .map(|k| k.param())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
    }
}

impl crate::Service {
    /// Every accepted group of one view, and the board that says which
    /// view it is (for the page's note and controls).
    pub async fn view_rows(&self, q: &Query) -> Result<(Vec<LeaderboardRow>, Board), ServiceError> {
        let mut board = self.all_groups(q).await?;
        let rows = std::mem::take(&mut board.entries);
        Ok((rows, board))
    }
}

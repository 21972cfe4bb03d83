//! `/insights`' model: the paper's findings recomputed on one view, and
//! the estimator's validation when its fit is of that very view.

use wattcounts_analytics::compare;
use wattcounts_analytics::insights::{self, Finding};
use wattcounts_analytics::leaderboard::{ProtocolFilter, Query};
use wattcounts_rules::domain::Origin;

use super::ViewError;
use crate::Board;

pub struct InsightsData {
    pub findings: Vec<Finding>,
    /// Per scenario param: every GPU of the scenario, for the compare link.
    pub gpus: Vec<(String, Vec<String>)>,
}

impl crate::Service {
    /// The findings of the view `q`.
    pub async fn insights_view(&self, q: &Query) -> Result<(InsightsData, Board), ViewError> {
        let (rows, board) = self.view_rows(q).await?;
        let gpus = compare::scenarios(&rows)
            .into_iter()
            .map(|k| {
                let mut ids: Vec<String> = rows
                    .iter()
                    .filter(|e| k.same(&compare::key_of(e)))
                    .map(|e| e.gpu_id.clone())
                    .collect();
                ids.sort();
                ids.dedup();
                (k.param(), ids)
            })
            .collect();
        let mut findings = insights::findings(&rows);
        // The estimator's validation, when its fit is of this very view
        // (the reference protocol of the same origin).
        let reference = matches!(q.protocol, ProtocolFilter::Reference);
        if let Some(t) = self.estimator().current {
            let demo = board.origin == Origin::Demo;
            if reference && (t.provenance.origin == "demo") == demo && !rows.is_empty() {
                let (gpus, models) = t.counts();
                findings.extend(insights::estimator_validation::findings(
                    &t.report.lines,
                    gpus,
                    models,
                ));
            }
        }
        Ok((InsightsData { findings, gpus }, board))
    }
}

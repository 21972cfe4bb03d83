//! `/compare`'s model: the GPUs named, checked against one view, side by
//! side per model in one scenario, with each scenario's headline (only
//! where the spread supports one: `wattcounts_analytics::compare`).

use wattcounts_analytics::compare::{self, Comparison, Headline, ScenarioKey};
use wattcounts_analytics::leaderboard::{LeaderboardRow, Query};

use super::{pick_scenario, ViewError};
use crate::Board;

/// What a reader asked to compare.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// GPU ids in the order named (duplicates and blanks are dropped);
    /// every GPU with data when empty.
    pub gpus: Vec<String>,
    /// The GPU the savings are measured against (one of those compared).
    pub reference: Option<String>,
    /// `batch` or `server@RATE`; the first present when None.
    pub scenario: Option<String>,
}

pub struct Compared {
    pub comparison: Comparison,
    /// The rows compared: the chosen GPUs in the chosen scenario, by
    /// model, then least energy first.
    pub rows: Vec<LeaderboardRow>,
    /// One per scenario present, in `present` order.
    pub headlines: Vec<Headline>,
    pub present: Vec<ScenarioKey>,
    /// Every GPU with data in the view: (id, name), by id.
    pub known: Vec<(String, String)>,
}

/// The GPUs named, checked against those with data.
fn compared_gpus(named: &[String], known: &[String]) -> Result<Vec<String>, ViewError> {
    let mut gpus: Vec<String> = Vec::new();
    for g in named.iter().map(|g| g.trim()).filter(|g| !g.is_empty()) {
        if !gpus.iter().any(|x| x == g) {
            gpus.push(g.to_string());
        }
    }
    if gpus.is_empty() {
        gpus = known.to_vec();
    }
    if let Some(bad) = gpus.iter().find(|g| !known.contains(g)) {
        return Err(ViewError::BadParameter(format!(
            "gpus: '{bad}' has no data in this view; known: {}",
            known.join(", ")
        )));
    }
    if gpus.len() < 2 {
        return Err(ViewError::BadParameter(
            "gpus: choose at least two GPUs (gpu=l4&gpu=h100-pcie, or gpus=l4,h100-pcie)".into(),
        ));
    }
    Ok(gpus)
}

impl crate::Service {
    /// The comparison `req` asks for, within the view `q`.
    pub async fn compare_view(
        &self,
        q: &Query,
        req: &CompareRequest,
    ) -> Result<(Compared, Board), ViewError> {
        let (all, board) = self.view_rows(q).await?;
        let mut known: Vec<(String, String)> = all
            .iter()
            .map(|e| (e.gpu_id.clone(), e.gpu_name.clone()))
            .collect();
        known.sort();
        known.dedup();
        let ids: Vec<String> = known.iter().map(|k| k.0.clone()).collect();
        let gpus = compared_gpus(&req.gpus, &ids)?;
        let reference = match req.reference.as_deref().filter(|r| !r.is_empty()) {
            Some(r) if gpus.iter().any(|g| g == r) => Some(r.to_string()),
            Some(r) => {
                return Err(ViewError::BadParameter(format!(
                    "ref='{r}' is not one of the compared GPUs ({})",
                    gpus.join(", ")
                )))
            }
            None => None,
        };
        let present = compare::scenarios(&all);
        let scenario = pick_scenario(req.scenario.as_deref(), &present)?
            .ok_or_else(|| ViewError::NotFound("no accepted data to compare yet".into()))?;
        // Every scenario's headline; the chosen one's rows are shown too.
        let mut rows: Vec<LeaderboardRow> = all
            .iter()
            .filter(|e| compare::key_of(e) == scenario && gpus.contains(&e.gpu_id))
            .cloned()
            .collect();
        rows.sort_by(|a, b| {
            a.model
                .to_lowercase()
                .cmp(&b.model.to_lowercase())
                .then(a.energy_per_token_j.total_cmp(&b.energy_per_token_j))
        });
        let mut comparison = None;
        let mut headlines = Vec::with_capacity(present.len());
        for k in &present {
            let c = compare::compare(&all, &gpus, *k, reference.as_deref());
            headlines.push(c.headline.clone());
            if *k == scenario {
                comparison = Some(c);
            }
        }
        Ok((
            Compared {
                comparison: comparison.expect("the scenario was picked from those present"),

                rows,
                headlines,
                present,
                known,
            },
            board,
        ))
    }
}

//! wattcounts-analytics: what is computed from figures already accepted.
//! The leaderboard's groups and their figures, comparisons across GPUs and
//! the verdicts the spread allows, deadline-bound picks, the insights'
//! findings, the display units (Wh, gCO₂e), and the energy estimator for
//! GPUs nobody measured (gradient-boosted trees, its validation and its
//! refusals). Pure: figures in, figures out; the store calls the group
//! aggregation inside its write transaction, the service builds the pages'
//! models with the rest.
//!
//! Arrows point down: `insights` → `compare` → `leaderboard`, `verdict`;
//! `estimator` → `insights`' quantiles; everything → `wattcounts-rules`.

pub mod compare;
pub mod deadline;
pub mod estimator;
pub mod insights;
pub mod leaderboard;
pub mod peer_insights;
pub mod units;
pub mod verdict;

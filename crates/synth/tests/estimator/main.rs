//! The estimator judged on the other physics (`wattcounts_synth::other_physics`):
//! rows from a model of GPUs it was not built from. These live beside the
//! generator because the estimator's crate cannot depend on the crate that
//! makes its test data.

mod answers;
mod other_physics;

mod prelude {
    pub use wattcounts_analytics::estimator::features::ScenarioClass;
    pub use wattcounts_analytics::estimator::validation::{validate, Split};
    pub use wattcounts_analytics::estimator::*;
    pub use wattcounts_rules::catalog;
    pub use wattcounts_synth::other_physics;
    pub use wattcounts_synth::other_physics::{other_physics, GPUS, INTERIOR};
}

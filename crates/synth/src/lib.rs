//! wattcounts-synth: synthetic harness output, run folders in exactly the format the Watt
//! Counts harness writes (see HARNESS-FORMAT.md), from a small physical
//! model of LLM inference on a GPU. Used by the tests as fixtures and by
//! `wattcounts demo` for the paper-scale demo data.
//!
//! The model, per GPU and LLM:
//! - weights are read once per decode step (memory-bandwidth bound), plus the
//!   KV cache of every running sequence; compute adds 2 FLOP per active
//!   parameter per token; a fixed launch overhead per step;
//! - vLLM's batch size is bounded by the KV-cache memory left after weights;
//! - board power is the loaded-idle power plus a share of the headroom to
//!   TDP that grows with how compute-bound a step is; leakage adds a little
//!   power as the chip warms, and temperature follows load with a time
//!   constant of a minute;
//! - server runs get open-loop Poisson arrivals at each rate for the test
//!   duration, then drain; batch runs push all prompts at once.
//!
//! Everything is deterministic for a seed. `other_physics` is a second,
//! different model (rows, not folders) that the estimator is judged on, so
//! its validation does not grade the demo's own formulas. Only the demo,
//! tests and benches link this crate: never the submitter or the store.

/// Bumped whenever generated output changes, so cached demo bundles made
/// by an older generator are not reused.
pub const GENERATOR_VERSION: u32 = 2;

// Arrows: writer → (physics, faults, options, folder); options → faults;
// faults → folder. The physical model knows nothing of faults or files.
pub mod faults;
pub mod folder;
pub mod options;
pub mod other_physics;
pub mod physics;
pub mod writer;

pub use faults::Fault;
pub use folder::{model_dir_name, RunFolder};
pub use options::{Physics, SynthOptions};
pub use physics::fits;
pub use writer::{generate_run, write_run};

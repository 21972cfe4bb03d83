//! wattcounts-rules: what a submitter and the store both need, and nothing
//! that reads a disk, a clock or a thread pool: parsing a stranger's bundle,
//! the checks and their thresholds, derived metrics, protocols, the GPU and
//! model catalogue, signatures, the transparency log's hashing and proofs,
//! the receipt, and the one `stats` module every median and interval is
//! computed with. The submitter's binary links this crate and no other of
//! ours, so what lands here lands on every GPU machine that submits.
//!
//! Arrows point down: `checks`, `derived`, `protocol` → `bundle` →
//! `rejection`, `domain`; everything computes with `stats`. What is built
//! from accepted figures (leaderboard, compare, insights, the estimator)
//! is `wattcounts-analytics`; demo data is `wattcounts-synth`.

pub mod arrival_schedule;
pub mod bundle;
pub mod catalog;
pub mod checks;
pub mod claims;
pub mod derived;
pub mod digest;
pub mod domain;
pub mod fuzz_targets;
pub mod handles;
pub mod memory_fit;
pub mod model_config;
pub mod pack;
pub mod peer;
pub mod protocol;
pub mod receipt;
pub mod rejection;
pub mod signing;
pub mod snapshot_manifest;
pub mod spreadsheet;
pub mod stats;
pub mod timestamp;
pub mod tlog;

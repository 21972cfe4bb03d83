//! wattcounts: the open submission service for the Watt Counts benchmark of
//! LLM-inference energy on GPUs. This crate is the binary's room: the
//! command line, the configuration that wires the others together, and the
//! demo data; the integration tests drive it.
//!
//! The rooms are crates, so the compiler holds the arrows:
//! `wattcounts-web` → `wattcounts-service` → `wattcounts-snapshot` →
//! `wattcounts-store` → `wattcounts-analytics` → `wattcounts-rules`, and
//! `wattcounts-synth` makes the demo data. They are re-exported here under
//! the paths the tests and tools name (`wattcounts::store`, …).

pub use wattcounts_analytics::{
    compare, deadline, estimator, insights, leaderboard, units, verdict,
};
pub use wattcounts_rules::{
    bundle, catalog, checks, derived, digest, domain, fuzz_targets, handles, model_config, pack,
    peer, protocol, receipt, rejection, signing, spreadsheet, timestamp, tlog,
};
pub use wattcounts_service as service;
pub use wattcounts_service::analysis;
pub use wattcounts_service::{ingest, limits, telemetry};
pub use wattcounts_snapshot as snapshot;
pub use wattcounts_store as store;
pub use wattcounts_synth as synth;
pub use wattcounts_web as web;

pub mod app;
pub mod cli;
pub mod config;
pub mod demo;

//! wattcounts: the open submission service for the Watt Counts benchmark of
//! LLM-inference energy on GPUs: storage, the service's one door, dataset
//! snapshots, the web and the command line.
//!
//! The pure rules (bundle parsing, checks, derived metrics, protocols,
//! signing, the log's hashing, leaderboard aggregation, verdicts, the
//! receipt) are the `wattcounts-core` crate, re-exported here under their
//! old paths; the submitter's commands are `wattcounts-submit`. Inside this
//! crate arrows point one way: `web` → `service` → `ingest` → core, and
//! `service` → `store`. Nothing below `web` knows HTTP.

pub use wattcounts_core::{
    analysis, bundle, catalog, checks, compare, deadline, derived, digest, domain, fuzz_targets,
    handles, leaderboard, pack, protocol, receipt, rejection, signing, spreadsheet, synth,
    timestamp, tlog, units, verdict,
};

pub mod cli;
pub mod config;
pub mod demo;
pub mod ingest;
pub mod limits;
pub mod service;
pub mod snapshot;
pub mod store;
pub mod telemetry;
pub mod web;

//! wattcounts: the open submission service for the Watt Counts benchmark of
//! LLM-inference energy on GPUs.
//!
//! Arrows point one way: `web` → `service` → `ingest` → (`bundle`,
//! `checks`, `metrics`, `protocol`, `signing`), `service` → `store`, and
//! everything → `domain`. Handlers never name the store. Nothing below
//! `web` knows HTTP; nothing in `bundle`, `checks` or `metrics` knows SQL.

pub mod audit;
pub mod bundle;
pub mod catalog;
pub mod checks;
pub mod cli;
pub mod compare;
pub mod config;
pub mod deadline;
pub mod demo;
pub mod derived;
pub mod domain;
pub mod fuzz_targets;
pub mod handles;
pub mod ingest;
pub mod leaderboard;
pub mod limits;
pub mod pack;
pub mod protocol;
pub mod receipt;
pub mod rejection;
pub mod service;
pub mod signing;
pub mod snapshot;
pub mod spreadsheet;
pub mod store;
pub mod synth;
pub mod telemetry;
pub mod tlog;
pub mod units;
pub mod verdict;
pub mod web;

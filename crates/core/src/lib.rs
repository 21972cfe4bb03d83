//! wattcounts-core: the rules of the Watt Counts benchmark service that
//! need no I/O runtime, database, dataframe or HTTP: parsing a stranger's
//! bundle, the checks and their thresholds, derived metrics, protocols and
//! groups, signatures, the transparency log's hashing and proofs, the
//! leaderboard's aggregation, comparisons and verdicts, and the receipt.
//!
//! Arrows point down: `checks`, `derived`, `protocol` → `bundle` →
//! `rejection`, `domain`; `leaderboard`, `compare` → `derived`, `verdict`.
//! Everything above (store, service, snapshots, web, the submitter's CLI)
//! lives in other crates, so nothing here can reach for them.

pub mod analysis;
pub mod arrival_schedule;
pub mod bundle;
pub mod catalog;
pub mod checks;
pub mod compare;
pub mod deadline;
pub mod derived;
pub mod digest;
pub mod domain;
pub mod estimator;
pub mod fuzz_targets;
pub mod handles;
pub mod insights;
pub mod leaderboard;
pub mod memory_fit;
pub mod pack;
pub mod protocol;
pub mod receipt;
pub mod rejection;
pub mod signing;
pub mod spreadsheet;
pub mod synth;
pub mod timestamp;
pub mod tlog;
pub mod units;
pub mod verdict;

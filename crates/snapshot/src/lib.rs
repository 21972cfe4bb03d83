//! Dataset snapshots: versioned, immutable Parquet and CSV files of the
//! accepted data, with a dataset card, a citation file, Croissant metadata
//! and a manifest of digests that anyone can verify.
//!
//! `create` reads the store and writes files; `library` lists what is
//! published; `verify` checks a copy. Nothing here knows HTTP.

pub mod card;
pub mod columns;
pub mod create;
pub mod croissant;
pub mod library;
pub mod log_check;
/// The manifest format, defined with the rules: readers of a snapshot
/// (the service, the pages) need it without this crate.
pub use wattcounts_rules::snapshot_manifest as manifest;
pub mod tables;
pub mod traces;
pub mod verify;

pub use create::{create, Created, Options};
pub use library::{Library, Published};
pub use manifest::Manifest;

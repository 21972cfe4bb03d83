//! Untrusted input: the bundle archive, its manifest and the harness files in it.
//!
//! Everything here works on bytes already in memory and returns plain data or
//! a [`Rejection`](crate::rejection::Rejection); nothing here touches the
//! network or a database.

pub mod contents;
pub mod harness;
pub mod manifest;
pub mod strict_json;
pub mod system_info;
pub mod unpack;

/// The manifest's file name at the root of every bundle.
pub const MANIFEST_NAME: &str = "wattcounts.json";

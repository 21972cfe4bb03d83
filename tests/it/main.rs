//! Every integration test, in one binary: each test binary links the whole
//! crate (polars included), so one binary builds and links once. Tests are
//! filed by the feature a reader would look under; `common` is the one
//! harness they share.

mod common;

mod admin;
mod checks;
mod compare;
mod intake;
mod leaderboard;
mod log;
mod models;
mod operations;
mod peers;
mod site;
mod snapshots;

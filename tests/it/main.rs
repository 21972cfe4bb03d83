//! Every integration test, in one binary: each test binary links the whole
//! crate (polars included), so one binary builds and links once.

mod common;

mod admission;
mod backends;
mod backup;
mod browser;
mod bytes;
mod cache;
mod catalogue;
mod checks;
mod cli;
mod crash_points;
mod demo_findings;
mod demo_load;
mod disk_full;
mod estimates;
mod explore;
mod exports;
mod feeds;
mod groups;
mod hardening;
mod harness_fixtures;
mod insights;
mod instances;
mod intake;
mod log;
mod moderation;
mod openapi;
mod operations;
mod oracle;
mod oracle_wide;
mod outage;
mod pages;
mod peers;
mod properties;
mod rate_limits;
mod readers;
mod recompute;
mod registration;
mod rejections;
mod request_codes;
mod slow_clients;
mod snapshots;
mod store_calls;
mod upgrades;

//! The leaderboard and what feeds it: what counts as one group, the pages
//! and their JSON and CSV twins, GPU pages, the RSS feeds, the demo, and
//! every published figure against hand-worked oracles and an independent
//! recomputation.

mod csv;
mod demo_findings;
mod demo_load;
mod feeds;
mod gpu_pages;
mod groups;
mod oracle;
mod oracle_wide;
mod pages;
mod recompute;

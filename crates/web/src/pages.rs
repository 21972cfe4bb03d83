//! One module per resource a reader or maintainer visits, each holding its
//! HTML page, its JSON and CSV twins and the view models between: a new
//! page is a route in `routes.rs`, a module here and a template.

pub mod admin;
pub mod api_guide;
pub mod compare;
pub mod estimate;
pub mod feeds;
pub mod gpus;
pub mod guides;
pub mod index;
pub mod insights;
pub mod leaderboard;
pub mod log;
pub mod models;
pub mod peers;
pub mod snapshots;
pub mod submissions;

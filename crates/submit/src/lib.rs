//! wattcounts-submit: what a submitter runs on the GPU machine, from a
//! harness result folder to a stored, logged submission: `keygen`, `pack`,
//! `sign`, `register`, `submit` and `verify receipt`. The full `wattcounts`
//! binary runs these same functions under the same subcommand names; this
//! crate builds without the server's database drivers, dataframes or web
//! stack (its closure is wattcounts-rules, clap, reqwest and tokio).

pub mod cli;
pub mod client;
pub mod config_file;
pub mod keys;
pub mod model_configs;
pub mod pack_cmd;
pub mod run_folder;
pub mod verify_receipt;

/// Exit codes of `submit` and `verify`: 0 stored (accepted or
/// needs_review) or verified, 1 rejected or not verified, 2 usage or
/// transport errors.
pub const EXIT_REJECTED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

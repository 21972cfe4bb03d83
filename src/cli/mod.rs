//! The `wattcounts` command line: one subcommand per step of the path from
//! a harness result folder to a stored submission, plus the server. The
//! submitter's commands (keygen, pack, sign, register, submit, verify
//! receipt) are `wattcounts-submit`'s, so both binaries answer alike.

pub mod admin;
pub mod admin_gpu;
pub mod admin_model;
pub mod config_cmd;
pub mod db;
pub mod demo;
pub mod peer;
pub mod serve;
pub mod snapshot;
pub mod verify;

pub use wattcounts_submit::{config_file, EXIT_REJECTED, EXIT_USAGE};

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::ServeConfig;

#[derive(Debug, Parser)]
#[command(
    name = "wattcounts",
    version,
    about = "Open submission service for the Watt Counts LLM-inference energy benchmark",
    long_about = "Open submission service for the Watt Counts LLM-inference energy benchmark.\n\n\
Submitting a harness result folder:\n  \
wattcounts keygen --out ~/.wattcounts/id_ed25519\n  \
wattcounts register --server URL --handle you --key ~/.wattcounts/id_ed25519\n  \
wattcounts pack results/run_X --config config-v2.yaml --handle you --key ~/.wattcounts/id_ed25519.pub --audience URL\n  \
wattcounts sign run_X.tar.gz --key ~/.wattcounts/id_ed25519   (or ssh-keygen -Y sign -n wattcounts-submission)\n  \
wattcounts submit run_X.tar.gz --signature run_X.tar.gz.sig --server URL"
)]
pub struct Cli {
    /// Configuration file (TOML) every subcommand reads: keys are the long
    /// flags with _ for - and [checks] for thresholds; flags and WATTCOUNTS_*
    /// variables win over it. Default: ./wattcounts.toml when present.
    /// (Not `--config`: `pack --config` names the harness's YAML.)
    #[arg(long, global = true, env = "WATTCOUNTS_CONFIG")]
    pub config_file: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service (SQLite in --data-dir by default).
    Serve(Box<ServeConfig>),
    /// keygen, pack, sign, register, submit: wattcounts-submit's.
    #[command(flatten)]
    Submitter(wattcounts_submit::cli::SubmitterCommand),
    /// Synthetic harness data (the demo and the test fixtures).
    #[command(subcommand)]
    Demo(demo::DemoCommand),
    /// Maintainer tools.
    #[command(subcommand)]
    Admin(admin::AdminCommand),
    /// List the checks every bundle goes through, with their thresholds.
    Checks(admin::ChecksArgs),
    /// Database tools: back up and restore a deployment, copy SQLite to PostgreSQL, rebuild the read model, audit stored bundles.
    #[command(subcommand)]
    Db(db::DbCommand),
    /// Published measurements of other benchmarks: import and list the
    /// ML.ENERGY leaderboards mlenergy-v3, mlenergy-v2 and mlenergy-v1.
    #[command(subcommand)]
    Peer(peer::PeerCommand),
    /// Dataset snapshots: publish (maintainers) and list.
    #[command(subcommand)]
    Snapshot(snapshot::SnapshotCommand),
    /// The configuration file and the settings in force.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// Check a snapshot, a receipt or the transparency log without trusting the service.
    #[command(subcommand)]
    Verify(verify::VerifyCommand),
}

pub fn main() -> ExitCode {
    let cmd = Cli::command();
    let (args, layered) = match config_file::layer(
        &cmd,
        std::env::args_os().collect(),
        config_file::ForeignKeys::Refuse,
    ) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let matches = cmd.clone().get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(cfg) => serve::run(*cfg).await.map(|_| ExitCode::SUCCESS),
            Command::Submitter(c) => c.run().await,
            Command::Demo(d) => demo::run(d).await.map(|_| ExitCode::SUCCESS),
            Command::Admin(c) => admin::run(c).await,
            Command::Checks(a) => admin::list(&a).map(|_| ExitCode::SUCCESS),
            Command::Db(c) => db::run(c).await,
            Command::Peer(c) => peer::run(c).await,
            Command::Snapshot(c) => snapshot::run(c).await.map(|_| ExitCode::SUCCESS),
            Command::Verify(c) => verify::run(c).await,
            Command::Config(config_cmd::ConfigCommand::Print(cfg)) => {
                let (sub, m) = config_file::leaf(&cmd, &matches);
                config_cmd::lines(&cfg, sub, m, &layered).map(|lines| {
                    for l in lines {
                        println!("{l}");
                    }
                    ExitCode::SUCCESS
                })
            }
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

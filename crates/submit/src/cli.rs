//! The `wattcounts-submit` command line: the submitter's subcommands of
//! `wattcounts`, with the same flags, output and exit codes.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config_file::{self, ForeignKeys};
use crate::{client, keys, pack_cmd, verify_receipt, EXIT_USAGE};

#[derive(Debug, Parser)]
#[command(
    name = "wattcounts-submit",
    version,
    about = "Submit Watt Counts benchmark results: keygen, pack, sign, register, submit, verify receipt",
    long_about = "Submit Watt Counts benchmark results (the submitter's half of `wattcounts`).\n\n\
Submitting a harness result folder:\n  \
wattcounts-submit keygen --out ~/.wattcounts/id_ed25519\n  \
wattcounts-submit register --server URL --handle you --key ~/.wattcounts/id_ed25519\n  \
wattcounts-submit pack results/run_X --config config-v2.yaml --handle you --key ~/.wattcounts/id_ed25519.pub --audience URL\n  \
wattcounts-submit sign run_X.tar.gz --key ~/.wattcounts/id_ed25519   (or ssh-keygen -Y sign -n wattcounts-submission)\n  \
wattcounts-submit submit run_X.tar.gz --signature run_X.tar.gz.sig --server URL > receipt.json\n  \
wattcounts-submit verify receipt receipt.json --log-key \"$(curl -s URL/log/key)\" --bundle run_X.tar.gz"
)]
pub struct Cli {
    /// Configuration file (TOML): keys are the long flags with _ for -;
    /// flags and WATTCOUNTS_* variables win over it; keys of the server's
    /// commands are skipped. Default: ./wattcounts.toml when present.
    #[arg(long, global = true, env = config_file::ENV)]
    pub config_file: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(flatten)]
    Submitter(SubmitterCommand),
    /// Check a receipt without trusting the service.
    #[command(subcommand)]
    Verify(VerifyCommand),
}

/// The steps from a harness folder to a stored submission, shared with
/// `wattcounts` (which flattens them into its own subcommands).
#[derive(Debug, Subcommand)]
pub enum SubmitterCommand {
    /// Write a new OpenSSH Ed25519 key pair (PATH and PATH.pub).
    Keygen(keys::KeygenArgs),
    /// Pack a harness run folder into a submission bundle (.tar.gz).
    Pack(pack_cmd::PackArgs),
    /// Sign a bundle (writes BUNDLE.sig in ssh-keygen's sshsig format).
    Sign(keys::SignArgs),
    /// Register a handle and public key with a service.
    Register(client::RegisterArgs),
    /// Upload a bundle and its signature; prints the receipt as JSON.
    Submit(client::SubmitArgs),
}

impl SubmitterCommand {
    /// Runs the step; only `register` and `submit` touch the network.
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            SubmitterCommand::Keygen(a) => keys::keygen(&a).map(|_| ExitCode::SUCCESS),
            SubmitterCommand::Pack(a) => pack_cmd::run(&a).await.map(|_| ExitCode::SUCCESS),
            SubmitterCommand::Sign(a) => keys::sign(&a).map(|_| ExitCode::SUCCESS),
            SubmitterCommand::Register(a) => client::register(&a).await.map(|_| ExitCode::SUCCESS),
            SubmitterCommand::Submit(a) => client::submit(&a).await,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum VerifyCommand {
    /// Check a receipt's transparency-log proof offline: the leaf matches
    /// the receipt (and --bundle's bytes), the proof puts it in the tree,
    /// and the checkpoint is signed by the log key.
    Receipt(verify_receipt::ReceiptArgs),
}

pub fn main() -> ExitCode {
    let cmd = Cli::command();
    let args = match config_file::layer(&cmd, std::env::args_os().collect(), ForeignKeys::Ignore) {
        Ok((args, _)) => args,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let matches = cmd.get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Verify(VerifyCommand::Receipt(a)) => verify_receipt::run(&a),
        Command::Submitter(c) => runtime().and_then(|rt| rt.block_on(c.run())),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// One thread is enough: a submitter's command makes one request at a time.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))
}

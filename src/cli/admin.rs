//! `admin` (maintainer tokens) and `checks` (the rules and their limits).

use clap::{Args, Subcommand};

use crate::checks::{self, Severity, Thresholds};

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Print a new maintainer token and the NAME:SHA256 to configure
    /// (`serve --admin-token` or WATTCOUNTS_ADMIN_TOKENS). The service keeps
    /// only the hash; give the token to the maintainer and do not store it.
    Token(TokenArgs),
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Who the token is for; shown with every decision they make.
    #[arg(long)]
    pub name: String,
}

pub fn run(cmd: AdminCommand) -> anyhow::Result<()> {
    match cmd {
        AdminCommand::Token(a) => {
            let name = a.name.trim();
            if name.is_empty() || name.contains([':', ',']) {
                anyhow::bail!("--name must be non-empty and hold no ':' or ','");
            }
            let (token, hash) = crate::web::auth::new_token();
            println!("token for {name} (shown once; the service stores only its hash):");
            println!("  {token}");
            println!("configure the service with:");
            println!("  --admin-token {name}:{hash}");
            println!("  or WATTCOUNTS_ADMIN_TOKENS={name}:{hash} (comma separated for several)");
            Ok(())
        }
    }
}

#[derive(Debug, Args)]
pub struct ChecksArgs {
    /// Show the limits from this thresholds YAML instead of the defaults.
    #[arg(long)]
    pub thresholds: Option<std::path::PathBuf>,
}

/// Lists every check with its severity and rule, then the thresholds.
pub fn list(a: &ChecksArgs) -> anyhow::Result<()> {
    let t = match &a.thresholds {
        Some(p) => Thresholds::from_yaml(&std::fs::read_to_string(p)?)?,
        None => Thresholds::default(),
    };
    println!("Checks (hard: a failure rejects the bundle; soft: it needs a maintainer's review):");
    for r in checks::rules() {
        let sev = match r.severity {
            Severity::Hard => "hard",
            Severity::Soft => "soft",
        };
        println!("  {:<34} {sev}  {}", r.id, r.rule);
    }
    println!("\nThresholds (override any in a YAML file given to serve --thresholds):");
    print!("{}", serde_yaml_ng::to_string(&t)?);
    Ok(())
}

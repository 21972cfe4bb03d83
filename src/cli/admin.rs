//! `admin` (maintainer tokens) and `checks` (the rules and their limits).

use clap::{Args, Subcommand};

use wattcounts_rules::checks::{self, Severity, Thresholds};

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Print a new maintainer token and the NAME:SHA256 to configure
    /// (`serve --admin-token` or WATTCOUNTS_ADMIN_TOKENS). The service keeps
    /// only the hash; give the token to the maintainer and do not store it.
    Token(TokenArgs),
    /// List registered keys that the weak-key rule refuses (small-order or
    /// non-canonical Ed25519 points: no private key stands behind them),
    /// with the submissions signed by each; --suspend suspends their
    /// submitters so nothing more is accepted from them.
    WeakKeys(WeakKeysArgs),
    /// List registered handles a reader could take for one another under
    /// today's rule (same confusable skeleton: I, l and 1 are one letter,
    /// O and 0 another, plus Unicode's confusables), oldest first in each
    /// group. Nothing is renamed; exit 1 when any group is found.
    HandleCollisions(HandleCollisionsArgs),
    /// Write a new transparency-log signing key for instances that share a
    /// database (give each `serve --log-key-file FILE`); prints the
    /// verifier key readers check checkpoints with. A single instance makes
    /// its own (<data-dir>/log.key) on first start.
    LogKeygen(LogKeygenArgs),
    /// The GPU catalogue: add a GPU it lacks (through the running
    /// service's maintainer API; waiting submissions are judged again).
    #[command(subcommand)]
    Gpu(super::admin_gpu::GpuCommand),
    /// The model catalogue: add a model it lacks from its config.json
    /// (through the running service's maintainer API; waiting submissions
    /// are judged again).
    #[command(subcommand)]
    Model(super::admin_model::ModelCommand),
}

#[derive(Debug, Args)]
pub struct LogKeygenArgs {
    /// The log's name: the service's public URL without scheme, plus /log
    /// (e.g. energy.example.org/log).
    #[arg(long)]
    pub origin: String,
    /// Where to write the secret key (refused if it exists; mode 0600).
    #[arg(long)]
    pub out: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct WeakKeysArgs {
    /// sqlite:PATH or postgres://...; defaults to sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: std::path::PathBuf,
    /// Suspend the submitter of every weak key (recorded as a moderation event).
    #[arg(long)]
    pub suspend: bool,
    /// Who runs the audit; recorded with each suspension.
    #[arg(long, default_value = "weak-key audit")]
    pub actor: String,
}

#[derive(Debug, Args)]
pub struct HandleCollisionsArgs {
    /// sqlite:PATH or postgres://...; defaults to sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Who the token is for; shown with every decision they make.
    #[arg(long)]
    pub name: String,
}

pub async fn run(cmd: AdminCommand) -> anyhow::Result<std::process::ExitCode> {
    let ok = std::process::ExitCode::SUCCESS;
    match cmd {
        AdminCommand::WeakKeys(a) => weak_keys(&a).await.map(|()| ok),
        AdminCommand::HandleCollisions(a) => handle_collisions(&a).await,
        AdminCommand::Gpu(c) => super::admin_gpu::run(c).await,
        AdminCommand::Model(c) => super::admin_model::run(c).await,
        AdminCommand::LogKeygen(a) => {
            let origin = a.origin.trim();
            if origin.is_empty() || origin.contains(['+', ' ', '\n']) {
                anyhow::bail!("--origin must be non-empty and hold no '+' or spaces (e.g. energy.example.org/log)");
            }
            let (secret, key) = wattcounts_rules::tlog::checkpoint::LogKey::generate(origin)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            crate::config::write_secret(&a.out, &secret)
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", a.out.display()))?;
            println!(
                "wrote the log's secret key to {} (keep it; every instance needs it)",
                a.out.display()
            );
            println!("verifier key (publish it; readers check checkpoints with it):");
            println!("  {}", key.verifier_key());
            Ok(ok)
        }
        AdminCommand::Token(a) => {
            let name = a.name.trim();
            if name.is_empty() || name.contains([':', ',']) {
                anyhow::bail!("--name must be non-empty and hold no ':' or ','");
            }
            let (token, hash) = wattcounts_web::auth::new_token();
            println!("token for {name} (shown once; the service stores only its hash):");
            println!("  {token}");
            println!("configure the service with:");
            println!("  --admin-token {name}:{hash}");
            println!("  or WATTCOUNTS_ADMIN_TOKENS={name}:{hash} (comma separated for several)");
            Ok(ok)
        }
    }
}

/// Prints one line per group of lookalike handles.
async fn handle_collisions(a: &HandleCollisionsArgs) -> anyhow::Result<std::process::ExitCode> {
    let url = crate::config::existing_database_url(&a.data_dir, a.database_url.as_deref())?;
    let store = wattcounts_store::open(&url).await?;
    let handles = store.handles().await?;
    let groups = wattcounts_rules::handles::collisions(handles.iter().map(String::as_str));
    for g in &groups {
        println!("lookalikes: {} (registered first: {})", g.join(", "), g[0]);
    }
    println!(
        "{} group(s) of lookalike handles among {} registered; nothing was renamed",
        groups.len(),
        handles.len()
    );
    Ok(if groups.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(super::EXIT_REJECTED)
    })
}

/// Prints one block per refused key; with --suspend, suspends each one's
/// submitter under the moderation rules the admin API applies.
async fn weak_keys(a: &WeakKeysArgs) -> anyhow::Result<()> {
    use wattcounts_service::moderation;
    let url = crate::config::existing_database_url(&a.data_dir, a.database_url.as_deref())?;
    let store = wattcounts_store::open(&url).await?;
    let (weak, total) = moderation::weak_keys(store.as_ref()).await?;
    for w in &weak {
        let k = &w.key;
        println!("{} (submitter {}): {}", k.fingerprint, k.handle, w.why);
        println!("  {} submission(s) signed with it", w.submissions.len());
        for (id, status) in &w.submissions {
            println!("    {id} {}", status.as_str());
        }
        if a.suspend {
            if k.submitter_suspended_at.is_some() {
                println!("  submitter already suspended");
                continue;
            }
            let reason = format!(
                "key {} refused by the weak-key rule: {}",
                k.fingerprint, w.why
            );
            let by = moderation::actor(&a.actor, &reason)?;
            moderation::suspend(store.as_ref(), &k.handle, &by).await?;
            println!("  submitter {} suspended", k.handle);
        }
    }
    println!(
        "{} of {total} registered key(s) refused by the weak-key rule",
        weak.len()
    );
    if !weak.is_empty() && !a.suspend {
        println!("run again with --suspend to suspend their submitters");
    }
    Ok(())
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

//! Typed settings of `wattcounts serve`, from flags or `WATTCOUNTS_*`
//! environment variables.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Args;

use anyhow::Context;

use crate::bundle::unpack::UnpackLimits;
use crate::checks::Thresholds;
use crate::web::auth::Maintainers;

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "WATTCOUNTS_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Database URL: sqlite:PATH (created and migrated on first start).
    /// Defaults to sqlite:<data-dir>/wattcounts.db.
    #[arg(long, env = "WATTCOUNTS_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Folder for the database and the raw bundles (blobs/).
    #[arg(long, env = "WATTCOUNTS_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// The service's public origin. Bundles must be packed for it
    /// (`pack --audience`). Defaults to http://<bind>.
    #[arg(long, env = "WATTCOUNTS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Largest submission request body, bytes (413 above it).
    #[arg(long, env = "WATTCOUNTS_MAX_BODY_BYTES", default_value_t = 256 << 20)]
    pub max_body_bytes: u64,
    /// Largest total unpacked size of a bundle, bytes.
    #[arg(long, env = "WATTCOUNTS_MAX_UNPACKED_BYTES", default_value_t = UnpackLimits::default().max_unpacked_bytes)]
    pub max_unpacked_bytes: u64,
    /// Most entries (files and folders) in a bundle.
    #[arg(long, env = "WATTCOUNTS_MAX_ENTRIES", default_value_t = UnpackLimits::default().max_entries)]
    pub max_entries: usize,
    /// Largest unpacked/compressed size ratio of a bundle.
    #[arg(long, env = "WATTCOUNTS_MAX_RATIO", default_value_t = UnpackLimits::default().max_ratio)]
    pub max_ratio: f64,
    /// Unless real submissions exist, load the synthetic paper-scale demo (every
    /// catalogue GPU and model) through the real ingest pipeline. Generated
    /// bundles are cached in <data-dir>/demo.
    #[arg(long, env = "WATTCOUNTS_DEMO")]
    pub demo: bool,
    /// YAML file overriding check thresholds (`wattcounts checks` lists them
    /// with their defaults), e.g. `batch_energy_cv_pct: 7.5`.
    #[arg(long, env = "WATTCOUNTS_THRESHOLDS")]
    pub thresholds: Option<PathBuf>,
    /// Maintainer token as NAME:SHA256 (from `wattcounts admin token`);
    /// repeat the flag, or separate with commas in the variable. Without
    /// one, moderation is closed.
    #[arg(
        long = "admin-token",
        env = "WATTCOUNTS_ADMIN_TOKENS",
        value_delimiter = ','
    )]
    pub admin_tokens: Vec<String>,
    /// Compute every page and JSON answer afresh instead of caching them
    /// until the data changes (this instance's changes at once, other
    /// instances' within 2 s).
    #[arg(long, env = "WATTCOUNTS_NO_RESPONSE_CACHE")]
    pub no_response_cache: bool,
    /// On start, staging files and bundle blobs that no submission
    /// references (left by a crash or a lost race) are removed once older
    /// than this many seconds.
    #[arg(long, env = "WATTCOUNTS_ORPHAN_GRACE_SECS", default_value_t = 3600)]
    pub orphan_grace_secs: u64,
}

impl ServeConfig {
    /// The defaults `serve` would run with, for a data dir (tests and
    /// tools that build the app without a command line). Environment
    /// variables are not read.
    pub fn defaults(data_dir: &Path) -> ServeConfig {
        ServeConfig {
            bind: "127.0.0.1:0".parse().expect("valid address"),
            database_url: None,
            data_dir: data_dir.to_path_buf(),
            public_url: None,
            max_body_bytes: 256 << 20,
            max_unpacked_bytes: UnpackLimits::default().max_unpacked_bytes,
            max_entries: UnpackLimits::default().max_entries,
            max_ratio: UnpackLimits::default().max_ratio,
            demo: false,
            thresholds: None,
            admin_tokens: Vec::new(),
            no_response_cache: false,
            orphan_grace_secs: 3600,
        }
    }
}

/// The database a maintenance command works on: `url` when given, else the
/// data dir's embedded one, which must exist (a typo in --data-dir would
/// otherwise create an empty database).
pub fn existing_database_url(data_dir: &Path, url: Option<&str>) -> anyhow::Result<String> {
    if let Some(u) = url {
        return Ok(u.to_string());
    }
    let db = sqlite_path(data_dir);
    if !db.exists() {
        anyhow::bail!(
            "no database at {}: give --data-dir of a service (or --database-url)",
            db.display()
        );
    }
    Ok(format!("sqlite:{}", db.display()))
}

/// The embedded database of a data dir.
pub fn sqlite_path(data_dir: &Path) -> PathBuf {
    data_dir.join("wattcounts.db")
}

impl ServeConfig {
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite:{}", sqlite_path(&self.data_dir).display()))
    }
    /// The public URL, defaulting to the address actually bound (which
    /// differs from `bind` when it asks for port 0).
    pub fn public_url_for(&self, bound: std::net::SocketAddr) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"))
            .trim_end_matches('/')
            .to_string()
    }
    pub fn check_thresholds(&self) -> anyhow::Result<Thresholds> {
        match &self.thresholds {
            None => Ok(Thresholds::default()),
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading thresholds from {}", p.display()))?;
                Thresholds::from_yaml(&text)
                    .with_context(|| format!("thresholds file {}", p.display()))
            }
        }
    }
    pub fn maintainers(&self) -> anyhow::Result<Maintainers> {
        Maintainers::parse(&self.admin_tokens)
    }
    pub fn unpack_limits(&self) -> UnpackLimits {
        UnpackLimits {
            max_entries: self.max_entries,
            max_unpacked_bytes: self.max_unpacked_bytes,
            max_ratio: self.max_ratio,
        }
    }
}

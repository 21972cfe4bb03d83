//! Typed settings of `wattcounts serve`, from flags or `WATTCOUNTS_*`
//! environment variables.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Args;

use anyhow::Context;

use wattcounts_rules::bundle::unpack::UnpackLimits;
use wattcounts_rules::checks::Thresholds;
use wattcounts_web::auth::Maintainers;

#[derive(Debug, Clone, Args, serde::Serialize)]
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
    /// Keep bundles and snapshots in an S3-compatible bucket,
    /// s3://BUCKET[/PREFIX], instead of <data-dir>/blobs and snapshots;
    /// the data dir then holds only scratch files. Credentials, region and
    /// endpoint come from the AWS_* environment (AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP).
    #[arg(long, env = "WATTCOUNTS_BLOB_URL")]
    pub blob_url: Option<String>,
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
    /// Largest single file in a bundle, unpacked, bytes.
    #[arg(long, env = "WATTCOUNTS_MAX_ENTRY_BYTES", default_value_t = UnpackLimits::default().max_entry_bytes)]
    pub max_entry_bytes: u64,

    /// A connection must deliver a request's head (request line and
    /// headers) within this many seconds of opening, or of the previous
    /// response when kept alive; otherwise it is closed.
    #[arg(long, env = "WATTCOUNTS_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Deadline for a whole request other than an upload (408 after it).
    #[arg(long, env = "WATTCOUNTS_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Deadline for a whole upload, receiving and checking (408 after it).
    #[arg(long, env = "WATTCOUNTS_UPLOAD_TIMEOUT_SECS", default_value_t = 600)]
    pub upload_timeout_secs: u64,
    /// Slowest upload body accepted, bytes per second on average, measured
    /// once the grace period has passed (408 below it).
    #[arg(
        long,
        env = "WATTCOUNTS_UPLOAD_MIN_BYTES_PER_SEC",
        default_value_t = 8192
    )]
    pub upload_min_bytes_per_sec: u64,
    /// Seconds of an upload before its rate is judged.
    #[arg(long, env = "WATTCOUNTS_UPLOAD_RATE_GRACE_SECS", default_value_t = 10)]
    pub upload_rate_grace_secs: u64,
    /// Connections served at once; more wait in the listen backlog.
    #[arg(long, env = "WATTCOUNTS_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,
    /// Submissions checked at once (default: the number of cores).
    #[arg(long, env = "WATTCOUNTS_MAX_CONCURRENT_INGESTS")]
    pub max_concurrent_ingests: Option<usize>,
    /// Submissions waiting for a turn; one more gets 503 with Retry-After.
    #[arg(long, env = "WATTCOUNTS_INGEST_QUEUE", default_value_t = 32)]
    pub ingest_queue: usize,
    /// Upload bytes on the staging disk at once; beyond it 503.
    #[arg(long, env = "WATTCOUNTS_MAX_STAGING_BYTES", default_value_t = 4 << 30)]
    pub max_staging_bytes: u64,
    /// Free bytes on the data dir's disk below which /readyz answers 503 (0: not checked).
    #[arg(long, env = "WATTCOUNTS_MIN_FREE_DISK_BYTES", default_value_t = 64 << 20)]
    pub min_free_disk_bytes: u64,

    /// Length of a rate-limit window, seconds.
    #[arg(long, env = "WATTCOUNTS_RATE_WINDOW_SECS", default_value_t = 60)]
    pub rate_window_secs: u64,
    /// Submissions per client address per window (0: no limit).
    #[arg(long, env = "WATTCOUNTS_SUBMIT_LIMIT_PER_IP", default_value_t = 30)]
    pub submit_limit_per_ip: u32,
    /// Submissions per signing key per window (0: no limit).
    #[arg(long, env = "WATTCOUNTS_SUBMIT_LIMIT_PER_KEY", default_value_t = 20)]
    pub submit_limit_per_key: u32,
    /// Registrations per client address per window (0: no limit).
    #[arg(long, env = "WATTCOUNTS_REGISTER_LIMIT_PER_IP", default_value_t = 10)]
    pub register_limit_per_ip: u32,
    /// Registration attempts per public key per window (0: no limit).
    #[arg(long, env = "WATTCOUNTS_REGISTER_LIMIT_PER_KEY", default_value_t = 5)]
    pub register_limit_per_key: u32,
    /// Addresses of reverse proxies whose `X-Forwarded-For` is believed;
    /// repeat the flag, or separate with commas in the variable. Without
    /// one, the client is the socket's peer.
    #[arg(
        long = "trusted-proxy",
        env = "WATTCOUNTS_TRUSTED_PROXIES",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<std::net::IpAddr>,

    /// Grid carbon intensity the pages assume for gCO₂e per 1,000
    /// requests, grams per kWh (a presentation only: snapshots keep joules).
    #[arg(long, env = "WATTCOUNTS_GRID_G_PER_KWH", default_value_t = wattcounts_analytics::units::DEFAULT_GRID_G_PER_KWH, value_parser = non_negative)]
    pub grid_g_per_kwh: f64,
    /// Power usage effectiveness the pages assume for the same figure
    /// (facility energy ÷ GPU energy, at least 1).
    #[arg(long, env = "WATTCOUNTS_PUE", default_value_t = wattcounts_analytics::units::DEFAULT_PUE, value_parser = at_least_one)]
    pub pue: f64,

    /// The transparency log's signing key (`PRIVATE+KEY+…`, as `wattcounts
    /// admin log-keygen` writes it). Without it, <data-dir>/log.key is used,
    /// and created on first start. Instances sharing a database must all be
    /// given the same file: one whose key is not the one the database
    /// records refuses to start.
    #[arg(long, env = "WATTCOUNTS_LOG_KEY_FILE")]
    pub log_key_file: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics, on a listener of
    /// their own (off by default; keep it off the public network).
    #[arg(long, env = "WATTCOUNTS_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// The configuration file's [checks] table (set by the file layer).
    #[arg(long = "checks-toml", hide = true)]
    pub checks_toml: Option<String>,
    /// The configuration file's [estimator] table (set by the file layer).
    #[arg(long = "estimator-toml", hide = true)]
    pub estimator_toml: Option<String>,
    /// How often the published checkpoint (/log/checkpoint) advances to
    /// cover new leaves, seconds (maintainers can also publish at once).
    #[arg(long, env = "WATTCOUNTS_LOG_PUBLISH_SECS", default_value_t = 10)]
    pub log_publish_secs: u64,
}

fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of at least 0")),
    }
}

fn at_least_one(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of at least 1 (a PUE)")),
    }
}

/// The log's name for a public URL: `https://energy.example/` →
/// `energy.example/log` (a C2SP origin line: no scheme, no spaces).
pub fn log_origin(public_url: &str) -> String {
    let rest = public_url
        .trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    format!("{rest}/log")
}

/// Reads the log key at `path`, or (when `create`) makes one named
/// `origin` there, readable by the owner only, when none is. Instances
/// starting together on one data dir agree on one key: the file appears
/// whole or not at all, and the one that loses the race reads the other's.
pub fn load_log_key(
    path: &Path,
    origin: &str,
    create: bool,
) -> anyhow::Result<wattcounts_rules::tlog::checkpoint::LogKey> {
    use wattcounts_rules::tlog::checkpoint::LogKey;
    let read = |path: &Path| -> anyhow::Result<LogKey> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading the log key {}: {e}", path.display()))?;
        LogKey::from_secret(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    };
    if path.exists() || !create {
        return read(path);
    }
    let (secret, key) = LogKey::generate(origin).map_err(|e| anyhow::anyhow!("{e}"))?;
    match write_secret(path, &secret) {
        Ok(()) => {
            tracing::info!(path = %path.display(), verifier = key.verifier_key(), "created the log key");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(anyhow::anyhow!(
            "writing the log key to {}: {e}",
            path.display()
        )),
    }
}

/// Writes a secret readable by its owner only, never over an existing
/// file, and atomically: written beside, synced, then linked into place.
pub fn write_secret(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let result = (|| {
        let mut f = o.open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}

impl ServeConfig {
    /// The configuration tools and tests build the app with, for a data
    /// dir: every setting at the default its flag declares (clap's, the
    /// one place defaults are written; environment variables are not read)
    /// but for what [`TOOL_OVERRIDES`] names.
    pub fn defaults(data_dir: &Path) -> ServeConfig {
        use clap::FromArgMatches;
        let matches = ServeConfig::augment_args(clap::Command::new("serve"))
            .mut_args(|a| a.env(None))
            .try_get_matches_from(["serve"])
            .expect("every setting has a default");
        let mut c = ServeConfig::from_arg_matches(&matches).expect("the defaults parse");
        c.data_dir = data_dir.to_path_buf();
        c.bind = "127.0.0.1:0".parse().expect("valid address");
        c.submit_limit_per_ip = 0;
        c.submit_limit_per_key = 0;
        c.register_limit_per_ip = 0;
        c.register_limit_per_key = 0;
        c
    }
}

/// The settings where [`ServeConfig::defaults`] departs from the flags'
/// defaults, and why (a test holds the rest equal).
pub const TOOL_OVERRIDES: &[(&str, &str)] = &[
    ("data_dir", "the caller's folder"),
    (
        "bind",
        "port 0: any free port, so tests and tools never collide",
    ),
    (
        "submit_limit_per_ip",
        "off: tests that are not about limits send many requests from one address",
    ),
    ("submit_limit_per_key", "off, as above"),
    ("register_limit_per_ip", "off, as above"),
    ("register_limit_per_key", "off, as above"),
];

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
/// Where bundles and snapshots are kept: the data dir's `blobs/` and
/// `snapshots/`, or a bucket (with local scratch folders in the data dir).
pub fn file_stores(
    data_dir: &Path,
    blob_url: Option<&str>,
) -> anyhow::Result<(
    wattcounts_store::blobs::BlobStore,
    wattcounts_snapshot::Library,
)> {
    use wattcounts_snapshot::Library;
    use wattcounts_store::blobs::BlobStore;
    let made = |what: &str, e: std::io::Error| {
        anyhow::anyhow!("creating {what} under {}: {e}", data_dir.display())
    };
    match blob_url.filter(|u| !u.is_empty()) {
        None => Ok((
            BlobStore::new(data_dir.join("blobs")).map_err(|e| made("blobs/", e))?,
            Library::new(data_dir.join("snapshots")).map_err(|e| made("snapshots/", e))?,
        )),
        Some(url) => {
            let bucket = wattcounts_store::objects::open_url(url)?;
            let scratch = data_dir.join("scratch");
            Ok((
                BlobStore::with_objects(bucket.child("blobs")?, scratch.join("blobs"))
                    .map_err(|e| made("scratch/blobs", e))?,
                Library::with_objects(bucket.child("snapshots")?, scratch.join("snapshots"))
                    .map_err(|e| made("scratch/snapshots", e))?,
            ))
        }
    }
}

pub fn sqlite_path(data_dir: &Path) -> PathBuf {
    data_dir.join("wattcounts.db")
}

impl ServeConfig {
    /// The log's key: the configured file, else <data-dir>/log.key
    /// (created on first start, named after the public URL).
    pub fn log_key(
        &self,
        public_url: &str,
    ) -> anyhow::Result<wattcounts_rules::tlog::checkpoint::LogKey> {
        match &self.log_key_file {
            Some(p) => load_log_key(p, &log_origin(public_url), false),
            None => load_log_key(
                &self.data_dir.join("log.key"),
                &log_origin(public_url),
                true,
            ),
        }
    }

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
        if let Some(table) = &self.checks_toml {
            anyhow::ensure!(
                self.thresholds.is_none(),
                "thresholds are given twice: as [checks] in the configuration file and as --thresholds; keep one"
            );
            return toml::from_str(table).map_err(|e| anyhow::anyhow!("[checks]: {e}"));
        }
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
    /// The estimator's settings: the file's [estimator] table over the
    /// defaults; a bad key or value is an error naming it.
    pub fn estimator(&self) -> anyhow::Result<wattcounts_service::estimates::EstimatorConfig> {
        let cfg: wattcounts_service::estimates::EstimatorConfig = match &self.estimator_toml {
            Some(table) => {
                toml::from_str(table).map_err(|e| anyhow::anyhow!("[estimator]: {e}"))?
            }
            None => Default::default(),
        };
        cfg.check().map_err(|e| anyhow::anyhow!(e))?;
        Ok(cfg)
    }

    pub fn maintainers(&self) -> anyhow::Result<Maintainers> {
        Maintainers::parse(&self.admin_tokens)
    }
    pub fn rate_limits(&self) -> wattcounts_service::limits::RateLimits {
        wattcounts_service::limits::RateLimits::new(
            std::time::Duration::from_secs(self.rate_window_secs),
            self.submit_limit_per_ip,
            self.submit_limit_per_key,
            self.register_limit_per_ip,
            self.register_limit_per_key,
        )
    }
    pub fn admission_limits(&self) -> wattcounts_service::admission::AdmissionLimits {
        let machine = wattcounts_service::admission::AdmissionLimits::for_this_machine();
        wattcounts_service::admission::AdmissionLimits {
            concurrent_ingests: self
                .max_concurrent_ingests
                .unwrap_or(machine.concurrent_ingests),
            queued_ingests: self.ingest_queue,
            staging_bytes: self.max_staging_bytes,
            free_floor_bytes: self.min_free_disk_bytes,
        }
    }
    pub fn connection_limits(&self) -> wattcounts_web::server::ConnectionLimits {
        wattcounts_web::server::ConnectionLimits {
            header_timeout: std::time::Duration::from_secs(self.header_timeout_secs.max(1)),
            max_connections: self.max_connections,
            drain_timeout: std::time::Duration::from_secs(self.upload_timeout_secs),
        }
    }
    pub fn footprint(&self) -> wattcounts_analytics::units::Footprint {
        wattcounts_analytics::units::Footprint {
            grid_g_per_kwh: self.grid_g_per_kwh,
            pue: self.pue,
        }
    }
    pub fn unpack_limits(&self) -> UnpackLimits {
        UnpackLimits {
            max_entries: self.max_entries,
            max_entry_bytes: self.max_entry_bytes,
            max_unpacked_bytes: self.max_unpacked_bytes,
            max_ratio: self.max_ratio,
        }
    }
}

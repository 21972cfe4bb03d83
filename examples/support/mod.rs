//! What the examples share: a real `wattcounts serve` process, its memory,
//! registration over the API, distinct small bundles, and a service in
//! process with the paper-scale demo loaded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ssh_key::PrivateKey;
use wattcounts::pack::{self, PackInput};
use wattcounts::synth::RunFolder;
use wattcounts::{catalog, signing, synth};

pub const AUDIENCE: &str = "http://wattcounts.bench";

pub struct Serve {
    pub child: Child,
    pub url: String,
    /// Lines the server logged with "database is locked" (a writer that
    /// skipped the writer discipline), counted while it runs.
    pub locked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Serve {
    pub fn locked_lines(&self) -> usize {
        self.locked.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Serve {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    /// kill -9: no shutdown, no flush.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    /// SIGTERM and wait.
    pub fn stop(&mut self) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the release binary's `serve` on port 0 over `data` (and
/// `database_url` when given) and waits for its listening line.
pub fn serve(data: &Path, database_url: Option<&str>, extra: &[&str]) -> anyhow::Result<Serve> {
    serve_on("127.0.0.1:0", data, database_url, extra)
}

/// [`serve`] on a given address.
pub fn serve_on(
    bind: &str,
    data: &Path,
    database_url: Option<&str>,
    extra: &[&str],
) -> anyhow::Result<Serve> {
    let bin =
        std::env::var("WATTCOUNTS_BIN").unwrap_or_else(|_| "target/release/wattcounts".into());
    let mut cmd = Command::new(&bin);
    cmd.args([
        "serve",
        "--bind",
        bind,
        "--public-url",
        AUDIENCE,
        "--data-dir",
    ])
    .arg(data)
    .args(extra)
    .env("RUST_LOG", "warn")
    // Every client of these load runs is one address with a few keys: the
    // per-address and per-key limits would answer 429 to the load itself.
    .env("WATTCOUNTS_SUBMIT_LIMIT_PER_IP", "0")
    .env("WATTCOUNTS_SUBMIT_LIMIT_PER_KEY", "0")
    .env("WATTCOUNTS_REGISTER_LIMIT_PER_IP", "0")
    .env("WATTCOUNTS_REGISTER_LIMIT_PER_KEY", "0")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some(u) = database_url {
        cmd.args(["--database-url", u]);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting {bin}: {e} (cargo build --release first)"))?;
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let url = loop {
        let Some(line) = lines.next() else {
            anyhow::bail!("{bin} exited before listening");
        };
        let line = line?;
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
        }
    };
    // Keep draining (a full pipe would block the server), counting the
    // warnings a writer must never log.
    let locked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = locked.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if line.contains("database is locked") {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                eprintln!("server: {line}");
            }
        }
    });
    Ok(Serve { child, url, locked })
}

/// (VmRSS, VmHWM) of a process, in MB.
pub fn memory_mb(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub fn new_key() -> PrivateKey {
    PrivateKey::random(&mut rand_core::OsRng, ssh_key::Algorithm::Ed25519).expect("a key")
}

pub async fn register(
    client: &reqwest::Client,
    url: &str,
    handle: &str,
    key: &PrivateKey,
) -> anyhow::Result<()> {
    let fp = signing::fingerprint(key.public_key());
    let proof = signing::sign(
        key,
        signing::REGISTER_NAMESPACE,
        signing::registration_message(handle, AUDIENCE, &fp).as_bytes(),
    )?;
    let r = client
        .post(format!("{url}/api/v1/submitters"))
        .json(&serde_json::json!({"handle": handle, "public_key": key.public_key().to_openssh()?, "proof": proof}))
        .send()
        .await?;
    anyhow::ensure!(
        r.status() == 201,
        "registering {handle}: {}",
        r.text().await?
    );
    Ok(())
}

/// The value after `name` on the command line.
pub fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// One small L4 run of one model.
pub fn small_run() -> RunFolder {
    let gpu = catalog::gpu_by_id("l4").expect("L4 in the catalogue");
    let model = catalog::model_by_id("Qwen/Qwen2.5-0.5B-Instruct").expect("model in the catalogue");
    synth::generate_run(gpu, &[model], &synth::SynthOptions::small())
}

/// `files` (a run's, perhaps edited) packed for `handle` and signed:
/// (bundle, signature).
pub fn pack_signed(
    run: &RunFolder,
    files: Vec<(String, Vec<u8>)>,
    handle: &str,
    key: &PrivateKey,
) -> (Vec<u8>, Vec<u8>) {
    let packed = pack::pack(&PackInput {
        run_name: run.name.clone(),
        files,
        config_file: "config-v2.yaml".into(),
        config_yaml: run.config_yaml.clone(),
        handle: handle.into(),
        key_fingerprint: signing::fingerprint(key.public_key()),
        audience: AUDIENCE.into(),
        harness_commit: "bench".into(),
        vllm_version: None,
        declare_power_limit: false,
        created_at: chrono::Utc::now(),
        model_configs: Vec::new(),
        weights_indexes: Vec::new(),
    })
    .expect("packs");
    let sig = signing::sign(key, signing::SUBMISSION_NAMESPACE, &packed.bytes)
        .expect("signs")
        .into_bytes();
    (packed.bytes, sig)
}

/// One small L4 run, packed `n` ways that differ in their run content (a
/// comment line in system_info.txt): `n` different runs to the service.
pub fn distinct_bundles(
    handle: &str,
    key: &PrivateKey,
    first: usize,
    n: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    use rayon::prelude::*;
    let run = small_run();
    (first..first + n)
        .into_par_iter()
        .map(|i| {
            let files = run.files_marked(&format!("load copy {handle} {i}"));
            pack_signed(&run, files, handle, key)
        })
        .collect()
}

pub fn form(bundle: Vec<u8>, sig: Vec<u8>) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle).file_name("bundle.tar.gz"),
        )
        .part(
            "signature",
            reqwest::multipart::Part::bytes(sig).file_name("bundle.tar.gz.sig"),
        )
}

/// Percentile of sorted durations, ms.
pub fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// Waits until `/healthz` answers 200; the time it took.
pub async fn wait_healthy(
    client: &reqwest::Client,
    url: &str,
    limit: Duration,
) -> anyhow::Result<Duration> {
    let start = std::time::Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{url}/healthz")).send().await {
            if r.status() == 200 {
                return Ok(start.elapsed());
            }
        }
        anyhow::ensure!(start.elapsed() < limit, "{url} not healthy after {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A service over SQLite in `data` with the paper-scale demo loaded, as
/// `serve --demo` would (loaded once, reused by later runs), and its store.
pub async fn demo_service(
    data: &Path,
) -> anyhow::Result<(
    std::sync::Arc<dyn wattcounts::store::Store>,
    std::sync::Arc<wattcounts::service::Service>,
)> {
    std::fs::create_dir_all(data)?;
    let store =
        wattcounts::store::open(&format!("sqlite:{}", data.join("wattcounts.db").display()))
            .await?;
    let state = wattcounts::app::with_store(
        store.clone(),
        &wattcounts::config::ServeConfig::defaults(data),
        "https://bench.wattcounts.test".into(),
    )?;
    let service = state.service.clone();
    if service.needs_rebuild().await? {
        service.rebuild(|l| eprintln!("{l}")).await?;
    }
    if let Some(s) =
        wattcounts::demo::load_if_empty(&service, data, &synth::SynthOptions::default()).await?
    {
        eprintln!("demo loaded: {s:?}");
    }
    Ok((store, service))
}

//! Wiring: the store, files and service a configuration names, handed to
//! the web as its state. The web itself never opens a store; this is the
//! one place that does for `serve` (and for the tests, which give each
//! case its own store or bucket).

use std::sync::Arc;

use anyhow::Context;

use crate::config::ServeConfig;
use wattcounts_service::analysis::IngestConfig;
use wattcounts_service::Service;
use wattcounts_snapshot::Library;
use wattcounts_store::blobs::BlobStore;
use wattcounts_store::Store;
use wattcounts_web::{layers::deadline::Deadlines, AppState, WebSettings};

/// What `serve` runs: the store named by the configuration (created and
/// migrated), the blobs and snapshots in its data dir.
pub async fn build(cfg: &ServeConfig, public_url: String) -> anyhow::Result<AppState> {
    std::fs::create_dir_all(&cfg.data_dir)
        .with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let url = cfg.database_url();
    let store = wattcounts_store::open(&url)
        .await
        .with_context(|| format!("opening {url}"))?;
    let state = with_store(store, cfg, public_url)?;
    // GPUs maintainers added join the catalogue every check reads.
    let added = state.service.load_catalogue_additions().await?;
    if added > 0 {
        eprintln!("catalogue: {added} GPU(s) added by maintainers beside the shipped ones");
    }
    Ok(state)
}

/// The same over a store opened elsewhere.
pub fn with_store(
    store: Arc<dyn Store>,
    cfg: &ServeConfig,
    public_url: String,
) -> anyhow::Result<AppState> {
    let (blobs, library) = crate::config::file_stores(&cfg.data_dir, cfg.blob_url.as_deref())?;
    with_files(store, cfg, public_url, blobs, library)
}

/// The same with the bundles and snapshots kept where the caller says.
pub fn with_files(
    store: Arc<dyn Store>,
    cfg: &ServeConfig,
    public_url: String,
    blobs: BlobStore,
    library: Library,
) -> anyhow::Result<AppState> {
    let log_key = cfg.log_key(&public_url)?;
    let service = Service::with_limits(
        store,
        blobs,
        IngestConfig {
            public_url,
            unpack: cfg.unpack_limits(),
            thresholds: cfg.check_thresholds()?,
        },
        cfg.admission_limits(),
        cfg.rate_limits(),
        Some(log_key),
    )
    .with_estimator(cfg.estimator()?)
    .with_snapshot_library(library);
    let settings = WebSettings {
        max_body_bytes: cfg.max_body_bytes,
        maintainers: cfg.maintainers()?,
        response_cache: !cfg.no_response_cache,
        deadlines: Deadlines {
            request: std::time::Duration::from_secs(cfg.request_timeout_secs.max(1)),
            upload: std::time::Duration::from_secs(cfg.upload_timeout_secs.max(1)),
            upload_min_bytes_per_sec: cfg.upload_min_bytes_per_sec,
            upload_rate_grace: std::time::Duration::from_secs(cfg.upload_rate_grace_secs),
        },
        trusted_proxies: cfg.trusted_proxies.clone(),
        footprint: cfg.footprint(),
    };
    Ok(AppState::new(service, settings))
}

//! `serve`.

use std::sync::Arc;

use anyhow::Context;

use crate::config::ServeConfig;
use crate::ingest::{IngestConfig, Ingestor};
use crate::store::blobs::BlobStore;
use crate::web::{self, AppState};

pub async fn build_state(cfg: &ServeConfig, public_url: String) -> anyhow::Result<AppState> {
    std::fs::create_dir_all(&cfg.data_dir)
        .with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let url = cfg.database_url();
    let store = crate::store::open(&url)
        .await
        .with_context(|| format!("opening {url}"))?;
    let blobs = BlobStore::new(cfg.data_dir.join("blobs"))?;
    let ingestor = Ingestor::new(
        store,
        blobs,
        IngestConfig {
            public_url,
            unpack: cfg.unpack_limits(),
            thresholds: cfg.check_thresholds()?,
        },
    );
    Ok(AppState {
        ingestor: Arc::new(ingestor),
        max_body_bytes: cfg.max_body_bytes,
        maintainers: Arc::new(cfg.maintainers()?),
        cache: Arc::new(web::cache::ResponseCache::new(!cfg.no_response_cache)),
        snapshots: Arc::new(web::snapshots::Shelf::new(cfg.data_dir.join("snapshots"))?),
    })
}

pub async fn run(cfg: ServeConfig) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .init();
    let listener = tokio::net::TcpListener::bind(cfg.bind)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.bind))?;
    let addr = listener.local_addr()?;
    let public_url = cfg.public_url_for(addr);
    let state = build_state(&cfg, public_url.clone()).await?;
    eprintln!(
        "wattcounts {} listening on http://{addr} (public URL {}, database {})",
        env!("CARGO_PKG_VERSION"),
        public_url,
        cfg.database_url()
    );
    // Other instances on the same database: notice their writes.
    tokio::spawn(
        state
            .ingestor
            .clone()
            .watch_other_writers(std::time::Duration::from_secs(2)),
    );
    if cfg.demo {
        // Load in the background: the service answers while it fills up.
        let ingestor = state.ingestor.clone();
        let data_dir = cfg.data_dir.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::demo::load_if_empty(
                &ingestor,
                &data_dir,
                &crate::synth::SynthOptions::default(),
            )
            .await
            {
                eprintln!("demo: failed: {e:#}");
            }
        });
    }
    axum::serve(listener, web::app(state))
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    eprintln!("shutting down");
}

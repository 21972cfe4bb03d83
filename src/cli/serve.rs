//! `serve`.

use anyhow::Context;

use crate::config::ServeConfig;
use wattcounts_web as web;

pub async fn run(cfg: ServeConfig) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .init();
    // Debug builds only: a test's named crash point (a misspelt one stops here).
    if let Some((point, pass)) = wattcounts_store::crash_points::armed() {
        eprintln!("crash point armed: {} (pass {pass})", point.name());
    }
    let listener = tokio::net::TcpListener::bind(cfg.bind)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.bind))?;
    let addr = listener.local_addr()?;
    let public_url = cfg.public_url_for(addr);
    let state = crate::app::build(&cfg, public_url.clone()).await?;
    let (files, bytes) = state
        .service
        .recover(std::time::Duration::from_secs(cfg.orphan_grace_secs))
        .await?;
    eprintln!(
        "recovery: removed {files} orphan staging file(s) and blob(s), {bytes} bytes (older than {} s, referenced by no submission)",
        cfg.orphan_grace_secs
    );
    let (imported, stale) = state.service.tidy_snapshots().await?;
    eprintln!(
        "snapshots in {}: {imported} folder(s) listed in the database now, {stale} unfinished creation(s) removed",
        state.service.snapshot_place()
    );
    // A deployment that has just migrated: derive what the read model needs.
    if state.service.needs_rebuild().await? {
        eprintln!("read model: stored submissions predate it; rebuilding (wattcounts db rebuild)");
        let report = state
            .service
            .rebuild(|line| eprintln!("read model: {line}"))
            .await?;
        eprintln!(
            "read model: {} submissions, {} groups, {} duplicate run(s) set aside",
            report.submissions,
            report.groups,
            report.duplicates.len()
        );
    }
    // The transparency log: this instance's key must be the log's; what
    // was stored before the log existed is appended once.
    let backfilled = state.service.start_log().await?;
    let tlog = state.service.tlog();
    let stats = tlog.stats().await?;
    eprintln!(
        "transparency log '{}': {} leaves ({backfilled} backfilled now), verifier key {}",
        tlog.origin().unwrap_or_default(),
        stats.size,
        tlog.verifier_key().unwrap_or_default()
    );
    tokio::spawn(
        state
            .service
            .clone()
            .publish_checkpoints(std::time::Duration::from_secs(cfg.log_publish_secs.max(1))),
    );
    eprintln!(
        "wattcounts {} listening on http://{addr} (public URL {}, database {})",
        env!("CARGO_PKG_VERSION"),
        public_url,
        cfg.database_url()
    );
    if let Some(bind) = cfg.metrics_bind {
        let handle = wattcounts_service::telemetry::install()?;
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .with_context(|| format!("cannot listen for metrics on {bind}"))?;
        eprintln!("metrics at http://{}/metrics", listener.local_addr()?);
        tokio::spawn(web::layers::telemetry::serve_metrics(
            listener,
            state.clone(),
            handle,
        ));
    }
    // The estimator fits in the background whenever the data settle.
    tokio::spawn(state.service.clone().run_estimator());
    // Other instances on the same database: notice their writes.
    tokio::spawn(
        state
            .service
            .clone()
            .watch_other_writers(std::time::Duration::from_secs(2)),
    );
    // A `peer import` run beside it writes releases the data stamp above
    // does not count: notice them too, so they are served at once.
    tokio::spawn(
        state
            .service
            .clone()
            .watch_peer_imports(std::time::Duration::from_secs(1)),
    );
    if cfg.demo {
        // Load in the background: the service answers while it fills up.
        let service = state.service.clone();
        let data_dir = cfg.data_dir.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::demo::load_peers(&service).await {
                eprintln!("demo: the shipped ML.ENERGY v3 files: failed: {e:#}");
            }
            if let Err(e) = crate::demo::load_if_empty(
                &service,
                &data_dir,
                &wattcounts_synth::SynthOptions::default(),
            )
            .await
            {
                eprintln!("demo: failed: {e:#}");
            }
        });
    }
    web::server::serve(
        listener,
        web::app(state),
        cfg.connection_limits(),
        shutdown(),
    )
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

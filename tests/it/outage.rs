//! PostgreSQL going away (issue #7): requests answer 503 within a couple of
//! seconds instead of hanging, the service recovers by itself when the
//! database is back, and a retried submission is not duplicated. The outage
//! is real: the service reaches PostgreSQL through a TCP relay the test cuts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use axum::http::StatusCode;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Relays TCP to `target` until `down` is set: then every relayed
/// connection is cut and new ones are closed at once.
async fn relay(target: String, down: Arc<AtomicBool>, cut: watch::Receiver<u64>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            if down.load(Ordering::SeqCst) {
                drop(inbound);
                continue;
            }
            let target = target.clone();
            let mut cut = cut.clone();
            // Only cuts from now on count for this connection.
            cut.borrow_and_update();
            tokio::spawn(async move {
                let Ok(mut outbound) = TcpStream::connect(&target).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cut.changed() => {}
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_outage_is_a_quick_503_and_heals() {
    let Some(url) = pg_url() else { return };
    // host:port of the real server, from the URL.
    let authority = url
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .map(|a| a.rsplit('@').next().unwrap().to_string())
        .unwrap();
    let target = if authority.contains(':') {
        authority.clone()
    } else {
        format!("{authority}:5432")
    };
    let down = Arc::new(AtomicBool::new(false));
    let (cut_tx, cut_rx) = watch::channel(0u64);
    let relay_addr = relay(target, down.clone(), cut_rx).await;
    let via_relay = url.replacen(&authority, &relay_addr, 1);
    let store = wattcounts::store::postgres::PgStore::open(&via_relay, Some(&pg_schema()))
        .await
        .unwrap();
    let app = TestApp::with_store(Arc::new(store), tempfile::tempdir().unwrap(), 256 << 20);
    let key = app.register("alice").await;
    let first = bundle("alice", &key);
    assert_eq!(
        app.submit(&first, &sign(&key, &first)).await.0,
        StatusCode::CREATED
    );

    // The database goes away.
    down.store(true, Ordering::SeqCst);
    cut_tx.send_modify(|n| *n += 1);
    let t = Instant::now();
    let (status, body) = app.get("/api/v1/leaderboard").await;
    let waited = t.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    assert!(
        waited < Duration::from_millis(3000),
        "answered after {waited:?}"
    );

    let retried = distinct_bundle("alice", &key, 1);
    let sig = sign(&key, &retried);
    let t = Instant::now();
    let (status, _) = app.submit(&retried, &sig).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        t.elapsed() < Duration::from_millis(3000),
        "{:?}",
        t.elapsed()
    );

    // It comes back: the service heals without a restart, and the retried
    // bundle is stored once.
    down.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(15);
    let receipt = loop {
        let (status, body) = app.submit(&retried, &sig).await;
        if status == StatusCode::CREATED {
            break body;
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(Instant::now() < deadline, "no recovery within 15 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (status, again) = app.submit(&retried, &sig).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, receipt);
    assert_eq!(app.counts().await.submissions, 2);
}

//! Slow clients (issue #13, item 2): /healthz latency idle, then with 300
//! connections that each sent half a request line and stopped; how long
//! until the server has closed all 300 (the header timeout), and /healthz
//! p99 meanwhile.
//!
//!     cargo build --release --examples --bins
//!     target/release/examples/slow_clients [--connections 300] [--header-timeout-secs 10]

mod support;

use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// /healthz `n` times in a row on one keep-alive client; sorted latencies.
async fn healthz(client: &reqwest::Client, url: &str, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let r = client.get(format!("{url}/healthz")).send().await?;
        anyhow::ensure!(r.status() == 200, "/healthz answered {}", r.status());
        r.bytes().await?;
        out.push(start.elapsed());
    }
    out.sort();
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = arg(&args, "--connections").map_or(Ok(300), |s| s.parse())?;
    let timeout: u64 = arg(&args, "--header-timeout-secs").map_or(Ok(10), |s| s.parse())?;
    let data = tempfile::tempdir()?;
    let server = serve(
        data.path(),
        None,
        &["--header-timeout-secs", &timeout.to_string()],
    )?;
    let url = server.url.clone();
    let addr = url.trim_start_matches("http://").to_string();
    let client = reqwest::Client::new();
    healthz(&client, &url, 50).await?;
    let idle = healthz(&client, &url, 500).await?;

    let opened = Instant::now();
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = tokio::net::TcpStream::connect(&addr).await?;
        s.write_all(b"GET /healthz HT").await?;
        held.push(s);
    }
    let mut closers = tokio::task::JoinSet::new();
    for mut s in held {
        closers.spawn(async move {
            let mut buf = [0u8; 64];
            // 0 bytes or a reset: the server hung up.
            let _ = tokio::time::timeout(Duration::from_secs(120), s.read(&mut buf)).await;
            opened.elapsed()
        });
    }
    let loaded = healthz(&client, &url, 500).await?;
    let mut closed = Vec::with_capacity(n);
    while let Some(t) = closers.join_next().await {
        closed.push(t?);
    }
    closed.sort();
    let (rss, hwm) = memory_mb(server.pid());
    println!("== {n} connections holding half a request line, header timeout {timeout} s");
    println!(
        "/healthz idle              p50 {:.2} ms, p99 {:.2} ms (500 requests)",
        pct(&idle, 0.5),
        pct(&idle, 0.99)
    );
    println!(
        "/healthz with {n} held     p50 {:.2} ms, p99 {:.2} ms ({:.2}x idle p99)",
        pct(&loaded, 0.5),
        pct(&loaded, 0.99),
        pct(&loaded, 0.99) / pct(&idle, 0.99)
    );
    println!(
        "all {n} closed by the server after {:.2} s (first {:.2} s, median {:.2} s)",
        closed[n - 1].as_secs_f64(),
        closed[0].as_secs_f64(),
        closed[n / 2].as_secs_f64()
    );
    println!("server RSS {rss:.0} MB (peak {hwm:.0} MB)");
    // The held connections must not starve the others: a starved acceptor
    // shows as hundreds of milliseconds or timeouts. Below 10 ms a p99 of
    // 500 requests is one scheduling hiccup of a 2-core machine that has
    // just run the load checks (CI once saw 6.95 ms against 2.88 ms idle;
    // 0.76-1.00 ms in three runs on a quiet machine), so the floor is 5 ms.
    let ok = closed[n - 1] < Duration::from_secs(timeout + 2)
        && pct(&loaded, 0.99) <= 2.0 * pct(&idle, 0.99).max(5.0);
    println!("{}", if ok { "PASS" } else { "FAIL" });
    std::process::exit(if ok { 0 } else { 1 });
}

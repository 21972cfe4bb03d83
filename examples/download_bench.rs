//! What a download costs an instance: one file served from the data dir
//! and the same file proxied from an S3 bucket (s3s-fs on loopback, which
//! checks every request's SigV4 signature), both through the service's own
//! download path (`web::download`: ETag, If-None-Match, one Range).
//!
//!     cargo run --release --example download_bench [-- --mib 256 --rounds 5]
//!
//! Prints, for each place, the median throughput of whole downloads, the
//! median time of a 1 MiB range at the end of the file and of a 304, and
//! the process's peak memory before and after: a proxy that buffered the
//! object would grow by the file's size.

#[path = "../tests/it/common/s3.rs"]
#[allow(dead_code)]
mod s3;
mod support;

use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use sha2::Digest;
use wattcounts::service::files::StoredFile;
use wattcounts::store::objects::Objects;
use wattcounts::web::download::Download;

const NAME: &str = "bench/file.bin";

fn route(objects: Objects, sha256: String) -> axum::routing::MethodRouter {
    get(move |req: Request| {
        let (file, sha256) = (StoredFile::new(&objects, NAME.into()), sha256.clone());
        async move {
            Download {
                file: &file,
                sha256: &sha256,
                media_type: "application/octet-stream",
            }
            .answer(req, &[])
            .await
            .into_response()
        }
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// The bytes of the whole object, or of its last MiB, read from the bucket.
async fn drain(bucket: &Objects, last_mib: bool) -> anyhow::Result<usize> {
    use futures_util::StreamExt;
    let mut f = bucket
        .fetch(NAME, |total| last_mib.then(|| total - (1 << 20)..total))
        .await?;
    let mut got = 0;
    while let Some(chunk) = f.body.next().await {
        got += chunk?.len();
    }
    Ok(got)
}

/// GET `url` with one header, expecting `status`: how long the whole
/// answer took, and its body's length.
async fn timed_get(
    client: &reqwest::Client,
    url: &str,
    (name, value): (&str, &str),
    status: u16,
) -> anyhow::Result<(Duration, usize)> {
    let t = Instant::now();
    let resp = client.get(url).header(name, value).send().await?;
    anyhow::ensure!(resp.status() == status, "{url} {name}: {}", resp.status());
    let body = resp.bytes().await?;
    Ok((t.elapsed(), body.len()))
}

/// One table row: medians, throughput, and peak memory before → after.
fn row(
    place: &str,
    bytes: usize,
    whole: Vec<Duration>,
    ranges: Vec<Duration>,
    not_modified: Option<Vec<Duration>>,
    (before, after): (f64, f64),
) {
    let whole = median(whole);
    println!(
        "| {place} | {:.0} MB/s ({}) | {} | {} | {before:.0} → {after:.0} MB |",
        bytes as f64 / 1e6 / whole.as_secs_f64(),
        ms(whole),
        ms(median(ranges)),
        not_modified.map_or("–".to_string(), |v| ms(median(v))),
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mib: usize = support::arg(&args, "--mib").map_or(Ok(256), |v| v.parse())?;
    let rounds: usize = support::arg(&args, "--rounds").map_or(Ok(5), |v| v.parse())?;
    anyhow::ensure!(
        mib >= 2 && rounds >= 1,
        "--mib at least 2, --rounds at least 1"
    );
    let bytes = mib << 20;

    // The file: pseudo-random, so nothing along the way compresses it;
    // written in 1 MiB pieces, so the peak memory below is the serving's.
    let work = tempfile::tempdir()?;
    let source = work.path().join("source.bin");
    let mut hasher = sha2::Sha256::new();
    {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&source)?);
        let mut piece = vec![0u8; 1 << 20];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..mib {
            for chunk in piece.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            hasher.update(&piece);
            out.write_all(&piece)?;
        }
        out.flush()?;
    }
    let sha256 = hex::encode(hasher.finalize());

    let s3 = s3::S3Server::start();
    let bucket = s3.objects(&s3.fresh_url());
    let put = Instant::now();
    bucket.put_file(NAME, &source).await?;
    let put = put.elapsed();
    // Last: a folder takes the file by rename.
    let local = Objects::local(work.path().join("local"))?;
    local.put_file(NAME, &source).await?;

    let app = Router::new()
        .route("/disk", route(local, sha256.clone()))
        .route("/s3", route(bucket.clone(), sha256.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let pid = std::process::id();

    println!(
        "{mib} MiB file, {rounds} rounds each; upload to the bucket took {} ({:.0} MB/s)",
        ms(put),
        bytes as f64 / 1e6 / put.as_secs_f64()
    );
    println!("| from | whole file | 1 MiB range at the end | 304 | peak RSS before → after |");
    println!("|---|---|---|---|---|");
    {
        // The bucket read in-process, no HTTP in front: what the proxy adds
        // is the difference to the s3 row.
        let (_, hwm_before) = support::memory_mb(pid);
        let mut whole = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let got = drain(&bucket, false).await?;
            anyhow::ensure!(got == bytes, "bucket: {got} of {bytes} bytes");
            whole.push(t.elapsed());
        }
        let mut ranges = Vec::new();
        for _ in 0..rounds.max(10) {
            let t = Instant::now();
            let got = drain(&bucket, true).await?;
            anyhow::ensure!(got == 1 << 20, "bucket: range of {got}");
            ranges.push(t.elapsed());
        }
        let hwm = (hwm_before, support::memory_mb(pid).1);
        row(
            "bucket, read in-process (no proxy)",
            bytes,
            whole,
            ranges,
            None,
            hwm,
        );
    }
    for place in ["disk", "s3"] {
        let url = format!("{base}/{place}");
        let (_, hwm_before) = support::memory_mb(pid);
        let mut whole = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let mut resp = client.get(&url).send().await?.error_for_status()?;
            let mut got = 0usize;
            // Read chunk by chunk, as a client saving to disk would.
            while let Some(chunk) = resp.chunk().await? {
                got += chunk.len();
            }
            anyhow::ensure!(got == bytes, "{place}: {got} of {bytes} bytes");
            whole.push(t.elapsed());
        }
        let (mut ranges, mut not_modified) = (Vec::new(), Vec::new());
        let last_mib = format!("bytes={}-", bytes - (1 << 20));
        let etag = format!("\"{sha256}\"");
        for _ in 0..rounds.max(10) {
            let (took, body) = timed_get(&client, &url, ("range", &last_mib), 206).await?;
            anyhow::ensure!(body == 1 << 20, "{place}: range of {body}");
            ranges.push(took);
            let (took, _) = timed_get(&client, &url, ("if-none-match", &etag), 304).await?;
            not_modified.push(took);
        }
        let hwm = (hwm_before, support::memory_mb(pid).1);
        row(place, bytes, whole, ranges, Some(not_modified), hwm);
    }
    Ok(())
}

//! What the transparency log costs (issue #15): per submission, and for a
//! proof at a million leaves. Release mode:
//!
//! ```sh
//! cargo run --release --example log_bench -- --leaves 1000000 [--database-url postgres://…]
//! ```
//!
//! 1. Real submissions (small L4 bundles through the whole ingest, receipt
//!    with its proof included) on an empty log: the baseline.
//! 2. The log filled to `--leaves` (synthetic submission leaves, their
//!    stored hashes computed in memory and inserted in bulk).
//! 3. At that size: the log's own work for one more submission (one leaf
//!    appended in its own transaction: lock, next index, ≤ 20 stored
//!    hashes read, leaf and ~2 hashes written, commit), real submissions
//!    again, inclusion and consistency proofs with their signed
//!    checkpoints, tiles, and the proof API through the router.

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use support::{arg, pct};
use wattcounts::store::Store;
use wattcounts::tlog::{Leaf, StoredHashes};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    pct(&v, 0.5)
}

fn synthetic_leaf(i: u64) -> Vec<u8> {
    Leaf::Submission {
        bundle_sha256: format!("{:064x}", i + 1),
        content_sha256: format!("{:064x}", u64::MAX - i),
        key_fingerprint: "SHA256:benchbenchbenchbenchbenchbenchbenchbenchb".into(),
        received_at: "2026-12-02T00:00:00.000Z".into(),
        status: "accepted".into(),
        submission_id: uuid::Uuid::from_u64_pair(0xbe7c, i).to_string(),
    }
    .canonical()
}

enum Pool {
    Sqlite(sqlx::SqlitePool),
    Pg(sqlx::PgPool),
}

macro_rules! on_pool {
    ($pool:expr, |$p:ident| $body:expr) => {
        match $pool {
            Pool::Sqlite($p) => $body,
            Pool::Pg($p) => $body,
        }
    };
}

/// Appends synthetic leaves from the log's current size to `n`, in bulk.
async fn fill(pool: &Pool, store: &dyn Store, n: u64) -> anyhow::Result<()> {
    let have = store.log_stats().await?.size;
    let existing = store.log_entries(0, have).await?;
    let mut tree = StoredHashes::default();
    for e in &existing {
        tree.append(e.leaf.as_bytes())?;
    }
    let mut entries: Vec<(i64, String)> = Vec::new();
    let mut hashes: Vec<(i64, String)> = Vec::new();
    let start = Instant::now();
    for i in have..n {
        let leaf = synthetic_leaf(i);
        let (_, pairs) = tree.append(&leaf)?;
        entries.push((i as i64, String::from_utf8(leaf)?));
        hashes.extend(pairs.into_iter().map(|(j, h)| (j as i64, hex::encode(h.0))));
    }
    eprintln!(
        "computed {} leaves and {} stored hashes in {:.1} s; inserting",
        entries.len(),
        hashes.len(),
        start.elapsed().as_secs_f64()
    );
    on_pool!(pool, |p| {
        let mut tx = p.begin().await?;
        // Both tables take rows of (index, text); the leaves add a constant.
        for (head, tail, rows) in [
            (
                "INSERT INTO log_entries (idx, leaf, backfilled) VALUES",
                ", FALSE",
                &entries,
            ),
            ("INSERT INTO log_hashes (idx, hash) VALUES", "", &hashes),
        ] {
            for chunk in rows.chunks(500) {
                let values: Vec<String> = (0..chunk.len())
                    .map(|k| format!("(${}, ${}{tail})", 2 * k + 1, 2 * k + 2))
                    .collect();
                let sql = format!("{head} {}", values.join(", "));
                let mut q = sqlx::query(&sql);
                for (i, text) in chunk {
                    q = q.bind(*i).bind(text.as_str());
                }
                q.execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
    });
    eprintln!(
        "log filled to {n} leaves in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `k` copies of a stored submission without a leaf (what the start-up
/// backfill appends), so the log's own work can be timed leaf by leaf.
async fn unlogged_copies(pool: &Pool, of: &str, k: usize) -> anyhow::Result<()> {
    let cols = "submitter_id, key_id, status, received_at, gpu_name, gpu_id, run_name, is_demo, bundle_bytes, blob_path, \
                signature, manifest, protocol, iterations, power_samples";
    for i in 0..k {
        let sql = format!(
            "INSERT INTO submissions (id, bundle_sha256, content_sha256, {cols}) SELECT $1, $2, $3, {cols} FROM submissions WHERE id = $4"
        );
        let id = uuid::Uuid::new_v4().to_string();
        let digest = format!("{:064x}", uuid::Uuid::new_v4().as_u128());
        let _ = i;
        let content = format!("bench-copy-{id}");
        on_pool!(pool, |p| {
            sqlx::query(&sql)
                .bind(&id)
                .bind(&digest)
                .bind(&content)
                .bind(of)
                .execute(p)
                .await?;
        });
    }
    Ok(())
}

/// Median time of appending one leaf in its own transaction (30 times):
/// what the log adds to a submission's write, its commit counted in.
async fn one_leaf_appends(pool: &Pool, store: &dyn Store, of: &str) -> anyhow::Result<f64> {
    let mut one = Vec::new();
    for _ in 0..30 {
        unlogged_copies(pool, of, 1).await?;
        let t = Instant::now();
        let n = store.backfill_log().await?;
        one.push(t.elapsed());
        anyhow::ensure!(n == 1, "appended {n}");
    }
    Ok(median(one))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let leaves: u64 = arg(&args, "--leaves").map_or(Ok(1_000_000), |v| v.parse())?;
    let database_url = arg(&args, "--database-url");
    let dir = tempfile::tempdir()?;
    let schema = format!("log_bench_{}", uuid::Uuid::new_v4().simple());
    let (store, pool): (Arc<dyn Store>, Pool) = match &database_url {
        Some(url) => {
            let s = wattcounts::store::postgres::PgStore::open(url, Some(&schema)).await?;
            let p = s.pool().clone();
            (Arc::new(s), Pool::Pg(p))
        }
        None => {
            let url = format!("sqlite:{}", dir.path().join("bench.db").display());
            let s = wattcounts::store::sqlite::SqliteStore::open(&url).await?;
            let p = s.pool().clone();
            (Arc::new(s), Pool::Sqlite(p))
        }
    };
    let cfg = wattcounts::config::ServeConfig::defaults(dir.path());
    let state = wattcounts::app::with_store(store.clone(), &cfg, support::AUDIENCE.into())?;
    let service = state.service.clone();
    let router = wattcounts::web::app(state);
    service.start_log().await?;

    let key = ssh_key::PrivateKey::random(&mut rand_core::OsRng, ssh_key::Algorithm::Ed25519)?;
    let public = key.public_key();
    store
        .create_submitter(&wattcounts::store::NewSubmitter {
            handle: "bench".into(),
            display_name: "bench".into(),
            fingerprint: wattcounts::signing::fingerprint(public),
            algorithm: "ssh-ed25519".into(),
            public_key: public.to_openssh()?,
        })
        .await?;
    let bundles = support::distinct_bundles("bench", &key, 0, 20);
    let submit_times = |from: usize| {
        let chunk: Vec<_> = bundles[from..from + 10].to_vec();
        let service = service.clone();
        async move {
            let mut times = Vec::new();
            let mut last = None;
            for (b, s) in chunk {
                let t = Instant::now();
                let (_, receipt) = service.submit(b, s).await?;
                times.push(t.elapsed());
                last = Some(receipt);
            }
            anyhow::Ok((times, last.expect("ten submissions")))
        }
    };
    let (small, receipt) = submit_times(0).await?;
    let real_id = receipt.submission_id.to_string();
    println!(
        "empty log: a whole submission (small L4 bundle, ingest + receipt with proof) median {:.1} ms",
        median(small)
    );

    let small_append = one_leaf_appends(&pool, store.as_ref(), &real_id).await?;
    println!(
        "  the log's work for one submission at {} leaves: median {:.2} ms",
        service.tlog().stats().await?.size,
        small_append
    );

    fill(&pool, store.as_ref(), leaves).await?;
    let size = service.tlog().stats().await?.size;

    let (big, receipt) = submit_times(10).await?;

    println!("log of {size} leaves:");
    println!(
        "  a whole submission (same bundles' kind) median {:.1} ms; its receipt is leaf {} of {}",
        median(big),
        receipt.log.as_ref().map_or(0, |l| l.index),
        receipt.log.as_ref().map_or(0, |l| l.tree_size)
    );

    let at_size = service.tlog().stats().await?.size;
    let big_append = one_leaf_appends(&pool, store.as_ref(), &real_id).await?;
    println!(
        "  the log's work for one submission (one leaf appended in its own transaction, commit included) at {at_size} leaves: median {big_append:.2} ms",
    );
    let tlog = service.tlog();
    let n = service.tlog().stats().await?.size;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut inclusion = Vec::new();
    let mut proof_len = 0;
    for _ in 0..200 {
        let i = rng.gen_range(0..n);
        let t = Instant::now();
        let p = tlog.inclusion(i, n).await?;
        inclusion.push(t.elapsed());
        proof_len = p.hashes.len();
    }
    let mut consistency = Vec::new();
    for _ in 0..200 {
        let m = rng.gen_range(1..n);
        let t = Instant::now();
        tlog.consistency(m, n).await?;
        consistency.push(t.elapsed());
    }
    let mut receipts = Vec::new();
    for _ in 0..200 {
        let i = rng.gen_range(0..n);
        let t = Instant::now();
        tlog.receipt_part(i).await?;
        receipts.push(t.elapsed());
    }
    let mut tiles = Vec::new();
    for _ in 0..100 {
        let t_n = rng.gen_range(0..n / 256);
        let t = Instant::now();
        let tile = wattcounts::tlog::tiles::TilePath::Hashes {
            level: 0,
            n: t_n,
            width: 256,
        };
        tlog.tile(&tile).await?.expect("a full tile");
        tiles.push(t.elapsed());
    }
    let mut bundles_t = Vec::new();
    for _ in 0..100 {
        let t_n = rng.gen_range(0..n / 256);
        let t = Instant::now();
        let tile = wattcounts::tlog::tiles::TilePath::Entries { n: t_n, width: 256 };
        tlog.tile(&tile).await?.expect("a full bundle");
        bundles_t.push(t.elapsed());
    }
    let mut api = Vec::new();
    for _ in 0..200 {
        use tower::ServiceExt;
        let i = rng.gen_range(0..n);
        let req = axum::http::Request::get(format!("/api/v1/log/inclusion?index={i}&size={n}"))
            .body(axum::body::Body::empty())?;
        let t = Instant::now();
        let resp = router.clone().oneshot(req).await?;
        anyhow::ensure!(resp.status() == 200, "HTTP {}", resp.status());
        let _ = http_body_util::BodyExt::collect(resp.into_body()).await?;
        api.push(t.elapsed());
    }
    println!(
        "  inclusion proof of a random leaf in the tree of {n} ({proof_len} hashes) with its signed checkpoint: median {:.2} ms",
        median(inclusion)
    );
    println!(
        "  consistency proof from a random size to {n}: median {:.2} ms",
        median(consistency)
    );
    println!("  a receipt's log part (proof against the tree ending at the leaf, signed): median {:.2} ms", median(receipts));
    println!("  a full hash tile (256 hashes): median {:.2} ms; a full entry bundle (256 leaves): median {:.2} ms", median(tiles), median(bundles_t));
    println!(
        "  GET /api/v1/log/inclusion through the router: median {:.2} ms",
        median(api)
    );
    if let Pool::Sqlite(p) = &pool {
        // Count the database, not a write-ahead log still holding the fill.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(p)
            .await?;
        let bytes: u64 = std::fs::read_dir(dir.path())?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("bench.db"))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        println!("  SQLite database: {:.0} MB, {:.0} bytes per leaf (leaf, ~2 stored hashes, their rows)", bytes as f64 / 1e6, bytes as f64 / n as f64);
    }
    if let Pool::Pg(p) = &pool {
        // A million rows are not left behind in the caller's database.
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(p)
            .await?;
    }
    Ok(())
}

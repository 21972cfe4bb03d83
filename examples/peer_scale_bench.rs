//! What the peer pages cost as a peer release grows: the shipped ML.ENERGY
//! v3 files (565 configurations), then the same release 100 times over
//! (each model copied under 100 names: 56,500 configurations), imported
//! through `wattcounts peer import` and read from a real `serve
//! --no-response-cache` process, uncached, median and p95 of 15 requests.
//!
//!     cargo build --release && cargo run --release --example peer_scale_bench [-- --copies 100]
//!
//! Data dirs go to target/bench-peers-1 and target/bench-peers-N (made
//! anew each run).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

const PAGES: &[&str] = &[
    "/",
    "/peers",
    "/peers/mlenergy-v3",
    "/peers/mlenergy-v3?task=gpqa&sort=throughput&page=3",
    "/api/v1/peers/mlenergy-v3?task=lm-arena-chat&model=Qwen/Qwen3-8B",
    "/api/v1/peers/mlenergy-v3/configurations.csv?task=lm-arena-chat&gpu=H100",
    "/peers/mlenergy-v3/insights",
    "/api/v1/peers/mlenergy-v3/insights",
    "/leaderboard",
];
const REPEATS: usize = 15;

fn shipped() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/service/peers/mlenergy-v3")
}

/// The shipped release with every model copied `copies` times (model ids
/// suffixed `-copyN`), written as v3 publishes it.
fn scaled(dir: &Path, copies: usize) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir.join("tasks"))?;
    let mut index: Value = serde_json::from_slice(&std::fs::read(shipped().join("index.json"))?)?;
    let models = index["models"].as_object().cloned().unwrap_or_default();
    let mut scaled_models = serde_json::Map::new();
    for (id, m) in &models {
        for n in 0..copies {
            let name = if n == 0 {
                id.clone()
            } else {
                format!("{id}-copy{n}")
            };
            scaled_models.insert(name, m.clone());
        }
    }
    index["models"] = Value::Object(scaled_models);
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index)?)?;
    let mut total = 0;
    for task in ["gpqa", "lm-arena-chat", "sourcegraph-fim"] {
        let path = format!("tasks/{task}.json");
        let mut doc: Value = serde_json::from_slice(&std::fs::read(shipped().join(&path))?)?;
        let configs = doc["configurations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut out = Vec::with_capacity(configs.len() * copies);
        for n in 0..copies {
            for c in &configs {
                let mut c = c.clone();
                if n > 0 {
                    let id = format!("{}-copy{n}", c["model_id"].as_str().unwrap_or_default());
                    c["model_id"] = Value::String(id);
                }
                out.push(c);
            }
        }
        total += out.len();
        doc["configurations"] = Value::Array(out);
        std::fs::write(dir.join(&path), serde_json::to_vec(&doc)?)?;
    }
    Ok(total)
}

async fn measure(label: &str, data: &Path, folder: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(data);
    std::fs::create_dir_all(data)?;
    // `serve` creates the database; the import runs beside it, as an
    // operator's would.
    let server = support::serve(data, None, &["--no-response-cache"])?;
    let bin =
        std::env::var("WATTCOUNTS_BIN").unwrap_or_else(|_| "target/release/wattcounts".into());
    let start = Instant::now();
    let out = Command::new(&bin)
        .args(["peer", "import", "mlenergy-v3"])
        .arg(folder)
        .args(["--source-ref", "bench", "--data-dir"])
        .arg(data)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("imported"))
        .unwrap_or_default()
        .to_string();
    println!(
        "\n{label}: import {:.1} s ({summary})",
        start.elapsed().as_secs_f64()
    );
    let client = reqwest::Client::new();
    // The server notices the other process's import within 2 s.
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!("| path | median ms | p95 ms | bytes |\n|---|---|---|---|");
    for path in PAGES {
        let mut times = Vec::with_capacity(REPEATS);
        let mut bytes = 0;
        for _ in 0..REPEATS {
            let t = Instant::now();
            let resp = client.get(format!("{}{path}", server.url)).send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            times.push(t.elapsed());
            anyhow::ensure!(status.is_success(), "{path}: {status}");
            bytes = body.len();
        }
        times.sort();
        println!(
            "| `{path}` | {:.1} | {:.1} | {bytes} |",
            support::pct(&times, 0.5),
            support::pct(&times, 0.95)
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let copies: usize = support::arg(&args, "--copies")
        .map(|v| v.parse())
        .transpose()?
        .unwrap_or(100);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    measure(
        "the shipped v3 release (565 configurations)",
        &root.join("bench-peers-1"),
        &shipped(),
    )
    .await?;
    let folder = root.join(format!("bench-peers-files-{copies}"));
    let _ = std::fs::remove_dir_all(&folder);
    let n = scaled(&folder, copies)?;
    measure(
        &format!("{copies} x the release ({n} configurations)"),
        &root.join(format!("bench-peers-{copies}")),
        &folder,
    )
    .await
}

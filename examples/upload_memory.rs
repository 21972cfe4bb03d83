//! Peak memory of the server under N parallel uploads of the maximum body
//! size (issue #13, item 3). Each upload is a valid, signed bundle whose
//! extra file (listed in the manifest) is random bytes, so it does not
//! compress and the body is near `--max-body-bytes`. Prints the server's
//! peak RSS (VmHWM) idle and after the uploads, and what each answered.
//!
//!     cargo build --release --examples --bins
//!     target/release/examples/upload_memory [--parallel 4] [--mb 250]

mod support;

use std::time::Instant;

use rand::RngCore;
use support::*;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parallel: usize = arg(&args, "--parallel").map_or(Ok(4), |s| s.parse())?;
    let mb: usize = arg(&args, "--mb").map_or(Ok(250), |s| s.parse())?;
    let data = tempfile::tempdir()?;
    let server = serve(data.path(), None, &[])?;
    let url = server.url.clone();
    let client = reqwest::Client::new();
    let key = new_key();
    register(&client, &url, "big", &key).await?;

    eprintln!("packing {parallel} bundles of ~{mb} MB of random bytes ...");
    let run = small_run();
    let dir = tempfile::tempdir()?;
    let mut paths = Vec::new();
    for i in 0..parallel {
        let mut noise = vec![0u8; mb << 20];
        rand::rngs::OsRng.fill_bytes(&mut noise);
        let mut files = run.files.clone();
        files.push((format!("extra/noise-{i}.bin"), noise));
        let (bytes, sig) = pack_signed(&run, files, "big", &key);
        let p = dir.path().join(format!("b{i}.tar.gz"));
        std::fs::write(&p, &bytes)?;
        std::fs::write(p.with_extension("sig"), sig)?;
        paths.push(p);
    }
    let (idle_rss, idle_hwm) = memory_mb(server.pid());
    let start = Instant::now();
    let mut jobs = tokio::task::JoinSet::new();
    for p in paths {
        let (client, url) = (client.clone(), url.clone());
        jobs.spawn(async move {
            // The client holds its bundle; only the server's memory is measured.
            let bundle = std::fs::read(&p)?;
            let len = bundle.len() as u64;
            let sig = std::fs::read(p.with_extension("sig"))?;
            let form = form(bundle, sig);
            let r = client
                .post(format!("{url}/api/v1/submissions"))
                .multipart(form)
                .send()
                .await?;
            let status = r.status().as_u16();
            let body: serde_json::Value = r.json().await.unwrap_or_default();
            anyhow::Ok((
                len,
                status,
                body["error"]["code"].as_str().unwrap_or("").to_string(),
            ))
        });
    }
    let mut answers = Vec::new();
    while let Some(r) = jobs.join_next().await {
        answers.push(r??);
    }
    let took = start.elapsed();
    let (rss, hwm) = memory_mb(server.pid());
    let total: u64 = answers.iter().map(|a| a.0).sum();
    println!(
        "== {parallel} parallel uploads of {:.0} MB each ({:.0} MB in all) in {:.1} s",
        answers[0].0 as f64 / 1e6,
        total as f64 / 1e6,
        took.as_secs_f64()
    );
    println!(
        "answers                {:?}",
        answers
            .iter()
            .map(|a| format!("{} {}", a.1, a.2))
            .collect::<Vec<_>>()
    );
    println!("server RSS idle        {idle_rss:.0} MB (peak so far {idle_hwm:.0} MB)");
    println!("server RSS after       {rss:.0} MB, peak during the uploads {hwm:.0} MB");
    // What this example exists to catch: an upload not stored, or memory
    // that grows with what is uploaded (--max-rss-mb, well under one bundle).
    let max_rss: f64 = arg(&args, "--max-rss-mb").map_or(Ok(128.0), |s| s.parse())?;
    let mut failures = Vec::new();
    let stored = answers.iter().filter(|a| a.1 == 201).count();
    if stored != parallel {
        failures.push(format!("{stored} of {parallel} uploads answered 201"));
    }
    if hwm > max_rss {
        failures.push(format!(
            "peak RSS {hwm:.0} MB over the bound of {max_rss:.0} MB"
        ));
    }

    // A bomb: a signed bundle whose extra file is GiBs of zeros, a few MB
    // of gzip. Refused while it streams past (the ratio cap), in constant
    // memory.
    let gib: usize = arg(&args, "--bomb-gib").map_or(Ok(2), |s| s.parse())?;
    if gib > 0 {
        eprintln!("packing a bomb of {gib} GiB of zeros ...");
        let mut files = run.files.clone();
        files.push(("extra/zeros.bin".into(), vec![0u8; gib << 30]));
        let (bytes, sig) = pack_signed(&run, files, "big", &key);
        let len = bytes.len();
        let start = Instant::now();
        let r = client
            .post(format!("{url}/api/v1/submissions"))
            .multipart(form(bytes, sig))
            .send()
            .await?;
        let status = r.status().as_u16();
        let body: serde_json::Value = r.json().await.unwrap_or_default();
        let (rss, hwm) = memory_mb(server.pid());
        println!(
            "bomb: {gib} GiB of zeros in {:.1} MB of gzip, signed: {status} {} in {:.2} s; server RSS {rss:.0} MB, peak {hwm:.0} MB",
            len as f64 / 1e6,
            body["error"]["code"].as_str().unwrap_or(""),
            start.elapsed().as_secs_f64()
        );
        if status != 413 {
            failures.push(format!("the bomb answered {status}, not 413"));
        }
        if hwm > max_rss {
            failures.push(format!(
                "peak RSS {hwm:.0} MB with the bomb, over {max_rss:.0} MB"
            ));
        }
    }
    if failures.is_empty() {
        println!("PASS");
        Ok(())
    } else {
        println!("FAIL: {}", failures.join("; "));
        std::process::exit(1);
    }
}

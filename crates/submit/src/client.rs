//! `register` and `submit`: the HTTP client side.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde_json::{json, Value};

use crate::{EXIT_REJECTED, EXIT_USAGE};
use wattcounts_rules::signing;

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// Base URL of the service, e.g. http://127.0.0.1:8080
    #[arg(long)]
    pub server: String,
    /// Handle to register: 3-39 ASCII letters, digits and '-'.
    #[arg(long)]
    pub handle: String,
    /// Your OpenSSH private key (proves you hold it; only the public key is sent).
    #[arg(long)]
    pub key: PathBuf,
    /// Display name shown with your submissions.
    #[arg(long)]
    pub name: Option<String>,
}

fn base(server: &str) -> String {
    server.trim_end_matches('/').to_string()
}

fn client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(600))
        .build()?)
}

pub async fn register(a: &RegisterArgs) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(&a.key).with_context(|| format!("reading {}", a.key.display()))?;
    let key = signing::load_private_key(&text)?;
    let public = key.public_key().clone();
    let fingerprint = signing::fingerprint(&public);
    let http = client()?;
    let server = base(&a.server);
    // The proof names the service's own idea of its public URL.
    let health: Value = http
        .get(format!("{server}/healthz"))
        .send()
        .await
        .with_context(|| format!("cannot reach {server}"))?
        .json()
        .await
        .context("the server's /healthz did not answer JSON")?;
    let audience = health["public_url"].as_str().unwrap_or(&server).to_string();
    let message = signing::registration_message(&a.handle, &audience, &fingerprint);
    let proof = signing::sign(&key, signing::REGISTER_NAMESPACE, message.as_bytes())?;
    let resp = http
        .post(format!("{server}/api/v1/submitters"))
        .json(&json!({
            "handle": a.handle,
            "display_name": a.name,
            "public_key": public.to_openssh()?,
            "proof": proof,
        }))
        .send()
        .await
        .with_context(|| format!("cannot reach {server}"))?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        anyhow::bail!(
            "registration refused ({status}): {}",
            body["error"]["message"].as_str().unwrap_or("no message")
        );
    }
    println!("registered '{}' with key {fingerprint}", a.handle);
    println!("pack bundles for this service with --audience {audience}");
    Ok(())
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 stored (accepted or needs_review), 1 rejected, 2 usage or transport error."
)]
pub struct SubmitArgs {
    /// The bundle written by `wattcounts pack`.
    pub bundle: PathBuf,
    /// Its signature (`wattcounts sign` or `ssh-keygen -Y sign -n wattcounts-submission`).
    #[arg(long, conflicts_with = "key", required_unless_present = "key")]
    pub signature: Option<PathBuf>,
    /// Sign on the fly with this unencrypted OpenSSH private key.
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// Base URL of the service.
    #[arg(long)]
    pub server: String,
}

pub async fn submit(a: &SubmitArgs) -> anyhow::Result<ExitCode> {
    let bundle =
        std::fs::read(&a.bundle).with_context(|| format!("reading {}", a.bundle.display()))?;
    let signature = match (&a.signature, &a.key) {
        (Some(p), _) => std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
        (None, Some(k)) => {
            let text =
                std::fs::read_to_string(k).with_context(|| format!("reading {}", k.display()))?;
            signing::sign(
                &signing::load_private_key(&text)?,
                signing::SUBMISSION_NAMESPACE,
                &bundle,
            )?
            .into_bytes()
        }
        (None, None) => anyhow::bail!("give --signature SIG or --key PRIVATE_KEY"),
    };
    let name = a
        .bundle
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("bundle.tar.gz")
        .to_string();
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle)
                .file_name(name)
                .mime_str("application/gzip")?,
        )
        .part(
            "signature",
            reqwest::multipart::Part::bytes(signature)
                .file_name("bundle.sig")
                .mime_str("text/plain")?,
        );
    let server = base(&a.server);
    let resp = match client()?
        .post(format!("{server}/api/v1/submissions"))
        .multipart(form)
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot reach {server}: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    println!("{}", serde_json::to_string_pretty(&body)?);
    if status.is_success() {
        let verdict = body["status"].as_str().unwrap_or("unknown");
        eprintln!(
            "{} ({}): {} models, {} configurations, {} iterations",
            verdict,
            if status.as_u16() == 201 {
                "stored now"
            } else {
                "already stored, same receipt"
            },
            body["counts"]["models"],
            body["counts"]["configurations"],
            body["counts"]["iterations"]
        );
        // What needs fixing or explaining, one line per check.
        for c in body["checks"].as_array().into_iter().flatten() {
            let outcome = c["outcome"].as_str().unwrap_or("");
            if outcome == "warn" || outcome == "fail" {
                eprintln!(
                    "  {outcome} {}: {}",
                    c["id"].as_str().unwrap_or("?"),
                    c["message"].as_str().unwrap_or("")
                );
            }
        }
        // Configurations the service set apart (a model that crashed
        // part-way): not published, the rest is.
        for c in body["rejected_configurations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let rate = c["lambda_qps"]
                .as_f64()
                .map(|l| format!(" at {l} req/s"))
                .unwrap_or_default();
            eprintln!(
                "  configuration rejected on its own (not published): {} {}{rate}",
                c["model"].as_str().unwrap_or("?"),
                c["scenario"].as_str().unwrap_or("?")
            );
            for k in c["checks"].as_array().into_iter().flatten() {
                eprintln!(
                    "    fail {}: {}",
                    k["id"].as_str().unwrap_or("?"),
                    k["message"].as_str().unwrap_or("")
                );
            }
        }
        return Ok(if verdict == "rejected" {
            ExitCode::from(EXIT_REJECTED)
        } else {
            ExitCode::SUCCESS
        });
    }
    if status.is_client_error() {
        eprintln!(
            "rejected ({status}): {}",
            body["error"]["message"].as_str().unwrap_or("")
        );
        return Ok(ExitCode::from(EXIT_REJECTED));
    }
    eprintln!("error: the server answered {status}");
    Ok(ExitCode::from(EXIT_USAGE))
}

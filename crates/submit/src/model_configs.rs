//! Each model's own config.json for `pack` (issue #54): from the Hugging
//! Face cache the harness loaded the model through (`$HF_HUB_CACHE`, else
//! `$HF_HOME/hub`, else `~/.cache/huggingface/hub`: one folder per repo,
//! `models--ORG--NAME/`, with `refs/main` naming the revision and
//! `snapshots/REVISION/config.json`), or from a file the submitter names
//! (`--model-config ID=FILE`), which wins. `run_benchmark.sh` deletes old
//! cache folders when the disk fills, so a config may be gone: it is then
//! fetched from the Hub (`$HF_ENDPOINT`, default https://huggingface.co,
//! with `$HF_TOKEN` for gated repos) at the revision `--model-revision`
//! states, else the one the cache names, else `main`; `HF_HUB_OFFLINE=1`
//! fetches nothing. A model whose config cannot be had is packed without
//! one (a catalogue model needs none).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Where the Hugging Face cache is, by the variables its tools honour.
pub fn hub_cache() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HF_HUB_CACHE") {
        return Some(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HF_HOME") {
        return Some(PathBuf::from(home).join("hub"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub"))
}

/// The revision the cache `hub` names for model `id` (`refs/main`, else
/// its one snapshot), even when the snapshot's files are gone.
pub fn cached_revision(hub: &Path, id: &str) -> Option<String> {
    let repo = hub.join(format!("models--{}", id.replace('/', "--")));
    std::fs::read_to_string(repo.join("refs/main"))
        .ok()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .or_else(|| {
            // No ref: the one snapshot there is.
            let mut snaps = std::fs::read_dir(repo.join("snapshots")).ok()?.flatten();
            let only = snaps.next()?;
            snaps
                .next()
                .is_none()
                .then(|| only.file_name().to_string_lossy().into_owned())
        })
}

/// Model `id`'s model.safetensors.index.json at `revision` in the cache
/// `hub`, when the harness's download kept it (sharded checkpoints have
/// one; a single-file checkpoint has none).
pub fn index_from_cache(hub: &Path, id: &str, revision: &str) -> Option<Vec<u8>> {
    let repo = hub.join(format!("models--{}", id.replace('/', "--")));
    std::fs::read(
        repo.join("snapshots")
            .join(revision)
            .join("model.safetensors.index.json"),
    )
    .ok()
}

/// Model `id`'s config.json in the cache `hub`: (revision, bytes).
pub fn from_cache(hub: &Path, id: &str) -> Option<(String, Vec<u8>)> {
    let repo = hub.join(format!("models--{}", id.replace('/', "--")));
    let revision = cached_revision(hub, id)?;
    let bytes = std::fs::read(repo.join("snapshots").join(&revision).join("config.json")).ok()?;
    Some((revision, bytes))
}

/// The Hub to fetch from: `$HF_ENDPOINT`, else Hugging Face's; None under
/// `HF_HUB_OFFLINE` (the Hugging Face tools' own switches).
pub fn hub_endpoint() -> Option<String> {
    let offline = std::env::var("HF_HUB_OFFLINE")
        .is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "False"));
    (!offline).then(|| {
        std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "https://huggingface.co".into())
    })
}

/// `config.json` of `id` at `revision` from the Hub at `endpoint`:
/// (the commit the Hub resolved it to, else `revision`; the bytes, which
/// must be JSON). `$HF_TOKEN` is sent for gated repositories.
pub async fn fetch_config(
    endpoint: &str,
    id: &str,
    revision: &str,
) -> anyhow::Result<(String, Vec<u8>)> {
    fetch_file(endpoint, id, revision, "config.json").await
}

/// `file` of `id` at `revision` from the Hub at `endpoint`, which must be
/// JSON: (the commit the Hub resolved it to, else `revision`; the bytes).
pub async fn fetch_file(
    endpoint: &str,
    id: &str,
    revision: &str,
    file: &str,
) -> anyhow::Result<(String, Vec<u8>)> {
    let url = format!(
        "{}/{id}/resolve/{revision}/{file}",
        endpoint.trim_end_matches('/')
    );
    let http = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(std::time::Duration::from_secs(60))
        .build()?;
    let mut req = http.get(&url);
    if let Ok(token) = std::env::var("HF_TOKEN") {
        req = req.bearer_auth(token.trim());
    }
    let resp = req.send().await.with_context(|| format!("GET {url}"))?;
    anyhow::ensure!(
        resp.status().is_success(),
        "GET {url} answered {}",
        resp.status()
    );
    // The Hub names the commit a branch resolved to; keep that, so the
    // manifest pins what was read.
    let commit = resp
        .headers()
        .get("x-repo-commit")
        .and_then(|v| v.to_str().ok())
        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
        .map_or_else(|| revision.to_string(), str::to_string);
    let bytes = resp.bytes().await?.to_vec();
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .with_context(|| format!("GET {url}: not JSON"))?;
    Ok((commit, bytes))
}

/// `ID=FILE` as `--model-config` takes it.
pub fn parse_given(arg: &str) -> Result<(String, PathBuf), String> {
    let (id, file) = arg
        .split_once('=')
        .ok_or_else(|| format!("'{arg}' is not ID=FILE (e.g. Qwen/Qwen3-8B=config.json)"))?;
    if id.split('/').count() != 2 || id.starts_with('/') || id.ends_with('/') {
        return Err(format!("'{id}' is not a Hugging Face id ORG/NAME"));
    }
    Ok((id.to_string(), PathBuf::from(file)))
}

/// What `pack` ships: (id, revision, bytes) of each model's config found,
/// and the ids none was found for.
pub type Found = (Vec<(String, Option<String>, Vec<u8>)>, Vec<String>);

/// `ID=REV` as `--model-revision` takes it.
pub fn parse_revision(arg: &str) -> Result<(String, String), String> {
    let (id, rev) = arg
        .split_once('=')
        .ok_or_else(|| format!("'{arg}' is not ID=REVISION (e.g. Qwen/Qwen3-8B=main)"))?;
    if id.split('/').count() != 2 || rev.trim().is_empty() {
        return Err(format!("'{arg}' is not ORG/NAME=REVISION"));
    }
    Ok((id.to_string(), rev.trim().to_string()))
}

/// The configs `collect` did not find, fetched from the Hub at the
/// stated revision, else the cache's, else `main`; each fetch said on
/// stderr, each failure too (the model is then packed without one).
pub async fn fetch_missing(
    found: &mut Found,
    endpoint: &str,
    revisions: &[(String, String)],
    hub: Option<&Path>,
) {
    let (configs, missing) = found;
    let mut still = Vec::new();
    for id in missing.drain(..) {
        let revision = revisions
            .iter()
            .find(|(m, _)| *m == id)
            .map(|(_, r)| r.clone())
            .or_else(|| hub.and_then(|h| cached_revision(h, &id)))
            .unwrap_or_else(|| "main".into());
        eprintln!("model {id}: fetching config.json at {revision} from {endpoint}");
        match fetch_config(endpoint, &id, &revision).await {
            Ok((commit, bytes)) => configs.push((id, Some(commit), bytes)),
            Err(e) => {
                eprintln!("model {id}: {e:#}");
                still.push(id);
            }
        }
    }
    *missing = still;
}

/// The configs of `models`: a given file first, else the cache's copy.
pub fn collect(
    models: &[String],
    given: &[(String, PathBuf)],
    hub: Option<&Path>,
) -> anyhow::Result<Found> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in models {
        if let Some((_, file)) = given.iter().find(|(g, _)| g == id) {
            let bytes = std::fs::read(file)
                .with_context(|| format!("reading {} (--model-config {id})", file.display()))?;
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .with_context(|| format!("{} (--model-config {id}) is not JSON", file.display()))?;
            found.push((id.clone(), None, bytes));
        } else if let Some((revision, bytes)) = hub.and_then(|h| from_cache(h, id)) {
            found.push((id.clone(), Some(revision), bytes));
        } else {
            missing.push(id.clone());
        }
    }
    for (id, _) in given {
        anyhow::ensure!(
            models.contains(id),
            "--model-config {id}: the run's config (LLM_MODELS) has no such model"
        );
    }
    Ok((found, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_layout_and_a_given_file() {
        let tmp = tempfile::tempdir().unwrap();
        let hub = tmp.path();
        // models--Qwen--Qwen3-8B/refs/main → abc; snapshots/abc/config.json.
        let repo = hub.join("models--Qwen--Qwen3-8B");
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::create_dir_all(repo.join("snapshots/abc")).unwrap();
        std::fs::write(repo.join("refs/main"), "abc\n").unwrap();
        std::fs::write(repo.join("snapshots/abc/config.json"), b"{\"a\": 1}").unwrap();
        // No ref, one snapshot.
        let other = hub.join("models--org--Other");
        std::fs::create_dir_all(other.join("snapshots/def")).unwrap();
        std::fs::write(other.join("snapshots/def/config.json"), b"{}").unwrap();
        let given_file = hub.join("given.json");
        std::fs::write(&given_file, b"{\"given\": true}").unwrap();
        let models: Vec<String> = ["Qwen/Qwen3-8B", "org/Other", "org/Gone", "org/Given"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let given = vec![("org/Given".to_string(), given_file)];
        let (found, missing) = collect(&models, &given, Some(hub)).unwrap();
        assert_eq!(
            found,
            vec![
                (
                    "Qwen/Qwen3-8B".into(),
                    Some("abc".into()),
                    b"{\"a\": 1}".to_vec()
                ),
                ("org/Other".into(), Some("def".into()), b"{}".to_vec()),
                ("org/Given".into(), None, b"{\"given\": true}".to_vec()),
            ]
        );
        assert_eq!(missing, vec!["org/Gone".to_string()]);
        // A given file for a model the run did not hold is an error.
        let stray = vec![("org/Stray".to_string(), hub.join("given.json"))];
        assert!(collect(&models, &stray, Some(hub)).is_err());
        assert!(parse_given("Qwen/Qwen3-8B=c.json").is_ok());
        assert!(parse_given("Qwen3-8B=c.json").is_err());
        assert!(parse_given("no-equals").is_err());
    }
}

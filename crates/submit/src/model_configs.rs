//! Each model's own config.json for `pack` (issue #54): from the Hugging
//! Face cache the harness loaded the model through (`$HF_HUB_CACHE`, else
//! `$HF_HOME/hub`, else `~/.cache/huggingface/hub`: one folder per repo,
//! `models--ORG--NAME/`, with `refs/main` naming the revision and
//! `snapshots/REVISION/config.json`), or from a file the submitter names
//! (`--model-config ID=FILE`), which wins. `run_benchmark.sh` deletes old
//! cache folders when the disk fills, so a config may be gone: the model is
//! then packed without one (a catalogue model needs none).

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

/// Model `id`'s config.json in the cache `hub`: (revision, bytes).
pub fn from_cache(hub: &Path, id: &str) -> Option<(String, Vec<u8>)> {
    let repo = hub.join(format!("models--{}", id.replace('/', "--")));
    let revision = std::fs::read_to_string(repo.join("refs/main"))
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
        })?;
    let bytes = std::fs::read(repo.join("snapshots").join(&revision).join("config.json")).ok()?;
    Some((revision, bytes))
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

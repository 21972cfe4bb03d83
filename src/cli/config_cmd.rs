//! `config print`: the configuration `serve` would run with, one line per
//! setting with where it came from, secrets redacted.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command, Subcommand};

use super::config_file::Layered;
use crate::config::ServeConfig;

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective `serve` configuration: flags over WATTCOUNTS_*
    /// variables over the configuration file over defaults, each line
    /// saying which; tokens and passwords redacted. Takes serve's flags.
    Print(Box<ServeConfig>),
}

/// `NAME:<redacted>` for maintainer tokens, no password in a URL.
fn redact(key: &str, v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (key, v) {
        ("admin_token", Value::Array(items)) => Value::Array(
            items
                .iter()
                .map(|t| {
                    let name = t
                        .as_str()
                        .unwrap_or_default()
                        .split(':')
                        .next()
                        .unwrap_or_default();
                    Value::String(format!("{name}:<redacted>"))
                })
                .collect(),
        ),
        ("database_url", Value::String(url)) => match (url.find("://"), url.find('@')) {
            (Some(s), Some(at)) if url[s + 3..at].contains(':') => {
                let user_end = s + 3 + url[s + 3..at].find(':').unwrap_or(0);
                Value::String(format!("{}:<redacted>{}", &url[..user_end], &url[at..]))
            }
            _ => v.clone(),
        },
        _ => v.clone(),
    }
}

fn toml_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => toml::Value::String(s.clone()).to_string(),
        serde_json::Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(toml_of).collect::<Vec<_>>().join(", ")
            )
        }
        other => other.to_string(),
    }
}

/// The lines `config print` writes.
pub fn lines(
    cfg: &ServeConfig,
    cmd: &Command,
    m: &ArgMatches,
    layered: &Layered,
) -> anyhow::Result<Vec<String>> {
    let values = serde_json::to_value(cfg)?;
    let mut out = vec![format!(
        "# wattcounts serve, effective configuration (file: {})",
        layered
            .path
            .as_ref()
            .map_or("none".to_string(), |p| p.display().to_string())
    )];
    for a in cmd.get_arguments() {
        let (Some(long), false) = (a.get_long(), a.is_hide_set()) else {
            continue;
        };
        if long == "config-file" || long == "help" {
            continue;
        }
        let key = long.replace('-', "_");
        let id = a.get_id().as_str();
        let source = if layered.from_file.contains(&key) {
            "file".to_string()
        } else {
            match m.value_source(id) {
                Some(ValueSource::CommandLine) => "flag".into(),
                Some(ValueSource::EnvVariable) => format!(
                    "env {}",
                    a.get_env()
                        .map(|e| e.to_string_lossy().to_string())
                        .unwrap_or_default()
                ),
                _ => "default".into(),
            }
        };
        let value = redact(&key, values.get(id).unwrap_or(&serde_json::Value::Null));
        out.push(match value {
            serde_json::Value::Null => format!("# {key} (unset)  # {source}"),
            v => format!("{key} = {}  # {source}", toml_of(&v)),
        });
    }
    out.extend(aws_lines(std::env::vars_os(), cfg.blob_url.is_some()));
    let thresholds = cfg.check_thresholds()?;
    let source = if layered.from_file.contains("checks") {
        "file [checks]".to_string()
    } else if cfg.thresholds.is_some() {
        "--thresholds".to_string()
    } else {
        "defaults".to_string()
    };
    out.push(String::new());
    out.push(format!("[checks]  # {source}"));
    out.extend(toml::to_string(&thresholds)?.lines().map(String::from));
    let estimator = cfg.estimator()?;
    out.push(String::new());
    out.push(format!(
        "# [estimator] from {}",
        if layered.from_file.contains("estimator") {
            "the file"
        } else {
            "the defaults"
        }
    ));
    // Nested under its table name so [estimator.power] reads as it is set.
    let nested =
        toml::Table::from_iter([("estimator".to_string(), toml::Value::try_from(&estimator)?)]);
    out.extend(toml::to_string(&nested)?.lines().map(String::from));
    Ok(out)
}

/// The `AWS_*` variables `--blob-url` reads (object_store's
/// `AmazonS3Builder::from_env`), as comments: they come from the
/// environment alone, so they are no setting of the file. Credentials show
/// as `<redacted>`; region, endpoint and the like as they are.
fn aws_lines(
    env: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    blob_url: bool,
) -> Vec<String> {
    let mut vars: Vec<(String, String)> = env
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .filter(|(k, _)| k.starts_with("AWS_"))
        .collect();
    if vars.is_empty() && !blob_url {
        return Vec::new();
    }
    vars.sort();
    let used = if blob_url {
        "read by --blob-url"
    } else {
        "unused: --blob-url is unset"
    };
    let mut out = vec![
        String::new(),
        format!("# AWS_* environment ({used}; never from the file)"),
    ];
    if vars.is_empty() {
        out.push("# (none set)".into());
    }
    for (k, v) in vars {
        let secret = ["KEY", "SECRET", "TOKEN", "PASSWORD"]
            .iter()
            .any(|w| k.contains(w));
        let shown = if secret { "<redacted>".into() } else { v };
        out.push(format!("# {k} = {shown}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::aws_lines;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn aws_credentials_are_named_never_shown() {
        let lines = aws_lines(
            env(&[
                ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
                ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
                ("AWS_SESSION_TOKEN", "FwoGZXIvYXdzE"),
                ("AWS_REGION", "eu-west-1"),
                ("HOME", "/root"),
            ]),
            true,
        );
        let text = lines.join("\n");
        for secret in ["wJalrXUtnFEMI", "AKIAEXAMPLE", "FwoGZXIvYXdzE"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("# AWS_ACCESS_KEY_ID = <redacted>"), "{text}");
        assert!(text.contains("# AWS_REGION = eu-west-1"), "{text}");
        assert!(!text.contains("HOME"), "{text}");
        assert!(text.contains("read by --blob-url"), "{text}");
    }

    #[test]
    fn no_aws_block_without_a_bucket_or_a_variable() {
        assert!(aws_lines(env(&[("HOME", "/root")]), false).is_empty());
        let lines = aws_lines(env(&[]), true);
        assert!(lines.iter().any(|l| l == "# (none set)"), "{lines:?}");
    }
}

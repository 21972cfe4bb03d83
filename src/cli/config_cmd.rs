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
    Ok(out)
}

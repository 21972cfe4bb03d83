//! One configuration file (TOML) for every subcommand, layered: flags over
//! `WATTCOUNTS_*` environment variables over the file over defaults. Its
//! keys are the long flags with `_` for `-` (`data_dir = "/srv/wc"`,
//! `admin_token = ["alice:…"]`), read by whichever subcommand has that
//! flag; `[checks]` holds the checks' thresholds. A key no subcommand knows
//! is an error naming it. The file's values enter as flags the command line
//! and the environment did not set, so clap parses and checks them exactly
//! as it parses flags.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

pub const ENV: &str = "WATTCOUNTS_CONFIG";
/// Read when present and no other file is named.
pub const DEFAULT_PATH: &str = "wattcounts.toml";
/// The hidden flag that carries `[checks]` to `serve`.
pub const CHECKS_FLAG: &str = "checks-toml";
/// The hidden flag that carries `[estimator]` to `serve`.
pub const ESTIMATOR_FLAG: &str = "estimator-toml";
/// The tables of the file, each carried whole by a hidden flag.
const TABLES: &[(&str, &str)] = &[("checks", CHECKS_FLAG), ("estimator", ESTIMATOR_FLAG)];

/// What the file added: its path and the keys it set.
#[derive(Debug, Clone, Default)]
pub struct Layered {
    pub path: Option<PathBuf>,
    pub from_file: BTreeSet<String>,
}

fn key_of(long: &str) -> String {
    long.replace('-', "_")
}

/// Every key any subcommand takes.
fn known_keys(cmd: &Command, out: &mut BTreeSet<String>) {
    for a in cmd.get_arguments() {
        if let (Some(long), false) = (a.get_long(), a.is_hide_set()) {
            out.insert(key_of(long));
        }
    }
    for sub in cmd.get_subcommands() {
        known_keys(sub, out);
    }
}

/// The subcommand that runs, with its matches.
pub fn leaf<'a>(cmd: &'a Command, m: &'a ArgMatches) -> (&'a Command, &'a ArgMatches) {
    match m.subcommand() {
        Some((name, sub_m)) => match cmd.find_subcommand(name) {
            Some(sub) => leaf(sub, sub_m),
            None => (cmd, m),
        },
        None => (cmd, m),
    }
}

fn scalar(key: &str, v: &toml::Value) -> anyhow::Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => anyhow::bail!(
            "key '{key}': {} is not a string, number or boolean",
            other.type_str()
        ),
    })
}

/// The file named by `--config-file`, `WATTCOUNTS_CONFIG`, or ./wattcounts.toml.
fn file_path(m: &ArgMatches) -> Option<(PathBuf, bool)> {
    if let Some(p) = m.get_one::<PathBuf>("config_file") {
        return Some((p.clone(), true));
    }
    let default = PathBuf::from(DEFAULT_PATH);
    default.exists().then_some((default, false))
}

/// What a key none of `cmd`'s subcommands takes means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForeignKeys {
    /// A typo: refuse the file, naming the key (the full `wattcounts`,
    /// which has every subcommand).
    Refuse,
    /// Another binary's setting: skip it (`wattcounts-submit`, which shares
    /// wattcounts.toml with a server's keys it does not have).
    Ignore,
}

/// `args` with the file's settings added as flags where neither the
/// command line nor the environment set them, required ones included
/// (`handle = "alice"` serves `pack --handle`). Arguments clap refuses
/// are returned as they are, for clap to explain.
pub fn layer(
    cmd: &Command,
    args: Vec<OsString>,
    foreign: ForeignKeys,
) -> anyhow::Result<(Vec<OsString>, Layered)> {
    // A first, lenient parse finds the subcommand and --config-file even
    // when a required flag is missing (the file may be what supplies it).
    let Ok(m) = cmd.clone().ignore_errors(true).try_get_matches_from(&args) else {
        return Ok((args, Layered::default()));
    };
    let Some((path, named)) = file_path(&m) else {
        return Ok((args, Layered::default()));
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if !named && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((args, Layered::default()))
        }
        Err(e) => anyhow::bail!("reading the configuration file {}: {e}", path.display()),
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e| anyhow::anyhow!("{}: not TOML: {e}", path.display()))?;
    let mut known = BTreeSet::new();
    known_keys(cmd, &mut known);
    for (table, _) in TABLES {
        known.insert(table.to_string());
    }
    for key in table.keys() {
        let refused =
            key == "config_file" || (foreign == ForeignKeys::Refuse && !known.contains(key));
        if refused {
            anyhow::bail!(
                "{}: unknown key '{key}' (the keys are the long flags of `wattcounts <command> --help` with _ for -, [checks] and [estimator])",
                path.display()
            );
        }
    }
    if let Some(checks) = table.get("checks") {
        let _: wattcounts_rules::checks::Thresholds = checks
            .clone()
            .try_into()
            .map_err(|e| anyhow::anyhow!("{}: [checks]: {e}", path.display()))?;
    }
    let (sub, sub_m) = leaf(cmd, &m);
    let mut out = args;
    let mut layered = Layered {
        path: Some(path.clone()),
        from_file: BTreeSet::new(),
    };
    for a in sub.get_arguments() {
        let Some(long) = a.get_long() else { continue };
        let key = key_of(long);
        let carried = TABLES.iter().find(|(_, flag)| *flag == long);
        let value = if let Some((name, _)) = carried {
            match table.get(*name) {
                Some(toml::Value::Table(t)) => toml::Value::String(toml::to_string(t)?),
                Some(_) => anyhow::bail!("{}: [{name}] must be a table", path.display()),
                None => continue,
            }
        } else {
            match table.get(&key) {
                Some(v) => v.clone(),
                None => continue,
            }
        };
        if matches!(
            sub_m.value_source(a.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let here = |e: anyhow::Error| anyhow::anyhow!("{}: {e}", path.display());
        match a.get_action() {
            ArgAction::SetTrue => match value {
                toml::Value::Boolean(true) => out.push(format!("--{long}").into()),
                toml::Value::Boolean(false) => {}
                _ => return Err(here(anyhow::anyhow!("key '{key}' is true or false"))),
            },
            _ => match value {
                toml::Value::Array(items) => {
                    for v in &items {
                        out.push(format!("--{long}={}", scalar(&key, v).map_err(here)?).into());
                    }
                }
                v => out.push(format!("--{long}={}", scalar(&key, &v).map_err(here)?).into()),
            },
        }
        layered
            .from_file
            .insert(carried.map_or(key, |(name, _)| name.to_string()));
    }
    Ok((out, layered))
}

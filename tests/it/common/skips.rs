//! What a test needs beyond the crate, and what happens when it is not
//! there. By default the test is skipped, and says so on the terminal
//! (written past the harness's capture, so a plain `cargo test` names
//! every skip); with `WATTCOUNTS_TEST_REQUIRE` naming the need (a comma
//! list of `pg`, `browser`, `python`, `schemathesis`, `ssh-keygen`,
//! `tmpfs`, `curl`, or `all`) the skip is a failure that says what is missing and how to get
//! it. `.ci/run` sets `all`. The older switches
//! `WATTCOUNTS_{BROWSER,PYTHON,SCHEMATHESIS}_TEST=required` still work.
//! S3 needs nothing: its server runs in the test process, on SQLite and
//! (beside PostgreSQL) in the two-instance cases.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Pg,
    Browser,
    Python,
    Schemathesis,
    SshKeygen,
    /// curl, which the README's step 5 reads the log key with.
    Curl,
    /// Mounting a small tmpfs (root), for a disk that fills.
    Tmpfs,
}

impl Need {
    pub fn name(self) -> &'static str {
        match self {
            Need::Pg => "pg",
            Need::Browser => "browser",
            Need::Python => "python",
            Need::Schemathesis => "schemathesis",
            Need::SshKeygen => "ssh-keygen",
            Need::Curl => "curl",
            Need::Tmpfs => "tmpfs",
        }
    }

    /// The switch of the earlier scheme, kept as an alias.
    fn alias(self) -> Option<&'static str> {
        match self {
            Need::Browser => Some("WATTCOUNTS_BROWSER_TEST"),
            Need::Python => Some("WATTCOUNTS_PYTHON_TEST"),
            Need::Schemathesis => Some("WATTCOUNTS_SCHEMATHESIS_TEST"),
            _ => None,
        }
    }
}

/// Whether `require` (the switch's value) or the alias makes `need` required.
fn required_by(require: &str, alias: Option<&str>, need: Need) -> bool {
    require
        .split(',')
        .map(str::trim)
        .any(|w| w == "all" || w == need.name())
        || alias == Some("required")
}

pub fn required(need: Need) -> bool {
    let require = std::env::var("WATTCOUNTS_TEST_REQUIRE").unwrap_or_default();
    let alias = need.alias().and_then(|a| std::env::var(a).ok());
    required_by(&require, alias.as_deref(), need)
}

/// Skips the calling test for want of `need` (`why` says what is missing
/// and how to get it), or fails it when the need is required.
pub fn skip(need: Need, why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    if required(need) {
        panic!(
            "{test} needs {} (WATTCOUNTS_TEST_REQUIRE names it) but {why}",
            need.name()
        );
    }
    // Straight to the terminal: the harness captures only print macros.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test} [{}]: {why} (WATTCOUNTS_TEST_REQUIRE={} makes this a failure)",
        need.name(),
        need.name()
    );
}

/// The Python interpreter with pyarrow, pandas and polars: WATTCOUNTS_PYTHON,
/// or the venv `.ci/run` makes (target/pyenv), or python3.
pub fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python");
    let candidates = [
        std::env::var_os("WATTCOUNTS_PYTHON").map(PathBuf::from),
        Some(venv),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import pyarrow, pandas, polars"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn the_switch_names_needs() {
    assert!(required_by("all", None, Need::Pg));
    assert!(required_by("python, pg", None, Need::Pg));
    assert!(!required_by("pg", None, Need::Python));
    assert!(!required_by("", None, Need::Browser));
    assert!(required_by("", Some("required"), Need::Browser));
    assert!(!required_by("", Some("1"), Need::Browser));
    assert!(!required_by("pgx", None, Need::Pg));
}

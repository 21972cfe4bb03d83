//! Named crash points, for the crash-consistency tests (issue #40, item 5).
//!
//! In a debug build, `WATTCOUNTS_CRASH_AT=POINT` (or `POINT@N`, the Nth time
//! the process passes it) makes the process kill itself with SIGKILL at that
//! point: no destructor, no flush, no answer, exactly as `kill -9` would
//! stop it, but between two named writes rather than wherever a timer
//! happens to land. A release build compiles every [`reach`] to nothing
//! and never reads the variable.

/// Where a write can be cut in two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// The bundle's blob is written (and synced); its row is not.
    AfterBlobWrite,
    /// The submission's transaction has committed; the client has not been
    /// answered.
    AfterCommit,
    /// A log checkpoint's row is written inside its transaction, which has
    /// not committed.
    DuringCheckpointWrite,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 3] = [
        CrashPoint::AfterBlobWrite,
        CrashPoint::AfterCommit,
        CrashPoint::DuringCheckpointWrite,
    ];

    /// The name `WATTCOUNTS_CRASH_AT` takes.
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::AfterBlobWrite => "after_blob_write",
            CrashPoint::AfterCommit => "after_commit",
            CrashPoint::DuringCheckpointWrite => "during_checkpoint_write",
        }
    }
}

/// The point and pass `value` names: `POINT` is its first pass.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
fn parse(value: &str) -> Result<(CrashPoint, u64), String> {
    let (name, nth) = match value.split_once('@') {
        Some((name, n)) => (
            name,
            n.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("'{n}' is not a pass number (1, 2, …)"))?,
        ),
        None => (value, 1),
    };
    CrashPoint::ALL
        .into_iter()
        .find(|p| p.name() == name)
        .map(|p| (p, nth))
        .ok_or_else(|| {
            let names: Vec<_> = CrashPoint::ALL.iter().map(|p| p.name()).collect();
            format!("no crash point '{name}' (there are {})", names.join(", "))
        })
}

#[cfg(debug_assertions)]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    use super::CrashPoint;

    pub const VARIABLE: &str = "WATTCOUNTS_CRASH_AT";

    /// The armed point, read once; a value that names no point stops the
    /// process at start-up rather than arming nothing in silence.
    pub fn armed() -> Option<(CrashPoint, u64)> {
        static ARMED: OnceLock<Option<(CrashPoint, u64)>> = OnceLock::new();
        *ARMED.get_or_init(|| {
            let value = std::env::var(VARIABLE).ok()?;
            match super::parse(&value) {
                Ok(armed) => Some(armed),
                Err(e) => panic!("{VARIABLE}={value}: {e}"),
            }
        })
    }

    pub fn reach(point: CrashPoint) {
        static PASSES: AtomicU64 = AtomicU64::new(0);
        let Some((armed, nth)) = armed() else {
            return;
        };
        if armed == point && PASSES.fetch_add(1, Ordering::SeqCst) + 1 == nth {
            eprintln!("crash point {} reached (pass {nth}): SIGKILL", point.name());
            // SAFETY: kill(2) on this process's own pid.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}

/// Kills the process here when `WATTCOUNTS_CRASH_AT` names this point and
/// pass (debug builds only).
#[inline(always)]
pub fn reach(point: CrashPoint) {
    #[cfg(debug_assertions)]
    armed::reach(point);
    #[cfg(not(debug_assertions))]
    let _ = point;
}

/// The armed point and pass, for `serve` to say at start-up (and to refuse
/// a misspelt one there); always None in a release build.
pub fn armed() -> Option<(CrashPoint, u64)> {
    #[cfg(debug_assertions)]
    return armed::armed();
    #[cfg(not(debug_assertions))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_passes_parse() {
        assert_eq!(parse("after_commit"), Ok((CrashPoint::AfterCommit, 1)));
        assert_eq!(
            parse("during_checkpoint_write@3"),
            Ok((CrashPoint::DuringCheckpointWrite, 3))
        );
        assert_eq!(
            parse("after_blob_write@12"),
            Ok((CrashPoint::AfterBlobWrite, 12))
        );
        let e = parse("after_comit").unwrap_err();
        assert!(e.contains("no crash point 'after_comit'"), "{e}");
        assert!(e.contains("after_commit"), "{e}");
        for bad in ["after_commit@0", "after_commit@x", "after_commit@"] {
            assert!(parse(bad).unwrap_err().contains("pass number"), "{bad}");
        }
    }
}

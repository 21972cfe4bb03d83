//! A snapshot's log, checked against the key a reader trusts: every
//! submission in it is a leaf, and the log only grew since the previous
//! snapshot. Pure, like `wattcounts_rules::tlog::audit` (receipts and monitors).

use std::collections::HashMap;

use base64::prelude::{Engine, BASE64_STANDARD};
use wattcounts_rules::tlog::audit::{hash_of, opened};
use wattcounts_rules::tlog::{verify_consistency, Hash, Leaf, RootBuilder};

use crate::manifest::Manifest;

/// What a snapshot's log check found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotLogCheck {
    pub size: u64,
    /// Submissions of submissions.csv found in the log as accepted leaves.
    pub submissions: u64,
    /// The previous snapshot's size, when its consistency was checked.
    pub previous_size: Option<u64>,
    pub problems: Vec<String>,
}

/// Checks a snapshot's log against the key a reader trusts: the recorded
/// checkpoint is signed by it; `entries` (log.jsonl) hash to its root;
/// every row of `submissions_csv` is, at its `log_index`, the leaf of
/// that submission with that bundle digest, and accepted once the log's
/// decisions are applied; and the log extends the previous snapshot's
/// (its checkpoint, signed by the same key, and the consistency proof;
/// also equal to `previous` when the reader holds that snapshot).
pub fn check_snapshot_log(
    manifest: &Manifest,
    entries: &[u8],
    submissions_csv: &[u8],
    verifier_key: &str,
    previous: Option<&Manifest>,
) -> SnapshotLogCheck {
    let mut c = SnapshotLogCheck::default();
    let Some(log) = &manifest.log else {
        c.problems.push(
            "manifest.json records no log checkpoint (a snapshot made before the log existed)"
                .into(),
        );
        return c;
    };
    let checkpoint = match opened(&log.checkpoint, verifier_key, "log.checkpoint") {
        Ok(cp) => cp,
        Err(e) => {
            c.problems.push(e);
            return c;
        }
    };
    c.size = checkpoint.size();
    let root = *checkpoint.hash();
    if log.size != c.size || hash_of(&log.root).ok() != Some(root) {
        c.problems.push(format!(
            "log.size/log.root ({}, {}) are not the signed checkpoint's ({}, {})",
            log.size,
            log.root,
            c.size,
            BASE64_STANDARD.encode(root.0)
        ));
    }

    // The leaves: rebuild the tree and fold decisions into statuses.
    let mut tree = RootBuilder::default();
    let mut leaves: Vec<&[u8]> = Vec::new();
    let mut status: HashMap<String, String> = HashMap::new();
    let text = entries.strip_suffix(b"\n").unwrap_or(entries);
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        if text.is_empty() {
            break;
        }
        tree.push(line);
        leaves.push(line);
        match Leaf::parse(line) {
            Ok(Leaf::Submission {
                submission_id,
                status: s,
                ..
            }) => {
                status.insert(submission_id, s);
            }
            Ok(Leaf::Decision {
                subject, to_status, ..
            }) if !to_status.is_empty() => {
                status.insert(subject, to_status);
            }
            Ok(_) => {}
            Err(e) => c
                .problems
                .push(format!("{} line {}: {e}", log.entries_file, i + 1)),
        }
    }
    if tree.size() != c.size || tree.root() != root {
        c.problems.push(format!(
            "{}'s {} leaves do not hash to the checkpoint's root (size {}): the entries were changed",
            log.entries_file,
            tree.size(),
            c.size
        ));
    }

    // Every published submission is its leaf.
    let mut rdr = csv::Reader::from_reader(submissions_csv);
    let headers = rdr.headers().cloned().unwrap_or_default();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (Some(id_col), Some(sha_col), Some(idx_col)) =
        (col("submission_id"), col("bundle_sha256"), col("log_index"))
    else {
        c.problems
            .push("submissions.csv lacks submission_id, bundle_sha256 or log_index".into());
        return c;
    };
    for (row, rec) in rdr.records().enumerate() {
        let at = format!("submissions.csv row {}", row + 2);
        let Ok(rec) = rec else {
            c.problems.push(format!("{at}: not readable"));
            continue;
        };
        let (id, sha) = (&rec[id_col], &rec[sha_col]);
        let leaf = rec[idx_col]
            .parse::<usize>()
            .ok()
            .and_then(|i| leaves.get(i).map(|l| (i, *l)));
        let Some((i, bytes)) = leaf else {
            c.problems.push(format!(
                "{at}: submission {id} has log_index '{}', not a leaf of the log",
                &rec[idx_col]
            ));
            continue;
        };
        match Leaf::parse(bytes) {
            Ok(Leaf::Submission {
                submission_id,
                bundle_sha256,
                ..
            }) if submission_id == id && bundle_sha256 == sha => {
                if status.get(id).map(String::as_str) == Some("accepted") {
                    c.submissions += 1;
                } else {
                    c.problems.push(format!(
                        "{at}: submission {id} is {} in the log, not accepted",
                        status.get(id).map(String::as_str).unwrap_or("unknown")
                    ));
                }
            }
            _ => c.problems.push(format!(
                "{at}: leaf {i} is not submission {id} with bundle sha256 {sha}"
            )),
        }
    }

    // The log only grew since the previous snapshot.
    if let Some(p) = &log.previous {
        match opened(&p.checkpoint, verifier_key, "log.previous.checkpoint") {
            Err(e) => c.problems.push(e),
            Ok(old) => {
                let proof: Result<Vec<Hash>, String> =
                    p.consistency.iter().map(|h| hash_of(h)).collect();
                let ok = match proof {
                    Ok(proof) if old.size() == c.size => old.hash() == &root && proof.is_empty(),
                    Ok(proof) if old.size() < c.size => {
                        verify_consistency(&proof, c.size, root, old.size(), *old.hash()).is_ok()
                    }
                    _ => false,
                };
                if ok {
                    c.previous_size = Some(old.size());
                } else {
                    c.problems.push(format!(
                        "the log of {} leaves does not extend the previous snapshot {}'s log of {}: it was rewritten or shrank",
                        c.size,
                        p.snapshot_id,
                        old.size()
                    ));
                }
            }
        }
        if let Some(prev) = previous {
            let same = prev
                .log
                .as_ref()
                .is_some_and(|l| l.checkpoint == p.checkpoint && prev.snapshot_id == p.snapshot_id);
            if !same {
                c.problems.push(format!(
                    "the previous snapshot given ({}) is not the one this snapshot extends ({})",
                    prev.snapshot_id, p.snapshot_id
                ));
            }
        }
    } else if let Some(prev) = previous {
        c.problems.push(format!(
            "this snapshot records no previous checkpoint, but {} was given as its predecessor",
            prev.snapshot_id
        ));
    }
    c
}

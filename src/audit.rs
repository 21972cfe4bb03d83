//! Checking the service's promises without trusting it: a receipt's log
//! proof, a snapshot's log (every submission in it is a leaf, and the log
//! only grew since the previous snapshot), and a monitor's step from the
//! checkpoint it kept to the one the server shows now. Pure: bytes and the
//! log's verifier key in, facts or the reasons out; the command line
//! fetches and prints.

use std::collections::HashMap;

use base64::prelude::{Engine, BASE64_STANDARD};
use tlog_tiles::Checkpoint;

use crate::receipt::Receipt;
use crate::snapshot::manifest::Manifest;
use crate::tlog::checkpoint::{open_checkpoint, verify_proof};
use crate::tlog::{leaf_hash, verify_consistency, Hash, Leaf, RootBuilder};

/// What a verified receipt proves.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptFacts {
    pub index: u64,
    pub tree_size: u64,
    pub origin: String,
}

/// Checks a receipt's log part: the leaf says what the receipt says, the
/// proof puts it at its index of a tree whose checkpoint `verifier_key`
/// signed, and (when given) the bundle's own SHA-256 is the leaf's.
pub fn verify_receipt(
    receipt: &Receipt,
    verifier_key: &str,
    bundle_file_sha256: Option<&str>,
) -> Result<ReceiptFacts, String> {
    let log = receipt.log.as_ref().ok_or_else(|| {
        format!(
            "the receipt carries no log proof; fetch it again: GET /api/v1/submissions/{}",
            receipt.submission_id
        )
    })?;
    let Leaf::Submission {
        bundle_sha256,
        content_sha256,
        received_at,
        submission_id,
        ..
    } = Leaf::parse(log.leaf.as_bytes()).map_err(|e| format!("log.leaf: {e}"))?
    else {
        return Err("log.leaf is not a submission's leaf".into());
    };
    let mut differ = Vec::new();
    if submission_id != receipt.submission_id.to_string() {
        differ.push(format!(
            "submission_id {submission_id} (receipt: {})",
            receipt.submission_id
        ));
    }
    if bundle_sha256 != receipt.bundle_sha256 {
        differ.push(format!(
            "bundle_sha256 {bundle_sha256} (receipt: {})",
            receipt.bundle_sha256
        ));
    }
    if received_at != receipt.received_at {
        differ.push(format!(
            "received_at {received_at} (receipt: {})",
            receipt.received_at
        ));
    }
    if let Some(c) = &receipt.content_sha256 {
        if &content_sha256 != c {
            differ.push(format!("content_sha256 {content_sha256} (receipt: {c})"));
        }
    }
    if let Some(file) = bundle_file_sha256 {
        if !bundle_sha256.eq_ignore_ascii_case(file) {
            differ.push(format!(
                "the bundle file's sha256 is {file}, the leaf's {bundle_sha256}"
            ));
        }
    }
    if !differ.is_empty() {
        return Err(format!(
            "the log leaf disagrees with the receipt: {}",
            differ.join("; ")
        ));
    }
    let (index, size) = verify_proof(
        log.proof.as_bytes(),
        leaf_hash(log.leaf.as_bytes()),
        verifier_key,
    )
    .map_err(|e| e.to_string())?;
    if (index, size) != (log.index, log.tree_size) {
        return Err(format!(
            "the proof is for leaf {index} of {size}; the receipt says leaf {} of {}",
            log.index, log.tree_size
        ));
    }
    let origin =
        crate::tlog::checkpoint::verifier_origin(verifier_key).map_err(|e| e.to_string())?;
    Ok(ReceiptFacts {
        index,
        tree_size: size,
        origin,
    })
}

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

fn hash_of(b64: &str) -> Result<Hash, String> {
    let bytes = BASE64_STANDARD
        .decode(b64)
        .map_err(|_| format!("'{b64}' is not base64"))?;
    Ok(Hash(
        bytes
            .try_into()
            .map_err(|_| format!("'{b64}' is not a 32-byte hash"))?,
    ))
}

fn opened(signed: &str, key: &str, what: &str) -> Result<Checkpoint, String> {
    open_checkpoint(signed.as_bytes(), key).map_err(|e| format!("{what}: {e}"))
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

/// A monitor's step from the checkpoint it kept to the one served now.
#[derive(Debug, Clone, PartialEq)]
pub enum MonitorStep {
    /// Nothing kept yet: the new checkpoint is trusted from now on.
    First {
        size: u64,
    },
    Unchanged {
        size: u64,
    },
    Grew {
        from: u64,
        to: u64,
    },
}

/// Why a monitor refuses the new checkpoint.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MonitorAlarm {
    #[error("{0}")]
    BadCheckpoint(String),
    #[error("the log shrank: it had {old} leaves, the server now shows {new}")]
    Shrank { old: u64, new: u64 },
    #[error("the log forked: {0}")]
    Forked(String),
}

/// The sizes a monitor needs a consistency proof between, if any.
pub fn proof_needed(old: Option<&Checkpoint>, new: &Checkpoint) -> Option<(u64, u64)> {
    old.filter(|o| o.size() > 0 && o.size() < new.size())
        .map(|o| (o.size(), new.size()))
}

/// Checks the new signed checkpoint against the kept one, with the
/// consistency proof the server gave between them (base64 hashes).
pub fn monitor_step(
    kept: Option<&str>,
    new_signed: &str,
    verifier_key: &str,
    proof: &[String],
) -> Result<(Checkpoint, MonitorStep), MonitorAlarm> {
    let new = opened(new_signed, verifier_key, "the server's checkpoint")
        .map_err(MonitorAlarm::BadCheckpoint)?;
    let Some(kept) = kept else {
        let size = new.size();
        return Ok((new, MonitorStep::First { size }));
    };
    let old =
        opened(kept, verifier_key, "the kept checkpoint").map_err(MonitorAlarm::BadCheckpoint)?;
    let (o, n) = (old.size(), new.size());
    if n < o {
        return Err(MonitorAlarm::Shrank { old: o, new: n });
    }
    if n == o {
        return if old.hash() == new.hash() {
            Ok((new, MonitorStep::Unchanged { size: n }))
        } else {
            Err(MonitorAlarm::Forked(format!(
                "two checkpoints of {n} leaves with different roots ({} kept, {} now), both signed by the log key",
                BASE64_STANDARD.encode(old.hash().0),
                BASE64_STANDARD.encode(new.hash().0)
            )))
        };
    }
    let hashes: Vec<Hash> = proof
        .iter()
        .map(|h| hash_of(h))
        .collect::<Result<_, _>>()
        .map_err(MonitorAlarm::Forked)?;
    if o > 0 && verify_consistency(&hashes, n, *new.hash(), o, *old.hash()).is_err() {
        return Err(MonitorAlarm::Forked(format!(
            "the log of {n} leaves does not extend the {o} leaves seen before: a leaf was changed or removed"
        )));
    }
    Ok((new, MonitorStep::Grew { from: o, to: n }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::checkpoint::LogKey;
    use crate::tlog::StoredHashes;

    fn tree(prefix: &str, n: usize) -> StoredHashes {
        let mut t = StoredHashes::default();
        for i in 0..n {
            t.append(format!("{prefix} {i}").as_bytes()).unwrap();
        }
        t
    }

    fn signed(key: &LogKey, t: &StoredHashes, n: u64) -> String {
        String::from_utf8(key.sign_checkpoint(n, t.root(n).unwrap()).unwrap()).unwrap()
    }

    fn b64s(p: &[Hash]) -> Vec<String> {
        p.iter().map(|h| BASE64_STANDARD.encode(h.0)).collect()
    }

    #[test]
    fn a_monitor_accepts_growth_and_names_every_other_change() {
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        let vk = key.verifier_key();
        let honest = tree("leaf", 20);
        let at10 = signed(&key, &honest, 10);
        let at20 = signed(&key, &honest, 20);
        assert!(matches!(
            monitor_step(None, &at10, vk, &[]),
            Ok((_, MonitorStep::First { size: 10 }))
        ));
        assert!(matches!(
            monitor_step(Some(&at10), &at10, vk, &[]),
            Ok((_, MonitorStep::Unchanged { size: 10 }))
        ));
        let proof = b64s(&honest.consistency(10, 20).unwrap());
        assert!(matches!(
            monitor_step(Some(&at10), &at20, vk, &proof),
            Ok((_, MonitorStep::Grew { from: 10, to: 20 }))
        ));
        // Shrank.
        assert_eq!(
            monitor_step(Some(&at20), &at10, vk, &[]).unwrap_err(),
            MonitorAlarm::Shrank { old: 20, new: 10 }
        );
        // One leaf rewritten: same size, another root; or grown from a
        // rewritten prefix, whose proof cannot reach the kept root.
        let mut forged = StoredHashes::default();
        for i in 0..20 {
            let data = if i == 3 {
                "forged".to_string()
            } else {
                format!("leaf {i}")
            };
            forged.append(data.as_bytes()).unwrap();
        }
        let forged10 = signed(&key, &forged, 10);
        assert!(matches!(
            monitor_step(Some(&at10), &forged10, vk, &[]),
            Err(MonitorAlarm::Forked(_))
        ));
        let forged20 = signed(&key, &forged, 20);
        let forged_proof = b64s(&forged.consistency(10, 20).unwrap());
        assert!(matches!(
            monitor_step(Some(&at10), &forged20, vk, &forged_proof),
            Err(MonitorAlarm::Forked(_))
        ));
        // A checkpoint signed by another key is no checkpoint of this log.
        let (_, other) = LogKey::generate("wattcounts.test/log").unwrap();
        let foreign = signed(&other, &honest, 20);
        assert!(matches!(
            monitor_step(Some(&at10), &foreign, vk, &proof),
            Err(MonitorAlarm::BadCheckpoint(_))
        ));
    }
}

//! Checking the service's promises without trusting it: a receipt's log
//! proof, and a monitor's step from the checkpoint it kept to the one the
//! server shows now. Pure: bytes and the log's verifier key in, facts or
//! the reasons out; the command line fetches and prints. (A snapshot's log
//! check, which reads the snapshot's manifest, is
//! `wattcounts::snapshot::log_check`.)

use base64::prelude::{Engine, BASE64_STANDARD};
use tlog_tiles::Checkpoint;

use crate::receipt::Receipt;
use crate::tlog::checkpoint::{open_checkpoint, verify_proof};
use crate::tlog::{leaf_hash, verify_consistency, Hash, Leaf};

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

/// A base64 hash as receipts, manifests and proofs carry it.
pub fn hash_of(b64: &str) -> Result<Hash, String> {
    let bytes = BASE64_STANDARD
        .decode(b64)
        .map_err(|_| format!("'{b64}' is not base64"))?;
    Ok(Hash(
        bytes
            .try_into()
            .map_err(|_| format!("'{b64}' is not a 32-byte hash"))?,
    ))
}

/// A signed checkpoint opened under `key`; the error names `what` it was.
pub fn opened(signed: &str, key: &str, what: &str) -> Result<Checkpoint, String> {
    open_checkpoint(signed.as_bytes(), key).map_err(|e| format!("{what}: {e}"))
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

    /// A receipt for leaf `index` of a log of `size` submission leaves.
    fn receipt_at(key: &LogKey, index: u64, size: u64) -> (Receipt, StoredHashes) {
        let leaves: Vec<Leaf> = (0..size)
            .map(|i| Leaf::Submission {
                bundle_sha256: format!("{i:064x}"),
                content_sha256: format!("c{i}"),
                key_fingerprint: "SHA256:k".into(),
                received_at: format!("2026-12-0{}T00:00:00.000Z", 1 + i % 9),
                status: "accepted".into(),
                submission_id: uuid::Uuid::from_u128(u128::from(i)).to_string(),
            })
            .collect();
        let mut t = StoredHashes::default();
        for l in &leaves {
            t.append(&l.canonical()).unwrap();
        }
        let signed = key.sign_checkpoint(size, t.root(size).unwrap()).unwrap();
        let proof = crate::tlog::checkpoint::format_proof(
            index,
            &t.inclusion(index, size).unwrap(),
            &signed,
        );
        let leaf = leaves[index as usize].canonical();
        let receipt = Receipt {
            submission_id: uuid::Uuid::from_u128(u128::from(index)),
            bundle_sha256: format!("{index:064x}"),
            submitter: "alice".into(),
            status: crate::domain::Status::Accepted,
            received_at: format!("2026-12-0{}T00:00:00.000Z", 1 + index % 9),
            demo: false,
            gpu: crate::receipt::ReceiptGpu {
                name: "NVIDIA L4".into(),
                id: Some("l4".into()),
            },
            run_name: "run".into(),
            bundle_bytes: 1,
            protocol: None,
            content_sha256: Some(format!("c{index}")),
            counts: crate::receipt::Counts {
                models: 1,
                configurations: 1,
                iterations: 1,
                power_samples: 1,
            },
            summary: vec![],
            checks: vec![],
            configurations: vec![],
            rejected_configurations: vec![],
            moderation: vec![],
            links: crate::receipt::Links {
                this: String::new(),
                html: String::new(),
            },
            log: Some(crate::receipt::ReceiptLog {
                index,
                tree_size: size,
                leaf_hash: BASE64_STANDARD.encode(leaf_hash(&leaf).0),
                leaf: String::from_utf8(leaf).unwrap(),
                proof: String::from_utf8(proof).unwrap(),
                verifier_key: key.verifier_key().to_string(),
            }),
            log_index: Some(index),
        };
        (receipt, t)
    }

    #[test]
    fn a_receipt_verifies_and_each_disagreement_is_named() {
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        let vk = key.verifier_key();
        let (r, _) = receipt_at(&key, 2, 5);
        let facts = ReceiptFacts {
            index: 2,
            tree_size: 5,
            origin: "wattcounts.test/log".into(),
        };
        assert_eq!(verify_receipt(&r, vk, None), Ok(facts.clone()));
        // The bundle file's digest, in either case, is the leaf's.
        let upper = r.bundle_sha256.to_uppercase();
        assert_eq!(verify_receipt(&r, vk, Some(&upper)), Ok(facts));
        let err = verify_receipt(&r, vk, Some(&"f".repeat(64))).unwrap_err();
        assert!(err.contains("the bundle file's sha256 is fff"), "{err}");
        type Edit = fn(&mut Receipt);
        let edits: [(Edit, &str); 4] = [
            (|r| r.submission_id = uuid::Uuid::from_u128(9), "submission_id 00000000-0000-0000-0000-000000000002 (receipt: 00000000-0000-0000-0000-000000000009)"),
            (|r| r.bundle_sha256 = "ab".into(), "(receipt: ab)"),
            (|r| r.received_at = "2026-01-01T00:00:00.000Z".into(), "received_at 2026-12-03T00:00:00.000Z (receipt: 2026-01-01"),
            (|r| r.content_sha256 = Some("cx".into()), "content_sha256 c2 (receipt: cx)"),
        ];
        for (edit, says) in edits {
            let mut bad = r.clone();
            edit(&mut bad);
            let err = verify_receipt(&bad, vk, None).unwrap_err();
            assert!(
                err.starts_with("the log leaf disagrees with the receipt: "),
                "{err}"
            );
            assert!(err.contains(says), "{err}");
        }
        // Without a content digest the receipt does not speak to it.
        let mut old = r.clone();
        old.content_sha256 = None;
        assert_eq!(verify_receipt(&old, vk, None).map(|f| f.index), Ok(2));
        // The log part claims another index than its proof shows.
        let mut moved = r.clone();
        moved.log.as_mut().unwrap().index = 3;
        assert_eq!(
            verify_receipt(&moved, vk, None).unwrap_err(),
            "the proof is for leaf 2 of 5; the receipt says leaf 3 of 5"
        );
        let mut grown = r.clone();
        grown.log.as_mut().unwrap().tree_size = 6;
        assert_eq!(
            verify_receipt(&grown, vk, None).unwrap_err(),
            "the proof is for leaf 2 of 5; the receipt says leaf 2 of 6"
        );
        // Another key; no log part; a leaf that is not a submission's.
        let (_, other) = LogKey::generate("wattcounts.test/log").unwrap();
        let err = verify_receipt(&r, other.verifier_key(), None).unwrap_err();
        assert!(err.contains("not signed by the log key"), "{err}");
        let mut bare = r.clone();
        bare.log = None;
        let err = verify_receipt(&bare, vk, None).unwrap_err();
        assert!(
            err.contains("GET /api/v1/submissions/00000000-0000-0000-0000-000000000002"),
            "{err}"
        );
        let mut decision = r.clone();
        decision.log.as_mut().unwrap().leaf = String::from_utf8(
            Leaf::Decision {
                action: "approve".into(),
                actor: "m".into(),
                at: String::new(),
                effective_at: String::new(),
                from_status: String::new(),
                reason: String::new(),
                subject: String::new(),
                to_status: String::new(),
            }
            .canonical(),
        )
        .unwrap();
        assert_eq!(
            verify_receipt(&decision, vk, None).unwrap_err(),
            "log.leaf is not a submission's leaf"
        );
    }

    #[test]
    fn hashes_in_base64_and_the_proofs_a_monitor_needs() {
        assert_eq!(
            hash_of(&BASE64_STANDARD.encode([3u8; 32])),
            Ok(Hash([3; 32]))
        );
        assert_eq!(hash_of("%"), Err("'%' is not base64".to_string()));
        let short = BASE64_STANDARD.encode([3u8; 31]);
        assert_eq!(
            hash_of(&short),
            Err(format!("'{short}' is not a 32-byte hash"))
        );
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        let t = tree("leaf", 9);
        let open = |n: u64| opened(&signed(&key, &t, n), key.verifier_key(), "x").unwrap();
        let (c0, c4, c9) = (open(0), open(4), open(9));
        assert_eq!(proof_needed(None, &c9), None);
        assert_eq!(proof_needed(Some(&c0), &c9), None);
        assert_eq!(proof_needed(Some(&c4), &c9), Some((4, 9)));
        assert_eq!(proof_needed(Some(&c9), &c9), None);
        assert_eq!(proof_needed(Some(&c9), &c4), None);
        let err = opened("junk", key.verifier_key(), "the kept checkpoint").unwrap_err();
        assert!(err.starts_with("the kept checkpoint: "), "{err}");
    }

    #[test]
    fn a_monitor_that_kept_an_empty_log_needs_no_proof() {
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        let vk = key.verifier_key();
        let t = tree("leaf", 3);
        let empty = signed(&key, &t, 0);
        let three = signed(&key, &t, 3);
        assert!(matches!(
            monitor_step(Some(&empty), &three, vk, &[]),
            Ok((_, MonitorStep::Grew { from: 0, to: 3 }))
        ));
        // A proof line that is no hash is a fork alarm, not a pass.
        let err = monitor_step(Some(&signed(&key, &t, 1)), &three, vk, &["%".into()]).unwrap_err();
        assert_eq!(err, MonitorAlarm::Forked("'%' is not base64".into()));
        let err = monitor_step(Some("junk"), &three, vk, &[]).unwrap_err();
        assert!(
            matches!(err, MonitorAlarm::BadCheckpoint(m) if m.starts_with("the kept checkpoint"))
        );
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

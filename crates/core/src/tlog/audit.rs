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

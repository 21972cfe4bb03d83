//! Signed checkpoints and inclusion proofs in the C2SP formats: a
//! checkpoint (origin, size, base64 root; c2sp.org/tlog-checkpoint) signed
//! as a note (c2sp.org/signed-note) with the log's Ed25519 key, and a
//! proof in the c2sp.org/tlog-proof shape (index, the proof's hashes, then
//! the checkpoint) that anyone holding the log's verifier key can check
//! without the server. Pure: keys and bytes in, bytes or a reason out.

use base64::prelude::{Engine, BASE64_STANDARD};
use signed_note::{Note, Signer, StandardSigner, StandardVerifier, VerifierList};
use tlog_tiles::Checkpoint;

use super::{verify_inclusion, Hash, RecordProof};

/// The first line of a proof.
pub const PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// Why a checkpoint or proof was refused, in words a monitor can print.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProofError {
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("the checkpoint is not signed by the log key {0}")]
    BadSignature(String),
    #[error("the checkpoint is for log '{found}', not '{expected}'")]
    WrongOrigin { expected: String, found: String },
    #[error("the proof does not put this leaf at index {index} of the tree of {size}")]
    NotIncluded { index: u64, size: u64 },
}

/// The log's signing key and what it is known by.
pub struct LogKey {
    signer: StandardSigner,
    verifier_key: String,
}

/// Shows the public half only: a key must never reach a log line.
impl std::fmt::Debug for LogKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogKey")
            .field("verifier_key", &self.verifier_key)
            .finish_non_exhaustive()
    }
}

impl LogKey {
    /// A new key for the log named `origin` (e.g. `wattcounts.example/log`);
    /// returns the secret key text (`PRIVATE+KEY+…`, to keep) and the key.
    pub fn generate(origin: &str) -> Result<(String, LogKey), ProofError> {
        let mut seed = [0u8; 32];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut seed);
        let signing = ed25519_dalek::SigningKey::from_bytes(&seed);
        let private = [&[1u8][..], signing.to_bytes().as_slice()].concat();
        let public = [&[1u8][..], signing.verifying_key().to_bytes().as_slice()].concat();
        let secret = format!(
            "PRIVATE+KEY+{origin}+{:08x}+{}",
            signed_note::key_id(origin, &public),
            BASE64_STANDARD.encode(private)
        );
        let key = LogKey::from_secret(&secret)?;
        Ok((secret, key))
    }

    /// The key from its secret text.
    pub fn from_secret(secret: &str) -> Result<LogKey, ProofError> {
        let signer = StandardSigner::new(secret.trim())
            .map_err(|e| ProofError::Malformed(format!("log key: {e}")))?;
        // PRIVATE+KEY+name+id+base64: the key is all after the fourth '+'
        // (base64 has '+' of its own; a name has none).
        let seed = secret
            .trim()
            .splitn(5, '+')
            .nth(4)
            .and_then(|b| BASE64_STANDARD.decode(b).ok())
            .filter(|k| k.len() == 33)
            .ok_or_else(|| ProofError::Malformed("log key: not an Ed25519 key".into()))?;
        let signing = ed25519_dalek::SigningKey::try_from(&seed[1..])
            .map_err(|_| ProofError::Malformed("log key: not an Ed25519 key".into()))?;
        Ok(LogKey {
            verifier_key: signed_note::new_ed25519_verifier_key(
                signer.name(),
                &signing.verifying_key(),
            ),
            signer,
        })
    }

    /// The log's name (the checkpoints' origin line).
    pub fn origin(&self) -> &str {
        self.signer.name()
    }

    /// What readers verify with: `origin+keyid+base64(0x01 ‖ public key)`.
    pub fn verifier_key(&self) -> &str {
        &self.verifier_key
    }

    /// A signed checkpoint of the tree of `size` leaves with `root`.
    pub fn sign_checkpoint(&self, size: u64, root: Hash) -> Result<Vec<u8>, ProofError> {
        let text = Checkpoint::new(self.origin(), size, root, "")
            .map_err(|e| ProofError::Malformed(e.to_string()))?
            .to_bytes();
        let mut note = Note::new(&text, &[]).map_err(|e| ProofError::Malformed(e.to_string()))?;
        note.add_sigs(&[&self.signer])
            .map_err(|e| ProofError::Malformed(e.to_string()))?;
        Ok(note.to_bytes())
    }
}

/// The log name a verifier key (`name+id+base64`) is for, if it is one.
pub fn verifier_origin(verifier_key: &str) -> Result<String, ProofError> {
    let v = StandardVerifier::new(verifier_key.trim())
        .map_err(|e| ProofError::Malformed(format!("verifier key: {e}")))?;
    Ok(signed_note::Verifier::name(&v).to_string())
}

/// A signed checkpoint's tree, once its signature by `verifier_key` and its
/// origin are checked.
pub fn open_checkpoint(signed: &[u8], verifier_key: &str) -> Result<Checkpoint, ProofError> {
    let verifier = StandardVerifier::new(verifier_key.trim())
        .map_err(|e| ProofError::Malformed(format!("verifier key: {e}")))?;
    let origin = signed_note::Verifier::name(&verifier).to_string();
    let note = Note::from_bytes(signed).map_err(|e| ProofError::Malformed(e.to_string()))?;
    note.verify(&VerifierList::new(vec![Box::new(verifier)]))
        .map_err(|_| ProofError::BadSignature(verifier_key.trim().to_string()))?;
    let checkpoint = Checkpoint::from_bytes(note.text())
        .map_err(|e| ProofError::Malformed(format!("checkpoint: {e}")))?;
    if checkpoint.origin() != origin {
        return Err(ProofError::WrongOrigin {
            expected: origin,
            found: checkpoint.origin().to_string(),
        });
    }
    Ok(checkpoint)
}

/// A leaf's proof in the tlog-proof shape: header, `index N`, one base64
/// hash per line, a blank line, the signed checkpoint.
pub fn format_proof(index: u64, proof: &RecordProof, signed_checkpoint: &[u8]) -> Vec<u8> {
    let mut out = format!("{PROOF_HEADER}\nindex {index}\n").into_bytes();
    for h in proof {
        out.extend(BASE64_STANDARD.encode(h.0).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(signed_checkpoint);
    out
}

/// Checks a proof offline: the checkpoint's signature by `verifier_key`,
/// then that `leaf` (its RFC 6962 hash) is at the stated index of the tree
/// the checkpoint signs. Returns (index, tree size).
pub fn verify_proof(text: &[u8], leaf: Hash, verifier_key: &str) -> Result<(u64, u64), ProofError> {
    let bad = |what: &str| ProofError::Malformed(what.to_string());
    let split = text
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or_else(|| bad("no blank line before the checkpoint"))?;
    let head = std::str::from_utf8(&text[..split]).map_err(|_| bad("not UTF-8"))?;
    let mut lines = head.lines();
    if lines.next() != Some(PROOF_HEADER) {
        return Err(bad(&format!("the first line is not {PROOF_HEADER}")));
    }
    let index: u64 = lines
        .next()
        .and_then(|l| l.strip_prefix("index "))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| bad("no 'index N' line"))?;
    let proof: RecordProof = lines
        .map(|l| {
            let bytes = BASE64_STANDARD
                .decode(l)
                .map_err(|_| bad("a proof line is not base64"))?;
            let arr: [u8; 32] = bytes
                .try_into()
                .map_err(|_| bad("a proof line is not a 32-byte hash"))?;
            Ok(Hash(arr))
        })
        .collect::<Result<_, ProofError>>()?;
    let checkpoint = open_checkpoint(&text[split + 2..], verifier_key)?;
    verify_inclusion(&proof, checkpoint.size(), *checkpoint.hash(), index, leaf).map_err(|_| {
        ProofError::NotIncluded {
            index,
            size: checkpoint.size(),
        }
    })?;
    Ok((index, checkpoint.size()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::{leaf_hash, StoredHashes};

    fn log(n: usize) -> StoredHashes {
        let mut t = StoredHashes::default();
        for i in 0..n {
            t.append(format!("leaf {i}").as_bytes()).unwrap();
        }
        t
    }

    #[test]
    fn keys_survive_their_text_whatever_their_base64() {
        // Many keys: some have '+' in their base64.
        for _ in 0..64 {
            let (secret, key) = LogKey::generate("wattcounts.test/log").unwrap();
            let again = LogKey::from_secret(&secret).unwrap();
            assert_eq!(again.verifier_key(), key.verifier_key());
        }
    }

    #[test]
    fn a_signed_checkpoint_opens_with_its_key_only() {
        let (secret, key) = LogKey::generate("wattcounts.test/log").unwrap();
        assert!(secret.starts_with("PRIVATE+KEY+wattcounts.test/log+"));
        assert!(key.verifier_key().starts_with("wattcounts.test/log+"));
        // The secret text gives back the same key.
        let again = LogKey::from_secret(&secret).unwrap();
        assert_eq!(again.verifier_key(), key.verifier_key());
        let t = log(10);
        let root = t.root(10).unwrap();
        let signed = key.sign_checkpoint(10, root).unwrap();
        let text = String::from_utf8(signed.clone()).unwrap();
        // origin, size, base64 root, blank line, one signature line.
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "wattcounts.test/log");
        assert_eq!(lines[1], "10");
        assert_eq!(lines[2], BASE64_STANDARD.encode(root.0));
        assert_eq!(lines[3], "");
        assert!(
            lines[4].starts_with("— wattcounts.test/log "),
            "{}",
            lines[4]
        );
        let c = open_checkpoint(&signed, key.verifier_key()).unwrap();
        assert_eq!((c.size(), *c.hash()), (10, root));
        // Another key of the same name, or an edited size: refused.
        let (_, other) = LogKey::generate("wattcounts.test/log").unwrap();
        assert!(matches!(
            open_checkpoint(&signed, other.verifier_key()),
            Err(ProofError::BadSignature(_))
        ));
        let edited = text.replacen("\n10\n", "\n11\n", 1).into_bytes();
        assert!(matches!(
            open_checkpoint(&edited, key.verifier_key()),
            Err(ProofError::BadSignature(_))
        ));
        assert!(matches!(
            LogKey::from_secret("PRIVATE+KEY+x+00000000+AAAA"),
            Err(ProofError::Malformed(_))
        ));
    }

    #[test]
    fn a_checkpoint_naming_another_log_is_refused_though_signed() {
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        assert_eq!(key.origin(), "wattcounts.test/log");
        assert_eq!(
            verifier_origin(key.verifier_key()),
            Ok("wattcounts.test/log".to_string())
        );
        assert!(matches!(
            verifier_origin("not a key"),
            Err(ProofError::Malformed(_))
        ));
        // The key's own signature over a checkpoint whose origin line names
        // another log.
        let text = Checkpoint::new("other.test/log", 3, Hash([7; 32]), "")
            .unwrap()
            .to_bytes();
        let mut note = Note::new(&text, &[]).unwrap();
        note.add_sigs(&[&key.signer]).unwrap();
        assert_eq!(
            open_checkpoint(&note.to_bytes(), key.verifier_key()),
            Err(ProofError::WrongOrigin {
                expected: "wattcounts.test/log".into(),
                found: "other.test/log".into()
            })
        );
        assert!(matches!(
            open_checkpoint(b"x", "not a key"),
            Err(ProofError::Malformed(m)) if m.starts_with("verifier key")
        ));
        // The secret's key part must be one type byte and 32 key bytes.
        let (secret, _) = LogKey::generate("wattcounts.test/log").unwrap();
        let head: Vec<&str> = secret.splitn(5, '+').take(4).collect();
        let short = format!("{}+{}", head.join("+"), BASE64_STANDARD.encode([1u8; 32]));
        assert!(matches!(
            LogKey::from_secret(&short),
            Err(ProofError::Malformed(m)) if m.starts_with("log key")
        ));
        // Debug shows the public half only.
        let shown = format!("{key:?}");
        assert!(shown.contains(key.verifier_key()) && !shown.contains("PRIVATE"));
    }

    #[test]
    fn a_proof_is_refused_at_its_first_wrong_line() {
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        let vk = key.verifier_key();
        let t = log(4);
        let signed = key.sign_checkpoint(4, t.root(4).unwrap()).unwrap();
        let leaf = leaf_hash(b"leaf 1");
        let good =
            String::from_utf8(format_proof(1, &t.inclusion(1, 4).unwrap(), &signed)).unwrap();
        assert!(
            good.starts_with("c2sp.org/tlog-proof@v1\nindex 1\n"),
            "{good}"
        );
        assert_eq!(verify_proof(good.as_bytes(), leaf, vk), Ok((1, 4)));
        let malformed = |text: String, why: &str| {
            assert_eq!(
                verify_proof(text.as_bytes(), leaf, vk),
                Err(ProofError::Malformed(why.to_string())),
                "{text}"
            );
        };
        malformed(
            good.replacen("@v1", "@v2", 1),
            "the first line is not c2sp.org/tlog-proof@v1",
        );
        malformed(
            good.replacen("index 1", "index one", 1),
            "no 'index N' line",
        );
        malformed(good.replacen("index 1", "idx 1", 1), "no 'index N' line");
        let line = good.lines().nth(2).unwrap().to_string();
        malformed(good.replacen(&line, "%%%", 1), "a proof line is not base64");
        malformed(
            good.replacen(&line, &BASE64_STANDARD.encode([1u8; 31]), 1),
            "a proof line is not a 32-byte hash",
        );
        malformed(
            good.replace("\n\n", "\n"),
            "no blank line before the checkpoint",
        );
        let mut bytes = good.clone().into_bytes();
        bytes[25] = 0xff;
        assert_eq!(
            verify_proof(&bytes, leaf, vk),
            Err(ProofError::Malformed("not UTF-8".into()))
        );
    }

    #[test]
    fn proofs_verify_offline_and_tampering_is_named() {
        let (_, key) = LogKey::generate("wattcounts.test/log").unwrap();
        let t = log(37);
        let signed = key.sign_checkpoint(37, t.root(37).unwrap()).unwrap();
        for index in [0u64, 5, 36] {
            let leaf = leaf_hash(format!("leaf {index}").as_bytes());
            let proof = format_proof(index, &t.inclusion(index, 37).unwrap(), &signed);
            assert_eq!(
                verify_proof(&proof, leaf, key.verifier_key()),
                Ok((index, 37))
            );
            // Another leaf, another index: not included.
            let other = leaf_hash(b"leaf 999");
            assert_eq!(
                verify_proof(&proof, other, key.verifier_key()),
                Err(ProofError::NotIncluded { index, size: 37 })
            );
            let text = String::from_utf8(proof.clone()).unwrap();
            let moved = text.replacen(&format!("index {index}\n"), "index 7\n", 1);
            if index != 7 {
                assert_eq!(
                    verify_proof(moved.as_bytes(), leaf, key.verifier_key()),
                    Err(ProofError::NotIncluded { index: 7, size: 37 })
                );
            }
            // A proof hash with one character changed.
            let line = text.lines().nth(2).unwrap();
            let flipped = if line.starts_with('A') {
                line.replacen('A', "B", 1)
            } else {
                format!("A{}", &line[1..])
            };
            let tampered = text.replacen(line, &flipped, 1);
            assert_eq!(
                verify_proof(tampered.as_bytes(), leaf, key.verifier_key()),
                Err(ProofError::NotIncluded { index, size: 37 })
            );
        }
        assert!(matches!(
            verify_proof(b"hello\n\nthere", leaf_hash(b"x"), key.verifier_key()),
            Err(ProofError::Malformed(_))
        ));
    }
}

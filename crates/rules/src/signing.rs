//! SSH signatures (the `sshsig` format of `ssh-keygen -Y sign`) and key
//! fingerprints. Accepted keys: Ed25519 and ECDSA P-256.

use ssh_key::{Algorithm, EcdsaCurve, HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use crate::rejection::{Detail, Rejection};

/// Namespace of bundle signatures (`ssh-keygen -Y sign -n wattcounts-submission`).
pub const SUBMISSION_NAMESPACE: &str = "wattcounts-submission";
/// Namespace of registration proofs.
pub const REGISTER_NAMESPACE: &str = "wattcounts-register";

/// The exact text a new submitter signs to prove they hold the private key.
/// It names the service (audience), so a proof made for one service cannot
/// be replayed to register the key on another.
pub fn registration_message(handle: &str, audience: &str, fingerprint: &str) -> String {
    format!("wattcounts-register-v1\nhandle: {handle}\naudience: {audience}\nkey: {fingerprint}\n")
}

/// Whether a registered key may sign a bundle received at `now`: not
/// revoked at or before `now` (a revocation dated later has not begun), and
/// its owner (`handle`) not suspended.
pub fn may_sign(
    fingerprint: &str,
    handle: &str,
    revoked_at: Option<chrono::DateTime<chrono::Utc>>,
    suspended: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), Rejection> {
    if let Some(revoked) = revoked_at.filter(|r| *r <= now) {
        return Err(Rejection::forbidden(
            "key_revoked",
            format!(
                "the key {fingerprint} was revoked at {}; sign with a current key",
                crate::timestamp::ts(&revoked)
            ),
        ));
    }
    if suspended {
        return Err(Rejection::forbidden(
            "submitter_suspended",
            format!("submitter '{handle}' is suspended; contact the maintainers"),
        ));
    }
    Ok(())
}

pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

pub fn algorithm_name(key: &PublicKey) -> &'static str {
    match key.algorithm() {
        Algorithm::Ed25519 => "ssh-ed25519",
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP256,
        } => "ecdsa-sha2-nistp256",
        _ => "unsupported",
    }
}

fn supported(alg: &Algorithm) -> bool {
    matches!(
        alg,
        Algorithm::Ed25519
            | Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256
            }
    )
}

/// Why a public key is refused although it parses, if it is.
///
/// Ed25519: the point must be encoded canonically (y < p), and must not be
/// of small order or carry a torsion component. A small-order key (the
/// identity, the order-2 point, ...) has no secret behind it: with a
/// cofactored or lenient verifier, one "signature" satisfies every message.
/// Keys made by any real key generator are `a·B` and pass all three.
/// ECDSA P-256 points are checked to be on the curve when parsed.
pub fn key_weakness(key: &PublicKey) -> Option<&'static str> {
    let ed = key.key_data().ed25519()?;
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(&ed.0) else {
        return Some("its Ed25519 point does not decode");
    };
    let point = vk.to_edwards();
    if point.compress().to_bytes() != ed.0 {
        return Some("its Ed25519 point is not canonically encoded");
    }
    if vk.is_weak() {
        return Some("its Ed25519 point has small order (no private key exists for it)");
    }
    if !point.is_torsion_free() {
        return Some("its Ed25519 point has a small-order component");
    }
    None
}

fn refuse_weak(key: &PublicKey) -> Result<(), Rejection> {
    match key_weakness(key) {
        Some(why) => Err(Rejection::invalid(
            "weak_public_key",
            format!("this public key is refused: {why}; generate a new one (ssh-keygen -t ed25519 or wattcounts keygen)"),
        )),
        None => Ok(()),
    }
}

pub fn parse_public_key(text: &str) -> Result<PublicKey, Rejection> {
    let key = PublicKey::from_openssh(text.trim()).map_err(|e| {
        Rejection::invalid(
            "bad_public_key",
            format!("not an OpenSSH public key line (like the content of id_ed25519.pub): {e}"),
        )
    })?;
    if !supported(&key.algorithm()) {
        return Err(Rejection::invalid(
            "unsupported_key_type",
            format!(
                "{} keys are not accepted; use Ed25519 (ssh-keygen -t ed25519) or ECDSA P-256",
                key.algorithm()
            ),
        ));
    }
    refuse_weak(&key)?;
    Ok(key)
}

/// A key the service stored at registration. It is not checked against the
/// weak-key rule here: [`verify`] refuses weak keys with a 403, so a key
/// registered before the rule existed is turned down where it is used.
pub fn parse_stored_key(text: &str) -> Result<PublicKey, Rejection> {
    PublicKey::from_openssh(text.trim()).map_err(|e| {
        Rejection::invalid(
            "bad_public_key",
            format!("the stored key does not parse: {e}"),
        )
    })
}

/// Parses an armored sshsig and checks its namespace, before any key lookup.
pub fn parse_signature(
    armored: &[u8],
    expected_namespace: &str,
    part: &str,
) -> Result<SshSig, Rejection> {
    let text = std::str::from_utf8(armored).map_err(|_| {
        Rejection::invalid("bad_signature_format", "the signature is not text")
            .with(Detail::new("expected -----BEGIN SSH SIGNATURE-----").file(part))
    })?;
    let sig = SshSig::from_pem(text.trim()).map_err(|e| {
        Rejection::invalid(
            "bad_signature_format",
            format!("the signature is not an SSH signature (ssh-keygen -Y sign output): {e}"),
        )
        .with(Detail::new("expected -----BEGIN SSH SIGNATURE-----").file(part))
    })?;
    if sig.namespace() != expected_namespace {
        return Err(Rejection::forbidden(
            "wrong_namespace",
            format!(
                "the signature was made for namespace '{}', expected '{expected_namespace}' (ssh-keygen -Y sign -n {expected_namespace})",
                sig.namespace()
            ),
        )
        .with(Detail::new(format!("namespace '{}'", sig.namespace())).file(part)));
    }
    if !supported(&sig.algorithm()) {
        return Err(Rejection::forbidden(
            "unsupported_key_type",
            format!(
                "{} signatures are not accepted; use Ed25519 or ECDSA P-256",
                sig.algorithm()
            ),
        ));
    }
    Ok(sig)
}

/// Fingerprint of the key that made a signature.
pub fn signer_fingerprint(sig: &SshSig) -> String {
    sig.public_key().fingerprint(HashAlg::Sha256).to_string()
}

/// The public key a signature carries (its signer's, once verified).
pub fn signer_key(sig: &SshSig) -> PublicKey {
    PublicKey::from(sig.public_key().clone())
}

/// The digests of a message, computed while it streamed in: an sshsig
/// signs the message's SHA-256 or SHA-512, so checking one never needs
/// the message in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageDigests {
    pub sha256: [u8; 32],
    pub sha512: [u8; 64],
}

impl MessageDigests {
    pub fn of(message: &[u8]) -> Self {
        use sha2::Digest;
        MessageDigests {
            sha256: sha2::Sha256::digest(message).into(),
            sha512: sha2::Sha512::digest(message).into(),
        }
    }
    fn for_alg(&self, alg: HashAlg) -> Option<&[u8]> {
        match alg {
            HashAlg::Sha256 => Some(&self.sha256),
            HashAlg::Sha512 => Some(&self.sha512),
            _ => None,
        }
    }
}

/// The bytes an sshsig signature covers (PROTOCOL.sshsig): the magic
/// preamble, then namespace, reserved (empty), hash algorithm and the
/// message's hash, each as an SSH string.
pub fn signed_data(namespace: &str, alg: HashAlg, message_hash: &[u8]) -> Vec<u8> {
    let mut out = b"SSHSIG".to_vec();
    for field in [
        namespace.as_bytes(),
        b"".as_slice(),
        alg.as_str().as_bytes(),
        message_hash,
    ] {
        out.extend_from_slice(&(field.len() as u32).to_be_bytes());
        out.extend_from_slice(field);
    }
    out
}

/// Checks `sig` over `message` with `key`.
pub fn verify(
    key: &PublicKey,
    namespace: &str,
    message: &[u8],
    sig: &SshSig,
    part: &str,
) -> Result<(), Rejection> {
    verify_digests(key, namespace, &MessageDigests::of(message), sig, part)
}

/// Checks `sig` over the message whose digests are given, with `key`.
/// Ed25519 is verified strictly (`verify_strict`: no small-order key or R,
/// no non-canonical R, the unbatched equation) over the sshsig signed data
/// rebuilt here, because ssh-key 0.6 verifies Ed25519 leniently. The key is
/// checked again, so a key stored before the weak-key rule is refused at
/// submission too.
pub fn verify_digests(
    key: &PublicKey,
    namespace: &str,
    digests: &MessageDigests,
    sig: &SshSig,
    part: &str,
) -> Result<(), Rejection> {
    let bad = || {
        Rejection::forbidden(
            "bad_signature",
            "the signature does not match these bytes: it was made over a different file or by a different key",
        )
        .with(Detail::new("signature verification failed").file(part))
    };
    if let Some(why) = key_weakness(key) {
        return Err(Rejection::forbidden(
            "weak_public_key",
            format!("the registered key is refused: {why}; register a new key"),
        )
        .with(Detail::new("weak signing key").file(part)));
    }
    // Named apart: "another key" and "another namespace" are the two
    // mistakes a submitter can fix without asking anyone.
    if key.key_data() != sig.public_key() {
        return Err(bad().with(
            Detail::new(format!(
                "signed by {}, not by the registered key {}",
                fingerprint(&PublicKey::from(sig.public_key().clone())),
                fingerprint(key)
            ))
            .file(part),
        ));
    }
    if namespace != sig.namespace() {
        return Err(bad().with(
            Detail::new(format!(
                "signed for namespace '{}', not '{namespace}'",
                sig.namespace()
            ))
            .file(part),
        ));
    }
    let hash = digests.for_alg(sig.hash_alg()).ok_or_else(bad)?;
    let signed = signed_data(namespace, sig.hash_alg(), hash);
    match key.key_data().ed25519() {
        Some(ed) => {
            let vk = ed25519_dalek::VerifyingKey::from_bytes(&ed.0).map_err(|_| bad())?;
            let signature =
                ed25519_dalek::Signature::from_slice(sig.signature_bytes()).map_err(|_| bad())?;
            vk.verify_strict(&signed, &signature).map_err(|_| bad())
        }
        None => {
            use signature::Verifier;
            key.key_data()
                .verify(&signed, sig.signature())
                .map_err(|_| bad())
        }
    }
}

pub fn load_private_key(text: &str) -> anyhow::Result<PrivateKey> {
    let key = PrivateKey::from_openssh(text)
        .map_err(|e| anyhow::anyhow!("not an OpenSSH private key: {e}"))?;
    if key.is_encrypted() {
        anyhow::bail!(
            "the key is protected by a passphrase; sign with `ssh-keygen -Y sign -n {SUBMISSION_NAMESPACE} -f KEY BUNDLE` instead"
        );
    }
    if !supported(&key.algorithm()) {
        anyhow::bail!("{} keys are not accepted; use Ed25519", key.algorithm());
    }
    Ok(key)
}

/// Signs `message`, returning the armored signature text.
pub fn sign(key: &PrivateKey, namespace: &str, message: &[u8]) -> anyhow::Result<String> {
    let sig = key.sign(namespace, HashAlg::Sha512, message)?;
    Ok(sig.to_pem(LineEnding::LF)?)
}

/// A new Ed25519 key pair as (private OpenSSH text, public key line).
pub fn generate_ed25519(comment: &str) -> anyhow::Result<(String, String)> {
    let mut key = PrivateKey::random(&mut rand_core::OsRng, Algorithm::Ed25519)?;
    key.set_comment(comment);
    let private = key.to_openssh(LineEnding::LF)?.to_string();
    let public = key.public_key().to_openssh()?;
    Ok((private, public))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_signs_until_its_revocation_and_while_its_owner_is_not_suspended() {
        use chrono::{Duration, TimeZone, Utc};
        let now = Utc.with_ymd_and_hms(2026, 12, 7, 12, 0, 0).unwrap();
        let ok = |revoked, suspended| may_sign("SHA256:k", "alice", revoked, suspended, now);
        assert!(ok(None, false).is_ok());
        // Revoked from a later time: bundles received before it still count.
        assert!(ok(Some(now + Duration::seconds(1)), false).is_ok());
        // Revoked at this very instant or earlier: refused.
        for at in [now, now - Duration::days(3)] {
            let r = ok(Some(at), false).unwrap_err();
            assert_eq!(
                (r.code, r.kind),
                ("key_revoked", crate::rejection::RejectKind::Forbidden)
            );
            assert_eq!(
                r.message,
                format!(
                    "the key SHA256:k was revoked at {}; sign with a current key",
                    crate::timestamp::ts(&at)
                )
            );
        }
        let r = ok(None, true).unwrap_err();
        assert_eq!(r.code, "submitter_suspended");
        assert_eq!(
            r.message,
            "submitter 'alice' is suspended; contact the maintainers"
        );
        // A revoked key of a suspended owner names the key.
        assert_eq!(ok(Some(now), true).unwrap_err().code, "key_revoked");
    }

    #[test]
    fn sign_then_verify_roundtrip_and_namespace() {
        let (private, public) = generate_ed25519("test").unwrap();
        let key = load_private_key(&private).unwrap();
        let public = parse_public_key(&public).unwrap();
        let armored = sign(&key, SUBMISSION_NAMESPACE, b"bundle bytes").unwrap();
        let sig = parse_signature(armored.as_bytes(), SUBMISSION_NAMESPACE, "signature").unwrap();
        assert_eq!(signer_fingerprint(&sig), fingerprint(&public));
        verify(
            &public,
            SUBMISSION_NAMESPACE,
            b"bundle bytes",
            &sig,
            "signature",
        )
        .unwrap();
        let err = verify(
            &public,
            SUBMISSION_NAMESPACE,
            b"other bytes",
            &sig,
            "signature",
        )
        .unwrap_err();
        assert_eq!(err.code, "bad_signature");
        let err = parse_signature(armored.as_bytes(), REGISTER_NAMESPACE, "signature").unwrap_err();
        assert_eq!(err.code, "wrong_namespace");
    }

    #[test]
    fn another_key_and_another_namespace_are_named_apart() {
        let (a, _) = generate_ed25519("a").unwrap();
        let (_, b_public) = generate_ed25519("b").unwrap();
        let a = load_private_key(&a).unwrap();
        let b = parse_public_key(&b_public).unwrap();
        let armored = sign(&a, SUBMISSION_NAMESPACE, b"bytes").unwrap();
        let sig = parse_signature(armored.as_bytes(), SUBMISSION_NAMESPACE, "bundle.sig").unwrap();
        let err = verify(&b, SUBMISSION_NAMESPACE, b"bytes", &sig, "bundle.sig").unwrap_err();
        assert_eq!(err.code, "bad_signature");
        let said = &err.details[1].message;
        assert!(
            said.contains(&fingerprint(a.public_key())) && said.contains(&fingerprint(&b)),
            "{said}"
        );
        // The right key, verified under another namespace than it signed.
        let err = verify(
            a.public_key(),
            REGISTER_NAMESPACE,
            b"bytes",
            &sig,
            "bundle.sig",
        )
        .unwrap_err();
        assert_eq!(
            err.details[1].message,
            "signed for namespace 'wattcounts-submission', not 'wattcounts-register'"
        );
        assert_eq!(err.details[1].file.as_deref(), Some("bundle.sig"));
    }

    #[test]
    fn signed_data_is_the_sshsig_encoding() {
        let msg = b"the bytes of a bundle";
        let digests = MessageDigests::of(msg);
        for (alg, hash) in [
            (HashAlg::Sha256, digests.sha256.as_slice()),
            (HashAlg::Sha512, digests.sha512.as_slice()),
        ] {
            assert_eq!(
                signed_data(SUBMISSION_NAMESPACE, alg, hash),
                SshSig::signed_data(SUBMISSION_NAMESPACE, alg, msg).unwrap()
            );
        }
    }

    #[test]
    fn ecdsa_verifies_from_digests() {
        let key = PrivateKey::random(
            &mut rand_core::OsRng,
            Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256,
            },
        )
        .unwrap();
        let armored = sign(&key, SUBMISSION_NAMESPACE, b"bundle").unwrap();
        let sig = parse_signature(armored.as_bytes(), SUBMISSION_NAMESPACE, "signature").unwrap();
        let public = key.public_key();
        verify(public, SUBMISSION_NAMESPACE, b"bundle", &sig, "signature").unwrap();
        let err = verify(public, SUBMISSION_NAMESPACE, b"bundlf", &sig, "signature").unwrap_err();
        assert_eq!(err.code, "bad_signature");
    }

    #[test]
    fn the_registration_message_is_this_text() {
        assert_eq!(
            registration_message("alice", "https://wattcounts.example", "SHA256:abc"),
            "wattcounts-register-v1\nhandle: alice\naudience: https://wattcounts.example\nkey: SHA256:abc\n"
        );
    }

    /// An RSA key (made by `ssh-keygen -t rsa -b 1024`): parsed, named
    /// unsupported and refused for its type.
    const RSA_PUBLIC: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7oLQN3li5wE7fmA7zi1My5Ek5HSh6JaTOphiizYHGtnjfkPraA2jUhpIy84svLKie+28YpUTZkcgdpFijFmKgYscywZU8ulRVMQf9R67CjoZRqWRNkN8iQeG7HpcCDPzFEtXdeeAIGzMDG2oIEIVLoZMDKJ9yI5vQFdc6r2D84Q== test";

    #[test]
    fn accepted_key_types_by_name() {
        let (_, ed) = generate_ed25519("test").unwrap();
        assert_eq!(
            algorithm_name(&parse_public_key(&ed).unwrap()),
            "ssh-ed25519"
        );
        let p256 = PrivateKey::random(
            &mut rand_core::OsRng,
            Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256,
            },
        )
        .unwrap();
        let p256 = p256.public_key().to_openssh().unwrap();
        assert_eq!(
            algorithm_name(&parse_public_key(&p256).unwrap()),
            "ecdsa-sha2-nistp256"
        );
        let rsa = PublicKey::from_openssh(RSA_PUBLIC).unwrap();
        assert_eq!(algorithm_name(&rsa), "unsupported");
        assert_eq!(
            parse_public_key(RSA_PUBLIC).unwrap_err().code,
            "unsupported_key_type"
        );
    }

    #[test]
    fn a_small_order_ed25519_key_is_refused() {
        // The identity point (y = 1): no private key exists for it.
        let mut point = [0u8; 32];
        point[0] = 1;
        let key = PublicKey::from(ssh_key::public::KeyData::Ed25519(
            ssh_key::public::Ed25519PublicKey(point),
        ));
        assert_eq!(
            key_weakness(&key),
            Some("its Ed25519 point has small order (no private key exists for it)")
        );
        let err = parse_public_key(&key.to_openssh().unwrap()).unwrap_err();
        assert_eq!(err.code, "weak_public_key");
        let (_, good) = generate_ed25519("test").unwrap();
        assert_eq!(key_weakness(&parse_public_key(&good).unwrap()), None);
    }

    #[test]
    fn digests_are_handed_out_by_algorithm() {
        let d = MessageDigests::of(b"abc");
        assert_eq!(d.for_alg(HashAlg::Sha256), Some(d.sha256.as_slice()));
        assert_eq!(d.for_alg(HashAlg::Sha512), Some(d.sha512.as_slice()));
        assert_eq!(
            hex::encode(d.for_alg(HashAlg::Sha256).unwrap()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

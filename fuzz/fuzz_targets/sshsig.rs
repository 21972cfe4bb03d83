//! The sshsig parser, and verification of whatever parses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wattcounts::signing;

fuzz_target!(|data: &[u8]| {
    if let Ok(sig) = signing::parse_signature(data, signing::SUBMISSION_NAMESPACE, "signature") {
        let key = ssh_key::PublicKey::from(sig.public_key().clone());
        let _ = signing::verify(&key, signing::SUBMISSION_NAMESPACE, b"message", &sig, "signature");
    }
});

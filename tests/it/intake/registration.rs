//! Registering submitters: proof of possession, handle rules, conflicts.

use crate::common::*;
use axum::http::StatusCode;

#[tokio::test]
async fn register_and_conflicts() {
    let app = TestApp::new().await;
    let key = app.register("Alice-Lab").await;
    // Handles are unique ignoring case.
    let (status, body) = app.register_with("alice-lab", &new_key(), AUDIENCE).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "handle_taken");
    // A key belongs to one submitter.
    let (status, body) = app.register_with("someone-else", &key, AUDIENCE).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "key_taken");
    assert_eq!(app.counts().await.submitters, 1);
}

#[tokio::test]
async fn proof_must_name_this_service() {
    let app = TestApp::new().await;
    let (status, body) = app
        .register_with("carol", &new_key(), "https://other.example")
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "bad_signature");
    assert_eq!(app.counts().await.submitters, 0);
}

#[tokio::test]
async fn bad_handles_and_reserved() {
    let app = TestApp::new().await;
    for h in ["ab", "has space", "ümlaut", &"x".repeat(40)] {
        let (status, body) = app.register_with(h, &new_key(), AUDIENCE).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{h}");
        assert_error(&body, "bad_handle");
    }
    let (status, body) = app.register_with("demo", &new_key(), AUDIENCE).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "handle_taken");
    assert_eq!(app.counts().await.submitters, 0);
}

#[tokio::test]
async fn malformed_json_gets_the_envelope() {
    use axum::body::Body;
    let app = TestApp::new().await;
    let (status, body) = app
        .send(
            axum::http::Request::post("/api/v1/submitters")
                .header("content-type", "application/json")
                .body(Body::from("{\"handle\": 1"))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "bad_json");
    let (status, body) = app.get("/api/v1/submissions/not-a-uuid").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "bad_id");
    let (status, body) = app
        .get("/api/v1/submissions/00000000-0000-4000-8000-000000000000")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
}

/// Small-order Ed25519 points: no private key exists for them, and with a
/// lenient verifier R = identity, S = 0 "signs" every message.
mod forged_keys {
    use super::*;
    use ssh_key::public::{Ed25519PublicKey, KeyData};
    use ssh_key::{Algorithm, HashAlg, PublicKey, Signature, SshSig};
    use wattcounts::signing;

    const IDENTITY: [u8; 32] = {
        let mut b = [0u8; 32];
        b[0] = 1;
        b
    };
    /// y = -1 (mod p): the point of order 2.
    const ORDER_TWO: [u8; 32] = {
        let mut b = [0xff; 32];
        b[0] = 0xec;
        b[31] = 0x7f;
        b
    };
    /// y = p + 1: the identity again, non-canonically encoded.
    const NON_CANONICAL: [u8; 32] = {
        let mut b = [0xff; 32];
        b[0] = 0xee;
        b[31] = 0x7f;
        b
    };

    fn public(bytes: [u8; 32]) -> PublicKey {
        PublicKey::from(KeyData::Ed25519(Ed25519PublicKey(bytes)))
    }

    /// A "signature" of `message` that the lenient verifier takes for a
    /// small-order key A: S = 0 and R = [k](−A), which is the identity or A
    /// itself for the points here (k = H(R‖A‖M) picks which, so both are
    /// tried).
    pub fn forged_signature(bytes: [u8; 32], namespace: &str, message: &[u8]) -> String {
        try_forge(bytes, namespace, message).expect("no forgery found for this key and message")
    }

    /// The forgery, where one of the two R values fits this message.
    pub fn try_forge(bytes: [u8; 32], namespace: &str, message: &[u8]) -> Option<String> {
        let key = public(bytes);
        for r in [IDENTITY, bytes] {
            let mut sig = r.to_vec();
            sig.extend([0u8; 32]);
            let pem = SshSig::new(
                KeyData::Ed25519(Ed25519PublicKey(bytes)),
                namespace,
                HashAlg::Sha512,
                Signature::new(Algorithm::Ed25519, sig).unwrap(),
            )
            .unwrap()
            .to_pem(ssh_key::LineEnding::LF)
            .unwrap();
            let parsed: SshSig = pem.parse().unwrap();
            if key.verify(namespace, message, &parsed).is_ok() {
                return Some(pem);
            }
        }
        None
    }

    #[test]
    fn the_lenient_verifier_accepts_the_forgery_and_ours_refuses_it() {
        for bytes in [IDENTITY, ORDER_TWO] {
            let key = public(bytes);
            let pem = forged_signature(bytes, signing::SUBMISSION_NAMESPACE, b"any bytes at all");
            let sig: SshSig = pem.parse().unwrap();
            // The hole: ssh-key 0.6's own verify takes it.
            assert!(key
                .verify(signing::SUBMISSION_NAMESPACE, b"any bytes at all", &sig)
                .is_ok());
            let err = signing::verify(
                &key,
                signing::SUBMISSION_NAMESPACE,
                b"any bytes at all",
                &sig,
                "signature",
            )
            .unwrap_err();
            assert_eq!(err.code, "weak_public_key");
        }
        // A real key still verifies, and a real signature over other bytes fails.
        let real = new_key();
        let pem = signing::sign(&real, signing::SUBMISSION_NAMESPACE, b"bundle").unwrap();
        let sig: SshSig = pem.parse().unwrap();
        signing::verify(
            real.public_key(),
            signing::SUBMISSION_NAMESPACE,
            b"bundle",
            &sig,
            "signature",
        )
        .unwrap();
        let err = signing::verify(
            real.public_key(),
            signing::SUBMISSION_NAMESPACE,
            b"bundlf",
            &sig,
            "signature",
        )
        .unwrap_err();
        assert_eq!(err.code, "bad_signature");
    }

    #[tokio::test]
    async fn weak_keys_cannot_register() {
        let app = TestApp::new().await;
        for (bytes, why) in [
            (IDENTITY, "small order"),
            (ORDER_TWO, "small order"),
            (NON_CANONICAL, "not canonically encoded"),
        ] {
            let key = public(bytes);
            let fp = signing::fingerprint(&key);
            // The order-2 forgery fits half the messages: pick a handle it fits.
            let (handle, proof) = (0..64)
                .find_map(|i| {
                    let handle = format!("mallory-{i}");
                    let message = signing::registration_message(&handle, AUDIENCE, &fp);
                    try_forge(bytes, signing::REGISTER_NAMESPACE, message.as_bytes())
                        .map(|p| (handle, p))
                })
                .expect("a handle the forgery fits");
            let body = serde_json::json!({
                "handle": handle,
                "public_key": key.to_openssh().unwrap(),
                "proof": proof,
            });
            let (status, body) = app
                .send(
                    axum::http::Request::post("/api/v1/submitters")
                        .header("content-type", "application/json")
                        .body(axum::body::Body::from(body.to_string()))
                        .unwrap(),
                )
                .await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{fp}: {body}");
            assert_error(&body, "weak_public_key");
            let msg = body["error"]["message"].as_str().unwrap();
            assert!(msg.contains(why), "{msg}");
        }
        let c = app.counts().await;
        assert_eq!((c.submitters, c.keys), (0, 0));
    }

    /// A weak key stored before the rule existed: its bundles are refused,
    /// nothing is stored, and the audit command finds and suspends it.
    #[tokio::test]
    async fn weak_key_stored_earlier_cannot_submit_and_is_audited() {
        let app = TestApp::new().await;
        let key = public(IDENTITY);
        let fp = signing::fingerprint(&key);
        app.store
            .create_submitter(&wattcounts::store::NewSubmitter {
                handle: "mallory".into(),
                display_name: "mallory".into(),
                fingerprint: fp.clone(),
                algorithm: "ssh-ed25519".into(),
                public_key: key.to_openssh().unwrap(),
            })
            .await
            .unwrap();
        let good = app.register("alice").await;
        // A real bundle, "signed" with mallory's key.
        let bundle = BundleBuilder::fixture().by("alice", &good).build();
        let forged = forged_signature(IDENTITY, signing::SUBMISSION_NAMESPACE, &bundle);
        let before = app.stored().await;
        let (status, body) = app.submit(&bundle, forged.as_bytes()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_error(&body, "weak_public_key");
        app.assert_nothing_stored_since(&before).await;

        let db = format!("sqlite:{}", app.dir.path().join("test.db").display());
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
            .args(["admin", "weak-keys", "--database-url", &db])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains(&fp) && text.contains("mallory"), "{text}");
        assert!(text.contains("1 of 2 registered key(s)"), "{text}");
        assert!(!text.contains("suspended"), "{text}");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
            .args(["admin", "weak-keys", "--suspend", "--database-url", &db])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("submitter mallory suspended"), "{text}");
        let k = app.store.key_by_fingerprint(&fp).await.unwrap().unwrap();
        assert!(k.submitter_suspended_at.is_some());
        let alice = app
            .store
            .key_by_fingerprint(&signing::fingerprint(good.public_key()))
            .await
            .unwrap()
            .unwrap();
        assert!(alice.submitter_suspended_at.is_none());
    }
}

/// Eight registrations of one new handle at once, each with its own key:
/// one is stored; each other is refused 409, with `handle_taken` when the
/// check before the insert saw the winner, or `conflict` when both passed
/// it and the database's unique rule decided (on PostgreSQL too).
async fn concurrent_registrations_of_one_handle(app: TestApp) {
    let answers = futures_util::future::join_all((0..8).map(|_| app.try_register("carol"))).await;
    let created = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{answers:#?}");
    for (status, body) in answers.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
        assert_eq!(*status, StatusCode::CONFLICT, "{body}");
        let code = body["error"]["code"].as_str().unwrap();
        assert!(code == "handle_taken" || code == "conflict", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("handle"),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_registrations_of_one_handle_on_sqlite() {
    concurrent_registrations_of_one_handle(TestApp::new().await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_registrations_of_one_handle_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        concurrent_registrations_of_one_handle(app).await
    }
}

//! Refusals of the request itself that no other test met (issue #40, item
//! 1): each sent as a client would send it, with the status, the code, what
//! the message names, and nothing stored.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use wattcounts::signing;

use crate::common::*;

/// Sends `req` to a fresh app with alice registered; expects `status` and
/// `code`, and that nothing was stored. Returns the body.
async fn refused(app: &TestApp, req: Request<Body>, status: StatusCode, code: &str) -> Value {
    let before = app.stored().await;
    let (got, body) = app.send(req).await;
    assert_eq!(got, status, "{body:#}");
    assert_error(&body, code);
    app.assert_nothing_stored_since(&before).await;
    body
}

fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap()
}

#[tokio::test]
async fn an_upload_that_is_not_multipart() {
    let app = TestApp::new().await;
    let req = Request::post("/api/v1/submissions")
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "bad_multipart").await;
    assert!(message(&body).contains("multipart/form-data"), "{body}");
}

#[tokio::test]
async fn a_part_sent_twice() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let req = multipart(&[
        ("bundle", &gz),
        ("bundle", &gz),
        ("signature", &sign(&key, &gz)),
    ]);
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "duplicate_part").await;
    assert!(message(&body).contains("'bundle'"), "{body}");
}

#[tokio::test]
async fn a_part_the_upload_does_not_take() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let req = multipart(&[
        ("bundle", &gz),
        ("signature", &sign(&key, &gz)),
        ("comment", b"hello"),
    ]);
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "unknown_part").await;
    assert!(message(&body).contains("'comment'"), "{body}");
}

#[tokio::test]
async fn a_signature_part_over_64_kib() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    // One byte over the 64 KiB a .sig file never approaches.
    let huge = vec![b'A'; 64 * 1024 + 1];
    let req = multipart(&[("bundle", &gz), ("signature", &huge)]);
    let body = refused(&app, req, StatusCode::BAD_REQUEST, "signature_too_large").await;
    assert!(message(&body).contains("65536 bytes"), "{body}");
}

/// A registration of `handle` with a fresh key and `display_name`.
fn registration(handle: &str, display_name: &str) -> Request<Body> {
    let key = new_key();
    let public = key.public_key();
    let fp = signing::fingerprint(public);
    let proof = signing::sign(
        &key,
        signing::REGISTER_NAMESPACE,
        signing::registration_message(handle, AUDIENCE, &fp).as_bytes(),
    )
    .unwrap();
    Request::post("/api/v1/submitters")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({
                "handle": handle,
                "display_name": display_name,
                "public_key": public.to_openssh().unwrap(),
                "proof": proof,
            })
            .to_string(),
        ))
        .unwrap()
}

/// A display name of 101 characters, or with a control character, is
/// refused before anything is registered; 100 characters register.
#[tokio::test]
async fn a_display_name_over_100_characters_or_with_a_control_character() {
    let app = TestApp::new().await;
    for name in ["é".repeat(101), "tab\there".to_string()] {
        let body = refused(
            &app,
            registration("bob", &name),
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_display_name",
        )
        .await;
        assert!(message(&body).contains("at most 100 characters"), "{body}");
    }
    let (status, body) = app.send(registration("bob", &"é".repeat(100))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A results CSV with its header and no row.
#[tokio::test]
async fn a_results_csv_with_no_rows() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture()
        .edit("llm_batch_optimized_results.csv", |t| {
            format!("{}\n", t.lines().next().unwrap())
        })
        .by("alice", &key)
        .build();
    let req = multipart(&[("bundle", &gz), ("signature", &sign(&key, &gz))]);
    let body = refused(&app, req, StatusCode::UNPROCESSABLE_ENTITY, "csv_empty").await;
    let d = first_detail(&body);
    assert!(
        d["file"]
            .as_str()
            .unwrap()
            .ends_with("llm_batch_optimized_results.csv"),
        "{body}"
    );
}

/// The "nothing stored" check itself sees a write in any table: a
/// registration adds a submitter and a key, and nothing else.
#[tokio::test]
async fn the_nothing_stored_check_sees_a_registration() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    assert!(before.tables.len() >= 20, "{:?}", before.tables.keys());
    app.register("alice").await;
    let after = app.stored().await;
    let changed: Vec<&str> = after
        .tables
        .iter()
        .filter(|(t, v)| before.tables.get(*t) != Some(v))
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(changed, ["keys", "submitters"]);
    let refused = std::panic::AssertUnwindSafe(app.assert_nothing_stored_since(&before));
    let caught = futures_util::FutureExt::catch_unwind(refused).await;
    assert!(
        caught.is_err(),
        "a registration must not read as nothing stored"
    );
}

/// Stored bytes sent again are answered with their receipt only when the
/// signature is one the key that stored them made over them: an empty,
/// garbage or other registered key's signature is refused as on a first
/// upload, and nothing is stored either way.
#[tokio::test]
async fn a_replay_is_answered_only_with_its_signers_signature() {
    let app = TestApp::new().await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    let gz = BundleBuilder::fixture().by("alice", &alice).build();
    let (status, body) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let before = app.stored().await;
    let (status, body) = app.submit(&gz, b"").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "bad_signature_format");
    let (status, body) = app.submit(&gz, b"not a signature").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "bad_signature_format");
    // Bob's valid signature over alice's stored bytes.
    let (status, body) = app.submit(&gz, &sign(&bob, &gz)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "bad_signature");
    let detail = body["error"]["details"].to_string();
    assert!(
        detail.contains(&signing::fingerprint(bob.public_key()))
            && detail.contains(&signing::fingerprint(alice.public_key())),
        "{body}"
    );
    // Alice's key over other bytes.
    let (status, body) = app.submit(&gz, &sign(&alice, b"other bytes")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "bad_signature");
    app.assert_nothing_stored_since(&before).await;

    // Her own signature again (a fresh one: Ed25519 signs the same way).
    let (status, body) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

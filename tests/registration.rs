//! Registering submitters: proof of possession, handle rules, conflicts.

mod common;

use axum::http::StatusCode;
use common::*;

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

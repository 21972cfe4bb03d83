//! Rate limits (issue #13, item 7): per client address and per signing key
//! on submission and registration, 429 with Retry-After, counted in the
//! database so that two instances on one PostgreSQL share one limit.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};

use crate::common::*;

/// A request as the accept loop hands it on: with the socket's peer.
fn from_peer(mut req: Request<Body>, peer: &str) -> Request<Body> {
    let addr: SocketAddr = format!("{peer}:40000").parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(addr));
    req
}

fn registration(handle: &str) -> Request<Body> {
    let key = new_key();
    let fp = wattcounts::signing::fingerprint(key.public_key());
    let proof = wattcounts::signing::sign(
        &key,
        wattcounts::signing::REGISTER_NAMESPACE,
        wattcounts::signing::registration_message(handle, AUDIENCE, &fp).as_bytes(),
    )
    .unwrap();
    let body = serde_json::json!({
        "handle": handle,
        "public_key": key.public_key().to_openssh().unwrap(),
        "proof": proof,
    });
    Request::post("/api/v1/submitters")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn submissions_per_key_are_limited(app: TestApp, twin: Option<TestApp>) {
    let key = app.register("alice").await;
    let twin = twin.as_ref().unwrap_or(&app);
    for n in 0..3 {
        let gz = BundleBuilder::fixture().marked(n).by("alice", &key).build();
        // Alternate instances: the count is the database's, not theirs.
        let to = if n % 2 == 0 { &app } else { twin };
        let (status, body) = to.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let gz = BundleBuilder::fixture()
        .marked(99)
        .by("alice", &key)
        .build();
    let (status, headers, body) = twin
        .raw(multipart(&[
            ("bundle", gz.as_slice()),
            ("signature", &sign(&key, &gz)),
        ]))
        .await;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_error(&body, "rate_limited");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("4 in this window, the limit is 3 per 3600 s"),
        "{msg}"
    );
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert_eq!(
        app.counts().await.submissions,
        3,
        "the fourth is not stored"
    );

    // Another key is not held back by alice's count.
    let bob = app.register("bob").await;
    let gz = BundleBuilder::fixture().marked(100).by("bob", &bob).build();
    let (status, body) = twin.submit(&gz, &sign(&bob, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

fn per_key(c: &mut wattcounts::config::ServeConfig) {
    c.rate_window_secs = 3600;
    c.submit_limit_per_key = 3;
}

#[tokio::test]
async fn submissions_per_key_sqlite() {
    submissions_per_key_are_limited(TestApp::configured(per_key).await, None).await;
}

#[tokio::test]
async fn submissions_per_key_are_shared_by_two_postgres_instances() {
    let schema = pg_schema();
    let Some(a) = TestApp::postgres_in(&schema, per_key).await else {
        return;
    };
    let b = TestApp::postgres_in(&schema, per_key).await.unwrap();
    submissions_per_key_are_limited(a, Some(b)).await;
}

async fn registrations_per_address_are_limited(app: TestApp) {
    for n in 0..2 {
        let (status, body) = app
            .send(from_peer(registration(&format!("user-{n}")), "203.0.113.7"))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = app
        .send(from_peer(registration("user-2"), "203.0.113.7"))
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("registrations from address 203.0.113.7"));
    // Another address is counted apart.
    let (status, body) = app
        .send(from_peer(registration("user-3"), "198.51.100.1"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // X-Forwarded-For from an untrusted peer is the client's own claim:
    // still 203.0.113.7.
    let mut req = from_peer(registration("user-4"), "203.0.113.7");
    req.headers_mut()
        .insert("x-forwarded-for", "192.0.2.50".parse().unwrap());
    assert_eq!(app.send(req).await.0, StatusCode::TOO_MANY_REQUESTS);
    // Behind the trusted proxy, the forwarded address counts.
    for (n, client) in ["192.0.2.50", "192.0.2.51"].iter().enumerate() {
        let mut req = from_peer(registration(&format!("proxied-{n}")), "10.0.0.2");
        req.headers_mut().insert(
            "x-forwarded-for",
            format!("1.2.3.4, {client}").parse().unwrap(),
        );
        let (status, body) = app.send(req).await;
        assert_eq!(status, StatusCode::CREATED, "{client}: {body}");
    }
    let c = app.counts().await;
    assert_eq!(c.submitters, 5);
}

fn per_address(c: &mut wattcounts::config::ServeConfig) {
    c.rate_window_secs = 3600;
    c.register_limit_per_ip = 2;
    c.trusted_proxies = vec!["10.0.0.2".parse().unwrap()];
}

#[tokio::test]
async fn registrations_per_address_sqlite() {
    registrations_per_address_are_limited(TestApp::configured(per_address).await).await;
}

#[tokio::test]
async fn registrations_per_address_postgres() {
    let Some(app) = TestApp::postgres_in(&pg_schema(), per_address).await else {
        return;
    };
    registrations_per_address_are_limited(app).await;
}

/// The per-address submission limit answers before the body is read.
#[tokio::test]
async fn submissions_per_address_are_limited() {
    let app = TestApp::configured(|c| {
        c.rate_window_secs = 3600;
        c.submit_limit_per_ip = 1;
    })
    .await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let send = |peer: &'static str| {
        from_peer(
            multipart(&[("bundle", gz.as_slice()), ("signature", sig.as_slice())]),
            peer,
        )
    };
    assert_eq!(app.send(send("203.0.113.7")).await.0, StatusCode::CREATED);
    let (status, body) = app.send(send("203.0.113.7")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    // The same bytes from elsewhere: the replay's receipt.
    assert_eq!(app.send(send("198.51.100.1")).await.0, StatusCode::OK);
}

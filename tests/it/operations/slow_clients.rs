//! Slow clients (issue #13, item 2), against a real `serve` process with
//! timeouts of seconds: half a request line, an idle keep-alive
//! connection, a body dripped byte by byte, an upload past its deadline,
//! the connection cap, and a shutdown that lets an upload in flight finish.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::*;

fn addr(server: &Server) -> String {
    server.url.trim_start_matches("http://").to_string()
}

fn serve(extra: &[&str]) -> (Server, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let mut args = vec!["--data-dir", data.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    (spawn_server(&args), data)
}

/// One GET on a fresh connection (closed after the answer), within `limit`.
fn get(server: &Server, path: &str, limit: Duration) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr(server))?;
    s.set_read_timeout(Some(limit))?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Reads until the peer closes; the time it took and what was sent.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (Duration, String) {
    let start = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {:?}: {e}", start.elapsed()),
        }
    }
    (start.elapsed(), String::from_utf8_lossy(&got).into_owned())
}

#[test]
fn half_a_request_line_is_cut_at_the_header_timeout() {
    let (server, _d) = serve(&["--header-timeout-secs", "2"]);
    let mut conns: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = TcpStream::connect(addr(&server)).unwrap();
            s.write_all(b"GET /healthz HT").unwrap();
            s
        })
        .collect();
    // /healthz still answers meanwhile.
    let ok = get(&server, "/healthz", Duration::from_secs(5)).unwrap();
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    for s in &mut conns {
        let (after, _) = read_until_closed(s, Duration::from_secs(10));
        assert!(after < Duration::from_secs(4), "closed after {after:?}");
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let (server, _d) = serve(&["--header-timeout-secs", "2"]);
    let mut s = TcpStream::connect(addr(&server)).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let start = Instant::now();
    let (_, text) = read_until_closed(&mut s, Duration::from_secs(10));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let idle = start.elapsed();
    assert!(
        idle >= Duration::from_millis(1500) && idle < Duration::from_secs(5),
        "closed after {idle:?}"
    );
}

/// An upload's head, declaring a body it then drips.
fn upload_head(len: usize) -> Vec<u8> {
    format!(
        "POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: {len}\r\n\r\n--B\r\nContent-Disposition: form-data; name=\"bundle\"; filename=\"b\"\r\n\r\n"
    )
    .into_bytes()
}

/// Drips a byte a second until the server answers; returns the answer.
fn drip(s: &mut TcpStream, limit: Duration) -> (Duration, String) {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(1000)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit {
        if s.write_all(b"x").is_err() {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") && got.ends_with(b"}") {
                    break;
                }
            }
            Err(_) => {}
        }
    }
    (start.elapsed(), String::from_utf8_lossy(&got).into_owned())
}

#[test]
fn a_dripped_body_gets_408_from_the_rate_floor() {
    let (server, _d) = serve(&[
        "--upload-rate-grace-secs",
        "2",
        "--upload-min-bytes-per-sec",
        "1000",
    ]);
    let mut s = TcpStream::connect(addr(&server)).unwrap();
    s.write_all(&upload_head(1 << 20)).unwrap();
    let (after, text) = drip(&mut s, Duration::from_secs(20));
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"code\":\"upload_too_slow\""), "{text}");
    assert!(after < Duration::from_secs(6), "answered after {after:?}");
    // Nothing is left in staging: the server removes the partial file as
    // the refused body is dropped, which may come just after the answer,
    // so the check waits for that (up to 5 s), not for a fixed sleep.
    let tmp = _d.path().join("blobs/tmp");
    wait_until("no partial upload left in staging", || {
        std::fs::read_dir(&tmp).unwrap().count() == 0
    });
}

/// Polls `done` every 20 ms until it holds; fails after 5 s naming `what`.
/// The tests wait for the server's own signal (a file, a refused
/// connection), never for a fixed sleep that a slow machine outruns.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "after 5 s, still not: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_upload_past_its_deadline_gets_408() {
    let (server, _d) = serve(&[
        "--upload-timeout-secs",
        "3",
        "--upload-min-bytes-per-sec",
        "0",
    ]);
    let mut s = TcpStream::connect(addr(&server)).unwrap();
    s.write_all(&upload_head(1 << 20)).unwrap();
    let (after, text) = drip(&mut s, Duration::from_secs(20));
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"code\":\"request_timeout\""), "{text}");
    assert!(after < Duration::from_secs(6), "answered after {after:?}");
}

#[test]
fn connections_over_the_cap_wait_for_a_free_slot() {
    let (server, _d) = serve(&["--max-connections", "3", "--header-timeout-secs", "30"]);
    // Three silent connections fill the cap. No sleep orders them before
    // the fourth: connect() returns once the handshake is done, so the
    // three sit in the kernel's accept queue ahead of it, and the server
    // accepts in queue order, a slot for each, before it would reach the
    // fourth.
    let held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(addr(&server)).unwrap())
        .collect();
    // A fourth is accepted by the kernel but not served: its read times
    // out (a refused or reset connection would be another failure).
    let fourth = get(&server, "/healthz", Duration::from_millis(1500)).unwrap_err();
    assert!(
        matches!(
            fourth.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        "a fourth is not served: {fourth}"
    );
    drop(held);
    let start = Instant::now();
    let ok = get(&server, "/healthz", Duration::from_secs(5)).unwrap();
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// SIGTERM while an upload is half sent: the server stops accepting, the
/// upload completes and is stored, then the process exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_an_upload_in_flight_finish() {
    let data = tempfile::tempdir().unwrap();
    let args = [
        "--data-dir",
        data.path().to_str().unwrap(),
        "--public-url",
        AUDIENCE,
    ];
    let mut server = spawn_server(&args);
    // Register through the API.
    let key = new_key();
    let fp = wattcounts::signing::fingerprint(key.public_key());
    let proof = wattcounts::signing::sign(
        &key,
        wattcounts::signing::REGISTER_NAMESPACE,
        wattcounts::signing::registration_message("alice", AUDIENCE, &fp).as_bytes(),
    )
    .unwrap();
    let client = reqwest::Client::new();
    let r = client
        .post(format!("{}/api/v1/submitters", server.url))
        .json(&serde_json::json!({"handle": "alice", "public_key": key.public_key().to_openssh().unwrap(), "proof": proof}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    let gz = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &gz);
    let req = multipart(&[("bundle", gz.as_slice()), ("signature", &sig)]);
    let ctype = req.headers()["content-type"].to_str().unwrap().to_string();
    let body = {
        use http_body_util::BodyExt;
        req.into_body().collect().await.unwrap().to_bytes()
    };
    let mut s = TcpStream::connect(addr(&server)).unwrap();
    s.write_all(
        format!(
            "POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let half = body.len() / 2;
    s.write_all(&body[..half]).unwrap();
    // The server is streaming the upload into staging.
    let staging = data.path().join("blobs/tmp");
    wait_until("the upload is in staging", || {
        std::fs::read_dir(&staging).is_ok_and(|d| d.count() > 0)
    });
    server.terminate();
    // No new connection is taken meanwhile: refused, or closed unanswered.
    wait_until(
        "new connections are not served",
        || match TcpStream::connect(addr(&server)) {
            Err(_) => true,
            Ok(mut t) => {
                let _ = t.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
                read_until_closed(&mut t, Duration::from_secs(2))
                    .1
                    .is_empty()
            }
        },
    );
    s.write_all(&body[half..]).unwrap();
    let (_, text) = read_until_closed(&mut s, Duration::from_secs(30));
    assert!(text.starts_with("HTTP/1.1 201"), "{text}");
    let status = server.wait_for_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    drop(server);
    // Stored for good: a fresh server on the same data dir has it.
    let again = spawn_server(&args);
    let body: serde_json::Value = reqwest::get(format!("{}/api/v1/stats", again.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["latest"].as_array().unwrap().len(), 1, "{body}");
}

//! The submission intake over HTTP: the happy path, replays, and every kind
//! of bad input, each asserting the status, the error code, where the problem
//! is, and that nothing was stored.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::Value;
use wattcounts::bundle::harness;

#[tokio::test]
async fn happy_path_receipt_and_replay() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let bundle = BundleBuilder::fixture().by("alice", &key).build();
    let sig = sign(&key, &bundle);

    let (status, receipt) = app.submit(&bundle, &sig).await;
    assert_eq!(status, StatusCode::CREATED, "{receipt:#}");
    assert_eq!(receipt["status"], "accepted");
    assert_eq!(receipt["submitter"], "alice");
    assert_eq!(receipt["gpu"]["name"], "NVIDIA L4");
    assert_eq!(receipt["gpu"]["id"], "l4");
    assert_eq!(receipt["demo"], false);
    assert_eq!(
        receipt["bundle_sha256"],
        wattcounts::digest::sha256_hex(&bundle)
    );
    // 2 models × (batch + 2 arrival rates) × 3 iterations.
    assert_eq!(receipt["counts"]["models"], 2);
    assert_eq!(receipt["counts"]["configurations"], 6);
    assert_eq!(receipt["counts"]["iterations"], 18);
    let configs = receipt["configurations"].as_array().unwrap();
    for c in configs {
        let ept = &c["energy_per_token_j"];
        assert!(ept["min"].as_f64().unwrap() <= ept["median"].as_f64().unwrap());
        assert!(ept["median"].as_f64().unwrap() <= ept["max"].as_f64().unwrap());
        assert!(ept["median"].as_f64().unwrap() > 0.0);
        assert_eq!(c["iterations"], 3);
        if c["scenario"] == "server" {
            assert!(c["ttft_p50_s"]["median"].as_f64().unwrap() > 0.0, "{c}");
            assert!(c["itl_s"]["median"].as_f64().unwrap() > 0.0);
        }
    }
    let stored = app.counts().await;
    assert_eq!(
        (stored.submissions, stored.runs, stored.configurations),
        (1, 18, 6)
    );

    // Same bytes again: 200, the same receipt, nothing new.
    let (status, again) = app.submit(&bundle, &sig).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, receipt);
    assert_eq!(app.counts().await, stored);

    // The receipt is also readable by id.
    let id = receipt["submission_id"].as_str().unwrap();
    let (status, fetched) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fetched, receipt);
}

#[tokio::test]
async fn metrics_are_derived_from_the_csvs() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let bundle = BundleBuilder::fixture().by("alice", &key).build();
    let (_, receipt) = app.submit(&bundle, &sign(&key, &bundle)).await;
    // Recompute one configuration by hand from the fixture's results CSV.
    let (_, csv) = fixture()
        .files
        .iter()
        .find(|(p, _)| {
            p.starts_with("_Qwen_Qwen2_5-0_5B-Instruct__/") && p.ends_with(harness::BATCH_RESULTS)
        })
        .unwrap();
    let rows = harness::parse_results("x", csv, harness::Scenario::Batch).unwrap();
    // The energy meter's rule, read and integrated here without the
    // service's parser: the trapezoid over the trace, the samples spread
    // evenly over the measurement (duration ÷ samples apart).
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (power, tokens, duration) = (
        col("gpu_0_power_draw_watts"),
        col("generation_tokens_total"),
        col("measurement_duration"),
    );
    let trapezoid = |cell: &str, seconds: f64| -> f64 {
        let p: Vec<f64> = cell
            .trim_matches(|c| c == '[' || c == ']')
            .split(", ")
            .map(|v| v.parse().unwrap())
            .collect();
        let spacing = seconds / p.len() as f64;
        p.windows(2).map(|w| (w[0] + w[1]) / 2.0 * spacing).sum()
    };
    let mut ept: Vec<f64> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            trapezoid(&r[power], r[duration].parse().unwrap()) / r[tokens].parse::<f64>().unwrap()
        })
        .collect();
    ept.sort_by(f64::total_cmp);
    let c = receipt["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == "Qwen/Qwen2.5-0.5B-Instruct" && c["scenario"] == "batch")
        .unwrap();
    let median = c["energy_per_token_j"]["median"].as_f64().unwrap();
    assert!(
        (median - ept[1]).abs() < 1e-9 * ept[1],
        "{median} vs {}",
        ept[1]
    );
    // The generator's gpu_energy column is the meter's figure for samples
    // spread evenly over the window: the same integral.
    for r in &rows {
        let ours = r.power_w.trapezoid(r.duration_s / r.power_w.n as f64);
        assert!((ours - r.reported_gpu_energy_j).abs() / ours < 1e-5);
    }
}

#[tokio::test]
async fn same_id_other_bytes_is_409() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let mut m = BundleBuilder::fixture().by("alice", &key).manifest_json();
    let files = fixture().files.clone();
    let first = archive(serde_json::to_vec(&m).unwrap().as_slice(), &files);
    let (status, _) = app.submit(&first, &sign(&key, &first)).await;
    assert_eq!(status, StatusCode::CREATED);
    // Same submission_id, different bytes (another creation time).
    m["created_at"] = Value::String("2026-01-02T03:04:05Z".into());
    let second = archive(serde_json::to_vec(&m).unwrap().as_slice(), &files);
    let (status, body) = app.submit(&second, &sign(&key, &second)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "submission_id_reused");
    assert_eq!(first_detail(&body)["pointer"], "/submission_id");
    assert_eq!(app.counts().await.submissions, 1);
}

#[tokio::test]
async fn oversize_body_is_413() {
    let app = TestApp::with_limit(10_000).await;
    let key = app.register("alice").await;
    let bundle = BundleBuilder::fixture().by("alice", &key).build();
    assert!(bundle.len() > 10_000);
    let before = app.stored().await;
    let (status, body) = app.submit(&bundle, &sign(&key, &bundle)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&body, "body_too_large");
    app.assert_nothing_stored_since(&before).await;
}

#[tokio::test]
async fn oversize_body_without_length_is_413_while_streaming() {
    use axum::body::Body;
    let app = TestApp::with_limit(10_000).await;
    let key = app.register("alice").await;
    let bundle = BundleBuilder::fixture().by("alice", &key).build();
    let req = multipart(&[("bundle", &bundle), ("signature", &sign(&key, &bundle))]);
    let (mut parts, body) = req.into_parts();
    parts.headers.remove("content-length");
    // A streamed body has no length to check up front.
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let req = axum::http::Request::from_parts(parts, Body::new(Chunks(bytes)));
    let before = app.stored().await;
    let (status, body) = app.send(req).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_error(&body, "body_too_large");
    app.assert_nothing_stored_since(&before).await;
}

/// A body that arrives in 4 KiB frames and never states its length.
struct Chunks(axum::body::Bytes);

impl http_body::Body for Chunks {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.0.is_empty() {
            return std::task::Poll::Ready(None);
        }
        let n = self.0.len().min(4096);
        let chunk = self.0.split_to(n);
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
    }
}

//! Apps set up as several features' tests need them: both backends, two
//! GPUs with two models each, a quick estimator, a request with headers.

use super::*;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

/// L4 and H100 PCIe, two models each, accepted.
pub async fn app_with_two_gpus() -> TestApp {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    for gpu in ["l4", "h100-pcie"] {
        let run = BundleBuilder::on(gpu, &[QWEN, "meta-llama/Llama-3.2-3B-Instruct"]).generate();
        let gz = BundleBuilder::of(&run).by("alice", &key).build();
        let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(r["status"], "accepted", "{gpu}: {:#}", r["checks"]);
    }
    app
}

/// GET `path` through the router with `headers`, answering the whole
/// response (status, headers and body) for cache and encoding checks.
pub async fn get_with_headers(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> axum::response::Response {
    let mut r = Request::get(path);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    app.router
        .clone()
        .oneshot(r.body(Body::empty()).unwrap())
        .await
        .unwrap()
}

/// Both backends: SQLite always, PostgreSQL when configured.
pub async fn both_backends() -> Vec<TestApp> {
    let mut apps = vec![TestApp::new().await];
    apps.extend(TestApp::postgres().await);
    apps
}

/// A quick estimator: fewer trees, a short settle.
const QUICK: &str = "settle_secs = 0.2\n[power]\nmax_depth = 6\nl2 = 150.0\ntrees = 40\nlearning_rate = 0.3\n[itl]\nmax_depth = 5\nl2 = 100.0\ntrees = 30\nlearning_rate = 0.3\n";

/// Fits the estimator with [`QUICK`]'s settings.
pub fn quick(c: &mut wattcounts::config::ServeConfig) {
    c.estimator_toml = Some(QUICK.into());
}

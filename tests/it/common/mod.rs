//! Shared test harness: a router over a fresh SQLite database in a temp
//! folder, registered submitters, and bundles built from synthetic harness
//! folders in the real format.
#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::Value;
use ssh_key::PrivateKey;
use tower::ServiceExt;

use sha2::Digest;
use wattcounts::config::ServeConfig;
use wattcounts::pack;
use wattcounts::service::Service;
use wattcounts::signing;
use wattcounts::store::{Store, TableCounts};
use wattcounts::web;

pub mod bundles;
pub mod read_back;
pub mod s3;
pub mod setups;
pub mod skips;
pub mod stored;

pub use bundles::{fixture, BundleBuilder, Protocol, QWEN};

pub use read_back::*;
pub use setups::*;
pub use skips::{python, skip, Need};

pub const AUDIENCE: &str = "https://wattcounts.test";
/// WATTCOUNTS_TEST_PG_URL, or None after saying why the test is skipped
/// (a failure when PostgreSQL is required).
pub fn pg_url() -> Option<String> {
    match std::env::var("WATTCOUNTS_TEST_PG_URL") {
        Ok(u) if !u.trim().is_empty() => Some(u),
        _ => {
            skip(
                Need::Pg,
                "WATTCOUNTS_TEST_PG_URL is not set (point it at a PostgreSQL database, e.g. \
                 postgres://postgres@127.0.0.1:5432/test; .ci/run starts one)",
            );
            None
        }
    }
}

/// The secret text of the one transparency-log key every test app signs
/// with (instances on one database must share a key, as `--log-key-file`
/// makes them in production).
pub fn test_log_secret() -> &'static str {
    static SECRET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| {
        wattcounts::tlog::checkpoint::LogKey::generate("wattcounts.test/log")
            .unwrap()
            .0
    })
}

/// The test log key's verifier key.
pub fn test_log_verifier() -> String {
    wattcounts::tlog::checkpoint::LogKey::from_secret(test_log_secret())
        .unwrap()
        .verifier_key()
        .to_string()
}

/// Puts the shared test key where `serve` and the tools look for it.
pub fn share_log_key(data_dir: &std::path::Path) {
    let path = data_dir.join("log.key");
    if !path.exists() {
        std::fs::write(path, format!("{}\n", test_log_secret())).unwrap();
    }
}

/// `--admin-token` for a spawned `serve` that accepts [`ADMIN_TOKEN`].
pub fn admin_token_flag() -> String {
    format!(
        "maintainer:{}",
        hex::encode(sha2::Sha256::digest(ADMIN_TOKEN))
    )
}

/// The configuration every test instance starts from: defaults for the
/// data dir, the shared log key, the test maintainer token.
pub fn test_config(dir: &std::path::Path, tweak: impl FnOnce(&mut ServeConfig)) -> ServeConfig {
    let mut cfg = ServeConfig::defaults(dir);
    tweak(&mut cfg);
    share_log_key(dir);
    cfg.admin_tokens = vec![admin_token_flag()];
    cfg
}

/// The blob store and snapshot library of an instance that keeps them in
/// `bucket`, staging in `<dir>/scratch`.
fn in_bucket(
    bucket: &wattcounts::store::objects::Objects,
    dir: &std::path::Path,
) -> (
    wattcounts::store::blobs::BlobStore,
    wattcounts::snapshot::Library,
) {
    let scratch = dir.join("scratch");
    let blobs = wattcounts::store::blobs::BlobStore::with_objects(
        bucket.child("blobs").unwrap(),
        scratch.join("blobs"),
    )
    .unwrap();
    let library = wattcounts::snapshot::Library::with_objects(
        bucket.child("snapshots").unwrap(),
        scratch.join("snapshots"),
    )
    .unwrap();
    (blobs, library)
}

/// One gzip member of `bytes`.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// The bytes of one gzip member.
pub fn gunzip(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Every (method, path) the router registers, as its route table lists
/// them (`{*rest}` reads `{rest}`), from a throwaway instance.
pub async fn router_routes() -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("routes.db").display());
    let store = wattcounts::store::sqlite::SqliteStore::open(&url)
        .await
        .unwrap();
    let cfg = test_config(dir.path(), |_| {});
    let state = wattcounts::app::with_store(Arc::new(store), &cfg, AUDIENCE.into()).unwrap();
    web::route_list(&state)
        .into_iter()
        .map(|r| (r.method.to_string(), r.path))
        .collect()
}

/// A PostgreSQL store as `store::open` gives it to `serve`: every call bounded.
pub fn bounded(pg: wattcounts::store::postgres::PgStore) -> Arc<dyn Store> {
    Arc::new(pg.bounded(Default::default()))
}

/// A fresh schema name, so every PostgreSQL test has its own tables.
pub fn pg_schema() -> String {
    format!("t_{}", uuid::Uuid::new_v4().simple())
}

/// The maintainer token every TestApp accepts (configured by its sha256).
pub const ADMIN_TOKEN: &str = "wct_test-maintainer-token";

pub struct TestApp {
    pub router: Router,
    pub service: Arc<Service>,
    pub store: Arc<dyn Store>,
    pub dir: tempfile::TempDir,
    /// The database itself, for tests that set up what no API call can
    /// (a deployment from before a migration).
    pub raw: Option<RawDb>,
    /// Data dirs of further instances behind `router`.
    pub others: Vec<tempfile::TempDir>,
    /// The bucket prefix bundles and snapshots go to, on S3 apps.
    pub bucket: Option<wattcounts::store::objects::Objects>,
}

pub enum RawDb {
    Sqlite(sqlx::SqlitePool),
    Pg(sqlx::PgPool),
}

impl RawDb {
    pub async fn exec(&self, sql: &str) {
        match self {
            RawDb::Sqlite(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
            RawDb::Pg(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The first column of every row `sql` returns, as floats.
    pub async fn floats(&self, sql: &str) -> Vec<f64> {
        match self {
            RawDb::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
            RawDb::Pg(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl TestApp {
    pub async fn new() -> Self {
        Self::with_limit(256 << 20).await
    }

    pub async fn with_limit(max_body_bytes: u64) -> Self {
        Self::configured(|c| c.max_body_bytes = max_body_bytes).await
    }

    /// A TestApp on PostgreSQL, in a fresh schema of its own; None (with the
    /// reason printed) when WATTCOUNTS_TEST_PG_URL is not set.
    pub async fn postgres() -> Option<Self> {
        let url = pg_url()?;
        let schema = pg_schema();
        let store = wattcounts::store::postgres::PgStore::open(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {url}: {e:#}"));
        let dir = tempfile::tempdir().unwrap();
        let raw = RawDb::Pg(store.pool().clone());
        let mut app = Self::with_store(bounded(store), dir, 256 << 20);
        app.raw = Some(raw);
        Some(app)
    }

    /// A TestApp on SQLite whose configuration `tweak` changed.
    pub async fn configured(tweak: impl FnOnce(&mut ServeConfig)) -> Self {
        Self::configured_in(tempfile::tempdir().unwrap(), tweak).await
    }

    /// A TestApp on SQLite whose database and data dir are `dir`.
    pub async fn configured_in(
        dir: tempfile::TempDir,
        tweak: impl FnOnce(&mut ServeConfig),
    ) -> Self {
        let url = format!("sqlite:{}", dir.path().join("test.db").display());
        let store = wattcounts::store::sqlite::SqliteStore::open(&url)
            .await
            .unwrap();
        let raw = RawDb::Sqlite(store.pool().clone());
        let mut app = Self::with_store_config(Arc::new(store), dir, tweak);
        app.raw = Some(raw);
        app
    }

    /// A TestApp on PostgreSQL in `schema` (created if new: two apps on one
    /// schema are two instances on one database), configured by `tweak`.
    pub async fn postgres_in(schema: &str, tweak: impl FnOnce(&mut ServeConfig)) -> Option<Self> {
        let url = pg_url()?;
        let store = wattcounts::store::postgres::PgStore::open(&url, Some(schema))
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {url}: {e:#}"));
        let raw = RawDb::Pg(store.pool().clone());
        let mut app = Self::with_store_config(bounded(store), tempfile::tempdir().unwrap(), tweak);
        app.raw = Some(raw);
        Some(app)
    }

    /// Built by the constructor `serve` uses, with a test configuration.
    pub fn with_store(store: Arc<dyn Store>, dir: tempfile::TempDir, max_body_bytes: u64) -> Self {
        Self::with_store_config(store, dir, |c| c.max_body_bytes = max_body_bytes)
    }

    pub fn with_store_config(
        store: Arc<dyn Store>,
        dir: tempfile::TempDir,
        tweak: impl FnOnce(&mut ServeConfig),
    ) -> Self {
        let cfg = test_config(dir.path(), tweak);
        let state = wattcounts::app::with_store(store.clone(), &cfg, AUDIENCE.into()).unwrap();
        TestApp {
            service: state.service.clone(),
            router: web::app(state),
            store,
            dir,
            raw: None,
            others: Vec::new(),
            bucket: None,
        }
    }

    /// Two instances on one PostgreSQL schema and one prefix of the test
    /// S3 server, with no directory in common (each has only its own
    /// scratch folder); the router sends each request to the other
    /// instance in turn, so a case's upload, replay and read-back cross
    /// instances. Their response caches are off: an instance sees another's
    /// writes within 2 s, and the suite reads right after writing. None
    /// (with the reason printed) without WATTCOUNTS_TEST_PG_URL.
    pub async fn postgres_s3_pair() -> Option<Self> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let url = pg_url()?;
        let schema = pg_schema();
        let s3 = s3::shared();
        let bucket_url = s3.fresh_url();
        let bucket = s3.objects(&bucket_url);
        let mut states = Vec::new();
        let mut dirs = Vec::new();
        let mut raw = None;
        for _ in 0..2 {
            let pg = wattcounts::store::postgres::PgStore::open(&url, Some(&schema))
                .await
                .unwrap_or_else(|e| panic!("PostgreSQL at {url}: {e:#}"));
            raw.get_or_insert_with(|| RawDb::Pg(pg.pool().clone()));
            let store = bounded(pg);
            let dir = tempfile::tempdir().unwrap();
            let cfg = test_config(dir.path(), |c| c.no_response_cache = true);
            let (blobs, library) = in_bucket(&bucket, dir.path());
            let state =
                wattcounts::app::with_files(store.clone(), &cfg, AUDIENCE.into(), blobs, library)
                    .unwrap();
            states.push((store, state));
            dirs.push(dir);
        }
        let (store, first) = states[0].clone();
        let service = first.service.clone();
        let routers: Arc<Vec<Router>> =
            Arc::new(states.into_iter().map(|(_, s)| web::app(s)).collect());
        let turn = Arc::new(AtomicUsize::new(0));
        let router = Router::new().fallback(move |req: axum::extract::Request| {
            let (routers, turn) = (routers.clone(), turn.clone());
            async move {
                let i = turn.fetch_add(1, Ordering::SeqCst) % routers.len();
                routers[i].clone().oneshot(req).await.unwrap()
            }
        });
        let dir = dirs.remove(0);
        Some(TestApp {
            router,
            service,
            store,
            dir,
            raw,
            others: dirs,
            bucket: Some(bucket),
        })
    }

    /// One instance on SQLite whose bundles and snapshots live in a fresh
    /// prefix of the test S3 server: the bucket's paths without PostgreSQL.
    pub async fn sqlite_s3() -> Self {
        let s3 = s3::shared();
        Self::sqlite_with_bucket(s3.objects(&s3.fresh_url())).await
    }

    /// One instance on SQLite whose bundles and snapshots are in `bucket`.
    pub async fn sqlite_with_bucket(bucket: wattcounts::store::objects::Objects) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("test.db").display());
        let sqlite = wattcounts::store::sqlite::SqliteStore::open(&url)
            .await
            .unwrap();
        let raw = RawDb::Sqlite(sqlite.pool().clone());
        let store: Arc<dyn Store> = Arc::new(sqlite);
        let cfg = test_config(dir.path(), |_| {});
        let (blobs, library) = in_bucket(&bucket, dir.path());
        let state =
            wattcounts::app::with_files(store.clone(), &cfg, AUDIENCE.into(), blobs, library)
                .unwrap();
        TestApp {
            service: state.service.clone(),
            router: web::app(state),
            store,
            dir,
            raw: Some(raw),
            others: Vec::new(),
            bucket: Some(bucket),
        }
    }

    /// A real `serve` process over this app's SQLite file and data dir,
    /// with `extra` flags.
    pub fn spawn_serve(&self, extra: &[&str]) -> Server {
        let db = format!("sqlite:{}", self.dir.path().join("test.db").display());
        let mut args = vec![
            "--data-dir",
            self.dir.path().to_str().unwrap(),
            "--database-url",
            &db,
            "--public-url",
            AUDIENCE,
        ];
        args.extend_from_slice(extra);
        spawn_server(&args)
    }

    pub async fn send(&self, req: Request<Body>) -> (StatusCode, Value) {
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, json)
    }

    /// The whole answer: status, headers and body bytes.
    pub async fn raw(
        &self,
        req: Request<Body>,
    ) -> (StatusCode, axum::http::HeaderMap, axum::body::Bytes) {
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, headers, bytes)
    }

    /// A maintainer API call with the test token.
    pub async fn admin_post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let req = Request::post(path)
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        self.send(req).await
    }

    /// A page as a browser gets it: the status and the HTML.
    pub async fn get_text(&self, path: &str) -> (StatusCode, String) {
        let (status, _, body) = self
            .raw(
                Request::get(path)
                    .header("accept", "text/html")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Request::get(path).body(Body::empty()).unwrap())
            .await
    }

    /// Registers `handle` with a fresh Ed25519 key through the API.
    pub async fn register(&self, handle: &str) -> PrivateKey {
        let key = new_key();
        let (status, body) = self.register_with(handle, &key, AUDIENCE).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        key
    }

    /// Tries to register `handle` with a fresh key: the answer as it is.
    pub async fn try_register(&self, handle: &str) -> (StatusCode, Value) {
        self.register_with(handle, &new_key(), AUDIENCE).await
    }

    /// A second instance on this app's store whose configuration holds
    /// another maintainer token: the test token rotated out.
    pub fn rotated_instance(&self) -> Router {
        let mut cfg = test_config(self.dir.path(), |_| {});
        cfg.admin_tokens = vec![format!(
            "maintainer:{}",
            hex::encode(sha2::Sha256::digest("wct_the-next-token"))
        )];
        web::app(wattcounts::app::with_store(self.store.clone(), &cfg, AUDIENCE.into()).unwrap())
    }

    pub async fn register_with(
        &self,
        handle: &str,
        key: &PrivateKey,
        audience: &str,
    ) -> (StatusCode, Value) {
        let public = key.public_key();
        let fp = signing::fingerprint(public);
        let proof = signing::sign(
            key,
            signing::REGISTER_NAMESPACE,
            signing::registration_message(handle, audience, &fp).as_bytes(),
        )
        .unwrap();
        let body = serde_json::json!({
            "handle": handle,
            "display_name": format!("{handle} display"),
            "public_key": public.to_openssh().unwrap(),
            "proof": proof,
        });
        self.send(
            Request::post("/api/v1/submitters")
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    pub async fn submit(&self, bundle: &[u8], signature: &[u8]) -> (StatusCode, Value) {
        self.send(multipart(&[("bundle", bundle), ("signature", signature)]))
            .await
    }

    /// Stores a bundle as the service would, but without the rules that
    /// came later (the one-submission-per-run rule: `content` is recorded
    /// as given): a row from an older deployment. Its blob is real.
    pub async fn insert_directly(
        &self,
        bundle: &[u8],
        key: &PrivateKey,
        status: wattcounts::domain::Status,
        content: &str,
    ) -> uuid::Uuid {
        let mut new = self.new_submission(bundle, key, status).await;
        new.content_sha256 = content.into();
        self.insert(&new).await;
        new.id
    }

    /// A bundle an older deployment accepted before a rule of today's
    /// unpacker: the rows of `analysed`, stored with the bytes `stored`.
    pub async fn insert_stored_as_of_old(
        &self,
        analysed: &[u8],
        stored: &[u8],
        key: &PrivateKey,
    ) -> uuid::Uuid {
        use wattcounts::digest::sha256_hex;
        let mut new = self
            .new_submission(analysed, key, wattcounts::domain::Status::Accepted)
            .await;
        let blobs = self.service.blobs();
        new.blob_path = blobs.commit(blobs.stage(stored).unwrap()).unwrap();
        new.bundle_sha256 = sha256_hex(stored);
        new.bundle_bytes = stored.len() as u64;
        new.signature = String::from_utf8(sign(key, stored)).unwrap();
        self.insert(&new).await;
        new.id
    }

    /// `n` copies of a bundle's rows under new ids and digests (same blob),
    /// inserted straight into the store: many submissions, quickly.
    pub async fn insert_copies(
        &self,
        bundle: &[u8],
        key: &PrivateKey,
        n: usize,
        status: wattcounts::domain::Status,
    ) -> Vec<uuid::Uuid> {
        let template = self.new_submission(bundle, key, status).await;
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let mut new = template.clone();
            new.id = uuid::Uuid::new_v4();
            new.bundle_sha256 = format!("{:064x}", i + 1);
            new.content_sha256 = format!("copy-{}", new.id);
            new.received_at = chrono::Utc::now();
            self.insert(&new).await;
            ids.push(new.id);
        }
        ids
    }

    async fn insert(&self, new: &wattcounts::store::NewSubmission) {
        let outcome = self.store.insert_submission(new).await.unwrap();
        assert!(
            matches!(outcome, wattcounts::store::InsertOutcome::Inserted(_)),
            "{outcome:?}"
        );
    }

    async fn new_submission(
        &self,
        bundle: &[u8],
        key: &PrivateKey,
        status: wattcounts::domain::Status,
    ) -> wattcounts::store::NewSubmission {
        use wattcounts::analysis::{analyse, IngestConfig, StageTimings};
        use wattcounts::digest::sha256_hex;
        let analysis = analyse(
            bundle,
            &wattcounts::bundle::manifest::ManifestSchema::new(),
            &IngestConfig {
                public_url: AUDIENCE.into(),
                unpack: Default::default(),
                thresholds: Default::default(),
            },
            chrono::Utc::now(),
            &mut StageTimings::default(),
        )
        .unwrap();
        let k = self
            .store
            .key_by_fingerprint(&signing::fingerprint(key.public_key()))
            .await
            .unwrap()
            .unwrap();
        let digest = sha256_hex(bundle);
        let blobs = self.service.blobs();
        let staged = blobs.stage(bundle).unwrap();
        let blob_path = blobs.commit(staged).unwrap();
        let m = &analysis.manifest;
        wattcounts::store::NewSubmission {
            id: m.submission_id,
            bundle_sha256: digest,
            submitter_id: k.submitter_id,
            handle: k.handle.clone(),
            key_id: k.key_id,
            key_fingerprint: k.fingerprint.clone(),
            status,
            received_at: chrono::Utc::now(),
            gpu_name: m.system.gpu.name.clone(),
            gpu_id: analysis.gpu.map(|g| g.id.clone()),
            run_name: m.run.name.clone(),
            is_demo: k.handle == "demo",
            bundle_bytes: bundle.len() as u64,
            blob_path,
            signature: String::from_utf8(sign(key, bundle)).unwrap(),
            manifest_json: serde_json::to_string(m).unwrap(),
            content_sha256: analysis.content_sha256.clone(),
            protocol: analysis.protocol,
            runs: analysis.runs,
            configurations: analysis.configurations,
            checks: analysis.checks,
        }
    }

    pub async fn counts(&self) -> TableCounts {
        self.store.counts().await.unwrap()
    }
}

/// Every file below `dir`, which must exist: a test that looks in the
/// wrong place finds nothing, and that must not read as "nothing written".
pub fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    assert!(dir.is_dir(), "{} is not a folder", dir.display());
    walk_files_if_any(dir)
}

/// Every file below `dir`, or none where it has not been made yet.
pub fn walk_files_if_any(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => panic!("reading {}: {e}", dir.display()),
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files_if_any(&p));
        } else {
            out.push(p);
        }
    }
    out
}

pub fn new_key() -> PrivateKey {
    let (private, _) = signing::generate_ed25519("test").unwrap();
    signing::load_private_key(&private).unwrap()
}

pub fn sign(key: &PrivateKey, bytes: &[u8]) -> Vec<u8> {
    signing::sign(key, signing::SUBMISSION_NAMESPACE, bytes)
        .unwrap()
        .into_bytes()
}

pub fn multipart(parts: &[(&str, &[u8])]) -> Request<Body> {
    let boundary = "wattcountsTestBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Request::post("/api/v1/submissions")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .header("content-length", body.len())
        .body(Body::from(body))
        .unwrap()
}

/// An archive from a manifest text and files, no questions asked.
pub fn archive(manifest: &[u8], files: &[(String, Vec<u8>)]) -> Vec<u8> {
    pack::archive(manifest, files).unwrap()
}

/// One raw tar entry for hostile archives: name bytes, type, data, link target.
pub struct RawEntry<'a> {
    pub name: &'a [u8],
    pub kind: tar::EntryType,
    pub data: &'a [u8],
    pub link: Option<&'a [u8]>,
}

/// Builds a gzip tar whose headers are written byte for byte, so names the
/// tar crate would refuse to write (`..`, absolute paths) get in.
pub fn raw_targz(entries: &[RawEntry]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut b = tar::Builder::new(gz);
    for e in entries {
        let mut h = tar::Header::new_old();
        {
            let old = h.as_old_mut();
            old.name[..e.name.len()].copy_from_slice(e.name);
            if let Some(l) = e.link {
                old.linkname[..l.len()].copy_from_slice(l);
            }
        }
        h.set_size(e.data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(e.kind);
        h.set_cksum();
        b.append(&h, e.data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

pub fn assert_error(body: &Value, code: &str) {
    assert_eq!(
        body["error"]["code"], code,
        "unexpected error body: {body:#}"
    );
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
}

pub fn first_detail(body: &Value) -> &Value {
    &body["error"]["details"][0]
}

/// A real `wattcounts serve` process on port 0; killed when dropped.
pub struct Server {
    child: std::process::Child,
    pub url: String,
    /// `http://ADDR/metrics` when started with `--metrics-bind` (the
    /// address the server bound, so a test can ask for port 0).
    pub metrics_url: Option<String>,
}

impl Server {
    /// SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
    }
    /// Waits for the process to exit by itself.
    pub fn wait_for_exit(&mut self, limit: std::time::Duration) -> std::process::ExitStatus {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < limit, "still running after {limit:?}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `wattcounts serve --bind 127.0.0.1:0 ARGS…` (ignoring any
/// WATTCOUNTS_* settings of the caller) and waits until it listens.
pub fn spawn_server<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Server {
    spawn_server_with_env(args, &[])
}

/// `spawn_server` with further environment variables (the `AWS_*` ones,
/// which only the environment sets).
pub fn spawn_server_with_env<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    env: &[(&str, String)],
) -> Server {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_wattcounts"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("WATTCOUNTS_PUBLIC_URL")
        .env_remove("WATTCOUNTS_DATABASE_URL")
        // Tests send many requests from one address and key: no rate
        // limits unless a flag asks for them (flags win over these).
        .env("WATTCOUNTS_SUBMIT_LIMIT_PER_IP", "0")
        .env("WATTCOUNTS_SUBMIT_LIMIT_PER_KEY", "0")
        .env("WATTCOUNTS_REGISTER_LIMIT_PER_IP", "0")
        .env("WATTCOUNTS_REGISTER_LIMIT_PER_KEY", "0")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut next_line = || {
        lines
            .next()
            .expect("server exited before listening")
            .unwrap()
    };
    let url = loop {
        let line = next_line();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    let wants_metrics = args.iter().any(|a| a.as_ref() == "--metrics-bind");
    let metrics_url = wants_metrics.then(|| loop {
        let line = next_line();
        if let Some(rest) = line.split("metrics at ").nth(1) {
            break rest.trim().to_string();
        }
    });
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        url,
        metrics_url,
    }
}

/// Registers `handle` with `key` straight in the store (no HTTP).
pub async fn add_submitter(store: &dyn Store, handle: &str, key: &PrivateKey) {
    store
        .create_submitter(&wattcounts::store::NewSubmitter {
            handle: handle.into(),
            display_name: handle.into(),
            fingerprint: signing::fingerprint(key.public_key()),
            algorithm: "ssh-ed25519".into(),
            public_key: key.public_key().to_openssh().unwrap(),
        })
        .await
        .unwrap();
}

async fn get_response(app: &TestApp, path: &str) -> axum::response::Response {
    app.router
        .clone()
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap()
}

/// GET `path` through the router: the status and where it redirects ("" if
/// it does not).
pub async fn location(app: &TestApp, path: &str) -> (StatusCode, String) {
    let resp = get_response(app, path).await;
    let to = resp
        .headers()
        .get(axum::http::header::LOCATION)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (resp.status(), to)
}

/// GET `path` through the router, expecting HTML; the status and the DOM.
pub async fn html_page(app: &TestApp, path: &str) -> (StatusCode, scraper::Html) {
    let resp = get_response(app, path).await;
    let status = resp.status();
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/html"), "{path}: {ct}");
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        scraper::Html::parse_document(std::str::from_utf8(&bytes).unwrap()),
    )
}

/// The trimmed text of every element matching `sel`.
pub fn texts(doc: &scraper::Html, sel: &str) -> Vec<String> {
    let s = scraper::Selector::parse(sel).unwrap();
    doc.select(&s)
        .map(|e| e.text().collect::<String>().trim().to_string())
        .collect()
}

/// Submits `gz` signed by `handle`'s `key` and requires it accepted with
/// every check passing or skipped (an oracle's members); its receipt.
pub async fn submit_all_passing(app: &TestApp, handle: &str, key: &PrivateKey, gz: &[u8]) -> Value {
    let (status, body) = app.submit(gz, &sign(key, gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{handle}: {body}");
    let not_passed: Vec<&Value> = body["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] != "pass" && c["outcome"] != "skip")
        .collect();
    assert!(not_passed.is_empty(), "{handle}: {not_passed:#?}");
    assert_eq!(body["status"], "accepted", "{handle}");
    body
}

/// A multipart upload to a real server: (status, JSON body).
pub async fn submit_over_http(
    client: &reqwest::Client,
    server: &str,
    bundle: Vec<u8>,
    sig: Vec<u8>,
) -> (u16, serde_json::Value) {
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle).file_name("b.tar.gz"),
        )
        .part(
            "signature",
            reqwest::multipart::Part::bytes(sig).file_name("b.sig"),
        );
    let resp = client
        .post(format!("{server}/api/v1/submissions"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

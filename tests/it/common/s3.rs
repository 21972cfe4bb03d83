//! A real S3-compatible server for the tests: s3s-fs (files in a temp
//! folder) behind s3s, which checks every request's SigV4 signature
//! against one access key, on a loopback port of its own. It runs inside
//! the test process, on its own runtime thread, so spawned `serve`
//! processes reach it too and no test depends on an installed binary.

use std::net::SocketAddr;

pub const ACCESS_KEY: &str = "wattcounts-test";
pub const SECRET_KEY: &str = "wattcounts-test-secret-key";
pub const BUCKET: &str = "wattcounts";

pub struct S3Server {
    pub addr: SocketAddr,
    /// The bucket's files, for tests that look behind the API.
    pub root: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl S3Server {
    pub fn start() -> S3Server {
        use s3s::auth::SimpleAuth;
        use s3s::service::S3ServiceBuilder;
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(BUCKET)).unwrap();
        let fs = s3s_fs::FileSystem::new(root.path()).unwrap();
        let mut b = S3ServiceBuilder::new(fs);
        b.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let service = b.build();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (socket, _) = tokio::select! {
                        r = listener.accept() => match r { Ok(c) => c, Err(_) => continue },
                        _ = &mut stopped => break,
                    };
                    let service = service.clone();
                    tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(socket), service)
                            .await;
                    });
                }
            });
        });
        S3Server {
            addr,
            root,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A fresh prefix of the bucket, so tests sharing the server never
    /// see each other's objects.
    pub fn fresh_url(&self) -> String {
        format!("s3://{BUCKET}/t-{}", uuid::Uuid::new_v4().simple())
    }

    /// The `AWS_*` variables an instance reads to reach this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// The bucket prefix `url` names, opened in this process the way
    /// `--blob-url` opens it in a server.
    pub fn objects(&self, url: &str) -> wattcounts::store::objects::Objects {
        self.objects_via(&self.endpoint(), url)
    }

    /// As [`S3Server::objects`], reached through `endpoint` (a relay the
    /// test can cut), with the service's bounds on every call.
    pub fn objects_via(&self, endpoint: &str, url: &str) -> wattcounts::store::objects::Objects {
        let rest = url.strip_prefix("s3://").unwrap();
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let store =
            wattcounts::store::objects::bounded_s3(object_store::aws::AmazonS3Builder::new())
                .with_bucket_name(bucket)
                .with_access_key_id(ACCESS_KEY)
                .with_secret_access_key(SECRET_KEY)
                .with_region("us-east-1")
                .with_endpoint(endpoint)
                .with_allow_http(true)
                .build()
                .unwrap();
        wattcounts::store::objects::Objects::remote(std::sync::Arc::new(store), prefix, url)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One server for the whole test binary.
pub fn shared() -> &'static S3Server {
    static SERVER: std::sync::OnceLock<S3Server> = std::sync::OnceLock::new();
    SERVER.get_or_init(S3Server::start)
}

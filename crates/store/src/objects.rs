//! Where immutable files live: a folder of the data dir (the default) or a
//! prefix of an S3-compatible bucket (`--blob-url s3://bucket/prefix`), so
//! that several instances with no shared disk serve each other's bundles
//! and snapshots. Files are written once under a name that says what they
//! are (a content address, a snapshot id) and never changed, so neither
//! side needs an atomic rename: a reader finds a name only through a
//! database row written after the file.
//!
//! The async methods serve requests; the `_blocking` ones are for the
//! blocking threads that ingest, rebuild and snapshot work on.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};

/// Files above this go up in parts (S3's multipart upload).
const PART_BYTES: usize = 8 << 20;

/// How long a small call to a bucket (a HEAD, a DELETE, each step of the
/// readiness probe) may take before it counts as an outage. The client's
/// own per-request timeout (30 s) is sized for an 8 MB part: a silent
/// bucket held an upload for 30 s and `/readyz` past its caller's patience.
pub const SMALL_CALL: std::time::Duration = std::time::Duration::from_secs(2);

/// A put may take [`SMALL_CALL`] plus the time its bytes need at this rate:
/// slower than any link a bucket is reached over in practice, so only a
/// bucket that stopped answering hits the bound.
const SLOWEST_PUT_BYTES_PER_SEC: u64 = 1 << 20;

/// The whole readiness probe (write, read back, remove).
pub const PROBE_BOUND: std::time::Duration = std::time::Duration::from_millis(1500);

/// `call` within `limit`, or a `TimedOut` error saying what did not answer.
async fn bounded<T>(
    what: &str,
    limit: std::time::Duration,
    call: impl std::future::Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "it did not answer {what} within {:.1} s",
                limit.as_secs_f64()
            ),
        ))
    })
}

#[derive(Clone)]
pub struct Objects {
    at: Arc<Place>,
}

enum Place {
    Local(PathBuf),
    Remote {
        store: Arc<dyn ObjectStore>,
        prefix: Key,
        /// `s3://bucket/prefix/…`, for messages.
        url: String,
    },
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A stored file, as listed.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its name below the folder.
    pub name: String,
    pub bytes: u64,
    pub modified: std::time::SystemTime,
}

/// Part of a file on its way to a client.
pub struct Fetched {
    /// The whole file's length.
    pub total: u64,
    /// The bytes sent.
    pub range: Range<u64>,
    pub body: BoxStream<'static, std::io::Result<Bytes>>,
}

/// Moves a finished file to `dest` in a local folder, by rename (same
/// disk), and makes the new name durable.
fn move_into(dest: &Path, file: &Path) -> std::io::Result<()> {
    let dir = dest.parent().expect("a stored name has a folder");
    std::fs::create_dir_all(dir)?;
    std::fs::rename(file, dest)?;
    sync_dir(dir);
    Ok(())
}

fn io(e: object_store::Error) -> std::io::Error {
    std::io::Error::from(e)
}

/// What an `s3://bucket/prefix` URL names, with the `AWS_*` environment
/// (credentials, region, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`) read by
/// object_store itself.
/// Every object-store call is bounded, as the database's are: a store
/// that refuses connections, resets them or goes silent answers an error
/// within seconds (the upload then gets a 503 it can send again), not
/// after the client's default of ten retries over minutes.
pub fn bounded_s3(b: object_store::aws::AmazonS3Builder) -> object_store::aws::AmazonS3Builder {
    use std::time::Duration;
    b.with_retry(object_store::RetryConfig {
        backoff: object_store::BackoffConfig::default(),
        max_retries: 2,
        retry_timeout: Duration::from_secs(10),
    })
    // As config keys, not a new ClientOptions: that would drop what the
    // environment set (AWS_ALLOW_HTTP, a proxy).
    .with_config(
        object_store::aws::AmazonS3ConfigKey::Client(object_store::ClientConfigKey::ConnectTimeout),
        "3s",
    )
    // One request: a part of at most 8 MB, or a small object.
    .with_config(
        object_store::aws::AmazonS3ConfigKey::Client(object_store::ClientConfigKey::Timeout),
        "30s",
    )
}

pub fn open_url(url: &str) -> anyhow::Result<Objects> {
    let rest = url.strip_prefix("s3://").ok_or_else(|| {
        anyhow::anyhow!("--blob-url '{url}': only s3://BUCKET[/PREFIX] is supported; leave it unset for the data dir")
    })?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    anyhow::ensure!(!bucket.is_empty(), "--blob-url '{url}' names no bucket");
    let store = bounded_s3(object_store::aws::AmazonS3Builder::from_env())
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| anyhow::anyhow!("--blob-url {url}: {e}"))?;
    Ok(Objects::remote(Arc::new(store), prefix, url))
}

impl Objects {
    pub fn local(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Ok(Objects {
            at: Arc::new(Place::Local(root)),
        })
    }

    pub fn remote(store: Arc<dyn ObjectStore>, prefix: &str, url: &str) -> Self {
        Objects {
            at: Arc::new(Place::Remote {
                store,
                prefix: Key::from(prefix.trim_matches('/')),
                url: url.trim_end_matches('/').to_string(),
            }),
        }
    }

    /// The sub-folder `name` (`blobs`, `snapshots`).
    pub fn child(&self, name: &str) -> std::io::Result<Self> {
        Ok(match &*self.at {
            Place::Local(root) => Objects::local(root.join(name))?,
            Place::Remote { store, prefix, url } => Objects {
                at: Arc::new(Place::Remote {
                    store: store.clone(),
                    prefix: prefix.clone().join(name),
                    url: format!("{url}/{name}"),
                }),
            },
        })
    }

    /// Where the files are, for messages and logs.
    pub fn describe(&self) -> String {
        match &*self.at {
            Place::Local(root) => root.display().to_string(),
            Place::Remote { url, .. } => url.clone(),
        }
    }

    /// The file's path when the folder is local (served with the file
    /// server, which does Range itself).
    /// Whether the objects live in a bucket (a call can fail because the
    /// store is away, not only because a disk is full).
    pub fn is_remote(&self) -> bool {
        matches!(&*self.at, Place::Remote { .. })
    }

    pub fn local_path(&self, name: &str) -> Option<PathBuf> {
        match &*self.at {
            Place::Local(root) => Some(root.join(name)),
            Place::Remote { .. } => None,
        }
    }

    fn key(prefix: &Key, name: &str) -> Key {
        name.split('/')
            .filter(|p| !p.is_empty())
            .fold(prefix.clone(), |k, part| k.join(part))
    }

    /// Stores a finished local file under `name`. A local folder takes it
    /// by rename (the caller's file is gone afterwards; it must be on the
    /// same disk); a bucket gets a copy, in parts when large.
    pub async fn put_file(&self, name: &str, file: &Path) -> std::io::Result<()> {
        match &*self.at {
            Place::Local(root) => {
                let (dest, file) = (root.join(name), file.to_owned());
                tokio::task::spawn_blocking(move || move_into(&dest, &file)).await?
            }
            Place::Remote { store, prefix, .. } => {
                let key = Self::key(prefix, name);
                let len = tokio::fs::metadata(file).await?.len();
                let limit = SMALL_CALL
                    + std::time::Duration::from_secs_f64(
                        len as f64 / SLOWEST_PUT_BYTES_PER_SEC as f64,
                    );
                bounded("a put", limit, async {
                    if len <= PART_BYTES as u64 {
                        let bytes = tokio::fs::read(file).await?;
                        store.put(&key, PutPayload::from(bytes)).await.map_err(io)?;
                    } else {
                        let mut up = object_store::WriteMultipart::new_with_chunk_size(
                            store.put_multipart(&key).await.map_err(io)?,
                            PART_BYTES,
                        );
                        let mut f = tokio::fs::File::open(file).await?;
                        let mut buf = vec![0u8; PART_BYTES];
                        loop {
                            let n = tokio::io::AsyncReadExt::read(&mut f, &mut buf).await?;
                            if n == 0 {
                                break;
                            }
                            up.wait_for_capacity(4).await.map_err(io)?;
                            up.write(&buf[..n]);
                        }
                        up.finish().await.map_err(io)?;
                    }
                    Ok(())
                })
                .await
            }
        }
    }

    pub fn put_file_blocking(&self, name: &str, file: &Path) -> std::io::Result<()> {
        match &*self.at {
            Place::Local(root) => move_into(&root.join(name), file),
            Place::Remote { .. } => block_on(self.put_file(name, file)),
        }
    }

    pub async fn exists(&self, name: &str) -> std::io::Result<bool> {
        match &*self.at {
            Place::Local(root) => tokio::fs::try_exists(root.join(name)).await,
            Place::Remote { store, prefix, .. } => {
                bounded("a HEAD", SMALL_CALL, async {
                    match store.head(&Self::key(prefix, name)).await {
                        Ok(_) => Ok(true),
                        Err(object_store::Error::NotFound { .. }) => Ok(false),
                        Err(e) => Err(io(e)),
                    }
                })
                .await
            }
        }
    }

    pub fn exists_blocking(&self, name: &str) -> std::io::Result<bool> {
        match &*self.at {
            Place::Local(root) => root.join(name).try_exists(),
            Place::Remote { .. } => block_on(self.exists(name)),
        }
    }

    pub async fn read(&self, name: &str) -> std::io::Result<Vec<u8>> {
        match &*self.at {
            Place::Local(root) => tokio::fs::read(root.join(name)).await,
            Place::Remote { store, prefix, .. } => Ok(store
                .get(&Self::key(prefix, name))
                .await
                .map_err(io)?
                .bytes()
                .await
                .map_err(io)?
                .to_vec()),
        }
    }

    pub fn read_blocking(&self, name: &str) -> std::io::Result<Vec<u8>> {
        match &*self.at {
            Place::Local(root) => std::fs::read(root.join(name)),
            Place::Remote { .. } => block_on(self.read(name)),
        }
    }

    /// The file or the part of it that `range` picks once the file's
    /// length is known, streamed; a range past the end is an
    /// `InvalidInput` error (the caller answers 416).
    pub async fn fetch(
        &self,
        name: &str,
        range: impl FnOnce(u64) -> Option<Range<u64>>,
    ) -> std::io::Result<Fetched> {
        match &*self.at {
            Place::Local(root) => {
                use tokio::io::{AsyncReadExt, AsyncSeekExt};
                let mut f = tokio::fs::File::open(root.join(name)).await?;
                let total = f.metadata().await?.len();
                let range = clamp(range(total), total)?;
                f.seek(std::io::SeekFrom::Start(range.start)).await?;
                let body = tokio_util::io::ReaderStream::new(f.take(range.end - range.start));
                Ok(Fetched {
                    total,
                    range,
                    body: body.boxed(),
                })
            }
            Place::Remote { store, prefix, .. } => {
                let key = Self::key(prefix, name);
                let total = store.head(&key).await.map_err(io)?.size;
                let range = clamp(range(total), total)?;
                if range.is_empty() {
                    return Ok(Fetched {
                        total,
                        range,
                        body: futures_util::stream::empty().boxed(),
                    });
                }
                let got = store
                    .get_opts(
                        &key,
                        GetOptions {
                            range: Some(GetRange::Bounded(range.clone())),
                            ..Default::default()
                        },
                    )
                    .await
                    .map_err(io)?;
                Ok(Fetched {
                    total,
                    range: got.range.clone(),
                    body: got.into_stream().map_err(io).boxed(),
                })
            }
        }
    }

    /// Every file whose name starts with `dir/` (a whole folder).
    pub async fn list(&self, dir: &str) -> std::io::Result<Vec<Listed>> {
        match &*self.at {
            Place::Local(root) => {
                let root = root.clone();
                let dir = dir.to_string();
                tokio::task::spawn_blocking(move || list_local(&root, &dir)).await?
            }
            Place::Remote { store, prefix, .. } => {
                let base = Self::key(prefix, dir);
                let strip = prefix.as_ref().len() + usize::from(!prefix.as_ref().is_empty());
                store
                    .list(Some(&base))
                    .map_err(io)
                    .map_ok(|m| Listed {
                        name: m.location.as_ref()[strip..].to_string(),
                        bytes: m.size,
                        modified: m.last_modified.into(),
                    })
                    .try_collect()
                    .await
            }
        }
    }

    pub fn list_blocking(&self, dir: &str) -> std::io::Result<Vec<Listed>> {
        match &*self.at {
            Place::Local(root) => list_local(root, dir),
            Place::Remote { .. } => block_on(self.list(dir)),
        }
    }

    pub async fn delete(&self, name: &str) -> std::io::Result<()> {
        match &*self.at {
            Place::Local(root) => match tokio::fs::remove_file(root.join(name)).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Place::Remote { store, prefix, .. } => {
                bounded("a DELETE", SMALL_CALL, async {
                    match store.delete(&Self::key(prefix, name)).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                        Err(e) => Err(io(e)),
                    }
                })
                .await
            }
        }
    }

    pub fn delete_blocking(&self, name: &str) -> std::io::Result<()> {
        match &*self.at {
            Place::Local(root) => match std::fs::remove_file(root.join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Place::Remote { .. } => block_on(self.delete(name)),
        }
    }

    /// Writes, reads back and removes a small file: the store takes files
    /// now (readiness).
    pub async fn probe(&self) -> std::io::Result<()> {
        let name = format!("probe/{}", uuid::Uuid::new_v4());
        match &*self.at {
            Place::Local(root) => {
                let path = root.join(&name);
                tokio::fs::create_dir_all(path.parent().expect("probe has a folder")).await?;
                tokio::fs::write(&path, b"ready").await?;
                tokio::fs::remove_file(&path).await
            }
            Place::Remote { store, prefix, .. } => {
                let key = Self::key(prefix, &name);
                bounded(
                    "the readiness probe (put, get, delete)",
                    PROBE_BOUND,
                    async {
                        store
                            .put(&key, PutPayload::from_static(b"ready"))
                            .await
                            .map_err(io)?;
                        let back = store
                            .get(&key)
                            .await
                            .map_err(io)?
                            .bytes()
                            .await
                            .map_err(io)?;
                        store.delete(&key).await.map_err(io)?;
                        if back.as_ref() == b"ready" {
                            Ok(())
                        } else {
                            Err(std::io::Error::other("the probe read back other bytes"))
                        }
                    },
                )
                .await
            }
        }
    }
}

/// `range` within a file of `total` bytes (the whole file when None).
fn clamp(range: Option<Range<u64>>, total: u64) -> std::io::Result<Range<u64>> {
    match range {
        None => Ok(0..total),
        Some(r) if r.start < total && r.start < r.end => Ok(r.start..r.end.min(total)),
        Some(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "range not satisfiable",
        )),
    }
}

fn list_local(root: &Path, dir: &str) -> std::io::Result<Vec<Listed>> {
    let mut out = Vec::new();
    let mut todo = vec![root.join(dir)];
    while let Some(d) = todo.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for e in rd {
            let e = e?;
            let m = e.metadata()?;
            if m.is_dir() {
                todo.push(e.path());
            } else if m.is_file() {
                let name = e
                    .path()
                    .strip_prefix(root)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(Listed {
                    name,
                    bytes: m.len(),
                    modified: m.modified()?,
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Runs an object-store call from a blocking thread (ingest, rebuild and
/// snapshot work run on those, inside the runtime's context).
fn block_on<T>(f: impl std::future::Future<Output = std::io::Result<T>>) -> std::io::Result<T> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| std::io::Error::other("object store used outside the runtime"))?;
    match handle.runtime_flavor() {
        // On a worker thread (or a blocking one) of the multi-threaded
        // runtime: let the worker go while this waits.
        tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| handle.block_on(f))
        }
        _ => handle.block_on(f),
    }
}

pub fn sync_dir(dir: &Path) {
    // Makes a rename durable; not supported everywhere, so best effort.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

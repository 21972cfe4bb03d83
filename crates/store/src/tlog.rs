//! The transparency log's storage: leaves, the tree's stored hashes and
//! published checkpoints, for both backends. Appending happens inside the
//! write transaction that stores a submission or records a decision (the
//! helpers [`log_store!`] generates), after every other lock that
//! transaction takes, so writers never wait on each other in a cycle; on
//! PostgreSQL the `log_head` row lock makes appenders of every instance
//! take turns, so the log stays linear. Nothing here signs: keys belong to
//! the service.

use async_trait::async_trait;

use super::StoreError;

/// The log's origin and verifier key as stored (both absent before the
/// first start), read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredLogHead {
    pub origin: Option<String>,
    pub verifier_key: Option<String>,
}

/// What the backfill reads of a submission not yet in the log.
#[derive(sqlx::FromRow)]
pub(crate) struct UnloggedSubmission {
    pub id: String,
    pub bundle_sha256: String,
    pub content_sha256: Option<String>,
    pub fingerprint: String,
    pub received_at: String,
    pub status: String,
}

/// What the backfill reads of a moderation event not yet in the log.
#[derive(sqlx::FromRow)]
pub(crate) struct UnloggedEvent {
    pub id: i64,
    pub created_at: String,
    pub actor: String,
    pub action: String,
    pub submission_id: Option<String>,
    pub submitter_handle: Option<String>,
    pub key_fingerprint: Option<String>,
    pub from_status: Option<String>,
    pub to_status: Option<String>,
    pub effective_at: Option<String>,
    pub reason: String,
}

/// A published checkpoint: the tree size it signs and the signed note.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredCheckpoint {
    pub size: i64,
    pub signed: String,
}

/// The backfilled leaves' count and index range.
#[derive(sqlx::FromRow)]
pub(crate) struct BackfilledRange {
    pub backfilled_leaves: i64,
    pub first_index: Option<i64>,
    pub last_index: Option<i64>,
}
use wattcounts_rules::tlog::Hash;

/// One leaf as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub index: u64,
    /// RFC 8785 canonical JSON.
    pub leaf: String,
    pub backfilled: bool,
}

/// A row whose leaf an open transaction appends before it commits.
#[derive(Debug, Clone)]
pub(super) enum LogTarget {
    Submission(String),
    Event(i64),
    PeerRelease(i64),
}

/// What the log holds, for its page and API.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct LogStats {
    pub size: u64,
    /// Leaves appended by the start-up backfill, and the range they take.
    pub backfilled: u64,
    pub backfilled_first: Option<u64>,
    pub backfilled_last: Option<u64>,
}

#[async_trait]
pub trait LogStore: Send + Sync {
    /// The log's name and verifier key as recorded, if any.
    async fn log_key(&self) -> Result<Option<(String, String)>, StoreError>;
    /// Records the log's name and verifier key unless one is recorded;
    /// returns the recorded pair (another instance's, if it came first).
    async fn claim_log_key(
        &self,
        origin: &str,
        verifier_key: &str,
    ) -> Result<(String, String), StoreError>;
    /// Leaves in the log (reads the primary key's last entry).
    async fn log_size(&self) -> Result<u64, StoreError>;
    async fn log_stats(&self) -> Result<LogStats, StoreError>;
    /// Stored hashes by index (see `tlog_tiles::stored_hash_index`), in
    /// the order asked; an index not stored is an error.
    async fn log_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, StoreError>;
    /// Leaves `start..end`, in order (the caller bounds the range).
    async fn log_entries(&self, start: u64, end: u64) -> Result<Vec<LogEntry>, StoreError>;
    /// Appends a leaf for every submission and decision stored without one
    /// (before the log existed), oldest first, marked as backfilled.
    /// Returns how many were appended.
    async fn backfill_log(&self) -> Result<u64, StoreError>;
    /// The newest published checkpoint: (size, signed note).
    async fn latest_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError>;
    /// Publishes a checkpoint unless one of that size or larger is.
    async fn publish_checkpoint(
        &self,
        size: u64,
        signed: &str,
        at: &str,
    ) -> Result<bool, StoreError>;
}

pub(super) fn hex_hash(h: &Hash) -> String {
    hex::encode(h.0)
}

pub(super) fn parse_hash(s: &str) -> Result<Hash, StoreError> {
    let bytes =
        hex::decode(s).map_err(|e| StoreError::Other(anyhow::anyhow!("stored hash: {e}")))?;
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| StoreError::Other(anyhow::anyhow!("stored hash is not 32 bytes")))?;
    Ok(Hash(arr))
}

/// `$1, $2, … $n`
pub(crate) fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A submission's leaf.
pub(super) fn submission_leaf(
    id: &str,
    bundle_sha256: &str,
    content_sha256: &str,
    key_fingerprint: &str,
    received_at: &str,
    status: &str,
) -> Vec<u8> {
    wattcounts_rules::tlog::Leaf::Submission {
        bundle_sha256: bundle_sha256.into(),
        content_sha256: content_sha256.into(),
        key_fingerprint: key_fingerprint.into(),
        received_at: received_at.into(),
        status: status.into(),
        submission_id: id.into(),
    }
    .canonical()
}

/// What a moderation event row says, as a leaf.
pub(super) struct EventLeaf<'a> {
    pub(super) action: &'a str,
    pub(super) actor: &'a str,
    pub(super) at: &'a str,
    pub(super) submission_id: Option<&'a str>,
    pub(super) handle: Option<&'a str>,
    pub(super) fingerprint: Option<&'a str>,
    pub(super) from: Option<&'a str>,
    pub(super) to: Option<&'a str>,
    pub(super) effective_at: Option<&'a str>,
    pub(super) reason: &'a str,
}

impl EventLeaf<'_> {
    pub(super) fn canonical(&self) -> Vec<u8> {
        wattcounts_rules::tlog::Leaf::Decision {
            action: self.action.into(),
            actor: self.actor.into(),
            at: self.at.into(),
            effective_at: self.effective_at.unwrap_or_default().into(),
            from_status: self.from.unwrap_or_default().into(),
            reason: self.reason.into(),
            subject: self
                .submission_id
                .or(self.fingerprint)
                .or(self.handle)
                .unwrap_or_default()
                .into(),
            to_status: self.to.unwrap_or_default().into(),
        }
        .canonical()
    }
}

/// Helpers that run inside a backend's write transactions, and the
/// `LogStore` implementation. `$store` provides `LOCK_LOG`.
macro_rules! log_store {
    ($store:ty, $row:ty, $conn:ty) => {
        /// Reads stored hashes inside a transaction.
        async fn log_hashes_in(
            tx: &mut $conn,
            indexes: &[u64],
        ) -> Result<Vec<::wattcounts_rules::tlog::Hash>, StoreError> {
            use $crate::tlog::{parse_hash, placeholders};
            if indexes.is_empty() {
                return Ok(Vec::new());
            }
            let sql = format!(
                "SELECT idx, hash FROM log_hashes WHERE idx IN ({})",
                placeholders(indexes.len())
            );
            let mut q = sqlx::query(&sql);
            for i in indexes {
                q = q.bind(*i as i64);
            }
            let rows = q.fetch_all(&mut *tx).await.map_err(db_err)?;
            let mut found = std::collections::HashMap::with_capacity(rows.len());
            for r in &rows {
                found.insert(r.get::<i64, _>("idx") as u64, parse_hash(&r.get::<String, _>("hash"))?);
            }
            indexes
                .iter()
                .map(|i| {
                    found.get(i).copied().ok_or_else(|| {
                        StoreError::Other(anyhow::anyhow!("the log has no stored hash {i}"))
                    })
                })
                .collect()
        }

        /// Runs a tree operation over the stored hashes it needs, read
        /// inside the transaction (see `tlog::hashes_needed`).
        async fn tree_op_in<T>(
            tx: &mut $conn,
            f: impl Fn(&dyn ::wattcounts_rules::tlog::DynReader) -> Result<T, tlog_tiles::Error> + Send,
        ) -> Result<T, StoreError> {
            let need = ::wattcounts_rules::tlog::hashes_needed(&f);
            let fetched = ::wattcounts_rules::tlog::Fetched(need.iter().copied().zip(log_hashes_in(tx, &need).await?).collect());
            f(&fetched).map_err(|e| StoreError::Other(anyhow::anyhow!("transparency log: {e}")))
        }

        /// Appends leaves at the end of the log and records each row's
        /// index; returns the first one's (0 when there are none). Called
        /// last in a write transaction: the log lock is the last lock it
        /// takes.
        async fn append_leaves(
            tx: &mut $conn,
            leaves: &[($crate::tlog::LogTarget, Vec<u8>)],
            backfilled: bool,
        ) -> Result<u64, StoreError> {
            use $crate::tlog::{hex_hash, LogTarget};
            if leaves.is_empty() {
                return Ok(0);
            }
            if let Some(lock) = <$store>::DIALECT.lock_log {
                sqlx::query(lock).execute(&mut *tx).await.map_err(db_err)?;
            }
            let mut n: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries")
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
            let first = n as u64;
            for (target, leaf) in leaves {
                let size = n as u64;
                let hashes = tree_op_in(tx, |r| tlog_tiles::stored_hashes(size, leaf, &r)).await?;
                let text = std::str::from_utf8(leaf)
                    .map_err(|e| StoreError::Other(anyhow::anyhow!("leaf: {e}")))?;
                sqlx::query("INSERT INTO log_entries (idx, leaf, backfilled) VALUES ($1, $2, $3)")
                    .bind(n)
                    .bind(text)
                    .bind(backfilled)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                let start = tlog_tiles::stored_hash_index(0, size);
                for (i, h) in hashes.iter().enumerate() {
                    sqlx::query("INSERT INTO log_hashes (idx, hash) VALUES ($1, $2)")
                        .bind((start + i as u64) as i64)
                        .bind(hex_hash(h))
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                let set = match target {
                    LogTarget::Submission(id) => sqlx::query("UPDATE submissions SET log_index = $1 WHERE id = $2")
                        .bind(n)
                        .bind(id.clone()),
                    LogTarget::Event(id) => sqlx::query("UPDATE moderation_events SET log_index = $1 WHERE id = $2")
                        .bind(n)
                        .bind(*id),
                    LogTarget::PeerRelease(id) => sqlx::query("UPDATE peer_releases SET log_index = $1 WHERE id = $2")
                        .bind(n)
                        .bind(*id),
                };
                set.execute(&mut *tx).await.map_err(db_err)?;
                n += 1;
            }
            Ok(first)
        }

        #[async_trait]
        impl $crate::tlog::LogStore for $store {
            async fn log_key(&self) -> Result<Option<(String, String)>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "log_key", async move {
                    let row: Option<$crate::tlog::StoredLogHead> =
                        sqlx::query_as("SELECT origin, verifier_key FROM log_head WHERE id = 1")
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(db_err)?;
                    Ok(match row {
                        Some($crate::tlog::StoredLogHead { origin: Some(o), verifier_key: Some(k) }) => Some((o, k)),
                        _ => None,
                    })
                }).await
            }

            async fn claim_log_key(&self, origin: &str, verifier_key: &str) -> Result<(String, String), StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "claim_log_key", async move {
                    sqlx::query("UPDATE log_head SET origin = $1, verifier_key = $2 WHERE id = 1 AND verifier_key IS NULL")
                        .bind(origin)
                        .bind(verifier_key)
                        .execute(&self.pool)
                        .await
                        .map_err(db_err)?;
                    self.log_key()
                        .await?
                        .ok_or_else(|| StoreError::Other(anyhow::anyhow!("the log head row is missing")))
                }).await
            }

            async fn log_size(&self) -> Result<u64, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "log_size", async move {
                    let size: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries")
                        .fetch_one(&self.pool)
                        .await
                        .map_err(db_err)?;
                    Ok(size as u64)
                }).await
            }

            async fn log_stats(&self) -> Result<$crate::tlog::LogStats, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "log_stats", async move {
                    let size = self.log_size().await?;
                    // Reads the partial index of backfilled leaves only.
                    let $crate::tlog::BackfilledRange { backfilled_leaves: count, first_index: first, last_index: last } = sqlx::query_as(
                        "SELECT COUNT(*) AS backfilled_leaves, MIN(idx) AS first_index, MAX(idx) AS last_index FROM log_entries WHERE backfilled",
                    )
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                    Ok($crate::tlog::LogStats {
                        size,
                        backfilled: count as u64,
                        backfilled_first: first.map(|v| v as u64),
                        backfilled_last: last.map(|v| v as u64),
                    })
                }).await
            }

            async fn log_hashes(&self, indexes: &[u64]) -> Result<Vec<::wattcounts_rules::tlog::Hash>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "log_hashes", async move {
                    let mut conn = self.pool.acquire().await.map_err(db_err)?;
                    log_hashes_in(&mut conn, indexes).await
                }).await
            }

            async fn log_entries(&self, start: u64, end: u64) -> Result<Vec<$crate::tlog::LogEntry>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "log_entries", async move {
                    let rows = sqlx::query("SELECT idx, leaf, backfilled FROM log_entries WHERE idx >= $1 AND idx < $2 ORDER BY idx")
                        .bind(start as i64)
                        .bind(end as i64)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?;
                    Ok(rows
                        .iter()
                        .map(|r| $crate::tlog::LogEntry {
                            index: r.get::<i64, _>("idx") as u64,
                            leaf: r.get("leaf"),
                            backfilled: r.get("backfilled"),
                        })
                        .collect())
                }).await
            }

            async fn backfill_log(&self) -> Result<u64, StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "backfill_log", async move {
                    use $crate::tlog::{submission_leaf, EventLeaf, LogTarget};
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    // Both lists read partial indexes that hold only unlogged rows.
                    let subs: Vec<$crate::tlog::UnloggedSubmission> = sqlx::query_as(
                        "SELECT s.id, s.bundle_sha256, s.content_sha256, k.fingerprint, s.received_at, s.status
                         FROM submissions s JOIN keys k ON k.id = s.key_id
                         WHERE s.log_index IS NULL ORDER BY s.received_at, s.id",
                    )
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    let events: Vec<$crate::tlog::UnloggedEvent> =
                        sqlx::query_as(
                            "SELECT id, created_at, actor, action, submission_id, submitter_handle, key_fingerprint, from_status,
                                to_status, effective_at, reason
                             FROM moderation_events WHERE log_index IS NULL ORDER BY created_at, id",
                        )
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    if subs.is_empty() && events.is_empty() {
                        return Ok(0);
                    }
                    // A submission's status when it was stored: what its first
                    // decision moved it from, else what it is now.
                    let mut first_from: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
                    for e in &events {
                        if let (Some(s), Some(f)) = (e.submission_id.as_deref(), e.from_status.as_deref()) {
                            first_from.entry(s).or_insert(f);
                        }
                    }
                    // Oldest first, submissions before decisions made at the same instant.
                    let mut order: Vec<(&str, u8, usize)> = subs
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (s.received_at.as_str(), 0u8, i))
                        .chain(events.iter().enumerate().map(|(i, e)| (e.created_at.as_str(), 1u8, i)))
                        .collect();
                    order.sort();
                    let mut leaves = Vec::with_capacity(order.len());
                    for (_, kind, i) in order {
                        if kind == 0 {
                            let s = &subs[i];
                            let status = first_from.get(s.id.as_str()).copied().unwrap_or(s.status.as_str());
                            let leaf = submission_leaf(
                                &s.id,
                                &s.bundle_sha256,
                                s.content_sha256.as_deref().unwrap_or_default(),
                                &s.fingerprint,
                                &s.received_at,
                                status,
                            );
                            leaves.push((LogTarget::Submission(s.id.clone()), leaf));
                        } else {
                            let e = &events[i];
                            let leaf = EventLeaf {
                                action: &e.action,
                                actor: &e.actor,
                                at: &e.created_at,
                                submission_id: e.submission_id.as_deref(),
                                handle: e.submitter_handle.as_deref(),
                                fingerprint: e.key_fingerprint.as_deref(),
                                from: e.from_status.as_deref(),
                                to: e.to_status.as_deref(),
                                effective_at: e.effective_at.as_deref(),
                                reason: &e.reason,
                            }
                            .canonical();
                            leaves.push((LogTarget::Event(e.id), leaf));
                        }
                    }
                    append_leaves(&mut tx, &leaves, true).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(leaves.len() as u64)
                }).await
            }

            async fn latest_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "latest_checkpoint", async move {
                    let row: Option<$crate::tlog::StoredCheckpoint> =
                        sqlx::query_as("SELECT size, signed FROM log_checkpoints ORDER BY size DESC LIMIT 1")
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(db_err)?;
                    Ok(row.map(|c| (c.size as u64, c.signed)))
                }).await
            }

            async fn publish_checkpoint(&self, size: u64, signed: &str, at: &str) -> Result<bool, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "publish_checkpoint", async move {
                    // A write transaction as ingest's (BEGIN IMMEDIATE on
                    // SQLite): it queues behind the writers instead of
                    // failing "database is locked" when it would upgrade.
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let r = sqlx::query(
                        "INSERT INTO log_checkpoints (size, signed, published_at)
                         SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM log_checkpoints WHERE size >= $1)
                         ON CONFLICT (size) DO NOTHING",
                    )
                    .bind(size as i64)
                    .bind(signed)
                    .bind(at)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    $crate::crash_points::reach($crate::crash_points::CrashPoint::DuringCheckpointWrite);
                    tx.commit().await.map_err(db_err)?;
                    Ok(r.rows_affected() > 0)
                }).await
            }
        }
    };
}
pub(super) use log_store;

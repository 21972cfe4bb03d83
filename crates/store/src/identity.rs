//! Who submits and who moderates: submitters with their keys and handles
//! (and the confusable skeleton that keeps handles apart), and the
//! maintainers' admin sessions.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::StoreError;

/// A submitter's row id and handle, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct SubmitterHandle {
    pub id: i64,
    pub handle: String,
}

/// An admin session as its update returns it, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredSession {
    pub maintainer: String,
    pub token_sha256: String,
    pub created_at: String,
    pub expires_at: String,
    pub last_used_at: String,
}
use wattcounts_rules::domain::Status;

#[derive(Debug, Clone)]
pub struct NewSubmitter {
    pub handle: String,
    pub display_name: String,
    pub fingerprint: String,
    pub algorithm: String,
    pub public_key: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyRecord {
    pub key_id: i64,
    pub submitter_id: i64,
    pub handle: String,
    pub fingerprint: String,
    pub public_key: String,
    pub revoked_at: Option<DateTime<Utc>>,
    pub submitter_suspended_at: Option<DateTime<Utc>>,
}

/// A signed-in maintainer of the admin pages, as the database keeps it
/// (the session id itself is never stored, only its SHA-256).
#[derive(Debug, Clone, PartialEq)]
pub struct AdminSessionRow {
    pub id_sha256: String,
    pub maintainer: String,
    pub token_sha256: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_used_at: DateTime<Utc>,
}

#[async_trait]
pub trait Identity: Send + Sync {
    async fn create_admin_session(&self, row: &AdminSessionRow) -> Result<(), StoreError>;
    /// The session with this id hash, if it has not expired at `now` nor
    /// been idle since `idle_before`; its last use becomes `now`.
    async fn use_admin_session(
        &self,
        id_sha256: &str,
        now: &DateTime<Utc>,
        idle_before: &DateTime<Utc>,
    ) -> Result<Option<AdminSessionRow>, StoreError>;
    /// Ends one session; false if there was none.
    async fn end_admin_session(&self, id_sha256: &str) -> Result<bool, StoreError>;
    /// Drops sessions expired at `now` or idle since `idle_before`.
    async fn forget_admin_sessions(
        &self,
        now: &DateTime<Utc>,
        idle_before: &DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError>;
    async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError>;
    /// The registered handle with this confusable skeleton
    /// ([`wattcounts_rules::handles::skeleton`]), if any.
    async fn handle_by_skeleton(&self, skeleton: &str) -> Result<Option<String>, StoreError>;
    /// Every registered handle, oldest first (maintainer audits; small table).
    async fn handles(&self) -> Result<Vec<String>, StoreError>;
    /// Every registered key, oldest first (maintainer audits; small table).
    async fn keys(&self) -> Result<Vec<KeyRecord>, StoreError>;
    /// The submissions signed with a key, oldest first, with their status.
    async fn submissions_of_key(&self, key_id: i64) -> Result<Vec<(Uuid, Status)>, StoreError>;
}

pub(crate) const KEY_SELECT: &str =
    "SELECT k.id AS key_id, k.submitter_id, s.handle, k.fingerprint, k.public_key, k.revoked_at,
            s.suspended_at AS submitter_suspended_at
     FROM keys k JOIN submitters s ON s.id = k.submitter_id";

/// Implements [`Identity`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! identity_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        fn key_record(r: &$row) -> Result<KeyRecord, StoreError> {
            Ok(KeyRecord {
                key_id: r.get("key_id"),
                submitter_id: r.get("submitter_id"),
                handle: r.get("handle"),
                fingerprint: r.get("fingerprint"),
                public_key: r.get("public_key"),
                revoked_at: opt_ts(r.get("revoked_at"))?,
                submitter_suspended_at: opt_ts(r.get("submitter_suspended_at"))?,
            })
        }

        impl $store {
            /// Gives handles registered before skeletons were kept theirs,
            /// oldest first; a handle whose skeleton an older one holds
            /// keeps none (the collision listing names it). A no-op once
            /// every row has one: one indexed read.
            async fn fill_handle_skeletons(&self) -> Result<u64, StoreError> {
                let rows: Vec<$crate::identity::SubmitterHandle> = sqlx::query_as(
                    "SELECT id, handle FROM submitters WHERE handle_skeleton IS NULL ORDER BY id",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                let mut filled = 0;
                for $crate::identity::SubmitterHandle { id, handle } in rows {
                    let skeleton = ::wattcounts_rules::handles::skeleton(&handle);
                    let res = sqlx::query(
                        "UPDATE submitters SET handle_skeleton = $1 WHERE id = $2
                           AND NOT EXISTS (SELECT 1 FROM submitters WHERE handle_skeleton = $1)",
                    )
                    .bind(&skeleton)
                    .bind(id)
                    .execute(&self.pool)
                    .await;
                    match res {
                        Ok(r) => filled += r.rows_affected(),
                        // Another instance filled the same skeleton first.
                        Err(e) if unique_violation(&e).is_some() => {}
                        Err(e) => return Err(db_err(e)),
                    }
                }
                Ok(filled)
            }
        }

        #[async_trait]
        impl $crate::identity::Identity for $store {
            async fn create_admin_session(&self, row: &$crate::AdminSessionRow) -> Result<(), StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "create_admin_session", async move {
                    sqlx::query(
                        "INSERT INTO admin_sessions (id_sha256, maintainer, token_sha256, created_at, expires_at, last_used_at)
                         VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(&row.id_sha256)
                    .bind(&row.maintainer)
                    .bind(&row.token_sha256)
                    .bind(ts(&row.created_at))
                    .bind(ts(&row.expires_at))
                    .bind(ts(&row.last_used_at))
                    .execute(&self.pool)
                    .await
                    .map(|_| ())
                    .map_err(db_err)
                }).await
            }

            async fn use_admin_session(
                &self,
                id_sha256: &str,
                now: &DateTime<Utc>,
                idle_before: &DateTime<Utc>,
            ) -> Result<Option<$crate::AdminSessionRow>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "use_admin_session", async move {
                    let row: Option<$crate::identity::StoredSession> = sqlx::query_as(
                        "UPDATE admin_sessions SET last_used_at = $2
                         WHERE id_sha256 = $1 AND expires_at > $2 AND last_used_at > $3
                         RETURNING maintainer, token_sha256, created_at, expires_at, last_used_at",
                    )
                    .bind(id_sha256)
                    .bind(ts(now))
                    .bind(ts(idle_before))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)?;
                    row.map(|r| {
                        Ok($crate::AdminSessionRow {
                            id_sha256: id_sha256.to_string(),
                            maintainer: r.maintainer,
                            token_sha256: r.token_sha256,
                            created_at: parse_ts(&r.created_at)?,
                            expires_at: parse_ts(&r.expires_at)?,
                            last_used_at: parse_ts(&r.last_used_at)?,
                        })
                    })
                    .transpose()
                }).await
            }

            async fn end_admin_session(&self, id_sha256: &str) -> Result<bool, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "end_admin_session", async move {
                    sqlx::query("DELETE FROM admin_sessions WHERE id_sha256 = $1")
                        .bind(id_sha256)
                        .execute(&self.pool)
                        .await
                        .map(|r| r.rows_affected() > 0)
                        .map_err(db_err)
                }).await
            }

            async fn forget_admin_sessions(
                &self,
                now: &DateTime<Utc>,
                idle_before: &DateTime<Utc>,
            ) -> Result<u64, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "forget_admin_sessions", async move {
                    sqlx::query("DELETE FROM admin_sessions WHERE expires_at <= $1 OR last_used_at <= $2")
                        .bind(ts(now))
                        .bind(ts(idle_before))
                        .execute(&self.pool)
                        .await
                        .map(|r| r.rows_affected())
                        .map_err(db_err)
                }).await
            }

            async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "create_submitter", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let now = ts(&chrono::Utc::now());
                    let res = sqlx::query_scalar::<_, i64>("INSERT INTO submitters (handle, handle_lower, handle_skeleton, display_name, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id")
                        .bind(&s.handle)
                        .bind(s.handle.to_ascii_lowercase())
                        .bind(::wattcounts_rules::handles::skeleton(&s.handle))
                        .bind(&s.display_name)
                        .bind(&now)
                        .fetch_one(&mut *tx)
                        .await;
                    let submitter_id = match res {
                        Ok(id) => id,
                        Err(e) if unique_violation(&e).is_some() => return Err(StoreError::Conflict("handle")),
                        Err(e) => return Err(db_err(e)),
                    };
                    let res = sqlx::query("INSERT INTO keys (submitter_id, fingerprint, algorithm, public_key, created_at) VALUES ($1, $2, $3, $4, $5)")
                        .bind(submitter_id)
                        .bind(&s.fingerprint)
                        .bind(&s.algorithm)
                        .bind(&s.public_key)
                        .bind(&now)
                        .execute(&mut *tx)
                        .await;
                    match res {
                        Ok(_) => {}
                        Err(e) if unique_violation(&e).is_some() => return Err(StoreError::Conflict("key")),
                        Err(e) => return Err(db_err(e)),
                    }
                    tx.commit().await.map_err(db_err)?;
                    Ok(submitter_id)
                }).await
            }

            async fn handle_by_skeleton(&self, skeleton: &str) -> Result<Option<String>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "handle_by_skeleton", async move {
                    sqlx::query_scalar("SELECT handle FROM submitters WHERE handle_skeleton = $1")
                        .bind(skeleton)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_err)
                }).await
            }

            async fn handles(&self) -> Result<Vec<String>, StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "handles", async move {
                    sqlx::query_scalar("SELECT handle FROM submitters ORDER BY id")
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)
                }).await
            }

            async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "key_by_fingerprint", async move {
                    let row = sqlx::query(&format!("{KEY_SELECT} WHERE k.fingerprint = $1"))
                        .bind(fingerprint)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_err)?;
                    row.as_ref().map(key_record).transpose()
                }).await
            }

            async fn keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "keys", async move {
                    let rows = sqlx::query(&format!("{KEY_SELECT} ORDER BY k.id"))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?;
                    rows.iter().map(key_record).collect()
                }).await
            }

            async fn submissions_of_key(&self, key_id: i64) -> Result<Vec<(Uuid, Status)>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submissions_of_key", async move {
                    let rows: Vec<$crate::sql::IdStatus> = sqlx::query_as(
                        "SELECT id, status FROM submissions WHERE key_id = $1 ORDER BY received_at",
                    )
                    .bind(key_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.into_iter()
                        .map(|r| {
                            Ok((
                                Uuid::parse_str(&r.id).map_err(|e| StoreError::Other(e.into()))?,
                                parse_status(&r.status)?,
                            ))
                        })
                        .collect()
                }).await
            }
        }
    };
}
pub(crate) use identity_sql;

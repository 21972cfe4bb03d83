//! What every aggregate's SQL shares. SQLite and PostgreSQL take the same
//! statements (`$N` parameters, `RETURNING`, `CAST(.. AS BIGINT)`), so each
//! aggregate (`intake`, `read_model`, `identity`, `moderation`, `snapshots`,
//! `estimator_fits`, `limits`, `tlog`) writes its statements once, in a
//! macro that each backend module instantiates; what differs between the
//! backends is in [`crate::dialect`], and every call passes the one door of
//! [`crate::calls`]. Here: bind values, error mapping, and the base of
//! `Store` (name, pool, ping).

use chrono::{DateTime, Utc};

use super::{parse_ts, Status, StoreError};

/// A bind value of a query assembled from filters.
pub(crate) enum Param {
    Text(String),
    Real(f64),
    Flag(bool),
    Int(i64),
}

/// Whether a connection may go back to the pool: only outside any
/// transaction. A write that failed mid-transaction (a full disk, an I/O
/// error) can leave SQLite to roll the transaction back itself; the
/// ROLLBACK sqlx then queues fails ("no transaction is active"), and its
/// count of open transactions stays at 1, so the next borrower's `BEGIN
/// IMMEDIATE` would fail ("begin_with at non-zero transaction depth", a
/// 500). A connection counted outside any transaction (every committed
/// one) goes back as it is; otherwise a ping first runs what the dropped
/// transaction queued, and a connection still counted inside a
/// transaction is closed, and the pool opens a fresh one.
pub(crate) async fn clean_for_reuse<C: sqlx::Connection>(
    conn: &mut C,
) -> Result<bool, sqlx::Error> {
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    conn.ping().await?;
    let clean = !conn.is_in_transaction();
    if !clean {
        tracing::warn!("a database connection came back inside a transaction after a failed write; closed it rather than pool it");
    }
    Ok(clean)
}

/// A submission's id and status, read by column name (several aggregates
/// list submissions so).
#[derive(sqlx::FromRow)]
pub(crate) struct IdStatus {
    pub id: String,
    pub status: String,
}

/// A configuration's row id and its derived metrics as stored JSON.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredMetrics {
    pub id: i64,
    pub metrics: String,
}

/// Errors that mean "the database is not answering" become `Unavailable`
/// (503 at the edge); the rest are internal errors.
pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    let unavailable = match &e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::Io(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        // PostgreSQL: connection exceptions (08...), shutdown and
        // cancellation on timeout (57...).
        // A full disk: SQLite's SQLITE_FULL (13), PostgreSQL's
        // disk_full (53100). The database answers again once space is
        // freed; nothing of the failed transaction was kept.
        sqlx::Error::Database(d) => d.code().is_some_and(|c| {
            c.starts_with("08") || c.starts_with("57") || c == "13" || c == "53100"
        }),
        _ => false,
    };
    if unavailable {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Other(e.into())
    }
}

/// The unique constraint an error broke, if any: SQLite names the columns
/// ("submissions.bundle_sha256"), PostgreSQL the constraint
/// ("submissions_bundle_sha256_key"); callers match on the column name.
pub(crate) fn unique_violation(e: &sqlx::Error) -> Option<String> {
    let db = e.as_database_error()?;
    if !db.is_unique_violation() {
        return None;
    }
    Some(match db.constraint() {
        Some(c) => c.to_string(),
        None => db.message().to_string(),
    })
}

pub(crate) fn opt_ts(s: Option<String>) -> Result<Option<DateTime<Utc>>, StoreError> {
    s.as_deref().map(parse_ts).transpose()
}

pub(crate) fn parse_status(text: &str) -> Result<Status, StoreError> {
    Status::parse(text).ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad status {text}")))
}

pub(crate) fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Other(e.into())
}

/// Binds [`Param`]s in order to a query of any kind.
macro_rules! bind_all {
    ($query:expr, $params:expr) => {{
        let mut query = $query;
        for p in $params {
            query = match p {
                Param::Text(t) => query.bind(t.clone()),
                Param::Real(v) => query.bind(*v),
                Param::Flag(b) => query.bind(*b),
                Param::Int(n) => query.bind(*n),
            };
        }
        query
    }};
}
pub(crate) use bind_all;

/// Implements the base of [`crate::Store`] for a backend module; the
/// aggregates are implemented by their own macros.
macro_rules! store_base {
    ($store:ty) => {
        #[async_trait]
        impl $crate::Store for $store {
            fn backend(&self) -> &'static str {
                <$store>::DIALECT.name
            }

            fn pool_stats(&self) -> (u32, u32) {
                let idle = self.pool.num_idle() as u32;
                (self.pool.size().saturating_sub(idle), idle)
            }

            async fn ping(&self) -> Result<(), StoreError> {
                self.calls
                    .run($crate::calls::CallKind::Request, "ping", async move {
                        sqlx::query("SELECT 1")
                            .execute(&self.pool)
                            .await
                            .map_err(db_err)?;
                        Ok(())
                    })
                    .await
            }
        }
    };
}
pub(crate) use store_base;

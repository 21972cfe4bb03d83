//! Rate-limit counters: one fixed window per bucket, kept in the database
//! so that every instance on it counts together.

use async_trait::async_trait;

use crate::StoreError;

#[async_trait]
pub trait Limits: Send + Sync {
    /// Counts one hit in `bucket`'s fixed window starting at `window_start`
    /// (unix seconds) and returns the hits in that window, this one
    /// included. A bucket whose stored window is older starts again at 1.
    async fn count_hit(&self, bucket: &str, window_start: i64) -> Result<i64, StoreError>;
    /// Drops counters of windows that started before `before`.
    async fn forget_hits(&self, before: i64) -> Result<u64, StoreError>;
}

/// Implements [`Limits`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! limits_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        #[async_trait]
        impl $crate::limits::Limits for $store {
            async fn count_hit(&self, bucket: &str, window_start: i64) -> Result<i64, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "count_hit", async move {
                    // One statement: atomic on both backends, and no write lock
                    // of ours held (the submission writer is not delayed).
                    sqlx::query_scalar(
                        "INSERT INTO rate_counters (bucket, window_start, hits) VALUES ($1, $2, 1)
                         ON CONFLICT (bucket) DO UPDATE SET
                            hits = CASE WHEN rate_counters.window_start = excluded.window_start
                                        THEN rate_counters.hits + 1 ELSE 1 END,
                            window_start = excluded.window_start
                         RETURNING hits",
                    )
                    .bind(bucket)
                    .bind(window_start)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)
                }).await
            }

            async fn forget_hits(&self, before: i64) -> Result<u64, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "forget_hits", async move {
                    sqlx::query("DELETE FROM rate_counters WHERE window_start < $1")
                        .bind(before)
                        .execute(&self.pool)
                        .await
                        .map(|r| r.rows_affected())
                        .map_err(db_err)
                }).await
            }
        }
    };
}
pub(crate) use limits_sql;

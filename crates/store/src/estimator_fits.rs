//! Stored estimator fits, one row per fit version, the newest few kept
//! (see `migrations/*/0011_estimator_fits.sql`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::StoreError;

/// An `estimator_fits` row as stored, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredFitRow {
    pub version: String,
    pub data_stamp: String,
    pub origin: String,
    pub protocol: String,
    pub fitted_at: String,
    pub body: String,
}

/// A stored estimator fit: its version, where its rows came from, and the
/// whole fit as JSON (`wattcounts_analytics::estimator::trained::StoredFit`).
#[derive(Debug, Clone, PartialEq)]
pub struct EstimatorFitRow {
    pub version: String,
    pub data_stamp: String,
    pub origin: String,
    pub protocol: String,
    pub fitted_at: DateTime<Utc>,
    pub body: String,
}

#[async_trait]
pub trait EstimatorFits: Send + Sync {
    /// Stores a fit under its version (a version already stored is left
    /// as it is: the same version is the same fit) and keeps only the
    /// newest `keep` fits.
    async fn put_estimator_fit(&self, row: &EstimatorFitRow, keep: u32) -> Result<(), StoreError>;
    /// The stored fit of this version, if any.
    async fn estimator_fit(&self, version: &str) -> Result<Option<EstimatorFitRow>, StoreError>;
}

/// Implements [`EstimatorFits`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! estimator_fits_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        #[async_trait]
        impl $crate::estimator_fits::EstimatorFits for $store {
            async fn put_estimator_fit(
                &self,
                row: &$crate::EstimatorFitRow,
                keep: u32,
            ) -> Result<(), StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "put_estimator_fit", async move {
                    let mut tx = self.pool.begin().await.map_err(db_err)?;
                    sqlx::query(
                        "INSERT INTO estimator_fits (version, data_stamp, origin, protocol, fitted_at, body)
                         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING",
                    )
                    .bind(&row.version)
                    .bind(&row.data_stamp)
                    .bind(&row.origin)
                    .bind(&row.protocol)
                    .bind(ts(&row.fitted_at))
                    .bind(&row.body)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    sqlx::query(
                        "DELETE FROM estimator_fits WHERE version NOT IN
                         (SELECT version FROM estimator_fits ORDER BY fitted_at DESC, version LIMIT $1)",
                    )
                    .bind(i64::from(keep.max(1)))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    tx.commit().await.map_err(db_err)
                }).await
            }

            async fn estimator_fit(
                &self,
                version: &str,
            ) -> Result<Option<$crate::EstimatorFitRow>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "estimator_fit", async move {
                    let row: Option<$crate::estimator_fits::StoredFitRow> = sqlx::query_as(
                        "SELECT version, data_stamp, origin, protocol, fitted_at, body
                         FROM estimator_fits WHERE version = $1",
                    )
                    .bind(version)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)?;
                    row.map(|$crate::estimator_fits::StoredFitRow { version, data_stamp, origin, protocol, fitted_at, body }| {
                        Ok($crate::EstimatorFitRow {
                            version,
                            data_stamp,
                            origin,
                            protocol,
                            fitted_at: parse_ts(&fitted_at)?,
                            body,
                        })
                    })
                    .transpose()
                }).await
            }
        }
    };
}
pub(crate) use estimator_fits_sql;

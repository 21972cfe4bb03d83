//! Whether this instance can serve: the database, the blob store and the
//! free space it needs; the pool's figures for the metrics.

use crate::{Service, ServiceError};

impl Service {
    pub fn backend(&self) -> &'static str {
        self.store.backend()
    }
    pub async fn ping(&self) -> Result<(), ServiceError> {
        self.store.ping().await.map_err(ServiceError::from)
    }

    /// Whether this instance can serve: the database answers and the blob
    /// store's folder can be written (a probe file made and removed).
    /// Says what is not ready.
    pub async fn ready(&self) -> Result<(), String> {
        self.store
            .ping()
            .await
            .map_err(|e| format!("database: {e}"))?;
        self.blobs()
            .probe()
            .await
            .map_err(|e| format!("blob store ({}): {e}", self.blobs().objects().describe()))?;
        let floor = self.admission.limits().free_floor_bytes;
        if floor > 0 {
            let free = self
                .blobs()
                .free_bytes()
                .map_err(|e| format!("data dir: its free space cannot be read: {e}"))?;
            if free < floor {
                return Err(format!(
                    "data dir: {free} bytes free, under the floor of {floor} (--min-free-disk-bytes)"
                ));
            }
        }
        Ok(())
    }

    /// Connections of the database pool: (in use, idle).
    pub fn pool_stats(&self) -> (u32, u32) {
        self.store.pool_stats()
    }
}

//! The transparency log as the service runs it: the log's signing key,
//! signed checkpoints, proofs, tiles and receipts' log part, over the
//! hashes the store keeps. Every read asks the store for exactly the
//! stored hashes it needs (a dry run names them: see
//! [`wattcounts_rules::tlog::hashes_needed`]), so a proof at a million leaves reads
//! about 20 rows, never the tree.

use crate::error::ServiceError;
use std::sync::Arc;

use base64::prelude::{Engine, BASE64_STANDARD};
use serde::Serialize;

use wattcounts_rules::receipt::ReceiptLog;
use wattcounts_rules::tlog::checkpoint::{format_proof, LogKey};
use wattcounts_rules::tlog::tiles::{self, TilePath};
use wattcounts_rules::tlog::{hashes_needed, leaf_hash, DynReader, Fetched, Hash};
use wattcounts_store::tlog::{LogEntry, LogStats};
use wattcounts_store::Store;

/// Most leaves one entries request returns.
pub const MAX_ENTRIES: u64 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum TlogError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    /// Another key signs this log (several instances must share one).
    #[error("{0}")]
    KeyMismatch(String),
    #[error(transparent)]
    Store(#[from] ServiceError),
    #[error("{0}")]
    Internal(String),
}

crate::error::store_error_into!(TlogError);

fn internal(e: impl std::fmt::Display) -> TlogError {
    TlogError::Internal(format!("transparency log: {e}"))
}

pub struct Tlog {
    store: Arc<dyn Store>,
    key: Option<Arc<LogKey>>,
    /// Set once this key is known to be the log's (recorded or matched).
    claimed: tokio::sync::OnceCell<()>,
}

/// A consistency proof between two tree sizes.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConsistencyProof {
    pub from: u64,
    pub to: u64,
    /// Base64 hashes, RFC 6962 order.
    pub hashes: Vec<String>,
}

/// An inclusion proof of one leaf against a signed checkpoint.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct InclusionProof {
    pub index: u64,
    pub tree_size: u64,
    pub leaf: String,
    pub leaf_hash: String,
    pub hashes: Vec<String>,
    /// The checkpoint of `tree_size`, as a signed note.
    pub checkpoint: String,
    /// The same in the c2sp.org/tlog-proof shape.
    pub proof: String,
}

pub fn b64(h: &Hash) -> String {
    BASE64_STANDARD.encode(h.0)
}

impl Tlog {
    pub fn new(store: Arc<dyn Store>, key: Option<LogKey>) -> Self {
        Tlog {
            store,
            key: key.map(Arc::new),
            claimed: tokio::sync::OnceCell::new(),
        }
    }

    fn key(&self) -> Result<&LogKey, TlogError> {
        self.key
            .as_deref()
            .ok_or_else(|| internal("this tool runs without the log's key"))
    }

    /// The key itself, for a snapshot to sign its checkpoint with.
    pub fn key_arc(&self) -> Option<Arc<LogKey>> {
        self.key.clone()
    }

    pub fn verifier_key(&self) -> Option<&str> {
        self.key.as_deref().map(LogKey::verifier_key)
    }
    pub fn origin(&self) -> Option<&str> {
        self.key.as_deref().map(LogKey::origin)
    }

    /// Records this key as the log's, or checks that it is the one
    /// recorded: an instance with another key must not sign for the log.
    pub async fn claim(&self) -> Result<(), TlogError> {
        let key = self.key()?;
        self.claimed
            .get_or_try_init(|| async {
                let (origin, recorded) = self
                    .store
                    .claim_log_key(key.origin(), key.verifier_key())
                    .await?;
                if recorded != key.verifier_key() {
                    return Err(TlogError::KeyMismatch(format!(
                        "this instance's log key ({}) is not the key the database records for the log \
                         '{origin}' ({recorded}): every instance on one database must sign with the same \
                         key (--log-key-file)",
                        key.verifier_key()
                    )));
                }
                Ok(())
            })
            .await?;
        Ok(())
    }

    /// Runs `f` over the stored hashes it needs (one query).
    async fn with_hashes<T>(
        &self,
        f: impl Fn(&dyn DynReader) -> Result<T, tlog_tiles::Error>,
    ) -> Result<T, TlogError> {
        let need = hashes_needed(&f);
        let got = self.store.log_hashes(&need).await?;
        let fetched = Fetched(need.into_iter().zip(got).collect());
        f(&fetched).map_err(internal)
    }

    /// Leaves in the log now.
    pub async fn size(&self) -> Result<u64, TlogError> {
        Ok(self.store.log_size().await?)
    }

    pub async fn stats(&self) -> Result<LogStats, TlogError> {
        Ok(self.store.log_stats().await?)
    }

    fn check_size(size: u64, current: u64) -> Result<(), TlogError> {
        if size > current {
            return Err(TlogError::Invalid(format!(
                "the log holds {current} leaves; there is no tree of size {size} yet"
            )));
        }
        Ok(())
    }

    /// The signed checkpoint of the tree of `size` leaves (Ed25519 is
    /// deterministic: the same size always gives the same bytes).
    pub async fn checkpoint(&self, size: u64) -> Result<Vec<u8>, TlogError> {
        self.claim().await?;
        let root = self
            .with_hashes(|r| tlog_tiles::tree_hash(size, &r))
            .await?;
        self.key()?.sign_checkpoint(size, root).map_err(internal)
    }

    /// Signs the log as it stands and publishes it unless a checkpoint of
    /// that size is published already. Returns the newest published one.
    pub async fn publish(&self) -> Result<(u64, String), TlogError> {
        let size = self.size().await?;
        let latest = self.store.latest_checkpoint().await?;
        if let Some((s, text)) = &latest {
            if *s >= size {
                return Ok((*s, text.clone()));
            }
        }
        let signed = String::from_utf8(self.checkpoint(size).await?).map_err(internal)?;
        let at = wattcounts_rules::timestamp::ts(&chrono::Utc::now());
        self.store.publish_checkpoint(size, &signed, &at).await?;
        Ok(self
            .store
            .latest_checkpoint()
            .await?
            .unwrap_or((size, signed)))
    }

    /// The newest published checkpoint (publishing one if none is).
    pub async fn latest(&self) -> Result<(u64, String), TlogError> {
        match self.store.latest_checkpoint().await? {
            Some(c) => Ok(c),
            None => self.publish().await,
        }
    }

    /// Leaf `index`'s inclusion in the tree of `size` leaves, with that
    /// tree's signed checkpoint.
    pub async fn inclusion(&self, index: u64, size: u64) -> Result<InclusionProof, TlogError> {
        let current = self.size().await?;
        Self::check_size(size, current)?;
        if index >= size {
            return Err(TlogError::Invalid(format!(
                "leaf {index} is not in the tree of size {size}"
            )));
        }
        self.proof_in(index, size).await
    }

    /// The proof of leaf `index` in the tree of `size` leaves, which the
    /// caller knows the log holds.
    async fn proof_in(&self, index: u64, size: u64) -> Result<InclusionProof, TlogError> {
        let leaf = self
            .store
            .log_entries(index, index + 1)
            .await?
            .pop()
            .ok_or_else(|| TlogError::NotFound(format!("the log has no leaf {index}")))?;
        self.claim().await?;
        // The proof and the root in one read of the stored hashes.
        let (proof, root) = self
            .with_hashes(|r| {
                Ok((
                    tlog_tiles::prove_record(size, index, &r)?,
                    tlog_tiles::tree_hash(size, &r)?,
                ))
            })
            .await?;
        let checkpoint = self.key()?.sign_checkpoint(size, root).map_err(internal)?;
        Ok(InclusionProof {
            index,
            tree_size: size,
            leaf_hash: b64(&leaf_hash(leaf.leaf.as_bytes())),
            hashes: proof.iter().map(b64).collect(),
            proof: String::from_utf8(format_proof(index, &proof, &checkpoint)).map_err(internal)?,
            checkpoint: String::from_utf8(checkpoint).map_err(internal)?,
            leaf: leaf.leaf,
        })
    }

    /// Proof that the tree of `from` leaves is a prefix of that of `to`.
    pub async fn consistency(&self, from: u64, to: u64) -> Result<ConsistencyProof, TlogError> {
        let current = self.size().await?;
        Self::check_size(to, current)?;
        if from > to {
            return Err(TlogError::Invalid(format!(
                "from ({from}) must not be larger than to ({to})"
            )));
        }
        let hashes = if from == 0 || from == to {
            Vec::new()
        } else {
            self.with_hashes(|r| tlog_tiles::prove_tree(to, from, &r))
                .await?
        };
        Ok(ConsistencyProof {
            from,
            to,
            hashes: hashes.iter().map(b64).collect(),
        })
    }

    /// Leaves `start..end` (at most [`MAX_ENTRIES`]).
    pub async fn entries(&self, start: u64, end: u64) -> Result<Vec<LogEntry>, TlogError> {
        if end < start || end - start > MAX_ENTRIES {
            return Err(TlogError::Invalid(format!(
                "ask for 1 to {MAX_ENTRIES} leaves at once (start {start}, end {end})"
            )));
        }
        Ok(self.store.log_entries(start, end).await?)
    }

    /// The bytes of a tlog-tiles path, if the log holds that tile.
    pub async fn tile(&self, path: &TilePath) -> Result<Option<Vec<u8>>, TlogError> {
        let size = self.size().await?;
        if !path.within(size) {
            return Ok(None);
        }
        match *path {
            TilePath::Hashes { level, n, width } => {
                let idx = TilePath::hash_indexes(level, n, width);
                let hashes = self.store.log_hashes(&idx).await?;
                Ok(Some(tiles::hash_tile(&hashes)))
            }
            TilePath::Entries { n, width } => {
                let start = n * tiles::WIDTH;
                let leaves = self
                    .store
                    .log_entries(start, start + u64::from(width))
                    .await?;
                let bytes = tiles::entry_bundle(leaves.iter().map(|l| l.leaf.as_bytes()))
                    .map_err(internal)?;
                Ok(Some(bytes))
            }
        }
    }

    /// A receipt's log part: the leaf at `index`, proved against the tree
    /// that ends with it, whose checkpoint is signed now and identically
    /// every later time (so a replayed upload gets the same receipt).
    pub async fn receipt_part(&self, index: u64) -> Result<ReceiptLog, TlogError> {
        // The tree that ends with a stored leaf exists once the leaf does
        // (leaves are only appended): no size to check against.
        let p = self.proof_in(index, index + 1).await?;
        Ok(ReceiptLog {
            index,
            tree_size: p.tree_size,
            leaf: p.leaf,
            leaf_hash: p.leaf_hash,
            proof: p.proof,
            verifier_key: self.key()?.verifier_key().to_string(),
        })
    }
}

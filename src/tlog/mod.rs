//! The transparency log's pure core (issue #15, first part): what a leaf
//! holds, as RFC 8785 canonical JSON, and the RFC 6962 / RFC 9162 tree over
//! the leaves, kept as the hashes the Go sumdb design stores (one record
//! hash per leaf plus the roots of the complete subtrees it closes), so a
//! root or proof reads O(log n) stored hashes and never the whole tree.
//! Hashing and proofs are the `tlog_tiles` crate's (a port of Go's
//! `sumdb/tlog`); the tests here check it against the published RFC 6962
//! vectors and a naive reference tree. Storage and HTTP come later and
//! depend on this, never the other way.

pub mod checkpoint;

use std::collections::HashMap;

use serde::Serialize;
pub use tlog_tiles::{Hash, RecordProof, TreeProof, EMPTY_HASH};

/// What one leaf records. Field order is the canonical (sorted) order:
/// serialized with serde_json it is RFC 8785 JSON for these types (ASCII
/// keys, strings and integers only).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Leaf {
    /// One stored submission, whatever its status.
    Submission {
        bundle_sha256: String,
        content_sha256: String,
        key_fingerprint: String,
        received_at: String,
        status: String,
        submission_id: String,
    },
    /// A maintainer's decision on a submission, or a key revocation.
    Decision {
        action: String,
        actor: String,
        at: String,
        subject: String,
        to_status: String,
    },
}

impl Leaf {
    /// The leaf's bytes: canonical JSON, keys sorted, no whitespace.
    pub fn canonical(&self) -> Vec<u8> {
        // serde puts the tag first; RFC 8785 wants it among the sorted keys.
        let value = serde_json::to_value(self).expect("strings serialise");
        let object = value.as_object().expect("a leaf is an object");
        let mut keys: Vec<&String> = object.keys().collect();
        keys.sort();
        let mut out = b"{".to_vec();
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend(serde_json::to_vec(k).expect("a key"));
            out.push(b':');
            out.extend(serde_json::to_vec(&object[*k]).expect("a value"));
        }
        out.push(b'}');
        out
    }
}

/// RFC 6962 leaf hash: SHA-256(0x00 ‖ data).
pub fn leaf_hash(data: &[u8]) -> Hash {
    tlog_tiles::record_hash(data)
}

/// The stored hashes of a tree held in memory (tests, offline checks,
/// tools); the database keeps the same `(index, hash)` pairs.
#[derive(Debug, Clone, Default)]
pub struct StoredHashes {
    hashes: HashMap<u64, Hash>,
    size: u64,
}

impl tlog_tiles::HashReader for StoredHashes {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|i| {
                self.hashes
                    .get(i)
                    .copied()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

impl StoredHashes {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf; returns its index and the `(stored index, hash)`
    /// pairs to keep (on average just under two per leaf).
    pub fn append(&mut self, data: &[u8]) -> Result<(u64, Vec<(u64, Hash)>), tlog_tiles::Error> {
        let n = self.size;
        let new = tlog_tiles::stored_hashes(n, data, self)?;
        let start = tlog_tiles::stored_hash_index(0, n);
        let pairs: Vec<(u64, Hash)> = new
            .into_iter()
            .enumerate()
            .map(|(i, h)| (start + i as u64, h))
            .collect();
        for (i, h) in &pairs {
            self.hashes.insert(*i, *h);
        }
        self.size += 1;
        Ok((n, pairs))
    }

    /// The root of the first `size` leaves.
    pub fn root(&self, size: u64) -> Result<Hash, tlog_tiles::Error> {
        tlog_tiles::tree_hash(size, self)
    }

    /// Inclusion proof of leaf `index` in the tree of `size` leaves.
    pub fn inclusion(&self, index: u64, size: u64) -> Result<RecordProof, tlog_tiles::Error> {
        tlog_tiles::prove_record(size, index, self)
    }

    /// Consistency proof from the tree of `old` leaves to that of `new`.
    pub fn consistency(&self, old: u64, new: u64) -> Result<TreeProof, tlog_tiles::Error> {
        tlog_tiles::prove_tree(new, old, self)
    }
}

/// Checks that `leaf` (its hash) is leaf `index` of the tree of `size`
/// leaves whose root is `root`.
pub fn verify_inclusion(
    proof: &RecordProof,
    size: u64,
    root: Hash,
    index: u64,
    leaf: Hash,
) -> Result<(), tlog_tiles::Error> {
    tlog_tiles::check_record(proof, size, root, index, leaf)
}

/// Checks that the tree of `old` leaves (root `old_root`) is a prefix of
/// the tree of `new` leaves (root `new_root`).
pub fn verify_consistency(
    proof: &TreeProof,
    new: u64,
    new_root: Hash,
    old: u64,
    old_root: Hash,
) -> Result<(), tlog_tiles::Error> {
    tlog_tiles::check_tree(proof, new, new_root, old, old_root)
}

#[cfg(test)]
mod tests;

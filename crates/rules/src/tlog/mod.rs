//! The transparency log's pure core (issue #15, first part): what a leaf
//! holds, as RFC 8785 canonical JSON, and the RFC 6962 / RFC 9162 tree over
//! the leaves, kept as the hashes the Go sumdb design stores (one record
//! hash per leaf plus the roots of the complete subtrees it closes), so a
//! root or proof reads O(log n) stored hashes and never the whole tree.
//! Hashing and proofs are the `tlog_tiles` crate's (a port of Go's
//! `sumdb/tlog`); the tests here check it against the published RFC 6962
//! vectors and a naive reference tree. Storage and HTTP come later and
//! depend on this, never the other way.

pub mod audit;
pub mod checkpoint;
pub mod tiles;

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
pub use tlog_tiles::{Hash, RecordProof, TreeProof, EMPTY_HASH};

/// What one leaf records. Field order is the canonical (sorted) order:
/// serialized with serde_json it is RFC 8785 JSON for these types (ASCII
/// keys, strings and integers only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
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
    /// A maintainer's decision: approve or reject a submission, suspend a
    /// submitter, revoke a key (and each rejection a revocation causes).
    /// Absent parts are empty strings, so every leaf has the same keys.
    Decision {
        action: String,
        actor: String,
        at: String,
        /// From when a revoked key is void.
        effective_at: String,
        from_status: String,
        reason: String,
        /// The submission id, else the key fingerprint, else the handle.
        subject: String,
        to_status: String,
    },
    /// A published peer release imported (issue #39): which files, by the
    /// digest over their paths and SHA-256s, and what they were read as.
    PeerImport {
        actor: String,
        at: String,
        configurations: u64,
        /// `wattcounts_rules::peer::files_sha256` of the files read.
        files_sha256: String,
        /// The release's own date or version.
        label: String,
        origin: String,
        /// The commit or date the operator stated for the files.
        source_ref: String,
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

impl Leaf {
    /// Parses a leaf's bytes, refusing any that are not exactly the
    /// canonical form (so one leaf has one encoding).
    pub fn parse(bytes: &[u8]) -> Result<Leaf, String> {
        let leaf: Leaf = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if leaf.canonical() != bytes {
            return Err("not in canonical form (RFC 8785)".into());
        }
        Ok(leaf)
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
    hashes: Fetched,
    size: u64,
}

impl tlog_tiles::HashReader for StoredHashes {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        self.hashes.read(indexes)
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
            self.hashes.0.insert(*i, *h);
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

/// Which stored hashes `f` reads. The tree's access pattern depends on
/// sizes and indexes alone, never on hash values, so a dry run over
/// placeholder hashes names exactly what a real run will ask for: a store
/// fetches those (one query) and runs `f` again over them.
pub fn hashes_needed<T>(f: impl Fn(&dyn DynReader) -> Result<T, tlog_tiles::Error>) -> Vec<u64> {
    struct Recorder(RefCell<Vec<u64>>);
    impl DynReader for Recorder {
        fn read(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
            self.0.borrow_mut().extend_from_slice(indexes);
            Ok(vec![Hash([0; 32]); indexes.len()])
        }
    }
    let r = Recorder(RefCell::new(Vec::new()));
    let _ = f(&r);
    let mut v = r.0.into_inner();
    v.sort_unstable();
    v.dedup();
    v
}

/// A hash reader behind a reference (tlog_tiles takes `R: HashReader`).
pub trait DynReader {
    fn read(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error>;
}

impl tlog_tiles::HashReader for &dyn DynReader {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        self.read(indexes)
    }
}

/// Hashes by stored index: fetched for one operation (see
/// [`hashes_needed`]), or a whole tree held in memory ([`StoredHashes`]).
#[derive(Debug, Clone, Default)]
pub struct Fetched(pub HashMap<u64, Hash>);

impl DynReader for Fetched {
    fn read(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|i| {
                self.0
                    .get(i)
                    .copied()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

/// The root of a tree fed one leaf at a time, in O(log n) memory: a
/// verifier rebuilds a snapshot's log from its entries file with it.
#[derive(Debug, Default)]
pub struct RootBuilder {
    /// Roots of the complete subtrees so far, largest first, with heights.
    stack: Vec<(u32, Hash)>,
    size: u64,
}

impl RootBuilder {
    pub fn push(&mut self, data: &[u8]) {
        let mut node = (0u32, leaf_hash(data));
        while let Some(&(h, left)) = self.stack.last() {
            if h != node.0 {
                break;
            }
            self.stack.pop();
            node = (h + 1, tlog_tiles::node_hash(left, node.1));
        }
        self.stack.push(node);
        self.size += 1;
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    /// RFC 6962's root: the complete subtrees folded right to left.
    pub fn root(&self) -> Hash {
        let mut it = self.stack.iter().rev();
        let Some(&(_, mut h)) = it.next() else {
            return EMPTY_HASH;
        };
        for &(_, left) in it {
            h = tlog_tiles::node_hash(left, h);
        }
        h
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

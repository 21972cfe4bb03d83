//! Known answers from the published RFC 6962 vectors (transparency-dev/
//! merkle's `testonly` constants and `proof` test vectors), then every
//! inclusion and consistency proof of every tree up to 300 leaves against a
//! naive RFC 6962 reference, then tampered proofs refused.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::*;

fn h(hex_str: &str) -> Hash {
    let mut out = [0u8; 32];
    out.copy_from_slice(&hex::decode(hex_str).unwrap());
    Hash(out)
}

const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

const LEAF_HASHES: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
];

/// Level 1 and 2 nodes of the 8-leaf tree.
const NODES_1: [&str; 4] = [
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
];
const NODES_2: [&str; 2] = [
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
];

/// Roots of the trees of 0 to 8 leaves.
const ROOTS: [&str; 9] = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// (leaf index, tree size, proof): the reference inclusion proofs.
const INCLUSION: [(u64, u64, &[&str]); 4] = [
    (
        0,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        1,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// (old size, new size, proof): the reference consistency proofs.
const CONSISTENCY: [(u64, u64, &[&str]); 4] = [
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
];

fn reference_tree() -> StoredHashes {
    let mut t = StoredHashes::default();
    for l in LEAVES {
        t.append(&hex::decode(l).unwrap()).unwrap();
    }
    t
}

#[test]
fn known_answers_of_rfc_6962() {
    assert_eq!(EMPTY_HASH, h(ROOTS[0]));
    assert_eq!(
        EMPTY_HASH.0,
        <[u8; 32]>::from(Sha256::digest(b"")),
        "the empty tree is SHA-256 of nothing"
    );
    for (leaf, want) in LEAVES.iter().zip(LEAF_HASHES) {
        assert_eq!(leaf_hash(&hex::decode(leaf).unwrap()), h(want), "{leaf}");
    }
    let t = reference_tree();
    for (size, root) in ROOTS.iter().enumerate() {
        assert_eq!(t.root(size as u64).unwrap(), h(root), "size {size}");
    }
    // Complete subtrees are the published level 1 and 2 nodes.
    for (i, n) in NODES_1.iter().enumerate() {
        let l = h(LEAF_HASHES[2 * i]);
        let r = h(LEAF_HASHES[2 * i + 1]);
        assert_eq!(tlog_tiles::node_hash(l, r), h(n));
    }
    assert_eq!(
        tlog_tiles::node_hash(h(NODES_1[0]), h(NODES_1[1])),
        h(NODES_2[0])
    );
    assert_eq!(
        tlog_tiles::node_hash(h(NODES_1[2]), h(NODES_1[3])),
        h(NODES_2[1])
    );
    for (index, size, proof) in INCLUSION {
        let want: Vec<Hash> = proof.iter().map(|p| h(p)).collect();
        assert_eq!(t.inclusion(index, size).unwrap(), want, "{index} in {size}");
        let leaf = h(LEAF_HASHES[index as usize]);
        verify_inclusion(&want, size, h(ROOTS[size as usize]), index, leaf).unwrap();
    }
    for (old, new, proof) in CONSISTENCY {
        let want: Vec<Hash> = proof.iter().map(|p| h(p)).collect();
        assert_eq!(t.consistency(old, new).unwrap(), want, "{old} → {new}");
        verify_consistency(
            &want,
            new,
            h(ROOTS[new as usize]),
            old,
            h(ROOTS[old as usize]),
        )
        .unwrap();
    }
}

/// RFC 6962 §2.1 as written, with a cache of subtree hashes.
struct Naive {
    leaves: Vec<Hash>,
    memo: HashMap<(usize, usize), Hash>,
}

/// The largest power of two smaller than n (n ≥ 2).
fn split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

impl Naive {
    fn mth(&mut self, lo: usize, hi: usize) -> Hash {
        if hi - lo == 1 {
            return self.leaves[lo];
        }
        if let Some(h) = self.memo.get(&(lo, hi)) {
            return *h;
        }
        let k = split(hi - lo);
        let v = tlog_tiles::node_hash(self.mth(lo, lo + k), self.mth(lo + k, hi));
        self.memo.insert((lo, hi), v);
        v
    }

    fn path(&mut self, m: usize, lo: usize, hi: usize) -> Vec<Hash> {
        if hi - lo == 1 {
            return vec![];
        }
        let k = split(hi - lo);
        if m < k {
            let mut p = self.path(m, lo, lo + k);
            p.push(self.mth(lo + k, hi));
            p
        } else {
            let mut p = self.path(m - k, lo + k, hi);
            p.push(self.mth(lo, lo + k));
            p
        }
    }

    fn subproof(&mut self, m: usize, lo: usize, hi: usize, whole: bool) -> Vec<Hash> {
        let n = hi - lo;
        if m == n {
            return if whole {
                vec![]
            } else {
                vec![self.mth(lo, hi)]
            };
        }
        let k = split(n);
        if m <= k {
            let mut p = self.subproof(m, lo, lo + k, whole);
            p.push(self.mth(lo + k, hi));
            p
        } else {
            let mut p = self.subproof(m - k, lo + k, hi, false);
            p.push(self.mth(lo, lo + k));
            p
        }
    }
}

const MAX: usize = 300;

fn trees() -> (StoredHashes, Naive) {
    let mut stored = StoredHashes::default();
    let mut leaves = Vec::new();
    for i in 0..MAX {
        let data = format!("leaf {i}").into_bytes();
        let (index, _) = stored.append(&data).unwrap();
        assert_eq!(index, i as u64);
        leaves.push(leaf_hash(&data));
    }
    (
        stored,
        Naive {
            leaves,
            memo: HashMap::new(),
        },
    )
}

#[test]
fn every_proof_up_to_300_leaves_matches_the_reference() {
    let (stored, mut naive) = trees();
    let mut proofs = 0;
    for n in 1..=MAX {
        let root = naive.mth(0, n);
        assert_eq!(stored.root(n as u64).unwrap(), root, "root of {n}");
        for m in 0..n {
            let p = stored.inclusion(m as u64, n as u64).unwrap();
            assert_eq!(p, naive.path(m, 0, n), "inclusion of {m} in {n}");
            verify_inclusion(&p, n as u64, root, m as u64, naive.leaves[m]).unwrap();
            proofs += 1;
        }
        for m in 1..n {
            let p = stored.consistency(m as u64, n as u64).unwrap();
            assert_eq!(p, naive.subproof(m, 0, n, true), "consistency {m} → {n}");
            verify_consistency(&p, n as u64, root, m as u64, naive.mth(0, m)).unwrap();
            proofs += 1;
        }
    }
    assert_eq!(proofs, MAX * (MAX + 1) / 2 + MAX * (MAX - 1) / 2);
}

#[test]
fn tampered_proofs_wrong_sizes_and_forks_are_refused() {
    let (stored, mut naive) = trees();
    for n in [2usize, 3, 5, 8, 17, 100, 255, 256, 257, 300] {
        let root = naive.mth(0, n);
        for m in [0, n / 2, n - 1] {
            let leaf = naive.leaves[m];
            let p = stored.inclusion(m as u64, n as u64).unwrap();
            for i in 0..p.len() {
                let mut bad = p.clone();
                bad[i].0[0] ^= 8;
                assert_invalid(verify_inclusion(&bad, n as u64, root, m as u64, leaf));
            }
            let mut longer = p.clone();
            longer.push(root);
            assert_invalid(verify_inclusion(&longer, n as u64, root, m as u64, leaf));
            if !p.is_empty() {
                let shorter = p[..p.len() - 1].to_vec();
                assert_invalid(verify_inclusion(&shorter, n as u64, root, m as u64, leaf));
            }
            let other = (m + 1) % n;
            assert_invalid(verify_inclusion(&p, n as u64, root, other as u64, leaf));
            assert_invalid(verify_inclusion(&p, 2 * n as u64, root, m as u64, leaf));
            assert_invalid(verify_inclusion(
                &p,
                n as u64,
                root,
                m as u64,
                leaf_hash(b"x"),
            ));
        }
        for m in [1, n / 2, n - 1].into_iter().filter(|m| *m >= 1 && *m < n) {
            let old_root = naive.mth(0, m);
            let p = stored.consistency(m as u64, n as u64).unwrap();
            for i in 0..p.len() {
                let mut bad = p.clone();
                bad[i].0[0] ^= 16;
                assert_invalid(verify_consistency(&bad, n as u64, root, m as u64, old_root));
            }
            assert_invalid(verify_consistency(&p, n as u64, old_root, m as u64, root));
            assert_invalid(verify_consistency(
                &p,
                n as u64,
                root,
                m as u64,
                leaf_hash(b"x"),
            ));
            assert_invalid(verify_consistency(
                &vec![],
                n as u64,
                root,
                m as u64,
                old_root,
            ));
        }
    }
    // A fork: the same size with one leaf rewritten has another root, and no
    // consistency proof of the honest log reaches it.
    let mut forked = StoredHashes::default();
    for i in 0..100 {
        let data = if i == 41 {
            b"leaf 41, rewritten".to_vec()
        } else {
            format!("leaf {i}").into_bytes()
        };
        forked.append(&data).unwrap();
    }
    let honest_old = stored.root(60).unwrap();
    let forked_new = forked.root(100).unwrap();
    assert_ne!(forked_new, stored.root(100).unwrap());
    let p = forked.consistency(60, 100).unwrap();
    assert_invalid(verify_consistency(&p, 100, forked_new, 60, honest_old));
}

#[test]
fn leaves_are_canonical_json() {
    let leaf = Leaf::Submission {
        bundle_sha256: "ab".into(),
        content_sha256: "cd".into(),
        key_fingerprint: "SHA256:x/y+z".into(),
        received_at: "2026-12-01T00:00:00.000Z".into(),
        status: "accepted".into(),
        submission_id: "0b6e".into(),
    };
    assert_eq!(
        String::from_utf8(leaf.canonical()).unwrap(),
        r#"{"bundle_sha256":"ab","content_sha256":"cd","key_fingerprint":"SHA256:x/y+z","kind":"submission","received_at":"2026-12-01T00:00:00.000Z","status":"accepted","submission_id":"0b6e"}"#
    );
    let d = Leaf::Decision {
        action: "reject".into(),
        actor: "maintainer".into(),
        at: "2026-12-01T00:00:00.000Z".into(),
        effective_at: String::new(),
        from_status: "accepted".into(),
        reason: "r".into(),
        subject: "0b6e".into(),
        to_status: "rejected\u{1f}\"".into(),
    };
    assert_eq!(Leaf::parse(&d.canonical()).unwrap(), d);
    assert_eq!(Leaf::parse(&leaf.canonical()).unwrap(), leaf);
    // Another encoding of the same leaf is refused.
    let spaced = String::from_utf8(leaf.canonical())
        .unwrap()
        .replace(':', ": ");
    assert_eq!(
        Leaf::parse(spaced.as_bytes()),
        Err("not in canonical form (RFC 8785)".to_string())
    );
    // RFC 8785 escapes: control characters as lowercase \u00xx, quotes.
    assert!(String::from_utf8(d.canonical())
        .unwrap()
        .ends_with(r#""to_status":"rejected\u001f\""}"#));
}

#[test]
fn a_root_built_leaf_by_leaf_matches_the_reference() {
    let (_, mut naive) = trees();
    let mut b = crate::tlog::RootBuilder::default();
    assert_eq!(b.root(), EMPTY_HASH);
    for n in 1..=MAX {
        b.push(format!("leaf {}", n - 1).as_bytes());
        assert_eq!(b.size(), n as u64);
        assert_eq!(b.root(), naive.mth(0, n), "root of {n}");
    }
}

#[test]
fn a_dry_run_names_exactly_the_hashes_a_proof_reads() {
    use crate::tlog::{hashes_needed, DynReader, Fetched};
    let (stored, mut naive) = trees();
    // What a store does: ask which indexes, fetch only those, run again.
    let fetch = |idx: &[u64]| {
        let hashes = tlog_tiles::HashReader::read_hashes(&stored, idx).unwrap();
        Fetched(idx.iter().copied().zip(hashes).collect())
    };
    for n in [1u64, 2, 7, 8, 9, 100, 255, 256, 257, 300] {
        let idx = hashes_needed(|r| tlog_tiles::tree_hash(n, &r));
        let f = fetch(&idx);
        let r: &dyn DynReader = &f;
        assert_eq!(
            tlog_tiles::tree_hash(n, &r).unwrap(),
            naive.mth(0, n as usize)
        );
        for m in [0, n / 3, n - 1] {
            let idx = hashes_needed(|r| tlog_tiles::prove_record(n, m, &r));
            let f = fetch(&idx);
            let r: &dyn DynReader = &f;
            assert_eq!(
                tlog_tiles::prove_record(n, m, &r).unwrap(),
                naive.path(m as usize, 0, n as usize)
            );
            if m > 0 {
                let idx = hashes_needed(|r| tlog_tiles::prove_tree(n, m, &r));
                let f = fetch(&idx);
                let r: &dyn DynReader = &f;
                assert_eq!(
                    tlog_tiles::prove_tree(n, m, &r).unwrap(),
                    naive.subproof(m as usize, 0, n as usize, true)
                );
            }
        }
        // An append reads what it names too.
        let idx = hashes_needed(|r| tlog_tiles::stored_hashes(n, b"next", &r));
        let f = fetch(&idx);
        let r: &dyn DynReader = &f;
        assert_eq!(
            tlog_tiles::stored_hashes(n, b"next", &r).unwrap(),
            tlog_tiles::stored_hashes(n, b"next", &Prefix(&stored, n)).unwrap()
        );
    }
}

/// The stored hashes of the first `n` leaves only.
struct Prefix<'a>(&'a StoredHashes, u64);
impl tlog_tiles::HashReader for Prefix<'_> {
    fn read_hashes(&self, idx: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        if idx
            .iter()
            .any(|&i| i >= tlog_tiles::stored_hash_count(self.1))
        {
            return Err(tlog_tiles::Error::IndexesNotInTree);
        }
        tlog_tiles::HashReader::read_hashes(self.0, idx)
    }
}

/// A proof that does not hold is refused as invalid, not for another
/// reason (a malformed input, a panic-free bad-math path) that would hide
/// which check decided.
fn assert_invalid(r: Result<(), tlog_tiles::Error>) {
    assert!(matches!(r, Err(tlog_tiles::Error::InvalidProof)), "{r:?}");
}

//! C2SP tlog-tiles paths and contents: hash tiles `tile/<L>/<N>[.p/<W>]`
//! (up to 256 hashes of level 8·L) and entry bundles
//! `tile/entries/<N>[.p/<W>]` (up to 256 leaves, each prefixed with its
//! length as a big-endian u16). Full tiles never change and partial ones
//! never change for their width, so all of them can be cached and mirrored
//! as static files. Pure: which hashes or leaves a path needs, and their
//! bytes once read.

use tlog_tiles::{stored_hash_index, Hash, Tile};

/// Tile height: 2^8 = 256 hashes or entries per tile (fixed by the spec).
pub const HEIGHT: u8 = 8;
pub const WIDTH: u64 = 1 << HEIGHT;

/// What a tile path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TilePath {
    /// Hashes of level 8·`level`, indexes `n`·256 .. `n`·256 + `width`.
    Hashes { level: u8, n: u64, width: u32 },
    /// Leaves `n`·256 .. `n`·256 + `width`.
    Entries { n: u64, width: u32 },
}

impl TilePath {
    /// Parses the part of a URL after the log's prefix (`tile/…`);
    /// None for anything that is not exactly a tile path.
    pub fn parse(path: &str) -> Option<TilePath> {
        let rest = path.strip_prefix("tile/")?;
        // tlog_tiles takes a width of 0 and then panics building the tile.
        if let Some((_, w)) = rest.rsplit_once(".p/") {
            if !matches!(w.parse::<u64>(), Ok(1..=255)) {
                return None;
            }
        }
        // The Go sumdb form carries the height; tlog-tiles fixes it at 8.
        let (go_form, entries) = match rest.strip_prefix("entries/") {
            Some(r) => (format!("tile/{HEIGHT}/data/{r}"), true),
            None => (format!("tile/{HEIGHT}/{rest}"), false),
        };
        let t = Tile::from_path(&go_form).ok()?;
        if t.height() != HEIGHT || t.is_data() != entries {
            return None;
        }
        Some(if entries {
            TilePath::Entries {
                n: t.level_index(),
                width: t.width(),
            }
        } else {
            TilePath::Hashes {
                level: t.level(),
                n: t.level_index(),
                width: t.width(),
            }
        })
    }

    /// The path, as [`TilePath::parse`] reads it.
    pub fn path(&self) -> String {
        let (t, entries) = match *self {
            TilePath::Hashes { level, n, width } => {
                (Tile::new(HEIGHT, level, n, width, false), false)
            }
            TilePath::Entries { n, width } => (Tile::new(HEIGHT, 0, n, width, true), true),
        };
        let go = t.path();
        let rest = go
            .strip_prefix(&format!("tile/{HEIGHT}/"))
            .expect("tlog_tiles paths start with tile/H/");
        if entries {
            format!("tile/entries/{}", rest.trim_start_matches("data/"))
        } else {
            format!("tile/{rest}")
        }
    }

    /// Whether a tree of `size` leaves holds everything this tile lists.
    pub fn within(&self, size: u64) -> bool {
        let (level, n, width) = match *self {
            TilePath::Hashes { level, n, width } => (level, n, width),
            TilePath::Entries { n, width } => (0, n, width),
        };
        let shift = u32::from(level) * u32::from(HEIGHT);
        let available = if shift >= 64 { 0 } else { size >> shift };
        n.checked_mul(WIDTH)
            .and_then(|s| s.checked_add(u64::from(width)))
            .is_some_and(|end| end <= available)
    }

    /// Whether the tile is complete (and so the same for every tree size).
    pub fn full(&self) -> bool {
        let w = match *self {
            TilePath::Hashes { width, .. } | TilePath::Entries { width, .. } => width,
        };
        u64::from(w) == WIDTH
    }

    /// The stored-hash indexes a hash tile lists, in order; the leaf
    /// range an entry bundle lists.
    pub fn hash_indexes(level: u8, n: u64, width: u32) -> Vec<u64> {
        (0..u64::from(width))
            .map(|i| stored_hash_index(level * HEIGHT, n * WIDTH + i))
            .collect()
    }
}

/// A hash tile's bytes: the hashes, 32 bytes each, in order.
pub fn hash_tile(hashes: &[Hash]) -> Vec<u8> {
    hashes.iter().flat_map(|h| h.0).collect()
}

/// An entry bundle's bytes: each leaf prefixed with its length (u16, big
/// endian). Leaves are canonical JSON of a few hundred bytes; one past
/// 65,535 bytes cannot be bundled and is an error.
pub fn entry_bundle<'a>(leaves: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for leaf in leaves {
        let len = u16::try_from(leaf.len())
            .map_err(|_| format!("a leaf of {} bytes does not fit a bundle", leaf.len()))?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(leaf);
    }
    Ok(out)
}

/// Splits an entry bundle back into its leaves.
pub fn read_bundle(mut data: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    while !data.is_empty() {
        if data.len() < 2 {
            return Err("a bundle ends inside a length prefix".into());
        }
        let len = usize::from(u16::from_be_bytes([data[0], data[1]]));
        if data.len() < 2 + len {
            return Err("a bundle ends inside an entry".into());
        }
        out.push(&data[2..2 + len]);
        data = &data[2 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::StoredHashes;

    #[test]
    fn paths_follow_tlog_tiles() {
        let cases = [
            (
                TilePath::Hashes {
                    level: 0,
                    n: 0,
                    width: 256,
                },
                "tile/0/000",
            ),
            (
                TilePath::Hashes {
                    level: 1,
                    n: 1234067,
                    width: 8,
                },
                "tile/1/x001/x234/067.p/8",
            ),
            (TilePath::Entries { n: 5, width: 256 }, "tile/entries/005"),
            (
                TilePath::Entries { n: 1000, width: 3 },
                "tile/entries/x001/000.p/3",
            ),
        ];
        for (t, p) in cases {
            assert_eq!(t.path(), p);
            assert_eq!(TilePath::parse(p), Some(t), "{p}");
        }
        for bad in [
            "tile/0/0",
            "tile/0/000.p/256",
            "tile/0/000.p/0",
            "tile/8/0/000",
            "tile/entries/000/",
            "tile/0/x000/001",
            "tiles/0/000",
            "tile/0/../000",
            "tile/entries/0001",
            // The Go form's data tiles are entry bundles here, under their own name.
            "tile/data/000",
            "",
        ] {
            assert_eq!(TilePath::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn tiles_exist_only_inside_the_tree() {
        let full = TilePath::Hashes {
            level: 0,
            n: 0,
            width: 256,
        };
        assert!(!full.within(255) && full.within(256) && full.full());
        let part = TilePath::Entries { n: 1, width: 3 };
        assert!(!part.within(258) && part.within(259) && !part.full());
        let up = TilePath::Hashes {
            level: 1,
            n: 0,
            width: 2,
        };
        assert!(!up.within(511) && up.within(512));
        assert!(!TilePath::Hashes {
            level: 9,
            n: 0,
            width: 1
        }
        .within(u64::MAX));
    }

    #[test]
    fn a_full_hash_tile_hashes_to_its_subtree_root() {
        let mut t = StoredHashes::default();
        for i in 0..300 {
            t.append(format!("leaf {i}").as_bytes()).unwrap();
        }
        let idx = TilePath::hash_indexes(0, 0, 256);
        let hashes = tlog_tiles::HashReader::read_hashes(&t, &idx).unwrap();
        let data = hash_tile(&hashes);
        assert_eq!(data.len(), 256 * 32);
        // The 256 leaf hashes of tile 0 hash up to the root of the first 256 leaves.
        assert_eq!(Tile::subtree_hash(&data), t.root(256).unwrap());
    }

    #[test]
    fn tile_bounds_at_the_highest_level_that_still_counts() {
        // Level 7 spans 2^56 leaves per hash; level 8 would need 2^64.
        let top = TilePath::Hashes {
            level: 8,
            n: 0,
            width: 1,
        };
        assert!(!top.within(u64::MAX));
        let seven = TilePath::Hashes {
            level: 7,
            n: 0,
            width: 1,
        };
        assert!(!seven.within((1 << 56) - 1) && seven.within(1 << 56));
        // An index past u64 is no tile of any tree.
        assert!(!TilePath::Entries {
            n: u64::MAX,
            width: 1
        }
        .within(u64::MAX));
    }

    #[test]
    fn hash_indexes_of_later_tiles_and_levels() {
        let mut t = StoredHashes::default();
        for i in 0..(256 * 2 + 3) {
            let (index, _) = t.append(format!("leaf {i}").as_bytes()).unwrap();
            assert_eq!(index, i);
        }
        assert_eq!(t.size(), 515);
        // Tile 1 of level 0: leaves 256..512, hashing to that subtree's root.
        let idx = TilePath::hash_indexes(0, 1, 256);
        assert_eq!(idx[0], tlog_tiles::stored_hash_index(0, 256));
        let hashes = tlog_tiles::HashReader::read_hashes(&t, &idx).unwrap();
        let left = t.root(256).unwrap();
        let whole = t.root(512).unwrap();
        assert_eq!(
            tlog_tiles::node_hash(left, Tile::subtree_hash(&hash_tile(&hashes))),
            whole
        );
        // Level 1: the hashes of level 8, one per 256 leaves.
        let idx = TilePath::hash_indexes(1, 0, 2);
        assert_eq!(
            idx,
            [
                tlog_tiles::stored_hash_index(8, 0),
                tlog_tiles::stored_hash_index(8, 1)
            ]
        );
        let hashes = tlog_tiles::HashReader::read_hashes(&t, &idx).unwrap();
        assert_eq!(hashes[0], left);
        assert_eq!(tlog_tiles::node_hash(hashes[0], hashes[1]), whole);
    }

    #[test]
    fn a_bundle_may_end_with_an_empty_leaf() {
        let leaves: Vec<&[u8]> = vec![b"{}", b""];
        let b = entry_bundle(leaves.clone()).unwrap();
        assert_eq!(b, b"\x00\x02{}\x00\x00");
        assert_eq!(read_bundle(&b).unwrap(), leaves);
        assert_eq!(read_bundle(b"").unwrap(), Vec::<&[u8]>::new());
        // A leaf of exactly 65,535 bytes still fits.
        let max = vec![b'x'; 65_535];
        let b = entry_bundle([max.as_slice()]).unwrap();
        assert_eq!(&b[..2], [0xff, 0xff]);
        assert_eq!(read_bundle(&b).unwrap(), [max.as_slice()]);
        let err = entry_bundle([vec![0u8; 65_536].as_slice()]).unwrap_err();
        assert!(err.contains("65536 bytes"), "{err}");
    }

    #[test]
    fn bundles_round_trip_and_refuse_truncation() {
        let leaves: Vec<&[u8]> = vec![b"{}", b"", b"{\"a\":1}"];
        let b = entry_bundle(leaves.clone()).unwrap();
        assert_eq!(read_bundle(&b).unwrap(), leaves);
        assert_eq!(
            read_bundle(&b[..b.len() - 1]),
            Err("a bundle ends inside an entry".to_string())
        );
        assert_eq!(
            read_bundle(&b[..1]),
            Err("a bundle ends inside a length prefix".to_string())
        );
        let err = entry_bundle([vec![0u8; 70_000].as_slice()]).unwrap_err();
        assert!(err.contains("70000 bytes does not fit"), "{err}");
    }
}

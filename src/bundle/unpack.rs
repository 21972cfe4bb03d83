//! Safe, bounded unpacking of a bundle (`.tar.gz`), read as a stream.
//!
//! The archive comes from strangers, so every entry is checked before a
//! single byte of it is kept: only regular files and folders with clean
//! relative UTF-8 paths, no duplicates, and hard caps on entry count,
//! entry size, unpacked size and compression ratio (a gzip bomb is refused
//! while it is being inflated, not after). Only the entries the caller
//! asks for are held in memory, each at most `max_entry_bytes`; the others
//! are digested as they stream past, so what an upload costs in memory does
//! not grow with what it inflates to.

use std::collections::HashSet;
use std::io::{self, BufRead, Read};

use sha2::{Digest, Sha256};

use crate::rejection::{Detail, RejectKind, Rejection};

#[derive(Debug, Clone, Copy)]
pub struct UnpackLimits {
    pub max_entries: usize,
    /// Largest single file, unpacked.
    pub max_entry_bytes: u64,
    pub max_unpacked_bytes: u64,
    /// Unpacked bytes per compressed byte.
    pub max_ratio: f64,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        UnpackLimits {
            max_entries: 20_000,
            max_entry_bytes: 256 << 20,
            max_unpacked_bytes: 4 << 30,
            max_ratio: 200.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// Normalised relative path with `/` separators.
    pub path: String,
    /// Unpacked size, bytes.
    pub size: u64,
    /// The bytes, for an entry the caller keeps; empty otherwise.
    pub data: Vec<u8>,
    /// SHA-256 (hex) computed while streaming, for an entry not kept.
    pub streamed_sha256: Option<String>,
}

/// Reader that counts inflated bytes and stops as soon as a limit is passed,
/// so a bomb never gets to allocate its payload.
struct Bounded<R> {
    inner: R,
    read: u64,
    cap: u64,
    tripped: bool,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            self.tripped = true;
            return Err(io::Error::other("unpacked size limit"));
        }
        Ok(n)
    }
}

pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// Unpacks into memory, all entries at once.
pub fn unpack(gz: &[u8], limits: &UnpackLimits) -> Result<Vec<Entry>, Rejection> {
    let mut out = Vec::new();
    unpack_each(gz, limits, |e| out.push(e))?;
    Ok(out)
}

/// Unpacks bytes in memory, keeping every entry.
pub fn unpack_each(
    gz: &[u8],
    limits: &UnpackLimits,
    on_entry: impl FnMut(Entry),
) -> Result<(), Rejection> {
    unpack_stream(gz, gz.len() as u64, limits, |_| true, on_entry)
}

/// Unpacks entry by entry from `source` (`compressed_len` bytes of
/// tar.gz), handing each checked file to `on_entry` as soon as it is
/// inflated, so callers can work on it while the rest inflates. Entries
/// for whose path `keep` says false arrive digested, without their bytes.
pub fn unpack_stream(
    source: impl BufRead,
    compressed_len: u64,
    limits: &UnpackLimits,
    keep: impl Fn(&str) -> bool,
    mut on_entry: impl FnMut(Entry),
) -> Result<(), Rejection> {
    let mut source = source;
    let head = source.fill_buf().map_err(corrupt)?;
    if !is_gzip(head) {
        return Err(Rejection::malformed(
            "not_gzip",
            "the bundle is not a gzip file (it must be the .tar.gz written by `wattcounts pack`)",
        ));
    }
    let ratio_cap = (compressed_len as f64 * limits.max_ratio) as u64;
    let cap = limits.max_unpacked_bytes.min(ratio_cap.max(1 << 20));
    let ratio_binds = ratio_cap < limits.max_unpacked_bytes;
    let mut reader = Bounded {
        inner: flate2::bufread::GzDecoder::new(source),
        read: 0,
        cap,
        tripped: false,
    };
    let result = read_entries(&mut reader, limits, &keep, &mut on_entry);
    if reader.tripped {
        return Err(if ratio_binds {
            Rejection::new(
                RejectKind::TooLarge,
                "compression_ratio",
                format!(
                    "the bundle inflates past {:.0}x its compressed size of {} bytes (limit {:.0}x)",
                    limits.max_ratio,
                    compressed_len,
                    limits.max_ratio
                ),
            )
        } else {
            Rejection::new(
                RejectKind::TooLarge,
                "too_large_unpacked",
                format!(
                    "the bundle unpacks to more than {} bytes (the configured limit)",
                    limits.max_unpacked_bytes
                ),
            )
        });
    }
    if result? == 0 {
        return Err(Rejection::invalid(
            "empty_bundle",
            "the bundle holds no files",
        ));
    }
    Ok(())
}

/// Returns the number of files handed out.
fn read_entries<R: Read>(
    reader: R,
    limits: &UnpackLimits,
    keep: &impl Fn(&str) -> bool,
    on_entry: &mut impl FnMut(Entry),
) -> Result<usize, Rejection> {
    let mut archive = tar::Archive::new(reader);
    let mut seen = HashSet::new();
    let mut files = 0usize;
    let mut count = 0usize;
    let iter = archive.entries().map_err(corrupt)?;
    for entry in iter {
        let mut entry = entry.map_err(corrupt)?;
        count += 1;
        if count > limits.max_entries {
            return Err(Rejection::new(
                RejectKind::TooLarge,
                "too_many_entries",
                format!(
                    "the bundle has more than {} entries (the configured limit)",
                    limits.max_entries
                ),
            ));
        }
        let raw = entry.path_bytes().into_owned();
        let name = std::str::from_utf8(&raw).map_err(|_| {
            Rejection::invalid("non_utf8_name", "an entry name is not valid UTF-8").with(
                Detail::new(format!("name bytes: {}", String::from_utf8_lossy(&raw)))
                    .file(String::from_utf8_lossy(&raw)),
            )
        })?;
        let path = clean_path(name)?;
        let kind = entry.header().entry_type();
        use tar::EntryType as T;
        match kind {
            T::Directory => {
                continue;
            }
            T::Regular | T::Continuous => {}
            T::Symlink | T::Link => {
                return Err(
                    Rejection::invalid("link_entry", "links are not allowed in a bundle")
                        .with(Detail::new("symbolic or hard link").file(path)),
                );
            }
            T::Char | T::Block | T::Fifo => {
                return Err(Rejection::invalid(
                    "special_entry",
                    "device files and FIFOs are not allowed in a bundle",
                )
                .with(Detail::new(format!("entry type {:?}", kind)).file(path)));
            }
            other => {
                return Err(Rejection::invalid(
                    "unsupported_entry",
                    "the bundle holds an entry type that is not a file or folder",
                )
                .with(Detail::new(format!("entry type {:?}", other)).file(path)));
            }
        }
        if !seen.insert(path.clone()) {
            return Err(Rejection::invalid(
                "duplicate_entry",
                "a path appears twice in the bundle",
            )
            .with(Detail::new("second entry with this path").file(path)));
        }
        // The header's size is the stranger's word: it is checked before
        // anything is allocated, and reading stops one byte past the cap
        // whatever the header said.
        let declared = entry.header().size().unwrap_or(0);
        let too_big = |size: u64| {
            Rejection::new(
                RejectKind::TooLarge,
                "entry_too_large",
                format!(
                    "{path} unpacks to {size} bytes or more; the limit for one file is {} bytes",
                    limits.max_entry_bytes
                ),
            )
            .with(Detail::new(format!("at least {size} bytes")).file(path.as_str()))
        };
        if declared > limits.max_entry_bytes {
            return Err(too_big(declared));
        }
        let mut bounded = (&mut entry).take(limits.max_entry_bytes + 1);
        let (size, data, streamed_sha256) = if keep(&path) {
            // Grown as bytes arrive: a header that lies about its size
            // reserves nothing.
            let mut data = Vec::with_capacity(declared.min(1 << 20) as usize);
            bounded.read_to_end(&mut data).map_err(corrupt)?;
            (data.len() as u64, data, None)
        } else {
            let mut hasher = Sha256::new();
            let mut buf = [0u8; 64 * 1024];
            let mut size = 0u64;
            loop {
                let n = bounded.read(&mut buf).map_err(corrupt)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                size += n as u64;
            }
            (size, Vec::new(), Some(hex::encode(hasher.finalize())))
        };
        if size > limits.max_entry_bytes {
            return Err(too_big(size));
        }
        files += 1;
        on_entry(Entry {
            path,
            size,
            data,
            streamed_sha256,
        });
    }
    Ok(files)
}

fn corrupt(e: io::Error) -> Rejection {
    Rejection::malformed(
        "corrupt_archive",
        format!("the bundle is not a readable tar.gz: {e}"),
    )
}

/// Checks one entry name and returns it normalised (no `./`, no trailing `/`).
pub fn clean_path(name: &str) -> Result<String, Rejection> {
    if name.starts_with('/') || name.starts_with('\\') || name.get(1..2) == Some(":") {
        return Err(
            Rejection::invalid("absolute_path", "bundle entries must have relative paths")
                .with(Detail::new("absolute path").file(name)),
        );
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(Rejection::invalid(
                    "parent_traversal",
                    "bundle entries may not contain '..'",
                )
                .with(Detail::new("path leaves the bundle folder").file(name)));
            }
            p if p.contains('\\') || p.chars().any(char::is_control) => {
                return Err(Rejection::invalid(
                    "bad_path",
                    "bundle entry names may not hold backslashes or control characters",
                )
                .with(Detail::new("bad character in path").file(name)));
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(
            Rejection::invalid("bad_path", "a bundle entry has an empty name")
                .with(Detail::new("empty path").file(name)),
        );
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_path_rules() {
        assert_eq!(clean_path("./a/b.csv").unwrap(), "a/b.csv");
        assert_eq!(clean_path("a//b/").unwrap(), "a/b");
        assert_eq!(clean_path("/etc/passwd").unwrap_err().code, "absolute_path");
        assert_eq!(
            clean_path("a/../../x").unwrap_err().code,
            "parent_traversal"
        );
        assert_eq!(clean_path("C:/x").unwrap_err().code, "absolute_path");
        assert_eq!(clean_path("./").unwrap_err().code, "bad_path");
    }

    #[test]
    fn refuses_non_gzip() {
        let err = unpack(b"PK\x03\x04 zip", &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.code, "not_gzip");
    }

    #[test]
    fn refuses_bombs_while_inflating() {
        // One 16 MiB file of zeros compresses to about 16 KiB: a ratio near 1000.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        {
            let mut tar = tar::Builder::new(&mut enc);
            let mut header = tar::Header::new_gnu();
            header.set_size(16 << 20);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, "zeros.bin", std::io::repeat(0).take(16 << 20))
                .unwrap();
            tar.finish().unwrap();
        }
        let gz = enc.finish().unwrap();
        let err = unpack(&gz, &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.code, "compression_ratio", "{err}");
        let tight = UnpackLimits {
            max_unpacked_bytes: 1 << 20,
            max_ratio: 1e6,
            ..Default::default()
        };
        assert_eq!(unpack(&gz, &tight).unwrap_err().code, "too_large_unpacked");
        // The header declares 16 MiB: refused before a byte is read.
        let one_file = UnpackLimits {
            max_entry_bytes: 8 << 20,
            max_ratio: 1e6,
            ..Default::default()
        };
        let err = unpack(&gz, &one_file).unwrap_err();
        assert_eq!(err.code, "entry_too_large", "{err}");
        assert_eq!(err.details[0].file.as_deref(), Some("zeros.bin"));
    }
}

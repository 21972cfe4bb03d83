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

use flate2::bufread::GzDecoder;
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

impl UnpackLimits {
    /// For bundles the service already stored: they were accepted under
    /// the service's limits, so these only guard against a damaged blob.
    pub const STORED: UnpackLimits = UnpackLimits {
        max_entries: 1_000_000,
        max_entry_bytes: 1 << 40,
        max_unpacked_bytes: 1 << 40,
        max_ratio: 1e6,
    };
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
pub struct ArchiveEntry {
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
pub fn unpack(gz: &[u8], limits: &UnpackLimits) -> Result<Vec<ArchiveEntry>, Rejection> {
    let mut out = Vec::new();
    unpack_each(gz, limits, |e| out.push(e))?;
    Ok(out)
}

/// Unpacks bytes in memory, keeping every entry.
pub fn unpack_each(
    gz: &[u8],
    limits: &UnpackLimits,
    on_entry: impl FnMut(ArchiveEntry),
) -> Result<(), Rejection> {
    unpack_stream(gz, gz.len() as u64, limits, |_| true, on_entry)
}

/// Reads a bundle accepted before (stored, or held by a submitter) once
/// more under today's rules, keeping nothing: every entry is digested as
/// it streams past. For the audit and `verify`, which ask only whether
/// the bytes are still a bundle the service would take.
pub fn check_stored(bundle: &[u8]) -> Result<(), Rejection> {
    unpack_stream(
        bundle,
        bundle.len() as u64,
        &UnpackLimits::STORED,
        |_| false,
        |_| {},
    )
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
    mut on_entry: impl FnMut(ArchiveEntry),
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
        inner: flate2::bufread::GzDecoder::new(Counted {
            inner: source,
            consumed: 0,
        }),
        read: 0,
        cap,
        tripped: false,
    };
    let result = read_entries(&mut reader, limits, &keep, &mut on_entry)
        .and_then(|files| after_the_archive(&mut reader).map(|()| files));
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

/// A `BufRead` that counts what its reader consumed: where the gzip
/// stream ended in the bundle file.
struct Counted<R> {
    inner: R,
    consumed: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.consumed += amt as u64;
        self.inner.consume(amt);
    }
}

/// Bytes read at a time while digesting or looking past the archive's
/// end (its size changes no outcome, only the number of reads).
const READ_CHUNK: usize = 65_536;

/// The file name trailing-data details are reported under.
const BUNDLE_FILE: &str = "bundle.tar.gz";
/// The code of the one-gzip-member, nothing-after-the-tar rule.
pub const TRAILING_DATA: &str = "bundle_trailing_data";

/// What follows the tar's end-of-archive marker must be its zero padding,
/// the gzip stream must end there, and the file with it: `tar xzf` reads
/// every gzip member and Python's `tarfile` reads past a lone zero block,
/// so anything after would be a file that no check saw but that readers of
/// the stored bundle would still find.
fn after_the_archive<R: BufRead>(
    reader: &mut Bounded<GzDecoder<Counted<R>>>,
) -> Result<(), Rejection> {
    let trailing = |message: String, offset: u64| {
        Rejection::invalid(
            TRAILING_DATA,
            format!("{message}; a bundle is one gzip stream holding one tar archive, with nothing after it (pack it again with `wattcounts pack`)"),
        )
        .with(Detail::new(message).file(BUNDLE_FILE).offset(offset))
    };
    // The tar reader stops at the first zero block, so `read` is where the
    // archive's marker ended (or where the stream ended, for a tar without one).
    let mut buf = [0u8; READ_CHUNK];
    loop {
        let at = reader.read;
        let n = reader.read(&mut buf).map_err(corrupt)?;
        if n == 0 {
            break;
        }
        if let Some(i) = buf[..n].iter().position(|b| *b != 0) {
            return Err(trailing(
                format!(
                    "the unpacked tar holds the byte 0x{:02x} at offset {} after its end-of-archive marker",
                    buf[i],
                    at + i as u64
                ),
                at + i as u64,
            ));
        }
    }
    // The decoder has checked the member's CRC and length and consumed
    // exactly its trailer: whatever the file still holds came after it.
    let rest = reader.inner.get_mut();
    let offset = rest.consumed;
    let next = rest.fill_buf().map_err(corrupt)?;
    if next.is_empty() {
        return Ok(());
    }
    let what = if is_gzip(next) {
        "a second gzip member".to_string()
    } else {
        let shown: Vec<String> = next.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("data that is not gzip (bytes {})", shown.join(" "))
    };
    Err(trailing(
        format!("{what} starts at byte {offset} of the bundle, after the end of its gzip stream"),
        offset,
    ))
}

/// What to add to the error of a stored bundle that breaks the layout
/// rule: it was stored before the rule, and the audit lists all such.
pub fn audit_hint(r: &Rejection) -> &'static str {
    if r.code == TRAILING_DATA {
        " (stored before this rule; `wattcounts db audit-bundles` lists every such bundle)"
    } else {
        ""
    }
}

/// Returns the number of files handed out.
fn read_entries<R: Read>(
    reader: &mut R,
    limits: &UnpackLimits,
    keep: &impl Fn(&str) -> bool,
    on_entry: &mut impl FnMut(ArchiveEntry),
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
            let mut buf = [0u8; READ_CHUNK];
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
        on_entry(ArchiveEntry {
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

    /// A tar of `files` with its end-of-archive marker (or without).
    fn tar_of(files: &[(&str, &[u8])], finish: bool) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, name, *data).unwrap();
        }
        // `into_inner` writes the two zero blocks of the marker.
        let mut bytes = tar.into_inner().unwrap();
        if !finish {
            bytes.truncate(bytes.len() - 1024);
        }
        bytes
    }

    fn gzip_at(bytes: &[u8], level: flate2::Compression) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), level);
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        gzip_at(bytes, flate2::Compression::fast())
    }

    /// Zeros compress about 1000 to 1 at the best level.
    fn gzip_best(bytes: &[u8]) -> Vec<u8> {
        gzip_at(bytes, flate2::Compression::best())
    }

    fn names(gz: &[u8]) -> Vec<String> {
        let entries = unpack(gz, &UnpackLimits::default()).unwrap();
        entries.into_iter().map(|e| e.path).collect()
    }

    #[test]
    fn a_plain_bundle_and_its_padding_pass() {
        let tar = tar_of(&[("a.csv", b"x,y\n")], true);
        assert_eq!(names(&gzip(&tar)), ["a.csv"]);
        // GNU tar pads to a 10 KiB record with zeros: still one archive.
        let mut padded = tar.clone();
        padded.resize(10240, 0);
        assert_eq!(names(&gzip(&padded)), ["a.csv"]);
        // A tar with no marker at all ends with the stream: nothing hidden.
        assert_eq!(names(&gzip(&tar_of(&[("a.csv", b"1")], false))), ["a.csv"]);
    }

    #[test]
    fn a_second_gzip_member_is_refused_with_its_offset() {
        let first = gzip(&tar_of(&[("a.csv", b"x")], false));
        let second = gzip(&tar_of(&[("system_info.txt.sh", b"echo hi")], true));
        let mut both = first.clone();
        both.extend_from_slice(&second);
        let err = unpack(&both, &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.code, "bundle_trailing_data", "{err}");
        assert_eq!(err.kind, RejectKind::Invalid);
        let detail = &err.details[0];
        assert_eq!(detail.file.as_deref(), Some("bundle.tar.gz"));
        assert_eq!(detail.offset, Some(first.len() as u64));
        assert!(detail.message.contains("a second gzip member"), "{detail}");
    }

    #[test]
    fn bytes_after_the_gzip_stream_are_refused() {
        let gz = gzip(&tar_of(&[("a.csv", b"x")], true));
        let mut tail = gz.clone();
        tail.extend((0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8 | 1));
        let err = unpack(&tail, &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.code, "bundle_trailing_data", "{err}");
        assert_eq!(err.details[0].offset, Some(gz.len() as u64));
        assert!(
            err.details[0].message.contains("not gzip"),
            "{}",
            err.details[0]
        );
        // Even trailing zeros are bytes no reader of the file should meet.
        let mut zeros = gz.clone();
        zeros.extend_from_slice(&[0; 16]);
        let err = unpack(&zeros, &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.details[0].offset, Some(gz.len() as u64));
    }

    /// A tar of raw headers: each entry's name, type and bytes, so tests
    /// can write links, devices and names a tidy builder would refuse.
    fn raw_tar(entries: &[(&[u8], tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, kind, data) in entries {
            let mut header = tar::Header::new_ustar();
            header.as_old_mut().name[..name.len()].copy_from_slice(name);
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            out.extend_from_slice(header.as_bytes());
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.extend_from_slice(&[0; 1024]);
        out
    }

    fn code_of(gz: &[u8], limits: &UnpackLimits) -> &'static str {
        match unpack(gz, limits) {
            Ok(e) => panic!(
                "accepted: {:?}",
                e.iter().map(|e| &e.path).collect::<Vec<_>>()
            ),
            Err(r) => r.code,
        }
    }

    #[test]
    fn gzip_is_told_by_both_magic_bytes() {
        assert!(is_gzip(&[0x1f, 0x8b]));
        assert!(is_gzip(&[0x1f, 0x8b, 0x08]));
        assert!(!is_gzip(&[0x1f]));
        assert!(!is_gzip(&[0x1f, 0x00]));
        assert!(!is_gzip(&[0x00, 0x8b]));
        assert!(!is_gzip(&[]));
    }

    #[test]
    fn folders_count_as_entries_but_not_as_files() {
        use tar::EntryType as T;
        let tar = raw_tar(&[
            (b"run/", T::Directory, b""),
            (b"run/a.csv", T::Regular, b"1,2\n"),
        ]);
        assert_eq!(names(&gzip(&tar)), ["run/a.csv"]);
        // Two entries exactly at a limit of two pass; a third is refused.
        let two = UnpackLimits {
            max_entries: 2,
            ..Default::default()
        };
        assert_eq!(unpack(&gzip(&tar), &two).unwrap().len(), 1);
        let one = UnpackLimits {
            max_entries: 1,
            ..Default::default()
        };
        assert_eq!(code_of(&gzip(&tar), &one), "too_many_entries");
        // Only folders: a bundle with no files.
        let folders = raw_tar(&[(b"run/", T::Directory, b"")]);
        assert_eq!(
            code_of(&gzip(&folders), &UnpackLimits::default()),
            "empty_bundle"
        );
        // GNU's contiguous files are plain files.
        let contiguous = raw_tar(&[(b"c.csv", T::Continuous, b"x")]);
        assert_eq!(names(&gzip(&contiguous)), ["c.csv"]);
    }

    #[test]
    fn links_devices_and_other_types_are_refused_by_name() {
        use tar::EntryType as T;
        let limits = UnpackLimits::default();
        for (kind, code) in [
            (T::Symlink, "link_entry"),
            (T::Link, "link_entry"),
            (T::Char, "special_entry"),
            (T::Block, "special_entry"),
            (T::Fifo, "special_entry"),
            (T::new(b'V'), "unsupported_entry"),
        ] {
            let gz = gzip(&raw_tar(&[(b"x/evil", kind, b"")]));
            let err = unpack(&gz, &limits).unwrap_err();
            assert_eq!(err.code, code, "{kind:?}");
            assert_eq!(err.details[0].file.as_deref(), Some("x/evil"), "{kind:?}");
        }
        let err = unpack(
            &gzip(&raw_tar(&[(b"a\xff.csv", T::Regular, b"x")])),
            &limits,
        )
        .unwrap_err();
        assert_eq!(err.code, "non_utf8_name");
        assert_eq!(err.details[0].file.as_deref(), Some("a\u{fffd}.csv"));
    }

    #[test]
    fn a_path_twice_is_refused_even_spelled_otherwise() {
        use tar::EntryType as T;
        let gz = gzip(&raw_tar(&[
            (b"a.csv", T::Regular, b"1"),
            (b"./a.csv", T::Regular, b"2"),
        ]));
        let err = unpack(&gz, &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.code, "duplicate_entry");
        assert_eq!(err.details[0].file.as_deref(), Some("a.csv"));
    }

    #[test]
    fn a_file_of_exactly_the_limit_passes_whole() {
        use tar::EntryType as T;
        let data = vec![7u8; 1000];
        let gz = gzip(&raw_tar(&[(b"f.bin", T::Regular, &data)]));
        let at = UnpackLimits {
            max_entry_bytes: 1000,
            ..Default::default()
        };
        let entries = unpack(&gz, &at).unwrap();
        assert_eq!((entries[0].size, entries[0].data.len()), (1000, 1000));
        assert_eq!(entries[0].data, data);
        let under = UnpackLimits {
            max_entry_bytes: 999,
            ..Default::default()
        };
        let err = unpack(&gz, &under).unwrap_err();
        assert_eq!(err.code, "entry_too_large");
        assert!(err.message.contains("1000 bytes or more"), "{err}");
        // Not kept: the same bound, the bytes digested instead.
        let mut seen = Vec::new();
        unpack_stream(&gz[..], gz.len() as u64, &at, |_| false, |e| seen.push(e)).unwrap();
        assert_eq!(seen[0].size, 1000);
        assert!(seen[0].data.is_empty());
        assert_eq!(
            seen[0].streamed_sha256.as_deref(),
            Some(hex::encode(Sha256::digest(&data)).as_str())
        );
        let err = unpack_stream(&gz[..], gz.len() as u64, &under, |_| false, |_| {}).unwrap_err();
        assert_eq!(err.code, "entry_too_large");
    }

    #[test]
    fn only_the_entries_asked_for_are_kept() {
        use tar::EntryType as T;
        let gz = gzip(&raw_tar(&[
            (b"keep.csv", T::Regular, b"a,b\n"),
            (b"trace.csv", T::Regular, b"0,1\n2,3\n"),
        ]));
        let mut seen = Vec::new();
        unpack_stream(
            &gz[..],
            gz.len() as u64,
            &UnpackLimits::default(),
            |p| p == "keep.csv",
            |e| seen.push(e),
        )
        .unwrap();
        assert_eq!(seen[0].data, b"a,b\n");
        assert_eq!(
            (seen[0].size, seen[0].streamed_sha256.as_deref()),
            (4, None)
        );
        assert!(seen[1].data.is_empty());
        assert_eq!(seen[1].size, 8);
        assert_eq!(
            seen[1].streamed_sha256.as_deref(),
            Some(hex::encode(Sha256::digest(b"0,1\n2,3\n")).as_str())
        );
    }

    #[test]
    fn the_unpacked_bound_is_inclusive_and_the_ratio_names_itself_only_when_it_binds() {
        let tar = tar_of(&[("a.csv", b"x,y\n")], true);
        let gz = gzip(&tar);
        let exact = UnpackLimits {
            max_unpacked_bytes: tar.len() as u64,
            max_ratio: 1e6,
            ..Default::default()
        };
        assert_eq!(unpack(&gz, &exact).unwrap().len(), 1);
        let less = UnpackLimits {
            max_unpacked_bytes: tar.len() as u64 - 1,
            ..exact
        };
        assert_eq!(code_of(&gz, &less), "too_large_unpacked");
        // A small bundle may inflate far past the ratio: the bound never
        // falls below 1 MiB (900 KiB of zeros compress about 1000 to 1 at the best level).
        let zeros = vec![0u8; 900 << 10];
        let small = gzip_best(&tar_of(&[("z.bin", &zeros)], true));
        assert!(small.len() * 200 < zeros.len(), "{}", small.len());
        assert_eq!(names(&small), ["z.bin"]);
        // 4 MiB of zeros: the ratio binds when its cap is below the size
        // limit, the size limit when the two are equal.
        let big = gzip_best(&tar_of(&[("z.bin", &vec![0u8; 4 << 20])], true));
        let ratio = ((2 << 20) as f64 / big.len() as f64).floor();
        let ratio_cap = (big.len() as f64 * ratio) as u64;
        assert!(ratio_cap > 1 << 20 && ratio_cap < 4 << 20, "{ratio_cap}");
        let binds = UnpackLimits {
            max_unpacked_bytes: ratio_cap + 1,
            max_ratio: ratio,
            ..Default::default()
        };
        let err = unpack(&big, &binds).unwrap_err();
        assert_eq!(err.code, "compression_ratio");
        assert!(
            err.message
                .contains(&format!("compressed size of {} bytes", big.len())),
            "{err}"
        );
        let equal = UnpackLimits {
            max_unpacked_bytes: ratio_cap,
            ..binds
        };
        assert_eq!(code_of(&big, &equal), "too_large_unpacked");
    }

    #[test]
    fn zeros_then_a_byte_after_the_marker_is_found_at_its_offset() {
        let mut tar = tar_of(&[("a.csv", b"x")], true);
        let byte_at = tar.len() as u64 + 100;
        tar.extend_from_slice(&[0; 100]);
        tar.push(b'!');
        let err = unpack(&gzip(&tar), &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.details[0].offset, Some(byte_at));
        assert!(
            err.details[0].message.contains("0x21"),
            "{}",
            err.details[0]
        );
        assert!(
            err.details[0]
                .message
                .contains(&format!("at offset {byte_at} ")),
            "{}",
            err.details[0]
        );
    }

    #[test]
    fn trailing_bytes_are_shown_eight_at_most() {
        let gz = gzip(&tar_of(&[("a.csv", b"x")], true));
        let mut tail = gz.clone();
        tail.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let err = unpack(&tail, &UnpackLimits::default()).unwrap_err();
        assert!(
            err.details[0]
                .message
                .contains("(bytes 01 02 03 04 05 06 07 08) starts at byte"),
            "{}",
            err.details[0]
        );
        assert!(err.message.contains("one gzip stream"), "{err}");
    }

    #[test]
    fn stored_bundles_are_checked_by_the_same_rules() {
        let gz = gzip(&tar_of(&[("a.csv", b"x")], true));
        assert_eq!(check_stored(&gz), Ok(()));
        let mut tail = gz.clone();
        tail.push(1);
        let err = check_stored(&tail).unwrap_err();
        assert_eq!(err.code, TRAILING_DATA);
        assert!(audit_hint(&err).contains("db audit-bundles"));
        let other = check_stored(b"not gzip").unwrap_err();
        assert_eq!(other.code, "not_gzip");
        assert_eq!(audit_hint(&other), "");
    }

    #[test]
    fn the_compressed_bytes_read_are_counted_either_way() {
        let mut c = Counted {
            inner: &b"abcdef"[..],
            consumed: 0,
        };
        let mut buf = [0u8; 4];
        assert_eq!(c.read(&mut buf).unwrap(), 4);
        assert_eq!(c.consumed, 4);
        assert_eq!(c.fill_buf().unwrap(), b"ef");
        c.consume(1);
        assert_eq!(c.consumed, 5);
        assert_eq!(c.read(&mut buf).unwrap(), 1);
        assert_eq!(c.consumed, 6);
    }

    #[test]
    fn backslashes_and_control_characters_are_named() {
        assert_eq!(
            clean_path("\\etc\\passwd").unwrap_err().code,
            "absolute_path"
        );
        for bad in ["a\\b.csv", "a/b\u{7}.csv", "x/\n"] {
            assert_eq!(clean_path(bad).unwrap_err().code, "bad_path", "{bad}");
        }
        // A colon past the second character is a name, not a drive.
        assert_eq!(clean_path("ab:c").unwrap(), "ab:c");
        assert_eq!(clean_path("a").unwrap(), "a");
    }

    #[test]
    fn data_after_the_end_of_archive_marker_is_refused() {
        let tar = tar_of(&[("a.csv", b"x")], true);
        let marker_end = tar.len() as u64 - 512;
        let mut hidden = tar.clone();
        hidden.truncate(tar.len() - 512);
        hidden.extend_from_slice(&tar_of(&[("system_info.txt.sh", b"echo hi")], true));
        let err = unpack(&gzip(&hidden), &UnpackLimits::default()).unwrap_err();
        assert_eq!(err.code, "bundle_trailing_data", "{err}");
        // The first zero block ends the archive; the hidden header is the
        // first non-zero byte after it.
        assert_eq!(err.details[0].offset, Some(marker_end));
        assert!(
            err.details[0].message.contains("0x73"),
            "{}",
            err.details[0]
        );
    }
}

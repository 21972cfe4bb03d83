//! Reading a harness run folder from disk for `pack`: every regular file,
//! by its path inside the folder. The rules crate packs bytes and reads no
//! disk; the walk, its refusals (links, special files, a manifest already
//! there) and its errors naming the path live here.

use std::path::Path;

use anyhow::{bail, Context};
use wattcounts_rules::bundle::MANIFEST_NAME;

/// A run folder as read from disk.
pub struct RunFiles {
    /// Every regular file, sorted by path.
    pub files: Vec<(String, Vec<u8>)>,
    /// Model folders (directly under the run folder) that hold no file: a
    /// model that failed at load leaves its folder empty (the harness logs
    /// it and goes on). A tar keeps no empty folder, so they are left out.
    pub empty_folders: Vec<String>,
}

/// Reads a run folder from disk.
pub fn read_run_folder(dir: &Path) -> anyhow::Result<RunFiles> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    if out.is_empty() {
        bail!("{} holds no files", dir.display());
    }
    let mut empty_folders = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let prefix = format!("{name}/");
            if !out.iter().any(|(p, _)| p.starts_with(&prefix)) {
                empty_folders.push(name);
            }
        }
    }
    empty_folders.sort();
    Ok(RunFiles {
        files: out,
        empty_folders,
    })
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let ft = entry.file_type()?;
        let rel = path
            .strip_prefix(root)?
            .to_str()
            .with_context(|| format!("{} is not a UTF-8 path", path.display()))?
            .replace('\\', "/");
        if ft.is_symlink() {
            bail!("{rel} is a symbolic link; bundles hold regular files only");
        } else if ft.is_dir() {
            walk(root, &path, out)?;
        } else if ft.is_file() {
            if rel == MANIFEST_NAME {
                bail!("{rel} already exists in the run folder; remove it, pack writes its own");
            }
            out.push((
                rel,
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
            ));
        } else {
            bail!("{rel} is not a regular file");
        }
    }
    Ok(())
}

//! `keygen` and `sign`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use wattcounts_rules::signing;

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Private key path; the public key goes to PATH.pub.
    #[arg(long)]
    pub out: PathBuf,
    /// Comment stored in the key.
    #[arg(long, default_value = "wattcounts")]
    pub comment: String,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
}

pub fn keygen(a: &KeygenArgs) -> anyhow::Result<()> {
    let pub_path = PathBuf::from(format!("{}.pub", a.out.display()));
    for p in [&a.out, &pub_path] {
        if p.exists() && !a.force {
            anyhow::bail!("{} exists; pass --force to replace it", p.display());
        }
    }
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let (private, public) = signing::generate_ed25519(&a.comment)?;
    write_private(&a.out, &private)?;
    std::fs::write(&pub_path, format!("{public}\n"))?;
    let key = signing::parse_public_key(&public)?;
    println!("wrote {} and {}", a.out.display(), pub_path.display());
    println!("fingerprint {}", signing::fingerprint(&key));
    Ok(())
}

fn write_private(path: &PathBuf, text: &str) -> anyhow::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The bundle (.tar.gz) to sign.
    pub bundle: PathBuf,
    /// OpenSSH private key (unencrypted; for a passphrase-protected key use
    /// `ssh-keygen -Y sign -n wattcounts-submission -f KEY BUNDLE`).
    #[arg(long)]
    pub key: PathBuf,
    /// Signature path; defaults to BUNDLE.sig.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn sign(a: &SignArgs) -> anyhow::Result<()> {
    let key_text =
        std::fs::read_to_string(&a.key).with_context(|| format!("reading {}", a.key.display()))?;
    let key = signing::load_private_key(&key_text)?;
    let bytes =
        std::fs::read(&a.bundle).with_context(|| format!("reading {}", a.bundle.display()))?;
    let armored = signing::sign(&key, signing::SUBMISSION_NAMESPACE, &bytes)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.sig", a.bundle.display())));
    std::fs::write(&out, armored)?;
    println!("wrote {}", out.display());
    Ok(())
}

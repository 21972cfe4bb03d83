//! The README's walkthrough with the real binaries and a real server on
//! port 0: keygen → register → pack → sign with ssh-keygen → submit →
//! submit again → verify receipt, with `wattcounts` and again with the
//! submitter's slim `wattcounts-submit`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{share_log_key, spawn_server, test_log_verifier, Need, Server};

const BIN: &str = env!("CARGO_BIN_EXE_wattcounts");

/// `wattcounts-submit`, which `cargo test` builds beside `wattcounts` (for
/// its own integration tests in crates/submit/tests).
fn slim_bin() -> PathBuf {
    let path =
        Path::new(BIN).with_file_name(format!("wattcounts-submit{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: run the workspace's tests (`cargo test` at the root), which build it",
        path.display()
    );
    path
}

fn start_server(data: &Path) -> Server {
    std::fs::create_dir_all(data).unwrap();
    share_log_key(data);
    spawn_server(&[std::ffi::OsStr::new("--data-dir"), data.as_os_str()])
}

fn run_with(bin: &Path, args: &[&str], dir: &Path) -> (i32, String, String) {
    // `pack` fetches a config the cache lacks from the Hub; these tests
    // have none to reach (the stand-in's test sets its own endpoint).
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str], dir: &Path) -> String {
    ok_with(Path::new(BIN), args, dir)
}

fn ok_with(bin: &Path, args: &[&str], dir: &Path) -> String {
    let (code, stdout, stderr) = run_with(bin, args, dir);
    assert_eq!(
        code,
        0,
        "{} {args:?} failed:\n{stdout}\n{stderr}",
        bin.display()
    );
    stdout
}

/// A small one-model L4 run written by `wattcounts demo generate` into
/// `dir/gen/l4`: its folder.
fn generated_l4_run(dir: &Path) -> std::path::PathBuf {
    ok_with(
        Path::new(BIN),
        &[
            "demo",
            "generate",
            "--out",
            "gen",
            "--gpus",
            "l4",
            "--models",
            "Qwen/Qwen2.5-0.5B-Instruct",
            "--small",
        ],
        dir,
    );
    std::fs::read_dir(dir.join("gen/l4"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path()
}

/// `pack` of the generated run for alice.
fn pack(bin: &Path, run_dir: &str, url: &str, out: &str, dir: &Path) {
    let config = "gen/l4/config-v2.yaml";
    ok_with(
        bin,
        &[
            "pack",
            run_dir,
            "--config",
            config,
            "--handle",
            "alice",
            "--key",
            "keys/me.pub",
            "--audience",
            url,
            "--out",
            out,
        ],
        dir,
    );
}

fn have_ssh_keygen() -> bool {
    Command::new("ssh-keygen")
        .arg("-?")
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn walkthrough_with_the_real_binary() {
    walkthrough(Path::new(BIN));
}

#[test]
fn walkthrough_with_the_slim_submitter() {
    walkthrough(&slim_bin());
}

/// The submitter's steps run with `bin`; the demo data and the server are
/// `wattcounts`'s.
fn walkthrough(bin: &Path) {
    let ok = |args: &[&str], dir: &Path| ok_with(bin, args, dir);
    let run = |args: &[&str], dir: &Path| run_with(bin, args, dir);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let server = start_server(&dir.join("data"));
    let url = server.url.as_str();

    let run_dir = generated_l4_run(dir);
    ok(&["keygen", "--out", "keys/me"], dir);
    let out = ok(
        &[
            "register", "--server", url, "--handle", "alice", "--key", "keys/me", "--name", "Alice",
        ],
        dir,
    );
    assert!(out.contains("registered 'alice'"), "{out}");
    let run_dir = run_dir.to_str().unwrap();
    pack(bin, run_dir, url, "b.tar.gz", dir);

    if have_ssh_keygen() {
        let st = Command::new("ssh-keygen")
            .args([
                "-q",
                "-Y",
                "sign",
                "-n",
                "wattcounts-submission",
                "-f",
                "keys/me",
                "b.tar.gz",
            ])
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(st.success(), "ssh-keygen -Y sign failed");
    } else {
        // Said out loud (and a failure where ssh-keygen is required): the
        // walkthrough then covers `wattcounts sign` only.
        crate::common::skip(
            Need::SshKeygen,
            "ssh-keygen is not installed (apt-get install openssh-client); signing the \
             walkthrough's second bundle with `wattcounts sign` instead",
        );
        ok(&["sign", "b.tar.gz", "--key", "keys/me"], dir);
    }
    let submit_b = [
        "submit",
        "b.tar.gz",
        "--signature",
        "b.tar.gz.sig",
        "--server",
        url,
    ];
    let first = ok(&submit_b, dir);
    let receipt: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(receipt["status"], "accepted", "{:#}", receipt["checks"]);
    assert_eq!(receipt["counts"]["models"], 1);
    assert_eq!(receipt["counts"]["configurations"], 3);
    assert_eq!(receipt["counts"]["iterations"], 9);
    let second = ok(&submit_b, dir);
    assert_eq!(first, second, "a resubmission prints the same receipt");

    // The receipt, checked offline against the log key (and the bundle).
    std::fs::write(dir.join("receipt.json"), &first).unwrap();
    let verifier = test_log_verifier();
    let verify = [
        "verify",
        "receipt",
        "receipt.json",
        "--log-key",
        &verifier,
        "--bundle",
        "b.tar.gz",
    ];
    let out = ok(&verify, dir);
    assert!(out.starts_with("receipt verified: submission "), "{out}");
    assert!(out.contains("the bundle's SHA-256 is the leaf's"), "{out}");

    // Packing twice differs only in submission_id and created_at.
    pack(bin, run_dir, url, "c.tar.gz", dir);
    let (a, b) = (
        std::fs::read(dir.join("b.tar.gz")).unwrap(),
        std::fs::read(dir.join("c.tar.gz")).unwrap(),
    );
    assert_ne!(a, b);
    let (code, out, _) = run(&[&verify[..6], &["c.tar.gz"]].concat(), dir);
    assert_eq!(code, 1, "another bundle's bytes are not vouched for: {out}");
    assert!(out.starts_with("NOT VERIFIED"), "{out}");

    // A rejected submission exits 1 and prints the error envelope.
    // (c.tar.gz with the signature of b.tar.gz.)
    let (code, stdout, _) = run(
        &[
            "submit",
            "c.tar.gz",
            "--signature",
            "b.tar.gz.sig",
            "--server",
            url,
        ],
        dir,
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("bad_signature"), "{stdout}");

    // Transport errors exit 2: a server that hangs up on every connection
    // (ours, on a port of its own, rather than a port assumed closed).
    let hangs_up = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", hangs_up.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in hangs_up.incoming() {
            drop(conn);
        }
    });
    let (code, _, stderr) = run(
        &[
            "submit",
            "b.tar.gz",
            "--signature",
            "b.tar.gz.sig",
            "--server",
            &dead,
        ],
        dir,
    );
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn our_signatures_verify_with_ssh_keygen() {
    if !have_ssh_keygen() {
        crate::common::skip(
            Need::SshKeygen,
            "ssh-keygen is not installed (apt-get install openssh-client)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(&["keygen", "--out", "k", "--comment", "alice@lab"], dir);
    std::fs::write(dir.join("file.bin"), b"bundle bytes").unwrap();
    ok(&["sign", "file.bin", "--key", "k"], dir);
    let public = std::fs::read_to_string(dir.join("k.pub")).unwrap();
    std::fs::write(dir.join("allowed"), format!("alice {public}")).unwrap();
    let out = Command::new("ssh-keygen")
        .args([
            "-Y",
            "verify",
            "-f",
            "allowed",
            "-I",
            "alice",
            "-n",
            "wattcounts-submission",
            "-s",
            "file.bin.sig",
        ])
        .current_dir(dir)
        .stdin(std::fs::File::open(dir.join("file.bin")).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ssh-keygen -Y verify refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ssh-keygen reads the private key we wrote, too.
    let out = Command::new("ssh-keygen")
        .args(["-y", "-f", "k"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(1),
        public.split_whitespace().nth(1)
    );
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The README's "Submit a bundle" (issue #53): its demo folder made as its
/// step 2 says, then the five steps run verbatim by bash, with `wattcounts`
/// on the PATH, a home of their own, and `URL=` set to the server's URL as
/// the README tells a reader to. The receipt says accepted (the run is
/// small, and honest), and the proof checks.
#[test]
fn the_readmes_five_steps_verbatim() {
    if !have_ssh_keygen() {
        crate::common::skip(
            Need::SshKeygen,
            "ssh-keygen is not installed (apt-get install openssh-client); the README's step 3 signs with it",
        );
        return;
    }
    if !have("curl") {
        crate::common::skip(
            Need::Curl,
            "curl is not installed (apt-get install curl); the README's step 5 reads the log key with it",
        );
        return;
    }
    let readme = include_str!("../../../README.md");
    let steps = readme
        .split("```sh\n")
        .find(|b| b.contains("# 1. A key"))
        .and_then(|b| b.split("```").next())
        .expect("the README's five steps");
    let generate = readme
        .lines()
        .find_map(|l| {
            l.trim_start_matches(['#', ' '])
                .strip_prefix("wattcounts demo generate")
                .map(|rest| format!("wattcounts demo generate{}", rest.trim_end_matches(')')))
        })
        .expect("the README names its demo folder");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let server = start_server(&dir.join("data"));
    // What the README says to do with its URL line: the URL `serve` printed.
    let steps: String = steps
        .lines()
        .map(|l| {
            if l.starts_with("URL=") {
                format!("URL={}", server.url)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("set -euo pipefail\n{generate}\n{steps}\n");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("HOME", dir)
        .env("PATH", path)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    assert!(stdout.contains("receipt verified: submission "), "{stdout}");
    let receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("receipt.json")).unwrap()).unwrap();
    assert_eq!(receipt["status"], "accepted", "{:#}", receipt["summary"]);
    // Consistency has no peers and the seeded schedule stands in for the
    // Poisson test: 23 of the 25 rules judged, all passed.
    assert_eq!(
        receipt["summary"],
        serde_json::json!(["no check failed or warned: 23 passed, 2 did not apply"]),
        "{receipt:#}"
    );
}

/// A stand-in for the Hugging Face Hub on a port of its own: answers
/// `GET /ORG/NAME/resolve/REV/config.json` with `config` for `path`, 404
/// for anything else; returns its base URL and the paths it was asked.
fn stand_in_hub(
    path: String,
    config: &'static str,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(8) {
            let Ok(mut conn) = conn else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            reader.read_line(&mut line).unwrap();
            // Drain the headers.
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            let got = line.split_whitespace().nth(1).unwrap_or("").to_string();
            seen.lock().unwrap().push(got.clone());
            let (status, body) = if got == path {
                ("200 OK", config)
            } else {
                ("404 Not Found", "{}")
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, asked)
}

/// `pack` fetches a config.json the Hugging Face cache lacks from the Hub
/// (issue #54; $HF_ENDPOINT, here a stand-in) at the revision asked, packs
/// it under model-configs/ with that revision, and says so; a model the
/// Hub does not have is packed without one, saying why.
#[test]
fn pack_fetches_a_missing_config_from_the_hub() {
    const CONFIG: &str = r#"{"model_type": "qwen2", "hidden_size": 896}"#;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run_dir = generated_l4_run(dir);
    ok(&["keygen", "--out", "keys/me"], dir);
    let (hub, asked) = stand_in_hub(
        "/Qwen/Qwen2.5-0.5B-Instruct/resolve/abc123/config.json".into(),
        CONFIG,
    );
    let pack = |revision: &str, out: &str| {
        Command::new(BIN)
            .args([
                "pack",
                run_dir.to_str().unwrap(),
                "--config",
                "gen/l4/config-v2.yaml",
                "--handle",
                "alice",
                "--key",
                "keys/me.pub",
                "--audience",
                "https://wattcounts.test",
                "--out",
                out,
                "--model-revision",
                revision,
            ])
            .current_dir(dir)
            .env("HF_HOME", dir.join("empty-hf"))
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_HUB_OFFLINE")
            .env("HF_ENDPOINT", &hub)
            .output()
            .unwrap()
    };
    let out = pack("Qwen/Qwen2.5-0.5B-Instruct=abc123", "a.tar.gz");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("model Qwen/Qwen2.5-0.5B-Instruct: config.json (43 bytes, revision abc123) fetched from {hub} and packed")),
        "{stderr}"
    );
    let bundle = std::fs::read(dir.join("a.tar.gz")).unwrap();
    let entries = wattcounts::bundle::unpack::unpack(&bundle, &Default::default()).unwrap();
    let shipped = entries
        .iter()
        .find(|e| e.path == "model-configs/Qwen/Qwen2.5-0.5B-Instruct/config.json")
        .expect("the fetched config in the bundle");
    assert_eq!(shipped.data, CONFIG.as_bytes());
    let manifest: serde_json::Value = serde_json::from_slice(
        &entries
            .iter()
            .find(|e| e.path == wattcounts::bundle::MANIFEST_NAME)
            .unwrap()
            .data,
    )
    .unwrap();
    assert_eq!(manifest["models"][0]["revision"], "abc123");
    // A revision the Hub does not have: packed without, the 404 named.
    let out = pack("Qwen/Qwen2.5-0.5B-Instruct=nope", "b.tar.gz");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("answered 404"), "{stderr}");
    assert!(stderr.contains("packed without one"), "{stderr}");
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        [
            "/Qwen/Qwen2.5-0.5B-Instruct/resolve/abc123/config.json",
            // Asked beside the config; the stand-in has none (a
            // single-file checkpoint), so nothing more is packed.
            "/Qwen/Qwen2.5-0.5B-Instruct/resolve/abc123/model.safetensors.index.json",
            "/Qwen/Qwen2.5-0.5B-Instruct/resolve/nope/config.json"
        ]
    );
}

/// `admin model add` as a maintainer runs it (issue #54): from a config
/// file, and from the Hub ($HF_ENDPOINT, here a stand-in) at a revision;
/// the figures printed are the formula's; a model added before is refused
/// (exit 1, `model_exists`), and no config at all is a usage error (2).
#[test]
fn admin_model_add_from_a_file_and_from_the_hub() {
    const CONFIG: &str = r#"{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "tie_word_embeddings": false, "torch_dtype": "bfloat16"}"#;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    share_log_key(&data);
    let token = crate::common::admin_token_flag();
    let server = spawn_server(&[
        std::ffi::OsStr::new("--data-dir"),
        data.as_os_str(),
        std::ffi::OsStr::new("--admin-token"),
        std::ffi::OsStr::new(&token),
    ]);
    let file = tmp.path().join("config.json");
    std::fs::write(&file, CONFIG).unwrap();
    let (hub, asked) = stand_in_hub(
        "/example-org/Hub-Llama-8B/resolve/abc123/config.json".into(),
        CONFIG,
    );
    let add = |args: &[&str]| {
        Command::new(BIN)
            .args([
                "admin",
                "model",
                "add",
                "--server",
                &server.url,
                "--reason",
                "issue 54",
            ])
            .args(args)
            .env("WATTCOUNTS_ADMIN_TOKEN", crate::common::ADMIN_TOKEN)
            .env("HF_ENDPOINT", &hub)
            .output()
            .unwrap()
    };
    // Llama-3.1-8B's shape: 8,029,995,008 parameters (worked in
    // crates/rules/src/model_config/tests.rs).
    let out = add(&[
        "--id",
        "example-org/File-Llama-8B",
        "--config",
        file.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("added 'example-org/File-Llama-8B' as catalogue model version 1: 8.03 B parameters (8.03 B active), 32 layers, hidden 4096, 32 heads (8 KV), bf16"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 waiting submission(s) judged again"),
        "{stdout}"
    );
    let out = add(&["--id", "example-org/Hub-Llama-8B", "--revision", "abc123"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("as catalogue model version 2"), "{stdout}");
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        ["/example-org/Hub-Llama-8B/resolve/abc123/config.json"]
    );
    let again = add(&[
        "--id",
        "example-org/File-Llama-8B",
        "--config",
        file.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("model_exists"));
    let none = add(&["--id", "example-org/Nothing"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("give --config FILE, or --revision REV"));
}

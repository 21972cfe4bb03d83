//! The slim submitter's offline commands as a submitter runs them on a GPU
//! machine: keygen, pack (of a harness folder in the harness's own layout)
//! and sign, with ./wattcounts.toml shared with a server's settings. The
//! network commands and `verify receipt` run against a real server in the
//! main crate's tests (tests/it/intake/cli.rs), which find this binary beside
//! theirs.

use std::path::Path;
use std::process::Command;

use wattcounts_rules::bundle::unpack::{unpack, UnpackLimits};
use wattcounts_rules::bundle::MANIFEST_NAME;
use wattcounts_rules::catalog;
use wattcounts_rules::signing;
use wattcounts_synth::{self as synth, SynthOptions};

const BIN: &str = env!("CARGO_BIN_EXE_wattcounts-submit");

fn run(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("WATTCOUNTS_CONFIG")
        // Offline: nothing is fetched from the Hub.
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
    let (code, stdout, stderr) = run(args, dir);
    assert_eq!(code, 0, "wattcounts-submit {args:?}:\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn help_lists_the_submitters_commands_and_no_server_ones() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(&["--help"], dir.path());
    for cmd in ["keygen", "pack", "sign", "register", "submit", "verify"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(cmd)),
            "{cmd} missing from:\n{help}"
        );
    }
    for cmd in ["serve", "db", "admin", "snapshot", "demo"] {
        assert!(
            !help.lines().any(|l| l.trim_start().starts_with(cmd)),
            "{cmd} listed in:\n{help}"
        );
    }
    let (code, _, stderr) = run(&["serve"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("unrecognized subcommand 'serve'"),
        "{stderr}"
    );
}

#[test]
fn keygen_pack_and_sign_make_a_bundle_the_service_would_unpack() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gpu = catalog::gpu_by_id("l4").unwrap();
    let model = catalog::model_by_id("Qwen/Qwen2.5-0.5B-Instruct").unwrap();
    let run_folder = synth::generate_run(gpu, &[model], &SynthOptions::small());
    let run_dir = synth::write_run(dir, &run_folder).unwrap();

    let out = ok(
        &["keygen", "--out", "keys/me", "--comment", "alice@lab"],
        dir,
    );
    assert!(out.contains("fingerprint SHA256:"), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("keys/me"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the private key is readable by others");
    }
    let (code, _, stderr) = run(&["keygen", "--out", "keys/me"], dir);
    assert_eq!(code, 2, "keygen over an existing key: {stderr}");
    assert!(stderr.contains("exists; pass --force"), "{stderr}");

    // The submitter's keys come from the shared file; the server's
    // (data_dir, admin_token) are skipped rather than refused.
    std::fs::write(
        dir.join("wattcounts.toml"),
        "handle = \"alice\"\naudience = \"https://wattcounts.test\"\n\
         data_dir = \"/srv/wattcounts\"\nadmin_token = [\"maintainer:00\"]\n",
    )
    .unwrap();
    let run_arg = run_dir.to_str().unwrap();
    ok(
        &[
            "pack",
            run_arg,
            "--config",
            "config-v2.yaml",
            "--key",
            "keys/me.pub",
            "--out",
            "run.tar.gz",
        ],
        dir,
    );
    let bundle = std::fs::read(dir.join("run.tar.gz")).unwrap();
    let entries = unpack(&bundle, &UnpackLimits::default()).unwrap();
    let manifest = entries
        .iter()
        .find(|e| e.path == MANIFEST_NAME)
        .expect("the manifest in the bundle");
    let manifest: serde_json::Value = serde_json::from_slice(&manifest.data).unwrap();
    assert_eq!(manifest["submitter"]["handle"], "alice", "{manifest:#}");
    assert_eq!(
        manifest["audience"], "https://wattcounts.test",
        "{manifest:#}"
    );
    let harness_files = run_folder.files.len();
    assert_eq!(
        entries.len(),
        harness_files + 1,
        "every harness file and the manifest"
    );

    let out = ok(&["sign", "run.tar.gz", "--key", "keys/me"], dir);
    assert_eq!(out.trim(), "wrote run.tar.gz.sig");
    let public =
        signing::parse_public_key(&std::fs::read_to_string(dir.join("keys/me.pub")).unwrap())
            .unwrap();
    let armored = std::fs::read(dir.join("run.tar.gz.sig")).unwrap();
    let sig = signing::parse_signature(&armored, signing::SUBMISSION_NAMESPACE, "run.tar.gz.sig")
        .unwrap();
    signing::verify(
        &public,
        signing::SUBMISSION_NAMESPACE,
        &bundle,
        &sig,
        "run.tar.gz.sig",
    )
    .expect("the signature verifies over the bundle's bytes");
    let mut edited = bundle.clone();
    *edited.last_mut().unwrap() ^= 1;
    assert!(
        signing::verify(&public, signing::SUBMISSION_NAMESPACE, &edited, &sig, "sig").is_err(),
        "one flipped byte still verified"
    );
}

/// A model that failed at load leaves its folder empty (issue #53): pack
/// says on stderr which folder it leaves out and why, and packs the rest.
#[test]
fn pack_names_the_empty_model_folders_it_leaves_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (run_folder, run_dir) = small_qwen_run(dir);
    // run_benchmark.sh's folder for a model that never loaded.
    std::fs::create_dir(run_dir.join("_Qwen_Qwen3-8B__")).unwrap();
    ok(&["keygen", "--out", "keys/me"], dir);
    let (code, stdout, stderr) = run(&pack_args(&run_dir), dir);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("note: left out _Qwen_Qwen3-8B__/: the folder is empty"),
        "{stderr}"
    );
    // Only that one: the model with files is in the bundle, not named.
    assert_eq!(stderr.matches("left out").count(), 1, "{stderr}");
    let bundle = std::fs::read(dir.join("run.tar.gz")).unwrap();
    let entries = unpack(&bundle, &UnpackLimits::default()).unwrap();
    assert_eq!(entries.len(), run_folder.files.len() + 1);
}

/// `pack` ships each model's config.json from the Hugging Face cache the
/// harness used (issue #54): $HF_HOME/hub/models--ORG--NAME with refs/main
/// and the snapshot; the manifest names it with its revision and digest,
/// and the bundle holds it under model-configs/.
#[test]
fn pack_ships_the_models_config_from_the_hugging_face_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (_, run_dir) = small_qwen_run(dir);
    let repo = dir.join("hf/hub/models--Qwen--Qwen2.5-0.5B-Instruct");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots/7ae5576")).unwrap();
    std::fs::write(repo.join("refs/main"), "7ae5576").unwrap();
    let config = br#"{"model_type": "qwen2", "hidden_size": 896}"#;
    std::fs::write(repo.join("snapshots/7ae5576/config.json"), config).unwrap();
    let index = br#"{"metadata": {"total_size": 988097536}, "weight_map": {}}"#;
    std::fs::write(
        repo.join("snapshots/7ae5576/model.safetensors.index.json"),
        index,
    )
    .unwrap();
    ok(&["keygen", "--out", "keys/me"], dir);
    let out = Command::new(BIN)
        .args(pack_args(&run_dir))
        .current_dir(dir)
        .env_remove("WATTCOUNTS_CONFIG")
        .env_remove("HF_HUB_CACHE")
        .env("HF_HOME", dir.join("hf"))
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("model Qwen/Qwen2.5-0.5B-Instruct: config.json (43 bytes, revision 7ae5576 from the Hugging Face cache) packed"),
        "{stderr}"
    );
    let bundle = std::fs::read(dir.join("run.tar.gz")).unwrap();
    let entries = unpack(&bundle, &UnpackLimits::default()).unwrap();
    let shipped = entries
        .iter()
        .find(|e| e.path == "model-configs/Qwen/Qwen2.5-0.5B-Instruct/config.json")
        .expect("the config in the bundle");
    assert_eq!(shipped.data, config.to_vec());
    let manifest = entries.iter().find(|e| e.path == MANIFEST_NAME).unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&manifest.data).unwrap();
    assert_eq!(
        manifest["models"],
        serde_json::json!([{
            "id": "Qwen/Qwen2.5-0.5B-Instruct",
            "revision": "7ae5576",
            "config": "model-configs/Qwen/Qwen2.5-0.5B-Instruct/config.json",
            "config_sha256": wattcounts_rules::digest::sha256_hex(config),
            "weights_index": "model-configs/Qwen/Qwen2.5-0.5B-Instruct/model.safetensors.index.json",
            "weights_index_sha256": wattcounts_rules::digest::sha256_hex(index),
        }])
    );
    let shipped = entries
        .iter()
        .find(|e| e.path == "model-configs/Qwen/Qwen2.5-0.5B-Instruct/model.safetensors.index.json")
        .expect("the index in the bundle");
    assert_eq!(shipped.data, index.to_vec());
}

/// A small one-model L4 run written into `dir`: (the run, its folder).
fn small_qwen_run(dir: &Path) -> (synth::RunFolder, std::path::PathBuf) {
    let gpu = catalog::gpu_by_id("l4").unwrap();
    let model = catalog::model_by_id("Qwen/Qwen2.5-0.5B-Instruct").unwrap();
    let run_folder = synth::generate_run(gpu, &[model], &SynthOptions::small());
    let run_dir = synth::write_run(dir, &run_folder).unwrap();
    (run_folder, run_dir)
}

/// `pack` of `run_dir` for alice with keys/me.pub, to run.tar.gz.
fn pack_args(run_dir: &Path) -> Vec<&str> {
    vec![
        "pack",
        run_dir.to_str().unwrap(),
        "--config",
        "config-v2.yaml",
        "--handle",
        "alice",
        "--audience",
        "https://wattcounts.test",
        "--key",
        "keys/me.pub",
        "--out",
        "run.tar.gz",
    ]
}

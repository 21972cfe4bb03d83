use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;

/// One configuration as v3 publishes it. The figures agree with each other
/// the way the published ones do: 293.9 W / 251.0 tok/s = 1.1709 J/token,
/// x 8289.87 tokens = 9706.6 J per request (Qwen3-8B, gpqa, B200, bs 8).
fn good_config() -> Value {
    json!({
        "activated_params_billions": 8.0, "architecture": "Dense Transformer",
        "avg_batch_size": 7.998084596967279, "avg_output_len": 8289.868686868687,
        "avg_power_watts": 293.91033781272114, "data_parallel": 1,
        "energy_per_request_joules": 9706.6138467097, "energy_per_token_joules": 1.1709007963039468,
        "expert_parallel": 1, "gpu_model": "B200", "max_num_seqs": 8,
        "median_itl_ms": 32.49889700964559, "model_id": "Qwen/Qwen3-8B", "nickname": "Qwen 3 8B",
        "num_gpus": 1, "output_throughput_tokens_per_sec": 251.01215981787306,
        "p90_itl_ms": 47.97513481462374, "p95_itl_ms": 52.595734488568255, "p99_itl_ms": 61.82553002727218,
        "tensor_parallel": 1, "total_params_billions": 8.0, "weight_precision": "bfloat16"
    })
}

fn folder(configs: Vec<Value>) -> BTreeMap<String, Vec<u8>> {
    let index = json!({
        "architectures": {"llm": ["gpqa"], "diffusion": ["text-to-image"]},
        "last_updated": "2026-02-16",
        "models": {"Qwen/Qwen3-8B": {"nickname": "Qwen 3 8B"}},
        "tasks": ["gpqa", "text-to-image"]
    });
    let task =
        json!({"task": "gpqa", "task_display_name": "GPQA Diamond", "configurations": configs});
    BTreeMap::from([
        (
            "index.json".to_string(),
            serde_json::to_vec(&index).unwrap(),
        ),
        (
            "tasks/gpqa.json".to_string(),
            serde_json::to_vec(&task).unwrap(),
        ),
    ])
}

fn read(files: &BTreeMap<String, Vec<u8>>) -> Result<PeerRelease, PeerError> {
    PeerSource::MlEnergyV3.read(&mut FilesInMemory(files.clone()))
}

fn with(key: &str, v: Value) -> Value {
    let mut c = good_config();
    c[key] = v;
    c
}

fn refused(c: Value) -> PeerError {
    read(&folder(vec![good_config(), c])).expect_err("refused")
}

#[test]
fn a_release_reads_every_figure_as_published() {
    let files = folder(vec![good_config()]);
    let r = read(&files).unwrap();
    assert_eq!(r.label, "2026-02-16");
    assert_eq!(r.configs.len(), 1);
    let c = &r.configs[0];
    assert_eq!(
        (c.file.as_str(), c.pointer.as_str()),
        ("tasks/gpqa.json", "/configurations/0")
    );
    assert_eq!(c.task_name, "GPQA Diamond");
    assert_eq!(c.gpu_name, "NVIDIA B200");
    assert_eq!(c.energy_per_token_joules, 1.1709007963039468);
    assert_eq!(c.p99_itl_ms, Some(61.82553002727218));
    assert_eq!((c.num_gpus, c.max_num_seqs), (1, 8));
    // Both files read, each with the digest of its own bytes.
    let paths: Vec<&str> = r.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["index.json", "tasks/gpqa.json"]);
    assert_eq!(
        r.files[1].sha256,
        crate::digest::sha256_hex(&files["tasks/gpqa.json"])
    );
    assert_eq!(r.files[1].bytes, files["tasks/gpqa.json"].len() as u64);
    assert_eq!(r.skipped.len(), 1);
    assert!(r.skipped[0].contains("text-to-image"), "{:?}", r.skipped);
}

#[test]
fn the_release_digest_is_over_sorted_paths_and_digests() {
    let f = |p: &str, h: &str| PeerFile {
        path: p.into(),
        sha256: h.into(),
        bytes: 1,
    };
    let ab = files_sha256(&[f("a", "11"), f("b", "22")]);
    // Worked by hand: the digest of the two lines in path order.
    assert_eq!(ab, crate::digest::sha256_hex(b"a\t11\nb\t22\n"));
    assert_eq!(files_sha256(&[f("b", "22"), f("a", "11")]), ab);
    assert_ne!(files_sha256(&[f("a", "11"), f("b", "23")]), ab);
}

#[test]
fn a_missing_field_is_named_by_file_and_pointer() {
    let mut c = good_config();
    c.as_object_mut().unwrap().remove("avg_power_watts");
    let e = refused(c);
    assert_eq!(e.file, "tasks/gpqa.json");
    assert_eq!(e.pointer, "/configurations/1/avg_power_watts");
    assert_eq!(e.rule, "missing");
    assert_eq!(
        e.to_string(),
        "tasks/gpqa.json /configurations/1/avg_power_watts: missing"
    );
}

#[test]
fn an_unknown_gpu_is_refused_with_the_ones_known() {
    let e = refused(with("gpu_model", json!("MI300X")));
    assert_eq!(e.pointer, "/configurations/1/gpu_model");
    assert!(
        e.rule.contains("unknown GPU \"MI300X\"") && e.rule.contains("H100, B200"),
        "{e}"
    );
}

#[test]
fn a_figure_in_the_wrong_unit_is_out_of_range() {
    // Energy per token in mJ (1170.9) instead of J.
    let e = refused(with("energy_per_token_joules", json!(1170.900796303947)));
    assert_eq!(e.pointer, "/configurations/1/energy_per_token_joules");
    assert!(
        e.rule
            .starts_with("out of range: 1170.900796303947 J is outside [0.0001, 100] J"),
        "{e}"
    );
    // ITL in µs: 32,498 is under the 60 s cap, but p99 (61,825) of the
    // same slip is not.
    let e = refused(with("p99_itl_ms", json!(61825.53)));
    assert!(e.rule.contains("outside"), "{e}");
    // Power in kW reads as a tiny, self-inconsistent power.
    let e = refused(with("avg_power_watts", json!(0.2939)));
    assert_eq!(e.pointer, "/configurations/1/energy_per_token_joules");
    assert!(e.rule.contains("disagrees with avg_power_watts"), "{e}");
}

#[test]
fn power_above_the_boards_tdp_is_refused() {
    // 1,300 W on one B200 (TDP 1,000 W): above 1.2 x TDP. Throughput and
    // energy per token are moved with it so only the power rule breaks.
    let mut c = with("avg_power_watts", json!(1300.0));
    c["output_throughput_tokens_per_sec"] = json!(1300.0 / 1.1709007963039468);
    let e = refused(c.clone());
    assert_eq!(e.pointer, "/configurations/1/avg_power_watts");
    assert!(
        e.rule
            .contains("1300.0 W per GPU over 1 GPUs is above 1.2 x the NVIDIA B200 TDP of 1000 W"),
        "{e}"
    );
    // The same power over two GPUs is 650 W each: fine.
    let mut two = c.clone();
    two["num_gpus"] = json!(2);
    assert!(read(&folder(vec![two])).is_ok());
}

#[test]
fn percentiles_out_of_order_and_a_wrong_type_are_named() {
    let e = refused(with("p90_itl_ms", json!(70.0)));
    assert!(e.rule.contains("percentiles out of order"), "{e}");
    let e = refused(with("num_gpus", json!("one")));
    assert_eq!(e.pointer, "/configurations/1/num_gpus");
    assert!(e.rule.contains("a whole number is wanted"), "{e}");
    let e = refused(with("model_id", json!("someone/unlisted")));
    assert!(e.rule.contains("not among index.json's models"), "{e}");
}

#[test]
fn unreadable_files_and_a_mislabelled_task_are_named() {
    let mut files = folder(vec![good_config()]);
    files.insert("tasks/gpqa.json".into(), b"{ not json".to_vec());
    let e = read(&files).unwrap_err();
    assert_eq!(e.file, "tasks/gpqa.json");
    assert!(e.rule.starts_with("not JSON"), "{e}");

    files.remove("tasks/gpqa.json");
    let e = read(&files).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tasks/gpqa.json: cannot be read: no such file"
    );

    let mut files = folder(vec![good_config()]);
    let task = json!({"task": "mmlu", "task_display_name": "x", "configurations": []});
    files.insert("tasks/gpqa.json".into(), serde_json::to_vec(&task).unwrap());
    let e = read(&files).unwrap_err();
    assert_eq!(e.pointer, "/task");
    assert!(
        e.rule.contains("\"mmlu\" where index.json lists \"gpqa\""),
        "{e}"
    );
}

#[test]
fn every_publisher_gpu_is_in_the_catalogue() {
    for (published, name) in mlenergy_v3::GPUS.iter().chain(&mlenergy_v2::GPUS) {
        assert!(
            crate::catalog::gpu_by_nvml_name(name).is_some(),
            "{published} -> {name}"
        );
    }
    assert_eq!(
        PeerSource::parse("mlenergy-v3"),
        Some(PeerSource::MlEnergyV3)
    );
    assert_eq!(
        PeerSource::parse("peer:mlenergy-v3"),
        Some(PeerSource::MlEnergyV3)
    );
    assert_eq!(PeerSource::parse("real"), None);
}

/// A v2 folder: one task, one configuration file, as v2 writes them.
fn v2_folder(config: Value) -> FilesInMemory {
    let models =
        json!({"meta-llama/Meta-Llama-3.1-8B-Instruct": {"nickname": "Llama 3.1 8B", "params": 8}});
    FilesInMemory(BTreeMap::from([
        (
            "chat/models.json".to_string(),
            serde_json::to_vec(&models).unwrap(),
        ),
        (
            "chat/H100 80GB HBM3/meta-llama/Meta-Llama-3.1-8B-Instruct/bs64+tp1+pp1.json"
                .to_string(),
            serde_json::to_vec(&config).unwrap(),
        ),
    ]))
}

fn v2_config() -> Value {
    json!({"Model": "meta-llama/Meta-Llama-3.1-8B-Instruct", "GPU": "NVIDIA H100 80GB HBM3", "TP": 1, "PP": 1,
        "Energy/req (J)": 120.0, "Avg TPOT (s)": 0.025, "Token tput (tok/s)": 2400.0,
        "Avg Output Tokens": 300.0, "Avg BS (reqs)": 63.5, "Max BS (reqs)": 64})
}

#[test]
fn v2_reads_its_figures_and_derives_energy_per_token() {
    let r = PeerSource::MlEnergyV2
        .read(&mut v2_folder(v2_config()))
        .unwrap();
    assert_eq!(r.configs.len(), 1);
    let c = &r.configs[0];
    // 120 J per request over 300 tokens: 0.4 J per token; TPOT 25 ms.
    assert_eq!(c.energy_per_token_joules, 0.4);
    assert_eq!(c.mean_itl_ms, Some(25.0));
    assert_eq!((c.avg_power_watts, c.median_itl_ms), (None, None));
    assert_eq!(
        (c.num_gpus, c.max_num_seqs, c.total_params_billions),
        (1, 64, Some(8.0))
    );
    assert!(r.label.starts_with("files "), "{}", r.label);
}

#[test]
fn v2_errors_name_the_file_and_field() {
    let file = "chat/H100 80GB HBM3/meta-llama/Meta-Llama-3.1-8B-Instruct/bs64+tp1+pp1.json";
    let mut c = v2_config();
    c["GPU"] = json!("NVIDIA L4");
    let e = PeerSource::MlEnergyV2.read(&mut v2_folder(c)).unwrap_err();
    assert_eq!((e.file.as_str(), e.pointer.as_str()), (file, "/GPU"));
    let mut c = v2_config();
    c["Max BS (reqs)"] = json!(128);
    let e = PeerSource::MlEnergyV2.read(&mut v2_folder(c)).unwrap_err();
    assert!(e.rule.contains("128 where the file name says bs64"), "{e}");
    let mut c = v2_config();
    c.as_object_mut().unwrap().remove("Avg TPOT (s)");
    let e = PeerSource::MlEnergyV2.read(&mut v2_folder(c)).unwrap_err();
    assert_eq!(e.to_string(), format!("{file} /Avg TPOT (s): missing"));
    // Energy per request in kJ: 0.12 J/request is 0.0004 mJ per token.
    let mut c = v2_config();
    c["Energy/req (J)"] = json!(0.012);
    let e = PeerSource::MlEnergyV2.read(&mut v2_folder(c)).unwrap_err();
    assert!(e.rule.starts_with("out of range"), "{e}");
}

/// A two-row v1 folder: koala-13b on the A100 (2144.83 J in 12.14 s per
/// response of 265.57 tokens: 8.076 J/token, 176.6 W) and on the A40.
fn v1_folder() -> BTreeMap<String, Vec<u8>> {
    let csv = "model,throughput,response_length,latency,energy\n\
               BAIR/koala-13b,21.207721076321384,265.5732034922767,12.1433556952537,2144.8338435191445\n";
    BTreeMap::from([
        (
            "schema.yaml".into(),
            b"gpu: [\"A100\", \"A40\"]\ntask: [\"chat\"]\n".to_vec(),
        ),
        (
            "models.json".into(),
            br#"{"BAIR/koala-13b": {"url": "x", "nickname": "BAIR/Koala-13B", "params": 13}}"#
                .to_vec(),
        ),
        ("A100_chat_benchmark.csv".into(), csv.as_bytes().to_vec()),
        ("A40_chat_benchmark.csv".into(), csv.as_bytes().to_vec()),
        ("score.csv".into(), b"model,arc\n".to_vec()),
    ])
}

#[test]
fn v1_reads_a_family_as_the_stated_board_and_the_statement_is_its_identity() {
    let read = |a100: &str| {
        let stated = GpuStatements::from([("A100".to_string(), a100.to_string())]);
        PeerSource::MlEnergyV1
            .read_stated(&mut FilesInMemory(v1_folder()), &stated)
            .unwrap()
    };
    let sxm = read("NVIDIA A100-SXM4-40GB");
    assert_eq!(sxm.configs.len(), 2);
    let c = &sxm.configs[0];
    assert_eq!(
        (c.gpu_model.as_str(), c.gpu_name.as_str()),
        ("A100", "NVIDIA A100-SXM4-40GB")
    );
    assert!((c.energy_per_token_joules - 2144.8338435191445 / 265.5732034922767).abs() < 1e-12);
    assert_eq!(
        (c.num_gpus, c.max_num_seqs, c.pointer.as_str()),
        (1, 1, "row 2")
    );
    assert_eq!(sxm.configs[1].gpu_name, "NVIDIA A40");
    assert_eq!(
        sxm.statements,
        vec!["A100 = NVIDIA A100-SXM4-40GB (the operator's statement)".to_string()]
    );
    assert_eq!(
        sxm.skipped,
        vec![
            "score.csv: NLP accuracy (ARC, HellaSwag, TruthfulQA), not an energy figure"
                .to_string()
        ]
    );
    // The same files read as another board are another release; the same
    // statement again is the same one.
    let pcie = read("NVIDIA A100-PCIE-40GB");
    assert_ne!(sxm.files_sha256(), pcie.files_sha256());
    assert_eq!(
        sxm.files_sha256(),
        read("NVIDIA A100-SXM4-40GB").files_sha256()
    );
    assert_eq!(files_sha256(&sxm.files), files_sha256(&pcie.files));
    // Without a statement the A100 is refused, naming every board.
    let e = PeerSource::MlEnergyV1
        .read(&mut FilesInMemory(v1_folder()))
        .unwrap_err();
    assert_eq!(e.file, "A100_chat_benchmark.csv");
    assert!(
        e.rule.contains("--gpu A100=<one of: NVIDIA A100-SXM4-40GB"),
        "{e}"
    );
}

#[test]
fn v1_refuses_a_power_no_single_gpu_draws() {
    // 2144.83 J in 12.14 s is 176.6 W; a 0.1 s latency makes it 21,448 W,
    // above 1.2 × the A40's 300 W.
    let mut files = v1_folder();
    files.remove("A100_chat_benchmark.csv");
    files.insert(
        "A40_chat_benchmark.csv".into(),
        b"model,throughput,response_length,latency,energy\nBAIR/koala-13b,21.2,265.57,0.1,2144.83\n".to_vec(),
    );
    let e = PeerSource::MlEnergyV1
        .read(&mut FilesInMemory(files))
        .unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.pointer.as_str()),
        ("A40_chat_benchmark.csv", "row 2 column energy")
    );
    assert!(
        e.rule
            .contains("21448.3 W, above 1.2 x the 300 W TDP of the NVIDIA A40"),
        "{e}"
    );
}

/// v1 ran each model on one GPU in FP16: koala-13b's weights are 13 B x 2
/// bytes = 26,000,000,000 bytes (26 GB), more than a 16 GB V100 holds and
/// less than a 32 GB one. Its power (2144.83 J in 12.14 s, 176.6 W) is
/// within 1.2 x both PCIe boards' 250 W, so memory alone decides.
#[test]
fn v1_refuses_a_board_whose_memory_cannot_hold_the_files_models() {
    let mut files = v1_folder();
    let csv = files.remove("A100_chat_benchmark.csv").unwrap();
    files.remove("A40_chat_benchmark.csv");
    files.insert(
        "schema.yaml".into(),
        b"gpu: [\"V100\"]\ntask: [\"chat\"]\n".to_vec(),
    );
    files.insert("V100_chat_benchmark.csv".into(), csv);
    let read = |board: &str| {
        let stated = GpuStatements::from([("V100".to_string(), board.to_string())]);
        PeerSource::MlEnergyV1.read_stated(&mut FilesInMemory(files.clone()), &stated)
    };
    let e = read("Tesla V100-PCIE-16GB").unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.pointer.as_str()),
        ("V100_chat_benchmark.csv", "row 2 column model")
    );
    assert!(
        e.rule.starts_with(
            "BAIR/koala-13b (13 B parameters) needs 26000000000 bytes (26.0 GB) of FP16 weights (13 B x 2 bytes), more than the 16 GB of the Tesla V100-PCIE-16GB (--gpu V100=Tesla V100-PCIE-16GB, the operator's statement)"
        ),
        "{e}"
    );
    let ok = read("Tesla V100-PCIE-32GB").unwrap();
    assert_eq!(ok.configs.len(), 1);
    assert_eq!(ok.configs[0].gpu_name, "Tesla V100-PCIE-32GB");
}

/// `ALL` is written from the same list as the enum (`peer_sources!`): each
/// source is in it once, and its slug and origin read back as itself.
#[test]
fn every_source_is_listed_once_and_parses_back() {
    let mut slugs: Vec<&str> = PeerSource::ALL.iter().map(|p| p.info().slug).collect();
    for p in PeerSource::ALL {
        assert_eq!(PeerSource::parse(p.info().slug), Some(p));
        assert_eq!(PeerSource::parse(p.origin()), Some(p));
        assert_eq!(p.origin(), format!("peer:{}", p.info().slug));
        // An exhaustive match: a new variant fails to compile here until
        // it is named, and then must be in ALL.
        match p {
            PeerSource::MlEnergyV3 | PeerSource::MlEnergyV2 | PeerSource::MlEnergyV1 => {}
        }
    }
    slugs.sort_unstable();
    slugs.dedup();
    assert_eq!(slugs, ["mlenergy-v1", "mlenergy-v2", "mlenergy-v3"]);
}

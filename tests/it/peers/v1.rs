//! ML.ENERGY v1 (an excerpt): it needs the operator's GPU boards, reads back
//! as published, and a bad file is refused by row and column.

use super::*;
use crate::common::TestApp;
use axum::http::StatusCode;

/// ML.ENERGY v1 (2023): its files name the A100 and V100 only by family,
/// so the import asks which board each was and refuses a guess; with the
/// operator's statements every figure reads back as the CSV has it, energy
/// per token is derived (J per response ÷ response length), the statements
/// are in the release's label and identity, and another statement is
/// another release, not a relabelling.
#[tokio::test]
async fn the_v1_excerpt_needs_the_operators_gpu_boards_and_reads_back_as_published() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    let rejected = i32::from(wattcounts::cli::EXIT_REJECTED);
    for (extra, want) in [
        (
            vec![],
            "A100_chat_benchmark.csv: the files name the GPU only as \"A100\", which the catalogue holds as 4 boards with different TDPs; state which one was measured: --gpu A100=<one of: NVIDIA A100-SXM4-40GB, NVIDIA A100-SXM4-80GB, NVIDIA A100-PCIE-40GB, NVIDIA A100 80GB PCIe>",
        ),
        (
            vec!["--gpu", "A100=NVIDIA A100-SXM4-40GB"],
            "V100_instruct_benchmark.csv: the files name the GPU only as \"V100\"",
        ),
        (
            vec!["--gpu", "A100=NVIDIA H100 80GB HBM3", "--gpu", "V100=Tesla V100-SXM2-32GB"],
            "A100_chat_benchmark.csv: --gpu A100=NVIDIA H100 80GB HBM3: not a catalogue A100",
        ),
        (
            vec!["--gpu", "H100=NVIDIA H100 80GB HBM3"],
            "schema.yaml /gpu: --gpu H100=…: the files name no GPU \"H100\" (they name A100, A40, V100)",
        ),
        // A board too small for the files' models: v1 ran each on one GPU
        // in FP16, and row 2 of the V100 file is CAMEL-13B (models.json:
        // 13 B parameters), 13e9 x 2 bytes = 26e9 bytes, above the 16 GB
        // (16e9 bytes) of a V100 PCIe 16GB. The A100 (40 GB) and A40
        // (48 GB) rows before it fit.
        (
            vec!["--gpu", "A100=NVIDIA A100-SXM4-40GB", "--gpu", "V100=Tesla V100-PCIE-16GB"],
            "V100_instruct_benchmark.csv row 2 column model: camel-ai/CAMEL-13B-Combined-Data (13 B parameters) needs 26000000000 bytes (26.0 GB) of FP16 weights (13 B x 2 bytes), more than the 16 GB of the Tesla V100-PCIE-16GB (--gpu V100=Tesla V100-PCIE-16GB, the operator's statement)",
        ),
    ] {
        let (code, out, err) = import_with(&app, "mlenergy-v1", &v1_excerpt(), V1_REF, &extra);
        assert_eq!(code, rejected, "{extra:?}: {out}{err}");
        assert!(err.contains(want), "{extra:?}: wanted '{want}' in:\n{err}");
        app.assert_nothing_stored_since(&before).await;
    }
    // --gpu means nothing to a release that names its boards.
    let (code, _, err) = import_with(&app, "mlenergy-v3", &shipped(), COMMIT, &V1_BOARDS[..2]);
    assert_eq!(code, rejected, "{err}");
    assert!(err.contains("--gpu is for mlenergy-v1"), "{err}");

    let (code, out, err) = import_with(&app, "mlenergy-v1", &v1_excerpt(), V1_REF, &V1_BOARDS);
    assert_eq!(code, 0, "{out}{err}");
    // 21 A100 rows, 23 A40 rows, 21 V100 rows.
    assert!(
        out.contains("as peer:mlenergy-v1") && out.contains("65 configurations"),
        "{out}"
    );
    assert!(out.contains("skipped: score.csv: NLP accuracy"), "{out}");
    for (file, task, family, board) in [
        (
            "A100_chat_benchmark.csv",
            "chat",
            "A100",
            "NVIDIA A100-SXM4-40GB",
        ),
        (
            "A40_chat-concise_benchmark.csv",
            "chat-concise",
            "A40",
            "NVIDIA A40",
        ),
        (
            "V100_instruct_benchmark.csv",
            "instruct",
            "V100",
            "Tesla V100-SXM2-32GB",
        ),
    ] {
        let (status, body) = app
            .get(&format!(
                "/api/v1/peers/mlenergy-v1?task={task}&gpu={family}&per_page=100"
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let rows = body["configurations"].as_array().unwrap();
        let published = v1_rows(file);
        assert_eq!(rows.len(), published.len(), "{file}");
        for (model, [throughput, length, _latency, energy]) in &published {
            let row = rows
                .iter()
                .find(|r| r["model_id"] == model.as_str())
                .unwrap_or_else(|| panic!("{file}: {model} not served"));
            assert_eq!(row["file"], file);
            assert_eq!(row["gpu_model"], family);
            assert_eq!(row["gpu_name"], board);
            assert_eq!(row["energy_per_request_joules"].as_f64(), Some(*energy));
            assert_eq!(
                row["output_throughput_tokens_per_sec"].as_f64(),
                Some(*throughput)
            );
            assert_eq!(row["avg_output_len"].as_f64(), Some(*length));
            assert_eq!(
                row["energy_per_token_joules"].as_f64(),
                Some(energy / length)
            );
            // The protocol's, not the file's: one GPU, batch size 1, FP16.
            assert_eq!(
                (row["num_gpus"].as_u64(), row["max_num_seqs"].as_u64()),
                (Some(1), Some(1))
            );
            assert_eq!(row["weight_precision"], "fp16");
            assert!(
                row["avg_power_watts"].is_null() && row["median_itl_ms"].is_null(),
                "{row}"
            );
        }
        let label = body["release"]["label"].as_str().unwrap();
        assert!(
            label.contains("A100 read as NVIDIA A100-SXM4-40GB (operator's statement)")
                && label.contains("A40 read as NVIDIA A40,")
                && label.contains("V100 read as Tesla V100-SXM2-32GB (operator's statement)"),
            "{label}"
        );
        assert!(body["source"]["licence_statement"]
            .as_str()
            .unwrap()
            .contains("non-commercial use only"));
    }
    let (_, html) = text(&app, "/peers/mlenergy-v1").await;
    // The page names the protocol and how each GPU was read.
    assert!(html.contains("batch size 1, FP16"), "{html}");
    assert!(
        html.contains("A100 read as NVIDIA A100-SXM4-40GB"),
        "{html}"
    );

    // The same files and statements again: nothing changes.
    let (code, out, _) = import_with(&app, "mlenergy-v1", &v1_excerpt(), V1_REF, &V1_BOARDS);
    assert_eq!(code, 0);
    assert!(out.contains("unchanged:"), "{out}");
    // Another V100 board: another release beside the first.
    let (code, out, err) = import_with(
        &app,
        "mlenergy-v1",
        &v1_excerpt(),
        V1_REF,
        &[
            "--gpu",
            "A100=NVIDIA A100-SXM4-40GB",
            "--gpu",
            "V100=Tesla V100-PCIE-32GB",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("imported"), "{out}");
    let (_, list) = app.get("/api/v1/peers").await;
    let v1: Vec<_> = list["releases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["release"]["origin"] == "peer:mlenergy-v1")
        .collect();
    assert_eq!(v1.len(), 2, "{list}");
    let (_, newest) = app.get("/api/v1/peers/mlenergy-v1?task=instruct").await;
    assert_eq!(newest["newest_release"], true);
    assert_eq!(
        newest["configurations"][0]["gpu_name"],
        "Tesla V100-PCIE-32GB"
    );
}

/// A v1 file whose cell is not a number, or whose energy is in kJ, is
/// refused by file, row and column, and nothing is stored.
#[tokio::test]
async fn a_bad_v1_file_is_refused_by_row_and_column() {
    let app = TestApp::new().await;
    let before = app.stored().await;
    for (name, edit, want) in [
        (
            "not a number",
            Box::new(|t: &str| t.replacen("21.207721076321384", "fast", 1))
                as Box<dyn Fn(&str) -> String>,
            "A100_chat_benchmark.csv row 2 column throughput: a number is wanted, found \"fast\"",
        ),
        (
            // Row 2's 2144.83 J in 12.14 s is 176.6 W; × 1000 is 176,627 W.
            "energy in mJ",
            Box::new(|t: &str| t.replacen("2144.8338435191445", "2144833.8435191445", 1)),
            "A100_chat_benchmark.csv row 2 column energy: out of range",
        ),
        (
            "unknown model",
            Box::new(|t: &str| t.replacen("BAIR/koala-13b", "BAIR/koala-14b", 1)),
            "A100_chat_benchmark.csv row 2 column model: \"BAIR/koala-14b\" is not in models.json",
        ),
        (
            "short row",
            Box::new(|t: &str| t.replacen(",12.1433556952537,2144.8338435191445", "", 1)),
            "A100_chat_benchmark.csv row 2: not CSV",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        for f in crate::common::walk_files(&v1_excerpt()) {
            std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
        }
        let path = dir.path().join("A100_chat_benchmark.csv");
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = edit(&text);
        assert_ne!(edited, text, "{name}: the edit found nothing");
        std::fs::write(&path, edited).unwrap();
        let (code, out, err) = import_with(&app, "mlenergy-v1", dir.path(), V1_REF, &V1_BOARDS);
        assert_eq!(
            code,
            i32::from(wattcounts::cli::EXIT_REJECTED),
            "{name}: {out}{err}"
        );
        assert!(err.contains(want), "{name}: wanted '{want}' in:\n{err}");
        app.assert_nothing_stored_since(&before).await;
    }
}

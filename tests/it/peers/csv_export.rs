//! Peer CSV exports (issue #53): a publisher's text that reads as a
//! spreadsheet formula is defused in every format's export.

use super::*;
use crate::common::TestApp;
use serde_json::Value;

/// ML.ENERGY v3's CSV export: a nickname, an architecture, a precision
/// and a model id (listed in index.json, as the importer wants) of the
/// publisher's gpqa file, each starting as a formula would. Every one is
/// shown behind an apostrophe in the CSV; the JSON keeps the text as
/// published.
#[tokio::test]
async fn the_v3_csv_export_defuses_formulas_in_the_publishers_text() {
    let app = TestApp::new().await;
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&shipped(), dir.path());
    let set = |i: usize, key: &'static str, text: &'static str| {
        with_edit_at(dir.path(), i, |c| {
            c.insert(key.into(), text.into());
        });
    };
    set(0, "nickname", FORMULAS[0]);
    set(0, "architecture", FORMULAS[1]);
    set(1, "nickname", FORMULAS[2]);
    set(1, "weight_precision", FORMULAS[4]);
    set(2, "model_id", FORMULAS[3]);
    set(2, "weight_precision", FORMULAS[5]);
    edit_json(dir.path(), "index.json", |index| {
        index["models"][FORMULAS[3]] = serde_json::json!({"nickname": "planted"});
    });
    let (code, out, err) = import(&app, dir.path());
    assert_eq!(code, 0, "{out}\n{err}");

    let (head, rows) = csv_export(
        &app,
        "/api/v1/peers/mlenergy-v3/configurations.csv?task=gpqa&per_page=1000",
    )
    .await;
    // The gpqa file's 187 configurations, all on the one page.
    assert_eq!(rows.len(), 187);
    assert_defused(&head, &rows, &FORMULAS);
    let (_, json) = app
        .get("/api/v1/peers/mlenergy-v3?task=gpqa&per_page=1000")
        .await;
    assert!(
        json["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nickname"] == FORMULAS[0]),
        "the JSON holds the nickname as published"
    );
}

/// ML.ENERGY v2's CSV export: its text comes from folder names as well as
/// files. The task folder `=chat` (the task and every file path), two
/// organisations' folders and `Model`s (`@google`, `+meta-llama`) and
/// three nicknames in models.json (`-`, tab, CR) start as formulas would.
#[tokio::test]
async fn the_v2_csv_export_defuses_formulas_in_folder_names_and_files() {
    let app = TestApp::new().await;
    let dir = tempfile::tempdir().unwrap();
    let from = v2_excerpt();
    for f in crate::common::walk_files(&from) {
        let rel = f.strip_prefix(&from).unwrap().to_str().unwrap();
        let rel = rel
            .strip_prefix("chat/")
            .map_or(rel.to_string(), |r| format!("=chat/{r}"));
        let to = dir.path().join(&rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
    // One configuration file moved under another organisation, whose
    // `Model` names it (the importer checks the two agree).
    let moved = |gpu: &str, org: &str, model: &str, file: &str, new_org: &str| {
        let old = dir.path().join(format!("=chat/{gpu}/{org}/{model}/{file}"));
        let new_dir = dir.path().join(format!("=chat/{gpu}/{new_org}/{model}"));
        std::fs::create_dir_all(&new_dir).unwrap();
        let mut doc: Value = serde_json::from_slice(&std::fs::read(&old).unwrap()).unwrap();
        doc["Model"] = format!("{new_org}/{model}").into();
        std::fs::write(new_dir.join(file), serde_json::to_vec(&doc).unwrap()).unwrap();
        std::fs::remove_file(&old).unwrap();
    };
    let llama = "Meta-Llama-3.1-8B-Instruct";
    moved(
        "A100-SXM4-40GB",
        "google",
        "gemma-2-27b-it",
        "bs128+tp4+pp1.json",
        "@google",
    );
    for file in ["bs128+tp1+pp1.json", "bs64+tp1+pp1.json"] {
        moved("H100 80GB HBM3", "meta-llama", llama, file, "+meta-llama");
    }
    edit_json(dir.path(), "=chat/models.json", |models| {
        models["@google/gemma-2-27b-it"] = serde_json::json!({"nickname": "\tTAB", "params": 27});
        models[format!("+meta-llama/{llama}").as_str()] =
            serde_json::json!({"nickname": "\rCR", "params": 8});
        models[format!("meta-llama/{llama}").as_str()]["nickname"] = "-1+2".into();
    });
    let (code, out, err) = import_as(
        &app,
        "mlenergy-v2",
        dir.path(),
        "c3af7f31e231a2a7021c5f8e2a54dd712d02e6e2",
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("5 configurations"), "{out}");

    // The one task, `=chat`, is the page's.
    let (head, rows) = csv_export(&app, "/api/v1/peers/mlenergy-v2/configurations.csv").await;
    assert_eq!(rows.len(), 5);
    let planted = [
        "=chat",
        "=chat/A100-SXM4-40GB/@google/gemma-2-27b-it/bs128+tp4+pp1.json",
        "@google/gemma-2-27b-it",
        "+meta-llama/Meta-Llama-3.1-8B-Instruct",
        "-1+2",
        "\tTAB",
        "\rCR",
    ];
    assert_defused(&head, &rows, &planted);
}

/// The 2023 leaderboard's (v1) CSV export: the task `=chat` (schema.yaml,
/// and the file named for it), a model id in the benchmark CSV
/// (`@BAIR/koala-13b`, in models.json with nickname `+1+1`) and three
/// nicknames in models.json (`-`, tab, CR) start as formulas would.
#[tokio::test]
async fn the_v1_csv_export_defuses_formulas_in_the_publishers_text() {
    let app = TestApp::new().await;
    let dir = tempfile::tempdir().unwrap();
    for f in crate::common::walk_files(&v1_excerpt()) {
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    let schema = std::fs::read_to_string(dir.path().join("schema.yaml")).unwrap();
    let edited = schema.replacen("\"chat\",", "\"=chat\",", 1);
    assert_ne!(edited, schema, "schema.yaml lists the chat task");
    std::fs::write(dir.path().join("schema.yaml"), edited).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("A100_chat_benchmark.csv")).unwrap();
    let edited = csv.replacen("\nBAIR/koala-13b,", "\n@BAIR/koala-13b,", 1);
    assert_ne!(edited, csv, "row 2 is koala-13b");
    std::fs::remove_file(dir.path().join("A100_chat_benchmark.csv")).unwrap();
    std::fs::write(dir.path().join("A100_=chat_benchmark.csv"), edited).unwrap();
    edit_json(dir.path(), "models.json", |models| {
        models["@BAIR/koala-13b"] = serde_json::json!({"nickname": "+1+1", "params": 13});
        models["lmsys/vicuna-13B"]["nickname"] = "-1+2".into();
        models["metaai/llama-7B"]["nickname"] = "\tTAB".into();
        models["tatsu-lab/alpaca-7B"]["nickname"] = "\rCR".into();
    });
    let (code, out, err) = import_with(&app, "mlenergy-v1", dir.path(), V1_REF, &V1_BOARDS);
    assert_eq!(code, 0, "{out}\n{err}");

    // `=` is %3D in a query.
    let (head, rows) = csv_export(
        &app,
        "/api/v1/peers/mlenergy-v1/configurations.csv?task=%3Dchat",
    )
    .await;
    // The A100 file's 21 rows.
    assert_eq!(rows.len(), 21);
    let planted = ["=chat", "@BAIR/koala-13b", "+1+1", "-1+2", "\tTAB", "\rCR"];
    assert_defused(&head, &rows, &planted);
}

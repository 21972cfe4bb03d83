//! ML.ENERGY v2 (an excerpt): its own origin, with both licence statements.

use super::*;
use crate::common::TestApp;
use axum::http::StatusCode;
use serde_json::Value;

/// ML.ENERGY v2 (its own origin, `peer:mlenergy-v2`): the committed excerpt
/// imported through the command, every published figure read back, the
/// derived energy per token worked out here, power and percentiles empty
/// (v2 publishes none), both licence statements carried, and apart from v3.
#[tokio::test]
async fn the_v2_excerpt_imports_as_its_own_origin_with_both_licence_statements() {
    let app = TestApp::new().await;
    let (code, stdout, stderr) = import_as(
        &app,
        "mlenergy-v2",
        &v2_excerpt(),
        "c3af7f31e231a2a7021c5f8e2a54dd712d02e6e2",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("as peer:mlenergy-v2") && stdout.contains("5 configurations"),
        "{stdout}"
    );
    assert_eq!(import(&app, &shipped()).0, 0);

    let (status, body) = app
        .get("/api/v1/peers/mlenergy-v2?task=chat&per_page=100")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["source"]["licence_statement"]
        .as_str()
        .unwrap()
        .contains("non-commercial use only"));
    assert!(body["source"]["licence"]
        .as_str()
        .unwrap()
        .contains("Apache-2.0"));
    let rows = body["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    for row in rows {
        let file: Value = serde_json::from_slice(
            &std::fs::read(v2_excerpt().join(row["file"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        assert_eq!(
            row["energy_per_request_joules"].as_f64(),
            file["Energy/req (J)"].as_f64()
        );
        assert_eq!(
            row["output_throughput_tokens_per_sec"].as_f64(),
            file["Token tput (tok/s)"].as_f64()
        );
        assert_eq!(
            row["avg_output_len"].as_f64(),
            file["Avg Output Tokens"].as_f64()
        );
        assert_eq!(
            row["avg_batch_size"].as_f64(),
            file["Avg BS (reqs)"].as_f64()
        );
        assert_eq!(row["max_num_seqs"].as_u64(), file["Max BS (reqs)"].as_u64());
        assert_eq!(row["tensor_parallel"].as_u64(), file["TP"].as_u64());
        assert_eq!(
            row["num_gpus"].as_u64().unwrap(),
            file["TP"].as_u64().unwrap() * file["PP"].as_u64().unwrap()
        );
        // Derived, as the page says: J/request ÷ output tokens; TPOT in ms.
        let ept =
            file["Energy/req (J)"].as_f64().unwrap() / file["Avg Output Tokens"].as_f64().unwrap();
        assert_eq!(row["energy_per_token_joules"].as_f64(), Some(ept));
        assert_eq!(
            row["mean_itl_ms"].as_f64(),
            Some(file["Avg TPOT (s)"].as_f64().unwrap() * 1000.0)
        );
        assert!(
            row["avg_power_watts"].is_null() && row["p99_itl_ms"].is_null(),
            "{row}"
        );
    }
    // Two origins, never one table: v3's table holds no v2 file.
    let (_, v3) = app
        .get("/api/v1/peers/mlenergy-v3?task=lm-arena-chat&per_page=1000")
        .await;
    assert!(v3["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["file"].as_str().unwrap().starts_with("tasks/")));
    let (_, html) = text(&app, "/peers/mlenergy-v2").await;
    assert!(
        html.contains("mean ") && html.contains("non-commercial use only"),
        "{html}"
    );
    // Power sorts put the rows without power last, and answer.
    let (status, _) = app
        .get("/api/v1/peers/mlenergy-v2?task=chat&sort=power")
        .await;
    assert_eq!(status, StatusCode::OK);
}

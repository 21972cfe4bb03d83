//! docs/api.md's worked example against the demo it describes (issue #55):
//! each figure it quotes for Llama-3.1-8B at 0.33 req/s is the one the
//! demo serves, read from the JSON API and written as the doc writes it
//! (three significant digits, whole percents). Regenerating the demo's
//! physics or changing a rule fails here until the doc is brought along.

use serde_json::Value;

use crate::common::*;

/// Three significant digits, as the doc prints figures.
fn sig3(x: f64) -> String {
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// A whole percent, with the minus sign the doc prints.
fn pct(v: &Value) -> String {
    format!("{:.0}", v.as_f64().unwrap()).replace('-', "−")
}

fn median(v: &Value) -> f64 {
    v["median"].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worked_example_is_what_the_demo_serves() {
    let doc = include_str!("../../../docs/api.md").replace('\n', " ");
    let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let app = TestApp::new().await;
    wattcounts::demo::load_if_empty(&app.service, app.dir.path(), &Default::default())
        .await
        .unwrap()
        .unwrap();
    let (_, page) = app
        .get("/api/v1/models/meta-llama/Llama-3.1-8B-Instruct")
        .await;
    let (at, section) = page["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .find(|(_, s)| s["scenario"]["lambda_qps"] == 0.33)
        .expect("a section at 0.33 req/s");
    let mut points: Vec<&Value> = section["points"].as_array().unwrap().iter().collect();
    points
        .sort_by(|a, b| median(&a["energy_per_token"]).total_cmp(&median(&b["energy_per_token"])));
    let (best, second) = (points[0], points[1]);
    let ept = &best["energy_per_token"];
    let saving = &section["verdict"]["saving"];
    assert_eq!(section["verdict"]["kind"], "less", "{section:#}");
    let footprint = page["per_1000_requests"][at]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["gpu_id"] == best["gpu_id"])
        .unwrap();
    let expected = format!(
        "least energy: {}, {} J/token ({}–{}); it uses less than the runner-up, the {}, by {} % ({}–{} %): the intervals separate, so this is a verdict; per request {} J, {} Wh and {} gCO₂e per 1,000 requests",
        best["gpu_name"].as_str().unwrap(),
        sig3(median(ept)),
        sig3(ept["lo"].as_f64().unwrap()),
        sig3(ept["hi"].as_f64().unwrap()),
        second["gpu_name"].as_str().unwrap(),
        pct(&saving["median_pct"]),
        pct(&saving["lo_pct"]),
        pct(&saving["hi_pct"]),
        sig3(median(&best["energy_per_request"])),
        sig3(median(&footprint["wh_per_1000_requests"])),
        sig3(median(&footprint["g_co2e_per_1000_requests"])),
    );
    assert!(
        doc.contains(&expected),
        "docs/api.md should say:\n{expected}"
    );

    let choice = section["choices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == "TTFT p50 ≤ 100 ms")
        .unwrap();
    let pick = points
        .iter()
        .find(|p| p["gpu_id"] == choice["pick"]["gpu_id"])
        .unwrap();
    let (p, r) = (&choice["pick"]["energy"], &choice["runner_up"]["energy"]);
    let tie = &choice["verdict"]["saving"];
    assert_eq!(choice["verdict"]["kind"], "tie");
    let expected = format!(
        "{}, {} J/token at a {} ms TTFT; the runner-up {} is {} % ({}–{} %) behind, marked a tie ({}–{} and {}–{} J/token overlap)",
        choice["pick"]["gpu_name"].as_str().unwrap(),
        sig3(median(p)),
        sig3(median(&pick["latency"]) * 1000.0),
        choice["runner_up"]["gpu_name"].as_str().unwrap().trim_start_matches("NVIDIA "),
        pct(&tie["median_pct"]),
        pct(&tie["lo_pct"]),
        pct(&tie["hi_pct"]),
        sig3(p["lo"].as_f64().unwrap()),
        sig3(p["hi"].as_f64().unwrap()),
        sig3(r["lo"].as_f64().unwrap()),
        sig3(r["hi"].as_f64().unwrap()),
    );
    assert!(
        doc.contains(&expected),
        "docs/api.md should say:\n{expected}"
    );
    // The GPU the deadline leaves out, with its TTFT.
    let a30 = points.iter().find(|p| p["gpu_id"] == "a30").unwrap();
    let expected = format!(
        "The A30's TTFT median is {} ms, so it does not qualify",
        sig3(median(&a30["latency"]) * 1000.0)
    );
    assert!(
        doc.contains(&expected),
        "docs/api.md should say:\n{expected}"
    );
}

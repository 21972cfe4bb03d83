//! Readers get their answer (issue #14): the model index and picker,
//! verdicts only where intervals separate, the choice under a deadline,
//! energy per request in Wh and gCO₂e, a comparison that cannot mislead,
//! leaderboard ranks within a model, and intervals for every figure kept
//! through `db rebuild`. Fixture: three GPUs, two models, the reference
//! protocol (three iterations each), accepted; the H100 NVL and PCIe give
//! overlapping intervals for Llama-3.1-8B in batch (a tie), the rest
//! separate.

use crate::common::*;
use axum::http::StatusCode;
use scraper::Selector;
use serde_json::Value;

const SMALL: &str = "Qwen/Qwen2.5-0.5B-Instruct";
const LLAMA: &str = "meta-llama/Llama-3.1-8B-Instruct";
const GPUS: [&str; 3] = ["l4", "h100-pcie", "h100-nvl"];

async fn submit_fixture(app: &TestApp) {
    let key = app.register("alice").await;
    for gpu in GPUS {
        let run = BundleBuilder::on(gpu, &[SMALL, LLAMA]).generate();
        let gz = BundleBuilder::of(&run).by("alice", &key).build();
        let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(status, StatusCode::CREATED, "{r:#}");
        assert_eq!(r["status"], "accepted", "{gpu}: {:#}", r["checks"]);
    }
}

async fn app_with_fixture() -> TestApp {
    let app = TestApp::new().await;
    submit_fixture(&app).await;
    app
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test]
async fn models_index_and_pickers_lead_to_the_answer() {
    let app = app_with_fixture().await;
    let (status, json) = app.get("/api/v1/models").await;
    assert_eq!(status, StatusCode::OK, "{json:#}");
    assert_eq!(json["total"], 2);
    let models = json["models"].as_array().unwrap();
    // Case-insensitive order: meta-llama before Qwen.
    assert_eq!(models[0]["model"], LLAMA);
    assert_eq!(models[1]["model"], SMALL);
    assert_eq!(models[0]["size_class"], "small");
    assert_eq!(models[0]["params_b"], 8.03);
    assert_eq!(models[0]["gpus_measured"], 3);
    // The best GPU per scenario is the least energy per token of the
    // model's own page.
    let (_, page) = app.get(&format!("/api/v1/models/{LLAMA}")).await;
    for s in page["scenarios"].as_array().unwrap() {
        let key = match s["scenario"]["lambda_qps"].as_f64() {
            Some(l) => format!("server@{l}"),
            None => "batch".into(),
        };
        let best = &models[0]["best"][&key];
        assert_eq!(best["gpu_id"], s["points"][0]["gpu_id"], "{key}");
        assert_eq!(best["tie"], s["verdict"]["kind"] == "tie", "{key}");
    }

    let (status, doc) = html_page(&app, "/models").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(texts(&doc, "table.models tbody tr").len(), 2);
    assert_eq!(
        doc.select(&Selector::parse("datalist#model-names option").unwrap())
            .count(),
        2
    );
    // A search narrows; one match is the answer itself.
    let (_, json) = app.get("/api/v1/models?q=QWEN").await;
    assert_eq!(json["models"].as_array().unwrap().len(), 1);
    let (status, to) = location(&app, "/models?q=llama-3.1").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(to, format!("/models/{LLAMA}"));
    let (status, doc) = html_page(&app, "/models?q=no-such-model").await;
    assert_eq!(status, StatusCode::OK);
    assert!(texts(&doc, "main p")
        .iter()
        .any(|t| t.contains("No model matches")));

    // The front page's picker: a select of every model, sent to /models,
    // which redirects to the model's page in the same view.
    let (_, doc) = html_page(&app, "/").await;
    let form = Selector::parse("form.picker[action='/models'] select[name=model] option").unwrap();
    let options: Vec<String> = doc
        .select(&form)
        .map(|o| o.value().attr("value").unwrap().to_string())
        .collect();
    assert_eq!(options, vec![LLAMA.to_string(), SMALL.to_string()]);
    let featured = texts(&doc, "p.featured a");
    assert!(
        featured.contains(&"Llama-3.1-8B-Instruct".to_string()),
        "{featured:?}"
    );
    let (status, to) = location(&app, &format!("/models?model={LLAMA}&origin=real")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(to, format!("/models/{LLAMA}?origin=real"));
    let (status, doc) = html_page(&app, &to).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(texts(&doc, "h1"), vec![LLAMA]);
    // Counts with thousands separators.
    let counts = texts(&doc_of(&app, "/").await, "ul.counts li b");
    assert!(counts.iter().any(|c| c.contains(',')), "{counts:?}");

    assert_eq!(
        html_page(&app, "/models?colour=red").await.0,
        StatusCode::BAD_REQUEST
    );
}

async fn doc_of(app: &TestApp, path: &str) -> scraper::Html {
    let (status, doc) = html_page(app, path).await;
    assert_eq!(status, StatusCode::OK, "{path}");
    doc
}

/// Whether two energy intervals of a model page's JSON separate.
fn separate(a: &Value, b: &Value) -> bool {
    f(&a["energy_per_token"]["hi"]) < f(&b["energy_per_token"]["lo"])
}

#[tokio::test]
async fn verdicts_only_where_intervals_separate() {
    let app = app_with_fixture().await;
    let mut seen = (0, 0);
    for model in [SMALL, LLAMA] {
        let (_, json) = app.get(&format!("/api/v1/models/{model}")).await;
        let doc = doc_of(&app, &format!("/models/{model}")).await;
        let verdicts = texts(&doc, "section.scenario p.verdict");
        let scenarios = json["scenarios"].as_array().unwrap();
        assert_eq!(verdicts.len(), scenarios.len());
        for (s, text) in scenarios.iter().zip(&verdicts) {
            let points = s["points"].as_array().unwrap();
            assert_eq!(points.len(), 3);
            // Least energy first.
            for w in points.windows(2) {
                assert!(
                    f(&w[0]["energy_per_token"]["median"])
                        <= f(&w[1]["energy_per_token"]["median"])
                );
            }
            let apart = separate(&points[0], &points[1]);
            assert_eq!(
                s["verdict"]["kind"],
                if apart { "less" } else { "tie" },
                "{s:#}"
            );
            if apart {
                seen.0 += 1;
                assert!(
                    text.contains("uses less energy than the runner-up"),
                    "{text}"
                );
                // The saving's range follows the intervals.
                let sv = &s["verdict"]["saving"];
                let (b, o) = (
                    &points[0]["energy_per_token"],
                    &points[1]["energy_per_token"],
                );
                let lo = (f(&o["lo"]) - f(&b["hi"])) / f(&o["lo"]) * 100.0;
                assert!((f(&sv["lo_pct"]) - lo).abs() < 1e-9);
                assert!(f(&sv["lo_pct"]) > 0.0);
            } else {
                seen.1 += 1;
                assert!(
                    text.to_lowercase().contains("tie within measurement noise"),
                    "{text}"
                );
                assert!(text.contains("overlap"), "{text}");
            }
            assert!(text.contains("How this is decided"));
            // Every median on the page carries its interval (3 iterations:
            // min–max, 75 %).
            assert_eq!(f(&points[0]["energy_per_token"]["confidence"]), 0.75);
        }
        let ranges = texts(&doc, "table.points tbody td:nth-child(3)");
        assert!(!ranges.is_empty(), "no point rows");
        assert!(ranges.iter().all(|r| r.contains('–')), "{ranges:?}");
    }
    assert!(
        seen.0 > 0 && seen.1 > 0,
        "the fixture has verdicts and ties: {seen:?}"
    );

    let doc = doc_of(&app, "/methodology").await;
    let coverage = texts(&doc, "table.coverage tbody tr");
    assert!(
        coverage
            .iter()
            .any(|r| r.starts_with('5') && r.contains("93.75 %")),
        "{coverage:?}"
    );
    assert!(texts(&doc, "#verdicts")
        .join(" ")
        .contains("tie within measurement noise"));
}

#[tokio::test]
async fn the_lowest_energy_gpu_that_meets_a_deadline() {
    let app = app_with_fixture().await;
    let (status, json) = app
        .get(&format!("/api/v1/models/{LLAMA}?ttft_ms=100&min_tok_s=700"))
        .await;
    assert_eq!(status, StatusCode::OK, "{json:#}");
    let mut checked = 0;
    for s in json["scenarios"].as_array().unwrap() {
        let points = s["points"].as_array().unwrap();
        let server = s["scenario"]["scenario"] == "server";
        for c in s["choices"].as_array().unwrap() {
            let d = &c["deadline"];
            // The reference answer, from the points alone.
            let meets = |p: &Value| match d["kind"].as_str().unwrap() {
                "ttft_p50" => f(&p["latency"]["median"]) <= f(&d["max_s"]),
                "itl" => p["itl"].is_object() && f(&p["itl"]["median"]) <= f(&d["max_s"]),
                "throughput" => f(&p["throughput"]["median"]) >= f(&d["min_tok_s"]),
                k => panic!("{k}"),
            };
            let ok: Vec<&Value> = points.iter().filter(|p| meets(p)).collect();
            assert_eq!(c["missing"], points.len() - ok.len());
            match ok.first() {
                None => assert!(c["pick"].is_null()),
                Some(p) => {
                    assert_eq!(c["pick"]["gpu_id"], p["gpu_id"], "{c:#}");
                    let borderline = match d["kind"].as_str().unwrap() {
                        "throughput" => f(&p["throughput"]["lo"]) < f(&d["min_tok_s"]),
                        "ttft_p50" => f(&p["latency"]["hi"]) > f(&d["max_s"]),
                        _ => f(&p["itl"]["hi"]) > f(&d["max_s"]),
                    };
                    assert_eq!(
                        c["pick"]["meets"],
                        if borderline { "borderline" } else { "yes" }
                    );
                    match ok.get(1) {
                        Some(r) => assert_eq!(c["runner_up"]["gpu_id"], r["gpu_id"]),
                        None => assert!(c["runner_up"].is_null() && c["verdict"].is_null()),
                    }
                    checked += 1;
                }
            }
        }
        // The deadlines asked for come last, in their scenario only.
        let last = s["choices"].as_array().unwrap().last().unwrap();
        let label = last["label"].as_str().unwrap();
        if server {
            assert_eq!(
                s["choices"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["label"] == "TTFT p50 ≤ 100 ms")
                    .count(),
                2,
                "the preset and the one asked for"
            );
            assert_eq!(label, "TTFT p50 ≤ 100 ms");
        } else {
            assert_eq!(label, "throughput ≥ 700 tokens/s");
        }
    }
    assert!(checked > 5, "{checked} choices with a pick");

    // The page: the asked deadline marked, presets shown without asking.
    let doc = doc_of(&app, &format!("/models/{LLAMA}?ttft_ms=100")).await;
    let asked = texts(&doc, "table.choices tr.asked td:first-child");
    assert!(!asked.is_empty(), "the asked deadline is not marked");
    assert!(asked.iter().all(|t| t.starts_with("TTFT p50 ≤ 100 ms")));
    assert_eq!(
        texts(&doc, "table.choices tr.asked").len(),
        2,
        "two server rates"
    );
    let doc = doc_of(&app, &format!("/models/{LLAMA}")).await;
    let presets = texts(&doc, "table.choices tbody tr td:first-child");
    assert!(
        presets.iter().any(|t| t == "TTFT p50 ≤ 100 ms"),
        "{presets:?}"
    );
    assert_eq!(
        doc.select(&Selector::parse("form input[name=ttft_ms][type=number]").unwrap())
            .count(),
        1
    );

    let (status, body) = app
        .get(&format!("/api/v1/models/{LLAMA}?ttft_ms=soon"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ttft_ms"),
        "{body:#}"
    );
}

#[tokio::test]
async fn energy_per_request_in_wh_and_grams_with_the_stated_assumptions() {
    let app = TestApp::configured(|c| {
        c.grid_g_per_kwh = 400.0;
        c.pue = 1.5;
    })
    .await;
    submit_fixture(&app).await;
    let (_, json) = app.get(&format!("/api/v1/models/{SMALL}")).await;
    assert_eq!(json["footprint"]["grid_g_per_kwh"], 400.0);
    let s = &json["scenarios"][0];
    let per = &json["per_1000_requests"][0][0];
    let epr = &s["points"][0]["energy_per_request"];
    let j = f(&epr["median"]);
    assert!((f(&per["wh_per_1000_requests"]["median"]) - j * 1000.0 / 3600.0).abs() < 1e-9);
    let g = j * 1000.0 / 3600.0 / 1000.0 * 1.5 * 400.0;
    assert!((f(&per["g_co2e_per_1000_requests"]["median"]) - g).abs() < 1e-9);
    // The interval scales with it.
    assert!(f(&per["wh_per_1000_requests"]["lo"]) <= f(&per["wh_per_1000_requests"]["median"]));
    let doc = doc_of(&app, &format!("/models/{SMALL}")).await;
    let line = texts(&doc, "p.per-request").join(" ");
    assert!(
        line.contains("Wh per 1,000 requests") && line.contains("grid 400 gCO₂e/kWh, PUE 1.5"),
        "{line}"
    );
    // Latency columns have one meaning each: batch shows time per output
    // token, server TTFT.
    let headers = texts(&doc, "section#batch table.points thead th");
    assert!(
        headers.iter().any(|h| h == "time per output token ms"),
        "{headers:?}"
    );
    assert!(
        headers.iter().all(|h| !h.contains("TTFT")),
        "the first section is batch"
    );
}

#[tokio::test]
async fn compare_names_the_best_and_never_counts_a_missing_gpu_as_a_loser() {
    let app = TestApp::new().await;
    submit_fixture(&app).await;
    // A T4 that measured only the small model.
    let key = app.register("bob").await;
    let gz = BundleBuilder::on("t4", &[SMALL]).by("bob", &key).build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r:#}");

    let old = app.get("/api/v1/compare?gpus=l4,t4&scenario=batch").await.1;
    let new = app
        .get("/api/v1/compare?gpu=l4&gpu=t4&scenario=batch")
        .await
        .1;
    assert_eq!(
        old["comparison"], new["comparison"],
        "old links keep working"
    );
    let rows = new["comparison"]["rows"].as_array().unwrap();
    let llama = rows.iter().find(|r| r["model"] == LLAMA).unwrap();
    assert!(llama["energy_per_token_j"][1].is_null());
    assert!(
        llama["best"].is_null() && llama["winner"].is_null(),
        "one GPU is no winner"
    );
    assert!(llama["saving_pct"][0].is_null() && llama["saving_pct"][1].is_null());

    let doc = doc_of(&app, "/compare?gpu=l4&gpu=t4&scenario=batch").await;
    let row = doc
        .select(&Selector::parse("table.compare tbody tr").unwrap())
        .find(|r| r.text().collect::<String>().contains(LLAMA))
        .unwrap();
    let cells: Vec<String> = row
        .select(&Selector::parse("td").unwrap())
        .map(|c| c.text().collect::<String>())
        .collect();
    assert!(!cells[1].contains('★'), "{cells:?}");
    assert_eq!(cells[2], "not measured");
    assert_eq!(cells[3], "one GPU only: no comparison");
    // GPUs are chosen from a list.
    let boxes = doc
        .select(&Selector::parse("form input[type=checkbox][name=gpu]").unwrap())
        .count();
    assert_eq!(boxes, 4);

    // Three GPUs that all measured both models: the headline names the best.
    let (_, json) = app
        .get("/api/v1/compare?gpus=l4,h100-pcie,h100-nvl&scenario=batch&ref=h100-pcie")
        .await;
    let h = &json["comparison"]["headline"];
    let rows = json["comparison"]["rows"].as_array().unwrap();
    let models: Vec<&str> = rows.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(models, [LLAMA, SMALL], "case-insensitive");
    let mut wins = [0; 3];
    for r in rows {
        wins[r["best"].as_u64().unwrap() as usize] += 1;
        let best = r["best"].as_u64().unwrap() as usize;
        assert!(
            r["saving_pct"][best].is_null(),
            "the best's own cell is no saving"
        );
        for (i, v) in r["energy_per_token_j"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            if i != best {
                let b = f(&r["energy_per_token_j"][best]);
                assert!((f(&r["saving_pct"][i]) - (f(v) - b) / f(v) * 100.0).abs() < 1e-9);
            }
        }
    }
    let top = (0..3)
        .max_by_key(|i| (wins[*i], std::cmp::Reverse(*i)))
        .unwrap();
    assert_eq!(h["best_gpu"][0], ["l4", "h100-pcie", "h100-nvl"][top]);
    assert_eq!(h["best_for"], wins[top]);
    assert_eq!(h["reference_gpu"][0], "h100-pcie");
    let doc = doc_of(&app, "/compare?gpus=l4,h100-pcie,h100-nvl&scenario=batch").await;
    let headline = texts(&doc, "p.headline").join(" ");
    let name = h["best_gpu"][1].as_str().unwrap();
    assert!(headline.starts_with(name), "{headline}");
    assert!(headline.contains("uses the least energy for"), "{headline}");
    assert_eq!(texts(&doc, "svg.chart").len(), 1);
    assert!(texts(&doc, "table.compare thead th")
        .iter()
        .any(|t| t.starts_with("time per output token ms")));

    let (status, body) = app.get("/api/v1/compare?gpus=l4,t4&ref=a30").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body:#}");
}

#[tokio::test]
async fn leaderboard_ranks_gpus_within_each_model() {
    let app = app_with_fixture().await;
    let (_, json) = app.get("/api/v1/leaderboard?scenario=batch").await;
    let entries = json["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 6);
    let models: Vec<&str> = entries
        .iter()
        .map(|e| e["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, [LLAMA, LLAMA, LLAMA, SMALL, SMALL, SMALL]);
    let ranks: Vec<u64> = entries
        .iter()
        .map(|e| e["rank_in_model"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [1, 2, 3, 1, 2, 3]);
    for w in entries
        .windows(2)
        .filter(|w| w[0]["model"] == w[1]["model"])
    {
        assert!(f(&w[0]["energy_per_token_j"]) <= f(&w[1]["energy_per_token_j"]));
    }
    // Page 2 of 2 rows each keeps the ranks the whole view gives.
    let (_, json) = app
        .get("/api/v1/leaderboard?scenario=batch&per_page=2&page=2")
        .await;
    let ranks: Vec<u64> = json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rank_in_model"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [3, 1]);
    let doc = doc_of(&app, "/leaderboard?scenario=batch&per_page=2&page=2").await;
    assert_eq!(texts(&doc, "table.board tbody td:first-child"), ["3", "1"]);
    // The key columns come first.
    let headers = texts(&doc, "table.board thead th");
    assert_eq!(
        &headers[..5],
        ["#", "GPU", "model", "J / token", "interval"]
    );
}

#[tokio::test]
async fn every_figure_keeps_its_interval_through_a_rebuild() {
    let app = app_with_fixture().await;
    let (_, before) = app
        .get("/api/v1/leaderboard?scenario=server@0.33&per_page=1000")
        .await;
    let e = &before["entries"][0];
    for k in [
        "energy_per_request_j",
        "throughput_tok_s",
        "ttft_p50_s",
        "itl_s",
    ] {
        let i = &e["intervals"][k];
        assert!(f(&i["lo"]) <= f(&i["hi"]), "{k}: {i}");
        assert_eq!(f(&i["confidence"]), 0.75, "{k}");
    }
    assert!(f(&e["intervals"]["ttft_p50_s"]["lo"]) <= f(&e["ttft_p50_s"]));
    // Rows stored before intervals were kept: the service knows to rebuild,
    // and the rebuild gives the same figures.
    app.raw
        .as_ref()
        .unwrap()
        .exec("UPDATE configurations SET intervals = NULL")
        .await;
    assert!(app.service.needs_rebuild().await.unwrap());
    app.service.rebuild(|_| {}).await.unwrap();
    assert!(!app.service.needs_rebuild().await.unwrap());
    let (_, after) = app
        .get("/api/v1/leaderboard?scenario=server@0.33&per_page=1000")
        .await;
    assert_eq!(before["entries"], after["entries"]);
}

//! The RSS feeds (issue #44, item 3), read back with the rss crate's own
//! parser as a feed reader would: an accepted submission appears on the
//! next fetch, in the all-submissions feed, its GPU's and each of its
//! models'; a GPU's feed names only that GPU; a submission waiting for
//! review never appears, and a decision that withdraws an accepted one takes
//! it out. The pages that have a feed link it in their head.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;

use crate::common::*;
use wattcounts::synth::Fault;

async fn feed(app: &TestApp, path: &str) -> rss::Channel {
    let (status, headers, body) = app
        .raw(Request::get(path).body(Body::empty()).unwrap())
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{path}: {}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(
        headers["content-type"], "application/rss+xml; charset=utf-8",
        "{path}"
    );
    rss::Channel::read_from(&body[..]).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The submission ids a channel's items link to, in order.
fn linked(channel: &rss::Channel) -> Vec<String> {
    channel
        .items()
        .iter()
        .map(|i| {
            let link = i.link().expect("every item links its submission");
            assert_eq!(i.guid().map(|g| g.value()), Some(link));
            link.rsplit('/').next().unwrap().to_string()
        })
        .collect()
}

async fn submit_accepted(
    app: &TestApp,
    builder: BundleBuilder<'_>,
    key: &ssh_key::PrivateKey,
) -> (String, Vec<String>) {
    let gz = builder.build();
    let (status, r) = app.submit(&gz, &sign(key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["status"], "accepted", "{:#}", r["checks"]);
    let mut models: Vec<String> = r["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["model"].as_str().unwrap().to_string())
        .collect();
    models.dedup();
    (r["submission_id"].as_str().unwrap().to_string(), models)
}

#[tokio::test]
async fn feeds_follow_accepted_submissions_by_gpu_and_model() {
    let app = TestApp::new().await;
    assert!(feed(&app, "/feeds/submissions").await.items().is_empty());
    // A catalogue GPU or model with no result yet has an empty feed to
    // subscribe to; a name that is neither is a 404.
    assert!(feed(&app, "/feeds/gpus/h100-pcie").await.items().is_empty());
    for path in [
        "/feeds/gpus/no-such-gpu",
        "/feeds/models/nobody/no-such-model",
    ] {
        let (status, _, _) = app
            .raw(Request::get(path).body(Body::empty()).unwrap())
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }

    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    let (on_l4, l4_models) =
        submit_accepted(&app, BundleBuilder::fixture().by("alice", &alice), &alice).await;
    let h100_model = "Qwen/Qwen2.5-3B-Instruct";
    let (on_h100, _) = submit_accepted(
        &app,
        BundleBuilder::on("h100-pcie", &[h100_model]).by("bob", &bob),
        &bob,
    )
    .await;
    // One waiting for a maintainer.
    let gz = BundleBuilder::faulty(Fault::WarmStart, 42)
        .by("alice", &alice)
        .build();
    let (_, pending) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(pending["status"], "needs_review", "{pending}");
    let pending = pending["submission_id"].as_str().unwrap().to_string();

    let all = feed(&app, "/feeds/submissions").await;
    assert_eq!(
        linked(&all),
        vec![on_h100.clone(), on_l4.clone()],
        "newest first"
    );
    let item = &all.items()[1];
    let title = item.title().unwrap();
    assert!(title.starts_with("alice on the NVIDIA L4: "), "{title}");
    // Under 120 characters (issue #55); the models are in the description.
    assert!(title.chars().count() < 120, "{title}");
    if l4_models.len() > 1 {
        assert!(
            title.ends_with(&format!("{} models", l4_models.len())),
            "{title}"
        );
    }
    let description = item.description().unwrap();
    for m in &l4_models {
        assert!(description.contains(m.as_str()), "{description}");
    }
    assert!(
        description.contains("Accepted community submission by alice on the NVIDIA L4")
            && description.contains("reference protocol"),
        "{description}"
    );
    assert!(
        item.categories().iter().any(|c| c.name() == "real"),
        "{:?}",
        item.categories()
    );

    // Per GPU: only that GPU's submissions, and every item names it.
    let l4 = feed(&app, "/feeds/gpus/l4").await;
    assert_eq!(linked(&l4), vec![on_l4.clone()]);
    assert!(l4
        .items()
        .iter()
        .all(|i| i.title().unwrap().contains("NVIDIA L4") && !i.title().unwrap().contains("H100")));
    assert_eq!(
        linked(&feed(&app, "/feeds/gpus/h100-pcie").await),
        vec![on_h100.clone()]
    );
    // Per model.
    let (org, name) = h100_model.split_once('/').unwrap();
    let model = feed(&app, &format!("/feeds/models/{org}/{name}")).await;
    assert_eq!(linked(&model), vec![on_h100.clone()]);
    let (org, name) = l4_models[0].split_once('/').unwrap();
    assert_eq!(
        linked(&feed(&app, &format!("/feeds/models/{org}/{name}")).await),
        vec![on_l4.clone()]
    );
    for f in ["/feeds/submissions", "/feeds/gpus/l4"] {
        assert!(!linked(&feed(&app, f).await).contains(&pending), "{f}");
    }

    // A maintainer withdraws the L4 one: the next fetch has it no more.
    let (status, body) = app
        .admin_post(
            &format!("/api/v1/admin/submissions/{on_l4}/decision"),
            json!({"decision": "reject", "reason": "the cooling failed"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        linked(&feed(&app, "/feeds/submissions").await),
        vec![on_h100.clone()]
    );
    assert!(feed(&app, "/feeds/gpus/l4").await.items().is_empty());

    // The pages that have a feed say where it is.
    for (page, href) in [
        ("/", "/feeds/submissions".to_string()),
        ("/gpus/h100-pcie", "/feeds/gpus/h100-pcie".to_string()),
        (
            &format!("/models/{h100_model}")[..],
            format!("/feeds/models/{h100_model}"),
        ),
    ] {
        let (status, doc) = html_page(&app, page).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let sel =
            scraper::Selector::parse("head link[rel=alternate][type=\"application/rss+xml\"]")
                .unwrap();
        let hrefs: Vec<&str> = doc
            .select(&sel)
            .filter_map(|e| e.value().attr("href"))
            .collect();
        assert!(hrefs.contains(&href.as_str()), "{page}: {hrefs:?}");
    }
}

#[tokio::test]
async fn the_snapshot_feed_lists_published_snapshots() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::fixture().by("alice", &key).build();
    assert_eq!(
        app.submit(&gz, &sign(&key, &gz)).await.0,
        StatusCode::CREATED
    );
    assert!(feed(&app, "/feeds/snapshots").await.items().is_empty());
    let (status, snap) = app
        .admin_post("/api/v1/admin/snapshots", json!({ "traces": false }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{snap}");
    let channel = feed(&app, "/feeds/snapshots").await;
    assert_eq!(channel.items().len(), 1);
    let item = &channel.items()[0];
    let id = snap["snapshot_id"].as_str().unwrap();
    assert!(item.link().unwrap().ends_with(&format!("/snapshots/{id}")));
    assert!(
        item.title().unwrap().contains("1 submissions"),
        "{:?}",
        item.title()
    );
    assert!(
        item.description()
            .unwrap()
            .contains(snap["manifest_sha256"].as_str().unwrap()),
        "{:?}",
        item.description()
    );
}

/// The model feed's store read walks the model's configurations newest
/// first in pages (2 × the limit): with 3 configurations of Qwen 0.5B per
/// fixture copy (batch and two arrival rates), a limit of 3 needs a second
/// page. Worked by hand: copies s1..s4 accepted in that order, s4 then
/// withdrawn, one more waiting for review: the newest accepted are s3, s2,
/// s1.
#[tokio::test]
async fn the_model_feed_reads_the_newest_accepted_on_both_backends() {
    for app in both_backends().await {
        let alice = app.register("alice").await;
        let mut ids = Vec::new();
        for n in 1..=4 {
            let (id, models) = submit_accepted(
                &app,
                BundleBuilder::fixture().marked(n).by("alice", &alice),
                &alice,
            )
            .await;
            assert!(models.iter().any(|m| m == QWEN), "{models:?}");
            ids.push(id);
        }
        let (status, body) = app
            .admin_post(
                &format!("/api/v1/admin/submissions/{}/decision", ids[3]),
                json!({"decision": "reject", "reason": "withdrawn"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let gz = BundleBuilder::faulty(Fault::WarmStart, 43)
            .by("alice", &alice)
            .build();
        let (_, pending) = app.submit(&gz, &sign(&alice, &gz)).await;
        assert_eq!(pending["status"], "needs_review", "{pending}");

        let newest = |limit| {
            let store = app.store.clone();
            async move {
                store
                    .submissions_with_model(QWEN, limit)
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.id.to_string())
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(newest(1).await, vec![ids[2].clone()]);
        assert_eq!(newest(2).await, vec![ids[2].clone(), ids[1].clone()]);
        let three = vec![ids[2].clone(), ids[1].clone(), ids[0].clone()];
        assert_eq!(newest(3).await, three);
        assert_eq!(newest(50).await, three);
        assert!(app
            .store
            .submissions_with_model("nobody/no-such-model", 50)
            .await
            .unwrap()
            .is_empty());
    }
}

/// A feed item is dated at acceptance (issue #55): a submission that
/// waited for review and was approved later carries the approval's time
/// (read back from the moderation log the API shows), not its receipt's;
/// one accepted at intake carries its receipt's.
#[tokio::test]
async fn an_item_is_dated_when_it_was_accepted() {
    let app = TestApp::new().await;
    let alice = app.register("alice").await;
    let gz = BundleBuilder::faulty(Fault::WarmStart, 42)
        .by("alice", &alice)
        .build();
    let (_, r) = app.submit(&gz, &sign(&alice, &gz)).await;
    assert_eq!(r["status"], "needs_review", "{r}");
    let id = r["submission_id"].as_str().unwrap().to_string();
    let received =
        chrono::DateTime::parse_from_rfc3339(r["received_at"].as_str().unwrap()).unwrap();
    // RFC 2822 dates are whole seconds: approve in a later second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, body) = app
        .admin_post(
            &format!("/api/v1/admin/submissions/{id}/decision"),
            json!({"decision": "approve", "reason": "warm start explained"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let items = feed(&app, "/feeds/submissions").await.items().to_vec();
    let item = items
        .iter()
        .find(|i| i.link().is_some_and(|l| l.ends_with(&id)))
        .expect("approved: in the feed");
    let dated = chrono::DateTime::parse_from_rfc2822(item.pub_date().unwrap()).unwrap();
    assert!(
        dated.timestamp() > received.timestamp(),
        "dated {dated}, received {received}"
    );
    // The approval's own time, as the moderation log records it.
    let (_, events) = app.get(&format!("/api/v1/submissions/{id}")).await;
    let approved = events.to_string();
    assert!(
        approved.contains(
            &dated
                .with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string()
        ),
        "{dated} not among the submission's decisions: {approved}"
    );
}

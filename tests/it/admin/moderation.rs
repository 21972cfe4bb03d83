//! Moderation (issue #3): maintainer tokens, the review queue, decisions
//! with reasons recorded and shown, suspension, key revocation from a time,
//! and CSRF on the HTML forms.

use crate::common::*;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use scraper::{Html, Selector};
use serde_json::json;
use wattcounts::synth::Fault;

/// An app with one needs_review submission by alice; returns its id.
async fn app_with_flagged() -> (TestApp, ssh_key::PrivateKey, String) {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let gz = BundleBuilder::faulty(Fault::WarmStart, 42)
        .by("alice", &key)
        .build();
    let (status, r) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(r["status"], "needs_review", "{:#}", r["checks"]);
    let id = r["submission_id"].as_str().unwrap().to_string();
    (app, key, id)
}

async fn raw(app: &TestApp, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
    let (status, headers, bytes) = app.raw(req).await;
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

fn get_with(path: &str, auth: Option<&str>) -> Request<Body> {
    let mut r = Request::get(path);
    if let Some(a) = auth {
        r = r.header(header::AUTHORIZATION, a);
    }
    r.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn admin_api_needs_a_maintainer_token() {
    let (app, _, _) = app_with_flagged().await;
    let (status, body) = app.send(get_with("/api/v1/admin/review", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "auth_required");
    let (status, body) = app
        .send(get_with(
            "/api/v1/admin/review",
            Some("Bearer wct_not-a-token"),
        ))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "bad_token");
}

#[tokio::test]
async fn maintainer_approves_a_flagged_submission_and_the_decision_is_recorded() {
    let (app, _, id) = app_with_flagged().await;
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let (status, queue) = app
        .send(get_with("/api/v1/admin/review", Some(&auth)))
        .await;
    assert_eq!(status, StatusCode::OK);
    let items = queue["needs_review"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["submission_id"], id.as_str());
    let warning = &items[0]["warnings"][0];
    assert_eq!(warning["id"], "method.start_temperature");
    assert_eq!(warning["figure"], 72.0);

    // Hidden from the default leaderboard until a maintainer decides.
    let (_, board) = app.get("/api/v1/leaderboard").await;
    assert_eq!(board["total"], 0);

    let path = format!("/api/v1/admin/submissions/{id}/decision");
    let (status, body) = app
        .admin_post(&path, json!({"decision": "approve", "reason": "  "}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_decision");
    let (_, unchanged) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(unchanged["status"], "needs_review");
    assert_eq!(unchanged["moderation"], json!([]));

    let (status, r) = app
        .admin_post(
            &path,
            json!({"decision": "approve", "reason": "warm start from a previous run; harness log shows cool-down skipped once"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!(r["status"], "accepted");
    let events = r["moderation"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["actor"], "maintainer");
    assert_eq!(events[0]["action"], "approve");
    assert_eq!(events[0]["from_status"], "needs_review");
    assert_eq!(events[0]["to_status"], "accepted");
    assert!(events[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("warm start"));
    assert!(events[0]["at"].as_str().unwrap().ends_with('Z'));

    // The public receipt shows the same, the leaderboard now has the rows,
    // and a second approval is refused.
    let (_, public) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(public["moderation"], r["moderation"]);
    // The fixture is off the reference protocol: its rows are in its own view.
    let protocol = r["protocol"]["batch_id"].as_str().unwrap();
    let (_, board) = app
        .get(&format!("/api/v1/leaderboard?protocol={protocol}"))
        .await;
    assert!(board["total"].as_u64().unwrap() > 0, "{board}");
    assert!(!board["entries"].as_array().unwrap().is_empty(), "{board}");
    assert!(board["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["protocol_id"] == protocol && e["origin"] == "real"));
    let (status, body) = app
        .admin_post(&path, json!({"decision": "approve", "reason": "again"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "wrong_status");
}

#[tokio::test]
async fn rejected_submissions_cannot_be_approved() {
    let (app, _, id) = app_with_flagged().await;
    let path = format!("/api/v1/admin/submissions/{id}/decision");
    let (status, r) = app
        .admin_post(
            &path,
            json!({"decision": "reject", "reason": "no cool-down"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(r["status"], "rejected");
    let (status, body) = app
        .admin_post(
            &path,
            json!({"decision": "approve", "reason": "changed my mind"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "wrong_status");
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/submissions/00000000-0000-4000-8000-000000000000/decision",
            json!({"decision": "approve", "reason": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
}

#[tokio::test]
async fn suspended_submitters_cannot_submit() {
    let (app, key, _) = app_with_flagged().await;
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/submitters/alice/suspend",
            json!({"reason": "doctored bundles"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let gz = BundleBuilder::faulty(Fault::None, 7)
        .by("alice", &key)
        .build();
    let (status, body) = app.submit(&gz, &sign(&key, &gz)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["code"], "submitter_suspended");
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/submitters/nobody/suspend",
            json!({"reason": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
}

#[tokio::test]
async fn revoking_a_key_from_a_time_rejects_only_later_bundles() {
    let app = TestApp::new().await;
    let key = app.register("alice").await;
    let mut ids = Vec::new();
    let mut received = Vec::new();
    for seed in [1, 2] {
        let gz = BundleBuilder::faulty(Fault::None, seed)
            .by("alice", &key)
            .build();
        let (_, r) = app.submit(&gz, &sign(&key, &gz)).await;
        assert_eq!(r["status"], "accepted");
        ids.push(r["submission_id"].as_str().unwrap().to_string());
        received.push(r["received_at"].as_str().unwrap().to_string());
    }
    // The key is void from the moment the second bundle was received (the
    // rule is received_at >= effective_at): the stored times order the
    // events, not a sleep in the test.
    assert!(
        received[0] < received[1],
        "received in the same millisecond: {received:?}"
    );
    let cut = received[1].clone();
    let fp = wattcounts::signing::fingerprint(key.public_key());
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/keys/revoke",
            json!({"fingerprint": fp, "effective_at": cut, "reason": "key leaked"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["rejected_submissions"], json!([ids[1]]));
    let (_, first) = app.get(&format!("/api/v1/submissions/{}", ids[0])).await;
    assert_eq!(first["status"], "accepted");
    let (_, second) = app.get(&format!("/api/v1/submissions/{}", ids[1])).await;
    assert_eq!(second["status"], "rejected");
    assert!(second["moderation"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("key leaked"));
    let (status, body) = app
        .admin_post(
            "/api/v1/admin/keys/revoke",
            json!({"fingerprint": "SHA256:unknown", "reason": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
}

fn form(path: &str, cookie: Option<&str>, fields: &[(&str, &str)]) -> Request<Body> {
    let body: String = fields
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&");
    // A browser posting one of the service's own pages names its origin.
    let mut r = Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ORIGIN, AUDIENCE);
    if let Some(c) = cookie {
        r = r.header(header::COOKIE, c);
    }
    r.body(Body::from(body)).unwrap()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn select_one(doc: &Html, sel: &str) -> Option<String> {
    doc.select(&Selector::parse(sel).unwrap()).next().map(|e| {
        e.value()
            .attr("value")
            .map(str::to_string)
            .unwrap_or_else(|| e.text().collect())
    })
}

#[tokio::test]
async fn html_review_with_sign_in_and_csrf() {
    let (app, _, id) = app_with_flagged().await;
    // Not signed in: the sign-in form.
    let (status, _, page) = raw(&app, get_with("/admin", None)).await;
    assert_eq!(status, StatusCode::OK);
    let doc = Html::parse_document(&page);
    assert!(select_one(&doc, "form[action='/admin/login'] input[name=token]").is_some());

    let (status, _, _) = raw(&app, form("/admin/login", None, &[("token", "wct_wrong")])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, headers, _) =
        raw(&app, form("/admin/login", None, &[("token", ADMIN_TOKEN)])).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_string();

    let (status, _, page) = raw(
        &app,
        Request::get("/admin")
            .header(header::COOKIE, &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let doc = Html::parse_document(&page);
    let action = format!("/admin/submissions/{id}/decision");
    let csrf = select_one(&doc, &format!("form[action='{action}'] input[name=csrf]")).unwrap();
    let warning = select_one(&doc, &format!("#s-{id} .warnings li")).unwrap();
    assert!(warning.contains("method.start_temperature"), "{warning}");

    // A forged post (no or wrong CSRF token) changes nothing.
    for bad in ["", "0000"] {
        let (status, _, _) = raw(
            &app,
            form(
                &action,
                Some(&cookie),
                &[("csrf", bad), ("decision", "approve"), ("reason", "forged")],
            ),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    // Without the session cookie, even the right CSRF token is refused.
    let (status, _, _) = raw(
        &app,
        form(
            &action,
            None,
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("reason", "no cookie"),
            ],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, r) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(r["status"], "needs_review");
    assert_eq!(r["moderation"], json!([]));
    // A decision that is neither approve nor reject (bad_decision): a 400
    // that says what is taken, and nothing decided.
    let (status, _, page) = raw(
        &app,
        form(
            &action,
            Some(&cookie),
            &[("csrf", &csrf), ("decision", "maybe"), ("reason", "unsure")],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        page.contains("decision must be approve or reject"),
        "{page}"
    );
    let (_, r) = app.get(&format!("/api/v1/submissions/{id}")).await;
    assert_eq!(r["status"], "needs_review");
    assert_eq!(r["moderation"], json!([]));

    let (status, headers, _) = raw(
        &app,
        form(
            &action,
            Some(&cookie),
            &[
                ("csrf", &csrf),
                ("decision", "approve"),
                ("reason", "checked the <harness> log"),
            ],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        format!("/submissions/{id}").as_str()
    );

    // The submission page shows the new status and the decision, escaped.
    let (status, _, page) = raw(&app, get_with(&format!("/submissions/{id}"), None)).await;
    assert_eq!(status, StatusCode::OK);
    // Escaped: the text reads as typed and no <harness> element exists.
    assert!(!page.contains("<harness>"), "reason is escaped");
    let doc = Html::parse_document(&page);
    let status_line = select_one(&doc, ".status strong").unwrap();
    assert_eq!(status_line, "accepted");
    let history: Vec<String> = doc
        .select(&Selector::parse("table.history tbody tr").unwrap())
        .map(|r| r.text().collect::<Vec<_>>().join("|"))
        .collect();
    assert_eq!(history.len(), 1, "{history:?}");
    assert!(
        history[0].contains("maintainer")
            && history[0].contains("needs_review → accepted")
            && history[0].contains("checked the <harness> log"),
        "{history:?}"
    );
    let checks: Vec<String> = doc
        .select(&Selector::parse("table.checks tbody tr").unwrap())
        .map(|r| r.text().collect::<Vec<_>>().join("|"))
        .collect();
    assert_eq!(checks.len(), wattcounts::checks::rules().len());
    assert!(
        checks.iter().any(|c| c.contains("method.start_temperature")
            && c.contains("warn")
            && c.contains("72")),
        "{checks:?}"
    );

    // The other forms: suspend and revoke, each CSRF-checked.
    let (status, _, _) = raw(
        &app,
        form(
            "/admin/submitters/suspend",
            Some(&cookie),
            &[("csrf", "bad"), ("handle", "alice"), ("reason", "spam")],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, headers, _) = raw(
        &app,
        form(
            "/admin/submitters/suspend",
            Some(&cookie),
            &[("csrf", &csrf), ("handle", "alice"), ("reason", "spam")],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let back = headers[header::LOCATION].to_str().unwrap().to_string();
    let (_, _, page) = raw(
        &app,
        Request::get(back.as_str())
            .header(header::COOKIE, &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let doc = Html::parse_document(&page);
    assert!(select_one(&doc, ".notice").unwrap().contains("suspended"));
    let (status, _, page) = raw(
        &app,
        Request::get("/admin?done=%3Cb%3Eyour+session+expired,+log+in+at+evil.example")
            .header(header::COOKIE, &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("evil.example"), "notices are fixed texts");

    // Publishing a snapshot from the page: CSRF-checked like the rest.
    let doc = Html::parse_document(&page);
    assert!(select_one(&doc, "form[action='/admin/snapshots'] input[name=traces]").is_some());
    let fields = |csrf: &str| {
        vec![
            ("csrf".to_string(), csrf.to_string()),
            ("traces".into(), "on".into()),
        ]
    };
    let post = |f: Vec<(String, String)>| {
        let f: Vec<(&str, &str)> = f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        form("/admin/snapshots", Some(&cookie), &f)
    };
    let (status, _, _) = raw(&app, post(fields("bad"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, list) = app.get("/api/v1/snapshots").await;
    assert_eq!(
        list["snapshots"],
        json!([]),
        "a forged post publishes nothing"
    );
    let (status, headers, _) = raw(&app, post(fields(&csrf))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, list) = app.get("/api/v1/snapshots").await;
    let published = &list["snapshots"][0];
    assert_eq!(
        headers[header::LOCATION].to_str().unwrap(),
        published["url"].as_str().unwrap()
    );
    assert_eq!(published["created_by"], "maintainer");
    assert_eq!(published["includes_power_traces"], true);
}

#[test]
fn admin_token_command_prints_a_token_and_its_hash() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wattcounts"))
        .args(["admin", "token", "--name", "carol"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let token = text
        .split_whitespace()
        .find(|w| w.starts_with("wct_"))
        .unwrap_or_else(|| panic!("no token in {text}"));
    let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()));
    assert!(text.contains(&format!("carol:{hash}")), "{text}");
}

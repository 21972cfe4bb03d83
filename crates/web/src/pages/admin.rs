//! The maintainers' HTML pages: sign-in, the review queue with approve and
//! reject forms, suspending submitters and revoking keys. Every form post
//! checks the session's CSRF token.

pub mod api;
pub mod catalogue;

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use crate::auth::{self, AdminSession};
use crate::error::{render, ApiError, PageError};
use crate::extract::query::{NoticeParam, PageParams};
use crate::pages::admin::api::{parse_id, review_queue};
use crate::AppState;
use wattcounts_service::moderation::{self, Decision, ModerationError};

impl From<ModerationError> for PageError {
    fn from(e: ModerationError) -> Self {
        PageError(e.into())
    }
}

#[derive(Template)]
#[template(path = "admin_login.html")]
struct LoginPage<'a> {
    message: &'a str,
    layout: crate::layout::Layout,
}

fn login_page(status: StatusCode, message: &str) -> Response {
    render(
        status,
        &LoginPage {
            message,
            layout: crate::layout::Layout::of(false),
        },
    )
}

struct Warning {
    id: String,
    outcome: &'static str,
    message: String,
}

struct Item {
    id: String,
    submitter: String,
    gpu: String,
    run_name: String,
    received: String,
    demo: bool,
    warnings: Vec<Warning>,
}

#[derive(Template)]
#[template(path = "admin.html")]
struct QueuePage {
    maintainer: String,
    csrf: String,
    notice: String,
    items: Vec<Item>,
    layout: crate::layout::Layout,
}

pub async fn admin_home(
    State(s): State<AppState>,
    headers: HeaderMap,
    PageParams(q): PageParams<NoticeParam>,
) -> Result<Response, PageError> {
    let Some(session) = AdminSession::from_headers(&headers, &s).await? else {
        return Ok(login_page(StatusCode::OK, ""));
    };
    let items = review_queue(&s)
        .await?
        .into_iter()
        .map(|i| Item {
            id: i.submission_id.to_string(),
            submitter: i.submitter,
            gpu: i.gpu,
            run_name: i.run_name,
            received: i.received_at,
            demo: i.demo,
            warnings: i
                .warnings
                .into_iter()
                .map(|w| Warning {
                    outcome: w.outcome.as_str(),
                    id: w.id,
                    message: w.message,
                })
                .collect(),
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &QueuePage {
            maintainer: session.name,
            csrf: session.csrf,
            notice: notice(q.done.as_deref()).to_string(),
            items,
            layout: crate::layout::Layout::of(false),
        },
    ))
}

pub async fn login(
    State(s): State<AppState>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Response {
    // A sign-in posted from another site would plant a session cookie.
    if let Err(e) = auth::same_origin(&headers, &s.service.config().public_url) {
        return PageError(e).into_response();
    }
    let token = f.get("token").map(|t| t.trim()).unwrap_or_default();
    if s.maintainers.is_empty() {
        return login_page(
            StatusCode::FORBIDDEN,
            "Moderation is closed: this service has no maintainer tokens configured (--admin-token).",
        );
    }
    let Some(name) = s.maintainers.who(token) else {
        return login_page(
            StatusCode::UNAUTHORIZED,
            "That token is not a maintainer token of this service.",
        );
    };
    let session_id = match s
        .service
        .open_admin_session(name, &auth::token_sha256(token))
        .await
    {
        Ok(id) => id,
        Err(e) => return PageError(e.into()).into_response(),
    };
    (
        StatusCode::SEE_OTHER,
        [
            (
                header::SET_COOKIE,
                auth::session_cookie(&session_id, secure_cookies(&s)),
            ),
            (header::LOCATION, "/admin".to_string()),
        ],
    )
        .into_response()
}

/// Cookies are `Secure` when the service is served over https.
fn secure_cookies(s: &AppState) -> bool {
    s.service.config().public_url.starts_with("https://")
}

/// The session behind a form post, with its origin and CSRF token checked.
pub(crate) async fn form_session(
    headers: &HeaderMap,
    s: &AppState,
    form: &HashMap<String, String>,
) -> Result<AdminSession, PageError> {
    auth::same_origin(headers, &s.service.config().public_url)?;
    let session = AdminSession::from_headers(headers, s)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "auth_required",
                "sign in at /admin first",
            )
        })?;
    let presented = form.get("csrf").map(String::as_str).unwrap_or_default();
    if !session.csrf_ok(presented) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            "the form's CSRF token does not match this session; reload /admin and try again",
        )
        .into());
    }
    Ok(session)
}

fn field<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map(String::as_str).unwrap_or_default()
}

/// What the queue page says after a form post. Only these fixed texts:
/// a crafted link cannot put words on a maintainer's page.
fn notice(done: Option<&str>) -> &'static str {
    match done {
        Some("suspended") => "Submitter suspended: their new bundles are refused.",
        Some("revoked") => {
            "Key revoked: bundles received since the given time are now rejected (see each submission's history)."
        }
        _ => "",
    }
}

fn back_to_admin(done: &str) -> Response {
    Redirect::to(&format!("/admin?done={done}")).into_response()
}

pub async fn logout(
    State(s): State<AppState>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let session = form_session(&headers, &s, &f).await?;
    // The session ends here, not only in this browser: a copy of the
    // cookie signs no one in afterwards.
    s.service
        .close_admin_session(&session.id)
        .await
        .map_err(ApiError::from)?;
    Ok((
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, auth::clear_cookie(secure_cookies(&s))),
            (header::LOCATION, "/admin".to_string()),
        ],
    )
        .into_response())
}

pub async fn decide(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(f): Form<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let session = form_session(&headers, &s, &f).await?;
    let id = parse_id(&id)?;
    let decision = Decision::parse(field(&f, "decision")).ok_or_else(|| {
        ApiError::bad_request("bad_decision", "decision must be approve or reject")
    })?;
    let by = moderation::actor(&session.name, field(&f, "reason"))?;
    s.service.decide(id, decision, &by).await?;

    Ok(Redirect::to(&format!("/submissions/{id}")).into_response())
}

pub async fn suspend(
    State(s): State<AppState>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let session = form_session(&headers, &s, &f).await?;
    let handle = field(&f, "handle").trim();
    let by = moderation::actor(&session.name, field(&f, "reason"))?;
    s.service.suspend(handle, &by).await?;
    Ok(back_to_admin("suspended"))
}

pub async fn revoke(
    State(s): State<AppState>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let session = form_session(&headers, &s, &f).await?;
    let fingerprint = field(&f, "fingerprint").trim();
    let by = moderation::actor(&session.name, field(&f, "reason"))?;
    let at = moderation::parse_time(field(&f, "effective_at"))?;
    s.service.revoke(fingerprint, at, &by).await?;

    Ok(back_to_admin("revoked"))
}

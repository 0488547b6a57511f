//! fakecloud's web console at `/console`: the resources of every account,
//! the audit of calls as they arrive, outside-actor changes, faults and
//! throttling, snapshots and the request recorder, as pages a person can
//! watch during a demo instead of reading JSON.
//!
//! Served by the binary itself, with no build step of its own: the pages
//! are rendered on the server with maud (templates are Rust, checked at
//! compile time, every interpolated value escaped), and one small
//! hand-written script (`assets/console.js`) adds only what needs it: live
//! updates over Server-Sent Events (`live`) and pausing the audit.
//!
//! Security is a real console's: login with the admin token into a session
//! cookie (`session`, `login`), every POST checked against cross-site
//! requests (`csrf`), failed logins slowed, and a strict Content Security
//! Policy (no inline script or style). The console is off (404) when the
//! admin token is empty. fakecloud always has one otherwise: the configured
//! token, or the one it mints and prints at start, which is the token to
//! log in with.
//!
//! The console is not part of the API: its routes sit outside the layer
//! that audits and counts API calls (a page view is not a call to the
//! cloud) and outside the OpenAPI document. What it changes it audits
//! itself, under its own paths: resource changes as actor `external` (an
//! outside actor, as the admin API's resource PATCH), faults and
//! throttling as `admin`.

mod assets;
mod csrf;
mod data;
mod error;
mod html;
mod live;
mod login;
mod pages;
mod secret;
mod session;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::Response;
use axum::routing::{get, post};
use tokio::sync::watch;

use crate::audit::Entry;
use crate::clock::now_ms;
use crate::model::Actor;
use crate::request_id;
use crate::state::SharedState;
use login::LoginGuard;
use session::{CurrentSession, IDLE, LIFETIME, Sessions};

/// The console's state: the server's, plus its sessions and login guard.
pub struct Console {
    app: SharedState,
    sessions: Sessions,
    logins: LoginGuard,
    /// Becomes true when the server shuts down.
    closing: watch::Receiver<bool>,
}

type ConsoleState = Arc<Console>;

impl Console {
    fn pool(&self) -> &sqlx::SqlitePool {
        &self.app.db.read
    }

    /// Whether a live stream of session `key` goes on: not once the
    /// session has ended, nor once the server is shutting down (an open
    /// stream would hold the graceful shutdown open).
    fn streaming(&self, key: &str) -> bool {
        !*self.closing.borrow() && self.sessions.alive(key)
    }

    /// Audits a change the console made, as the API audits its calls:
    /// `session` tells the browser's `User-Agent`.
    fn audit(
        &self,
        session: &CurrentSession,
        actor: Actor,
        account: Option<String>,
        path: String,
        status: StatusCode,
    ) {
        self.app.audit.record(Entry {
            time: now_ms(),
            account,
            actor,
            method: "POST".into(),
            path,
            status: status.as_u16(),
            request_id: request_id::current(),
            user_agent: session.user_agent.clone(),
        });
    }
}

/// The console's routes, to merge into the server's router; none when the
/// admin token is empty. `closing` turns true when the server shuts down.
pub fn router<S: Clone + Send + Sync + 'static>(
    app: SharedState,
    closing: watch::Receiver<bool>,
) -> Router<S> {
    if app.admin_token.is_empty() {
        return Router::new();
    }
    let console = Arc::new(Console {
        app,
        sessions: Sessions::new(IDLE, LIFETIME),
        logins: LoginGuard::default(),
        closing,
    });
    let signed_in = Router::new()
        .route("/console", get(pages::summary::page))
        .route("/console/summary", get(pages::summary::fragment))
        .route("/console/resources", get(pages::resources::page))
        .route("/console/resources/table", get(pages::resources::fragment))
        .route("/console/resources/{seq}", get(pages::resource::page))
        .route(
            "/console/resources/{seq}/tags",
            post(pages::resource::set_tag),
        )
        .route(
            "/console/resources/{seq}/tags/remove",
            post(pages::resource::remove_tag),
        )
        .route(
            "/console/resources/{seq}/desired-size",
            post(pages::resource::desired_size),
        )
        .route(
            "/console/resources/{seq}/delete",
            post(pages::resource::delete),
        )
        .route("/console/audit", get(pages::audit::page))
        .route("/console/faults", get(pages::faults::page))
        .route("/console/faults/add", post(pages::faults::add))
        .route("/console/faults/clear", post(pages::faults::clear))
        .route("/console/faults/{id}/remove", post(pages::faults::remove))
        .route("/console/throttling", post(pages::faults::set_throttling))
        .route(
            "/console/throttling/clear",
            post(pages::faults::clear_throttling),
        )
        .route(
            "/console/throttling/accounts",
            post(pages::faults::set_account_throttling),
        )
        .route(
            "/console/throttling/accounts/clear",
            post(pages::faults::clear_account_throttling),
        )
        .route(
            "/console/snapshots",
            get(pages::snapshots::page).post(pages::snapshots::save),
        )
        .route(
            "/console/snapshots/{name}/file",
            get(pages::snapshots::download),
        )
        .route(
            "/console/snapshots/{name}/load",
            get(pages::snapshots::confirm_load).post(pages::snapshots::load),
        )
        .route(
            "/console/snapshots/{name}/delete",
            post(pages::snapshots::delete),
        )
        .route(
            "/console/recorder/start",
            post(pages::snapshots::start_recorder),
        )
        .route(
            "/console/recorder/stop",
            post(pages::snapshots::stop_recorder),
        )
        .route(
            "/console/recorder/file",
            get(pages::snapshots::download_recording),
        )
        .route("/console/live", get(live::changes))
        .route("/console/live/audit", get(live::audit))
        .route("/console/logout", post(login::logout))
        .route_layer(from_fn_with_state(console.clone(), session::require));
    Router::new()
        .route("/console/login", get(login::form).post(login::submit))
        .route("/console/assets/console.css", get(assets::css))
        .route("/console/assets/console.js", get(assets::js))
        .merge(signed_in)
        .layer(from_fn(security_headers))
        .layer(from_fn(request_id::middleware))
        .with_state(console)
}

/// What the browser may do with the console's pages: run only the
/// console's own script and style (so an injected `<script>` could not run
/// even if escaping failed), never frame them, never cache them.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers
        .entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

//! Console sessions: a random id in an `HttpOnly`, `SameSite=Strict`
//! cookie, looked up in a map held by the server, so the admin token is
//! sent once, at login, and never again (never in a URL or a page).
//!
//! The map is keyed by the SHA-256 of the id, so neither the lookup's
//! timing nor a dump of the map gives a usable id away. A session ends at
//! logout, after [`IDLE`] without a request, or [`LIFETIME`] after login.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use cookie::{Cookie, SameSite};
use sha2::{Digest, Sha256};

use super::error::ConsoleError;
use super::{ConsoleState, csrf};

/// The session cookie's name.
pub const COOKIE_NAME: &str = "fakecloud_console";
/// The console's root: the cookie is sent to nothing else of the server.
pub const PATH: &str = "/console";
/// A session unused this long ends.
pub const IDLE: Duration = Duration::from_secs(2 * 3600);
/// A session ends this long after login, however busy.
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Most sessions kept; the oldest goes first beyond it, so logins in a
/// loop cannot grow the map without bound.
const MAX_SESSIONS: usize = 1024;
/// Largest form body read for the cross-site check.
const FORM_LIMIT: usize = 64 * 1024;

fn random_hex() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

fn key_of(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

/// The session a request belongs to, as handlers see it.
#[derive(Clone, Debug)]
pub struct CurrentSession {
    /// The map's key (the id's hash), never the id itself.
    pub key: String,
    /// The token every state-changing form carries (`csrf`).
    pub csrf: String,
    /// This request's `User-Agent` (as [`crate::audit::user_agent`] keeps
    /// it), so the console's changes are audited with the browser that made
    /// them, as API calls are with their client. Set by [`require`] on every
    /// request, not kept with the session: a session may move browsers.
    pub user_agent: Option<String>,
}

/// A one-time message shown on the next page (the outcome of a form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flash {
    pub ok: bool,
    pub text: String,
}

impl Flash {
    pub fn ok(text: impl Into<String>) -> Flash {
        Flash {
            ok: true,
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Flash {
        Flash {
            ok: false,
            text: text.into(),
        }
    }
}

struct Entry {
    csrf: String,
    started: Instant,
    seen: Instant,
    flash: Option<Flash>,
}

pub struct Sessions {
    entries: Mutex<HashMap<String, Entry>>,
    idle: Duration,
    lifetime: Duration,
}

impl Sessions {
    pub fn new(idle: Duration, lifetime: Duration) -> Sessions {
        Sessions {
            entries: Mutex::new(HashMap::new()),
            idle,
            lifetime,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expired(&self, entry: &Entry, now: Instant) -> bool {
        now.duration_since(entry.seen) >= self.idle
            || now.duration_since(entry.started) >= self.lifetime
    }

    /// A new session: the id for its cookie, and the session.
    pub fn start(&self) -> (String, CurrentSession) {
        let id = random_hex();
        let session = CurrentSession {
            key: key_of(&id),
            csrf: random_hex(),
            user_agent: None,
        };
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, entry| !self.expired(entry, now));
        if entries.len() >= MAX_SESSIONS
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, entry)| entry.started)
                .map(|(key, _)| key.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(
            session.key.clone(),
            Entry {
                csrf: session.csrf.clone(),
                started: now,
                seen: now,
                flash: None,
            },
        );
        (id, session)
    }

    /// The live session with cookie value `id`, marked as used.
    pub fn find(&self, id: &str) -> Option<CurrentSession> {
        let key = key_of(id);
        let now = Instant::now();
        let mut entries = self.lock();
        let entry = entries.get_mut(&key)?;
        if self.expired(entry, now) {
            entries.remove(&key);
            return None;
        }
        entry.seen = now;
        Some(CurrentSession {
            csrf: entry.csrf.clone(),
            key,
            user_agent: None,
        })
    }

    /// Whether the session is still live (a live stream ends when not).
    pub fn alive(&self, key: &str) -> bool {
        let now = Instant::now();
        self.lock()
            .get(key)
            .is_some_and(|entry| !self.expired(entry, now))
    }

    pub fn end(&self, key: &str) {
        self.lock().remove(key);
    }

    pub fn set_flash(&self, key: &str, flash: Flash) {
        if let Some(entry) = self.lock().get_mut(key) {
            entry.flash = Some(flash);
        }
    }

    pub fn take_flash(&self, key: &str) -> Option<Flash> {
        self.lock().get_mut(key)?.flash.take()
    }
}

/// The `Set-Cookie` value that starts a session.
pub fn session_cookie(id: &str, lifetime: Duration) -> String {
    Cookie::build((COOKIE_NAME, id.to_owned()))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path(PATH)
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX),
        ))
        .build()
        .to_string()
}

/// The `Set-Cookie` value that makes the browser forget the session.
pub fn expired_cookie() -> String {
    Cookie::build((COOKIE_NAME, ""))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path(PATH)
        .max_age(cookie::time::Duration::ZERO)
        .build()
        .to_string()
}

/// The session id the request's cookies carry.
pub fn cookie_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == COOKIE_NAME)
        .map(|cookie| cookie.value().to_owned())
}

/// Requests of a page (a browser navigating) are sent to the login page
/// when they have no session; a script's requests (fragments, event
/// streams) get a 401 it can act on.
fn wants_page(headers: &HeaderMap) -> bool {
    headers
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"))
}

/// Guards every console route but the login page and the assets: the
/// request needs a live session, and a POST must come from the console's
/// own pages (`csrf`). Handlers find the session in the request's
/// extensions.
pub async fn require(
    State(console): State<ConsoleState>,
    request: Request,
    next: Next,
) -> Response {
    let session = cookie_id(request.headers()).and_then(|id| console.sessions.find(&id));
    let Some(session) = session else {
        return if request.method() == Method::GET && wants_page(request.headers()) {
            Redirect::to("/console/login").into_response()
        } else {
            ConsoleError::SignedOut.into_response()
        };
    };
    let mut request = if request.method() == Method::POST {
        match same_site_form(request, &session).await {
            Ok(request) => request,
            Err(err) => return err.into_response(),
        }
    } else {
        request
    };
    let session = CurrentSession {
        user_agent: crate::audit::user_agent(request.headers()),
        ..session
    };
    request.extensions_mut().insert(session);
    next.run(request).await
}

/// Checks a POST's origin and its form's token, then puts the body back
/// for the handler.
async fn same_site_form(
    request: Request,
    session: &CurrentSession,
) -> Result<Request, ConsoleError> {
    csrf::check_origin(request.headers())?;
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, FORM_LIMIT)
        .await
        .map_err(|_| ConsoleError::Body)?;
    csrf::check_token(&bytes, &session.csrf)?;
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// `Set-Cookie` as a header value; the cookie crate only writes valid ones.
pub fn header_value(cookie: &str) -> HeaderValue {
    HeaderValue::from_str(cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_http_only_same_site_strict_and_scoped_to_the_console() {
        let cookie = session_cookie("abc", LIFETIME);
        let parsed = Cookie::parse(cookie.clone()).unwrap();
        assert_eq!(parsed.name(), COOKIE_NAME);
        assert_eq!(parsed.value(), "abc");
        assert_eq!(parsed.http_only(), Some(true), "{cookie}");
        assert_eq!(parsed.same_site(), Some(SameSite::Strict), "{cookie}");
        assert_eq!(parsed.path(), Some("/console"), "{cookie}");
        assert_eq!(
            parsed.max_age(),
            Some(cookie::time::Duration::seconds(12 * 3600))
        );
        let gone = Cookie::parse(expired_cookie()).unwrap();
        assert_eq!(gone.max_age(), Some(cookie::time::Duration::ZERO));
        assert_eq!(gone.http_only(), Some(true));
        assert_eq!(gone.path(), Some("/console"));
    }

    #[test]
    fn a_session_is_found_by_its_id_and_gone_after_logout() {
        let sessions = Sessions::new(IDLE, LIFETIME);
        let (id, session) = sessions.start();
        assert_ne!(session.key, id, "the map holds the id's hash, not the id");
        let found = sessions.find(&id).unwrap();
        assert_eq!(found.csrf, session.csrf);
        assert!(sessions.find("not-a-session").is_none());
        sessions.end(&session.key);
        assert!(sessions.find(&id).is_none());
        assert!(!sessions.alive(&session.key));
    }

    #[test]
    fn an_idle_session_expires() {
        let sessions = Sessions::new(Duration::ZERO, LIFETIME);
        let (id, _) = sessions.start();
        assert!(sessions.find(&id).is_none());
    }

    #[test]
    fn a_flash_is_shown_once() {
        let sessions = Sessions::new(IDLE, LIFETIME);
        let (_, session) = sessions.start();
        sessions.set_flash(&session.key, Flash::ok("done"));
        assert_eq!(sessions.take_flash(&session.key), Some(Flash::ok("done")));
        assert_eq!(sessions.take_flash(&session.key), None);
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("other=1; fakecloud_console=xyz; third=3"),
        );
        assert_eq!(cookie_id(&headers).as_deref(), Some("xyz"));
        assert_eq!(cookie_id(&HeaderMap::new()), None);
    }

    #[test]
    fn logins_cannot_grow_the_map_without_bound() {
        let sessions = Sessions::new(IDLE, LIFETIME);
        let (first, _) = sessions.start();
        for _ in 0..MAX_SESSIONS {
            sessions.start();
        }
        assert!(sessions.find(&first).is_none(), "the oldest went first");
        assert_eq!(sessions.lock().len(), MAX_SESSIONS);
    }
}

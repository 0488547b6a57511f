//! Logging in with the admin token, and out.
//!
//! Each failed login makes the next attempt from the same client address
//! wait longer (doubling, up to [`MAX_DELAY`]), so guessing the token is
//! hopeless even before its 128 random bits are counted; a success, or
//! [`FORGET_AFTER`] without failures, clears the count. Failures are logged
//! with the client's address and never with what was typed.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;

use super::error::ConsoleError;
use super::secret::same_secret;
use super::session::{self, CurrentSession, LIFETIME};
use super::{ConsoleState, csrf};

/// The delay after the first failure; each further one doubles it.
const FIRST_DELAY: Duration = Duration::from_millis(200);
/// The longest delay.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// Failures older than this are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Most client addresses remembered; beyond, the oldest are forgotten.
const MAX_CLIENTS: usize = 10_000;

/// How long a login attempt waits after `failures` recent failures.
pub fn delay_after(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => FIRST_DELAY
            .saturating_mul(1 << (n - 1).min(16))
            .min(MAX_DELAY),
    }
}

struct Failures {
    count: u32,
    last: Instant,
}

/// Recent failed logins per client address.
#[derive(Default)]
pub struct LoginGuard {
    clients: Mutex<HashMap<IpAddr, Failures>>,
}

impl LoginGuard {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Failures>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long `client`'s next attempt waits.
    pub fn delay(&self, client: IpAddr) -> Duration {
        self.lock()
            .get(&client)
            .filter(|f| f.last.elapsed() < FORGET_AFTER)
            .map_or(Duration::ZERO, |f| delay_after(f.count))
    }

    /// Counts a failure of `client`; returns its recent failures.
    pub fn failed(&self, client: IpAddr) -> u32 {
        let mut clients = self.lock();
        if clients.len() >= MAX_CLIENTS {
            clients.retain(|_, f| f.last.elapsed() < FORGET_AFTER);
        }
        if clients.len() >= MAX_CLIENTS
            && let Some(oldest) = clients
                .iter()
                .min_by_key(|(_, f)| f.last)
                .map(|(ip, _)| *ip)
        {
            clients.remove(&oldest);
        }
        let failures = clients.entry(client).or_insert(Failures {
            count: 0,
            last: Instant::now(),
        });
        if failures.last.elapsed() >= FORGET_AFTER {
            failures.count = 0;
        }
        failures.count = failures.count.saturating_add(1);
        failures.last = Instant::now();
        failures.count
    }

    pub fn succeeded(&self, client: IpAddr) {
        self.lock().remove(&client);
    }
}

fn login_page(error: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "Log in · fakecloud console" }
                link rel="stylesheet" href="/console/assets/console.css";
            }
            body {
                main #main .narrow {
                    h1 { "fakecloud console" }
                    p { "Log in with fakecloud's admin token (" code { "--admin-token" } ", "
                        code { "FAKECLOUD_ADMIN_TOKEN" } ", or the one fakecloud printed at start)." }
                    @if let Some(error) = error {
                        p .flash .error role="alert" { (error) }
                    }
                    form method="post" action="/console/login" {
                        label for="token" { "Admin token" }
                        input #token type="password" name="token" required autofocus
                            autocomplete="current-password" spellcheck="false";
                        button type="submit" { "Log in" }
                    }
                }
            }
        }
    }
}

/// `GET /console/login`: the form, or the console when already logged in.
pub async fn form(State(console): State<ConsoleState>, headers: HeaderMap) -> Response {
    let signed_in = session::cookie_id(&headers).and_then(|id| console.sessions.find(&id));
    match signed_in {
        Some(_) => Redirect::to("/console").into_response(),
        None => login_page(None).into_response(),
    }
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
}

/// `POST /console/login`: a session cookie for the right token.
pub async fn submit(
    State(console): State<ConsoleState>,
    client: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Result<Response, ConsoleError> {
    // A login form posted from elsewhere could sign the browser into a
    // session of the attacker's choosing.
    csrf::check_origin(&headers)?;
    let client = client.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.0.ip());
    tokio::time::sleep(console.logins.delay(client)).await;
    if !same_secret(&form.token, &console.app.admin_token) {
        let failures = console.logins.failed(client);
        tracing::warn!(%client, failures, "console: failed login");
        let page = login_page(Some(
            "That is not the admin token. Each failed attempt makes the next one wait longer.",
        ));
        return Ok((StatusCode::UNAUTHORIZED, page).into_response());
    }
    console.logins.succeeded(client);
    let (id, _) = console.sessions.start();
    tracing::info!(%client, "console: logged in");
    Ok((
        [(
            SET_COOKIE,
            session::header_value(&session::session_cookie(&id, LIFETIME)),
        )],
        Redirect::to("/console"),
    )
        .into_response())
}

/// `POST /console/logout`: ends the session and forgets the cookie.
pub async fn logout(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Response {
    console.sessions.end(&session.key);
    (
        [(
            SET_COOKIE,
            session::header_value(&session::expired_cookie()),
        )],
        Redirect::to("/console/login"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_doubles_the_wait_up_to_a_limit() {
        assert_eq!(delay_after(0), Duration::ZERO);
        assert_eq!(delay_after(1), Duration::from_millis(200));
        assert_eq!(delay_after(2), Duration::from_millis(400));
        assert_eq!(delay_after(3), Duration::from_millis(800));
        assert_eq!(delay_after(8), MAX_DELAY);
        assert_eq!(delay_after(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn failures_are_counted_per_client_and_cleared_by_a_success() {
        let guard = LoginGuard::default();
        let one: IpAddr = "10.0.0.1".parse().unwrap();
        let two: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(guard.delay(one), Duration::ZERO);
        assert_eq!(guard.failed(one), 1);
        assert_eq!(guard.failed(one), 2);
        assert_eq!(guard.delay(one), Duration::from_millis(400));
        assert_eq!(guard.delay(two), Duration::ZERO);
        guard.succeeded(one);
        assert_eq!(guard.delay(one), Duration::ZERO);
    }
}

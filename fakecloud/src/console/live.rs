//! Live updates over Server-Sent Events: one stream tells the resources and
//! summary pages when to fetch their fragment again, another sends the
//! audit page each new call.
//!
//! Both poll the database (every [`POLL`]) rather than hook into the
//! writers: the audit log is written in batches by its own task and
//! transitions by the ticker, and a poll of an indexed `seq` or a small
//! fingerprint costs little next to a page view. A stream ends with its
//! session (logout, expiry) and when the server shuts down.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;

use super::data::{self, AUDIT_ROWS};
use super::pages::audit::{AuditPageQuery, CallView};
use super::session::CurrentSession;
use super::{Console, ConsoleState};

/// How often a stream looks for news.
const POLL: Duration = Duration::from_millis(500);
/// The summary refreshes at least this often: its last minute slides on
/// even when nothing happens.
const TICK: Duration = Duration::from_secs(10);

/// What a page refreshes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// Resources created, changed, moved to another state or gone.
    Resources,
    /// That, new calls, and the faults and throttling in force.
    Everything,
}

/// A value that changes whenever what `watch` covers changes; pages embed
/// it, so a change between the page and its stream is not missed.
pub async fn fingerprint(console: &Console, watch: Watch) -> Result<String, sqlx::Error> {
    let resources = data::resources_fingerprint(console.pool()).await?;
    Ok(match watch {
        Watch::Resources => resources,
        Watch::Everything => format!(
            "{resources}|{}|{:?}|{:?}|{:?}",
            data::last_call(console.pool()).await?,
            console.app.faults.list(),
            console.app.throttle.get(),
            console.app.throttle.accounts(),
        ),
    })
}

#[derive(Deserialize)]
pub struct ChangesQuery {
    watch: Option<String>,
    /// The fingerprint the page was rendered at.
    since: Option<String>,
}

/// `GET /console/live?watch=resources|everything&since=...`: a `change`
/// event whenever the page's fingerprint moves on.
pub async fn changes(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Query(query): Query<ChangesQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let watch = match query.watch.as_deref() {
        Some("everything") => Watch::Everything,
        _ => Watch::Resources,
    };
    let start = (
        console,
        session.key,
        query.since.unwrap_or_default(),
        Instant::now(),
    );
    let stream = futures::stream::unfold(
        start,
        move |(console, key, mut seen, mut sent)| async move {
            loop {
                tokio::time::sleep(POLL).await;
                if !console.streaming(&key) {
                    return None;
                }
                let now = match fingerprint(&console, watch).await {
                    Ok(now) => now,
                    Err(err) => {
                        tracing::warn!(%err, "console: live fingerprint");
                        continue;
                    }
                };
                let due = watch == Watch::Everything && sent.elapsed() >= TICK;
                if now != seen || due {
                    seen = now;
                    sent = Instant::now();
                    // A browser drops an event without data.
                    let event = Event::default().event("change").data("1");
                    return Some((Ok(event), (console, key, seen, sent)));
                }
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[derive(Deserialize)]
pub struct AuditStreamQuery {
    #[serde(flatten)]
    page: AuditPageQuery,
    /// The newest call the page shows.
    after: Option<String>,
}

/// `GET /console/live/audit?<filters>&after=SEQ`: `calls` events with the
/// new matching calls, oldest first, each event's id its newest `seq` (a
/// reconnecting browser sends it back as `Last-Event-ID`).
pub async fn audit(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    headers: HeaderMap,
    Query(query): Query<AuditStreamQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let filter = query.page.filter();
    let resumed = headers
        .get("last-event-id")
        .and_then(|id| id.to_str().ok())
        .and_then(|id| id.parse::<i64>().ok());
    let after = resumed.or_else(|| query.after.and_then(|a| a.parse().ok()));
    let start = (console, session.key, after);
    let stream = futures::stream::unfold(start, move |(console, key, after)| {
        let filter = filter.clone();
        async move {
            let mut after = match after {
                Some(after) => after,
                None => data::last_call(console.pool()).await.unwrap_or(0),
            };
            loop {
                tokio::time::sleep(POLL).await;
                if !console.streaming(&key) {
                    return None;
                }
                let found = async {
                    let upto = data::last_call(console.pool()).await?;
                    let calls = data::calls_between(console.pool(), &filter, after, upto).await?;
                    Ok::<_, sqlx::Error>((upto, calls))
                };
                let (upto, calls) = match found.await {
                    Ok(found) => found,
                    Err(err) => {
                        tracing::warn!(%err, "console: live audit");
                        continue;
                    }
                };
                // Skip what did not match, unless a full batch stopped short.
                after = match calls.last() {
                    Some(last) if calls.len() as i64 == AUDIT_ROWS => last.seq,
                    _ => upto,
                };
                if calls.is_empty() {
                    continue;
                }
                let views: Vec<CallView> = calls.iter().map(CallView::from).collect();
                let data = serde_json::to_string(&views).unwrap_or_default();
                let event = Event::default()
                    .event("calls")
                    .id(after.to_string())
                    .data(data);
                return Some((Ok(event), (console, key, Some(after))));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

//! The audit page: every call as it arrives (`live`) with the client that
//! made it (its user agent), filterable by
//! account, caller, method and status, with 429s and 5xx marked, and a
//! pause that holds new calls back while someone reads.

use axum::Extension;
use axum::extract::{Query, State};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};

use super::{accounts, given, href};
use crate::console::ConsoleState;
use crate::console::data::{self, AuditFilter, Call, StatusClass};
use crate::console::error::ConsoleError;
use crate::console::html::{self, Section};
use crate::console::session::CurrentSession;
use crate::model::Actor;

/// The page's query, which the live stream takes too.
#[derive(Deserialize, Default, Clone, Debug)]
pub struct AuditPageQuery {
    pub account: Option<String>,
    pub actor: Option<String>,
    pub method: Option<String>,
    pub status: Option<String>,
}

impl AuditPageQuery {
    pub fn filter(&self) -> AuditFilter {
        AuditFilter {
            account: given(&self.account),
            actor: given(&self.actor),
            method: given(&self.method),
            status: StatusClass::parse(&given(&self.status).unwrap_or_default()),
        }
    }

    /// The live stream of this filter, from after `seq`.
    fn stream(&self, seq: i64) -> String {
        href(
            "/console/live/audit",
            &[
                ("account", given(&self.account)),
                ("actor", given(&self.actor)),
                ("method", given(&self.method)),
                ("status", given(&self.status)),
                ("after", Some(seq.to_string())),
            ],
        )
    }
}

/// A call as the page shows it; the live stream sends the same fields, so
/// rows the script adds read like the rows the server wrote.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct CallView {
    pub seq: i64,
    pub time: String,
    pub account: String,
    pub caller: &'static str,
    /// The client's `User-Agent`: which provider replica (or browser,
    /// script) it was; empty when it sent none.
    pub user_agent: String,
    pub method: String,
    pub path: String,
    pub status: i64,
    /// The status cell's class: 429s and 5xx stand out.
    pub class: &'static str,
}

impl From<&Call> for CallView {
    fn from(call: &Call) -> CallView {
        CallView {
            seq: call.seq,
            time: html::clock(call.time),
            account: call.account.clone().unwrap_or_default(),
            caller: html::actor_label(&call.actor),
            user_agent: call.user_agent.clone().unwrap_or_default(),
            method: call.method.clone(),
            path: call.path.clone(),
            status: call.status,
            class: html::status_class(call.status),
        }
    }
}

/// A table's head and rows of calls, newest first.
pub fn call_rows(calls: &[Call]) -> Markup {
    html! {
        thead {
            tr {
                th scope="col" { "Time (UTC)" }
                th scope="col" { "Account" }
                th scope="col" { "Caller" }
                th scope="col" { "Method" }
                th scope="col" { "Path" }
                th scope="col" { "Status" }
                // Last, so the columns before it keep their places (the
                // browser test, e2e/tests/console.rs, reads them by index).
                th scope="col" { "User agent" }
            }
        }
        tbody {
            @for call in calls {
                @let view = CallView::from(call);
                tr {
                    td { (view.time) }
                    td { (view.account) }
                    td { (view.caller) }
                    td { (view.method) }
                    td .path { (view.path) }
                    td { span class=(view.class) { (view.status) } }
                    td .agent { (view.user_agent) }
                }
            }
        }
    }
}

/// `GET /console/audit`.
pub async fn page(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Query(query): Query<AuditPageQuery>,
) -> Result<Markup, ConsoleError> {
    let flash = console.sessions.take_flash(&session.key);
    console.app.audit.flush().await;
    let last = data::last_call(console.pool()).await?;
    let calls = data::newest_calls(console.pool(), &query.filter()).await?;
    // The stream starts after everything this page shows.
    let after = calls.first().map_or(last, |newest| newest.seq.max(last));
    let accounts = accounts(&console).await?;
    let body = html! {
        (filters(&query, &accounts))
        div .live-controls {
            button #audit-pause type="button" aria-pressed="false" aria-controls="audit-log" { "Pause" }
            span #audit-held role="status" {}
        }
        p .muted { "Newest first; new calls appear at the top as they are answered. "
            "Throttled (429) and server-error (5xx) answers are marked." }
        div .scroll {
            table .calls #audit-log data-stream=(query.stream(after)) {
                (call_rows(&calls))
            }
        }
    };
    Ok(html::page("Audit", Section::Audit, &session, flash, body))
}

const METHODS: [&str; 5] = ["GET", "POST", "PATCH", "PUT", "DELETE"];
const ACTORS: [Actor; 4] = [Actor::Api, Actor::External, Actor::Admin, Actor::Anonymous];

fn filters(query: &AuditPageQuery, accounts: &[String]) -> Markup {
    let account = given(&query.account);
    let actor = given(&query.actor);
    let method = given(&query.method);
    let status = query.filter().status;
    html! {
        form .filters method="get" action="/console/audit" role="search" aria-label="Filter calls" {
            div .field {
                label for="account" { "Account" }
                select #account name="account" {
                    option value="" { "any" }
                    @for each in accounts {
                        option value=(each) selected[account.as_deref() == Some(each.as_str())] { (each) }
                    }
                }
            }
            div .field {
                label for="actor" { "Caller" }
                select #actor name="actor" {
                    option value="" { "any" }
                    @for each in ACTORS {
                        option value=(each.as_str()) selected[actor.as_deref() == Some(each.as_str())] {
                            (html::actor_label(each.as_str()))
                        }
                    }
                }
            }
            div .field {
                label for="method" { "Method" }
                select #method name="method" {
                    option value="" { "any" }
                    @for each in METHODS {
                        option value=(each) selected[method.as_deref() == Some(each)] { (each) }
                    }
                }
            }
            div .field {
                label for="status" { "Status" }
                select #status name="status" {
                    @for each in StatusClass::ALL {
                        option value=(each.as_str()) selected[status == each] { (each.label()) }
                    }
                }
            }
            div .buttons {
                button type="submit" { "Filter" }
                a href="/console/audit" { "Clear" }
            }
        }
    }
}

//! The resources page: every kind of every account, newest first, one page
//! at a time, filtered by kind, state, tag, account and region, with counts
//! per state; it refreshes itself while resources change (`live`).

use axum::Extension;
use axum::extract::{Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::{accounts, given, href, known_states};
use crate::clock::now_ms;
use crate::console::ConsoleState;
use crate::console::data::{self, Cursor, ResourceFilter, StateCount, TagFilter};
use crate::console::error::ConsoleError;
use crate::console::html::{self, Section};
use crate::console::live::{self, Watch};
use crate::console::session::CurrentSession;
use crate::model::{Kind, REGIONS};

/// The page's query: its filters and which page.
#[derive(Deserialize, Default, Clone, Debug)]
pub struct ResourceQuery {
    kind: Option<String>,
    state: Option<String>,
    tag: Option<String>,
    account: Option<String>,
    region: Option<String>,
    before: Option<String>,
    after: Option<String>,
}

impl ResourceQuery {
    fn filter(&self) -> ResourceFilter {
        ResourceFilter {
            kind: given(&self.kind).and_then(|k| Kind::parse(&k)),
            state: given(&self.state),
            account: given(&self.account),
            region: given(&self.region),
            tag: given(&self.tag).and_then(|t| TagFilter::parse(&t)),
        }
    }

    fn cursor(&self) -> Cursor {
        let seq = |value: &Option<String>| given(value).and_then(|v| v.parse().ok());
        match (seq(&self.before), seq(&self.after)) {
            (Some(before), _) => Cursor::Before(before),
            (None, Some(after)) => Cursor::After(after),
            (None, None) => Cursor::Newest,
        }
    }

    /// A link to `path` with this query's filters and `cursor`.
    fn link(&self, path: &str, cursor: Cursor) -> String {
        let (before, after) = match cursor {
            Cursor::Newest => (None, None),
            Cursor::Before(seq) => (Some(seq.to_string()), None),
            Cursor::After(seq) => (None, Some(seq.to_string())),
        };
        href(
            path,
            &[
                ("kind", given(&self.kind)),
                ("state", given(&self.state)),
                ("tag", given(&self.tag)),
                ("account", given(&self.account)),
                ("region", given(&self.region)),
                ("before", before),
                ("after", after),
            ],
        )
    }

    /// This query narrowed to one kind and state (the counts' links).
    fn with_state(&self, kind: &str, state: &str) -> String {
        ResourceQuery {
            kind: Some(kind.to_owned()),
            state: Some(state.to_owned()),
            before: None,
            after: None,
            ..self.clone()
        }
        .link("/console/resources", Cursor::Newest)
    }
}

/// `GET /console/resources`.
pub async fn page(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Query(query): Query<ResourceQuery>,
) -> Result<Markup, ConsoleError> {
    let flash = console.sessions.take_flash(&session.key);
    let since = live::fingerprint(&console, Watch::Resources).await?;
    let accounts = accounts(&console).await?;
    let table = fragment_of(&console, &query).await?;
    let source = href(
        "/console/live",
        &[("watch", Some("resources".into())), ("since", Some(since))],
    );
    let body = html! {
        (filters(&query, &accounts))
        section #resource-table aria-label="Resources"
            data-live-source=(source)
            data-live-fragment=(query.link("/console/resources/table", query.cursor())) {
            (table)
        }
    };
    Ok(html::page(
        "Resources",
        Section::Resources,
        &session,
        flash,
        body,
    ))
}

/// `GET /console/resources/table`: the counts, table and pager alone, for
/// the live refresh.
pub async fn fragment(
    State(console): State<ConsoleState>,
    Query(query): Query<ResourceQuery>,
) -> Result<Markup, ConsoleError> {
    fragment_of(&console, &query).await
}

async fn fragment_of(
    console: &ConsoleState,
    query: &ResourceQuery,
) -> Result<Markup, ConsoleError> {
    let filter = query.filter();
    let (counts, page) = tokio::try_join!(
        data::state_counts(console.pool(), &filter),
        data::resources(console.pool(), &filter, query.cursor()),
    )?;
    let matching: i64 = counts
        .iter()
        .filter(|c| filter.state.as_ref().is_none_or(|s| *s == c.state))
        .map(|c| c.count)
        .sum();
    let now = now_ms();
    Ok(html! {
        (state_counts(query, &counts))
        p .summary-line {
            (matching) " matching resources, newest first"
            @if !page.rows.is_empty() { "; this page shows " (page.rows.len()) }
            "."
        }
        @if page.rows.is_empty() {
            p .empty { "No resources match." }
        } @else {
            div .scroll {
                table .resources {
                    thead {
                        tr {
                            th scope="col" { "Kind" }
                            th scope="col" { "ID" }
                            th scope="col" { "Name" }
                            th scope="col" { "State" }
                            th scope="col" { "Tags" }
                            th scope="col" { "Account" }
                            th scope="col" { "Region" }
                            th scope="col" { "Age" }
                        }
                    }
                    tbody {
                        @for row in &page.rows {
                            tr {
                                td { (html::kind_label(row.kind)) }
                                td .id {
                                    a href=(format!("/console/resources/{}", row.seq)) { (row.name) }
                                    @if !row.scope.is_empty() {
                                        " " span .muted { "in " (row.scope) }
                                    }
                                }
                                td { (row.tags.get("Name").map_or("", String::as_str)) }
                                td { (html::state_badge(&row.state)) }
                                td { (html::tags(&row.tags)) }
                                td { (row.account) }
                                td { (row.region) }
                                td { (html::duration(now - row.created_at)) }
                            }
                        }
                    }
                }
            }
        }
        nav .pager aria-label="Pages" {
            @if let Some(newer) = page.newer {
                a href=(query.link("/console/resources", Cursor::Newest)) { "Newest" }
                a href=(query.link("/console/resources", Cursor::After(newer))) rel="prev" { "← Newer" }
            }
            @if let Some(older) = page.older {
                a href=(query.link("/console/resources", Cursor::Before(older))) rel="next" { "Older →" }
            }
        }
    })
}

/// Counts per kind and state; each count links to the page filtered by it.
fn state_counts(query: &ResourceQuery, counts: &[StateCount]) -> Markup {
    html! {
        div .counts aria-label="Resources per state" role="group" {
            @for kind in Kind::ALL {
                @let of_kind: Vec<&StateCount> = counts.iter().filter(|c| c.kind == kind.as_str()).collect();
                @if !of_kind.is_empty() {
                    div .count-group {
                        span .count-kind { (html::kind_label(kind)) }
                        @for count in of_kind {
                            a .count href=(query.with_state(&count.kind, &count.state)) {
                                (html::state_badge(&count.state)) " " (count.count)
                            }
                        }
                    }
                }
            }
        }
    }
}

fn filters(query: &ResourceQuery, accounts: &[String]) -> Markup {
    let kind = given(&query.kind);
    let state = given(&query.state);
    let account = given(&query.account);
    let region = given(&query.region);
    html! {
        form .filters method="get" action="/console/resources" role="search" aria-label="Filter resources" {
            div .field {
                label for="kind" { "Kind" }
                select #kind name="kind" {
                    option value="" { "any" }
                    @for each in Kind::ALL {
                        option value=(each.as_str()) selected[kind.as_deref() == Some(each.as_str())] {
                            (html::kind_label(each))
                        }
                    }
                }
            }
            div .field {
                label for="state" { "State" }
                select #state name="state" {
                    option value="" { "any" }
                    @for each in known_states() {
                        option value=(each) selected[state.as_deref() == Some(each)] { (each) }
                    }
                }
            }
            div .field {
                label for="tag" { "Tag" }
                input #tag type="text" name="tag" value=(given(&query.tag).unwrap_or_default())
                    placeholder="key or key=value";
            }
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
                label for="region" { "Region" }
                select #region name="region" {
                    option value="" { "any" }
                    @for each in REGIONS {
                        option value=(each) selected[region.as_deref() == Some(each)] { (each) }
                    }
                }
            }
            div .buttons {
                button type="submit" { "Filter" }
                a href="/console/resources" { "Clear" }
            }
        }
    }
}

//! The summary, the console's front page: resources per kind and state,
//! the last minute's calls per second and share of 429 and 5xx answers,
//! and what is injected. Refreshes itself (`live`).

use axum::Extension;
use axum::extract::State;
use maud::{Markup, html};

use super::href;
use crate::console::ConsoleState;
use crate::console::data::{self, ResourceFilter, Traffic};
use crate::console::error::ConsoleError;
use crate::console::html::{self, Section};
use crate::console::live::{self, Watch};
use crate::console::session::CurrentSession;
use crate::model::Kind;

/// The window of the traffic figures.
const WINDOW_MS: i64 = 60_000;

/// `GET /console`.
pub async fn page(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Result<Markup, ConsoleError> {
    let flash = console.sessions.take_flash(&session.key);
    let since = live::fingerprint(&console, Watch::Everything).await?;
    let source = href(
        "/console/live",
        &[("watch", Some("everything".into())), ("since", Some(since))],
    );
    let figures = fragment_of(&console).await?;
    let body = html! {
        div #summary data-live-source=(source) data-live-fragment="/console/summary" {
            (figures)
        }
    };
    Ok(html::page(
        "Summary",
        Section::Summary,
        &session,
        flash,
        body,
    ))
}

/// `GET /console/summary`: the figures alone, for the live refresh.
pub async fn fragment(State(console): State<ConsoleState>) -> Result<Markup, ConsoleError> {
    fragment_of(&console).await
}

/// `part` of `whole` as a percentage with one decimal.
fn share(part: i64, whole: i64) -> String {
    if whole == 0 {
        "0%".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn traffic_figures(traffic: Traffic) -> Markup {
    let per_second = traffic.calls as f64 * 1000.0 / WINDOW_MS as f64;
    html! {
        dl .figures {
            div { dt { "Calls per second" } dd { (format!("{per_second:.1}")) } }
            div { dt { "Calls" } dd { (traffic.calls) } }
            div .s429[traffic.throttled > 0] {
                dt { "Throttled (429)" } dd { (share(traffic.throttled, traffic.calls)) }
            }
            div .s5xx[traffic.server_errors > 0] {
                dt { "Server errors (5xx)" } dd { (share(traffic.server_errors, traffic.calls)) }
            }
        }
    }
}

async fn fragment_of(console: &ConsoleState) -> Result<Markup, ConsoleError> {
    let everything = ResourceFilter::default();
    let (counts, traffic) = tokio::try_join!(
        data::state_counts(console.pool(), &everything),
        data::traffic(console.pool(), WINDOW_MS),
    )?;
    let faults = console.app.faults.list().len();
    let throttling = console.app.throttle.get();
    let own = console.app.throttle.accounts().len();
    Ok(html! {
        section aria-labelledby="resources-heading" {
            h2 #resources-heading { "Resources" }
            table .per-kind {
                thead { tr { th scope="col" { "Kind" } th scope="col" { "Total" } th scope="col" { "By state" } } }
                tbody {
                    @for kind in Kind::ALL {
                        @let of_kind: Vec<_> = counts.iter().filter(|c| c.kind == kind.as_str()).collect();
                        tr {
                            th scope="row" {
                                a href=(href("/console/resources", &[("kind", Some(kind.as_str().into()))])) {
                                    (html::kind_label(kind))
                                }
                            }
                            td { (of_kind.iter().map(|c| c.count).sum::<i64>()) }
                            td {
                                @for count in &of_kind {
                                    a .count href=(href("/console/resources", &[
                                        ("kind", Some(kind.as_str().into())),
                                        ("state", Some(count.state.clone())),
                                    ])) {
                                        (html::state_badge(&count.state)) " " (count.count)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="traffic-heading" {
            h2 #traffic-heading { "Calls in the last minute" }
            (traffic_figures(traffic))
        }
        section aria-labelledby="injected-heading" {
            h2 #injected-heading { "Injected" }
            p {
                a href="/console/faults" { (faults) " fault rule" @if faults != 1 { "s" } }
                " in force; throttling "
                @match throttling {
                    Some(t) => { "at " (t.rate_per_second) " calls per second per account" }
                    None => "off",
                }
                @if own > 0 {
                    ", but " (own) " account" @if own == 1 { " has its own rate" } @else { "s have their own" }
                }
                "."
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_percentages_of_the_calls() {
        assert_eq!(share(0, 0), "0%");
        assert_eq!(share(1, 3), "33.3%");
        assert_eq!(share(5, 5), "100.0%");
    }
}

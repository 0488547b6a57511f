//! The frame every console page shares and the small pieces of markup the
//! pages repeat. maud escapes every interpolated value, so a tag value like
//! `<script>` shows as text; nothing here marks a string as safe HTML.

use maud::{DOCTYPE, Markup, html};

use super::session::{CurrentSession, Flash};
use crate::kinds::timestamp;
use crate::model::Kind;

/// The console's sections, in the navigation's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Summary,
    Resources,
    Audit,
    Faults,
    Snapshots,
}

impl Section {
    const ALL: [Section; 5] = [
        Section::Summary,
        Section::Resources,
        Section::Audit,
        Section::Faults,
        Section::Snapshots,
    ];

    fn href(self) -> &'static str {
        match self {
            Section::Summary => "/console",
            Section::Resources => "/console/resources",
            Section::Audit => "/console/audit",
            Section::Faults => "/console/faults",
            Section::Snapshots => "/console/snapshots",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Section::Summary => "Summary",
            Section::Resources => "Resources",
            Section::Audit => "Audit",
            Section::Faults => "Faults & throttling",
            Section::Snapshots => "Snapshots & recorder",
        }
    }
}

/// A whole page: navigation, heading, the session's flash, `body`.
pub fn page(
    title: &str,
    section: Section,
    session: &CurrentSession,
    flash: Option<Flash>,
    body: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · fakecloud console" }
                link rel="stylesheet" href="/console/assets/console.css";
                script src="/console/assets/console.js" defer {}
            }
            body {
                a .skip href="#main" { "Skip to content" }
                header .top {
                    span .brand { "fakecloud" }
                    nav aria-label="Console sections" {
                        ul {
                            @for each in Section::ALL {
                                li {
                                    a href=(each.href())
                                        aria-current=[(each == section).then_some("page")] {
                                        (each.label())
                                    }
                                }
                            }
                        }
                    }
                    form .logout method="post" action="/console/logout" {
                        (csrf_field(session))
                        button type="submit" { "Log out" }
                    }
                }
                main #main tabindex="-1" {
                    h1 { (title) }
                    @if let Some(flash) = flash {
                        p .flash .ok[flash.ok] .error[!flash.ok]
                            role=(if flash.ok { "status" } else { "alert" }) {
                            (flash.text)
                        }
                    }
                    (body)
                }
            }
        }
    }
}

/// The hidden field every state-changing form carries (`csrf`).
pub fn csrf_field(session: &CurrentSession) -> Markup {
    html! { input type="hidden" name=(super::csrf::FIELD) value=(session.csrf); }
}

/// How the kind is named on the page.
pub fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Vpc => "VPC",
        Kind::Subnet => "Subnet",
        Kind::NodeGroup => "NodeGroup",
        Kind::DatabaseInstance => "DatabaseInstance",
    }
}

/// A state, styled by what it means: settled, on its way, or going.
pub fn state_badge(state: &str) -> Markup {
    let class = match state {
        "available" | "ACTIVE" => "state settled",
        "DELETING" | "deleting" => "state going",
        _ => "state moving",
    };
    html! { span class=(class) { (state) } }
}

/// `key=value` chips.
pub fn tags<'a>(tags: impl IntoIterator<Item = (&'a String, &'a String)>) -> Markup {
    html! {
        ul .tags {
            @for (key, value) in tags {
                li { span .key { (key) } "=" span .value { (value) } }
            }
        }
    }
}

/// A span of milliseconds, to the two largest units: `3m 12s`.
pub fn duration(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// A unix-ms time as `2026-11-24 22:41:07 UTC`.
pub fn date_time(ms: i64) -> String {
    timestamp(ms).strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A unix-ms time of day, to the millisecond: `22:41:07.123`.
pub fn clock(ms: i64) -> String {
    timestamp(ms).strftime("%H:%M:%S%.3f").to_string()
}

/// Who made a call, in words.
pub fn actor_label(actor: &str) -> &'static str {
    match actor {
        "api" => "API key (provider)",
        "external" => "outside actor",
        "admin" => "admin",
        _ => "anonymous",
    }
}

/// The CSS class of an answer's status: 429s and 5xx stand out.
pub fn status_class(status: i64) -> &'static str {
    match status {
        429 => "status s429",
        500.. => "status s5xx",
        400.. => "status s4xx",
        _ => "status ok",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_supplied_strings_are_escaped() {
        let team = "team".to_string();
        let hostile = "<script>alert('x')</script>".to_string();
        let quote = "\" onmouseover=\"x".to_string();
        let markup = html! {
            (tags([(&team, &hostile)]))
            a title=(quote) { "t" }
        }
        .into_string();
        assert!(
            markup.contains("&lt;script&gt;alert('x')&lt;/script&gt;"),
            "{markup}"
        );
        assert!(!markup.contains("<script>"), "{markup}");
        assert!(
            markup.contains("title=\"&quot; onmouseover=&quot;x\""),
            "{markup}"
        );
        assert_eq!(
            state_badge("<b>").into_string(),
            "<span class=\"state moving\">&lt;b&gt;</span>"
        );
    }

    #[test]
    fn ages_read_in_two_units() {
        assert_eq!(duration(-5), "0s");
        assert_eq!(duration(42_000), "42s");
        assert_eq!(duration(192_000), "3m 12s");
        assert_eq!(duration(2 * 3_600_000 + 5 * 60_000), "2h 5m");
        assert_eq!(duration(3 * 86_400_000 + 4 * 3_600_000), "3d 4h");
    }

    #[test]
    fn throttling_and_server_errors_stand_out() {
        assert_eq!(status_class(200), "status ok");
        assert_eq!(status_class(404), "status s4xx");
        assert_eq!(status_class(429), "status s429");
        assert_eq!(status_class(503), "status s5xx");
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(date_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(clock(1_234), "00:00:01.234");
    }
}

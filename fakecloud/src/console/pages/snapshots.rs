//! Snapshots and the request recorder: save the whole state under a name,
//! list the saved ones, download one, load one back (after a confirmation
//! page that names what it replaces), delete one; start and stop the
//! recorder and download its recording.
//!
//! Every action calls the admin API's own handlers (`snapshot::routes`,
//! `recorder::routes`) in-process, so the console accepts and refuses
//! exactly what `/admin` does, and says why in the admin API's words.
//! Downloads are the console's own routes because a browser's link cannot
//! carry the admin token: the session stands in for it.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{Markup, html};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{accounts, given};
use crate::console::ConsoleState;
use crate::console::error::ConsoleError;
use crate::console::html::{self, Section, csrf_field};
use crate::console::session::{CurrentSession, Flash};
use crate::error::ApiError;
use crate::kinds::validate;
use crate::model::RecorderStatus;
use crate::model::{Actor, LoadResult, LoadSnapshot, LoadStrategy, ResourceCounts, SnapshotInfo};
use crate::recorder;
use crate::snapshot::{catalog, routes};

const PAGE: &str = "/console/snapshots";
/// Largest answer of an admin handler read back (a snapshot's list entry,
/// a load's result): far above any, so only a broken handler meets it.
const ANSWER_LIMIT: usize = 1 << 20;

/// `GET /console/snapshots`.
pub async fn page(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Result<Markup, ConsoleError> {
    let flash = console.sessions.take_flash(&session.key);
    let snapshots = catalog::list(&console.app.db.read).await?;
    let recording = console.app.recorder.status();
    let body = html! {
        (save_form(&session))
        section aria-labelledby="snapshots-heading" {
            h2 #snapshots-heading { "Saved snapshots" }
            (snapshots_table(&session, &snapshots))
        }
        (recorder_section(&session, &recording))
    };
    Ok(html::page(
        "Snapshots & recorder",
        Section::Snapshots,
        &session,
        flash,
        body,
    ))
}

fn save_form(session: &CurrentSession) -> Markup {
    html! {
        section aria-labelledby="save-heading" {
            h2 #save-heading { "Save a snapshot" }
            p .muted { "The whole state as of one instant: every account's resources (those on \
                their way with their time left), the audit, timing, faults and throttling. \
                The API keeps serving meanwhile." }
            form .grid-form method="post" action=(PAGE) {
                (csrf_field(session))
                div .field {
                    label for="snapshot-name" { "Name (letters, digits, '.', '_', '-')" }
                    input #snapshot-name type="text" name="name" required maxlength="63";
                }
                div .buttons { button type="submit" { "Save snapshot" } }
            }
        }
    }
}

fn snapshots_table(session: &CurrentSession, snapshots: &[SnapshotInfo]) -> Markup {
    html! {
        @if snapshots.is_empty() {
            p .empty { "None saved yet." }
        } @else {
            div .scroll {
                table .snapshots {
                    thead {
                        tr {
                            th scope="col" { "Name" }
                            th scope="col" { "Saved" }
                            th scope="col" { "Size" }
                            th scope="col" { "Resources" }
                            th scope="col" { "Accounts" }
                            th scope="col" { "Format" }
                            th scope="col" { "fakecloud" }
                            th scope="col" { span .visually-hidden { "Actions" } }
                        }
                    }
                    tbody {
                        @for snapshot in snapshots {
                            (snapshot_row(session, snapshot))
                        }
                    }
                }
            }
        }
    }
}

fn snapshot_row(session: &CurrentSession, snapshot: &SnapshotInfo) -> Markup {
    let base = format!("{PAGE}/{}", snapshot.name);
    let confirm = format!("confirm-delete-{}", snapshot.name);
    html! {
        tr {
            td .id { (snapshot.name) }
            td { (html::date_time(snapshot.created_at.as_millisecond())) }
            td { (size(snapshot.size)) }
            td { (counts(&snapshot.resources)) }
            td { (snapshot.accounts.join(", ")) }
            td { "v" (snapshot.format_version) }
            td { (snapshot.fakecloud_version) }
            td {
                div .row-actions {
                    a href=(format!("{base}/file")) download
                        aria-label=(format!("Download snapshot {}", snapshot.name)) { "Download" }
                    // A GET: it only opens the confirmation page.
                    form .inline method="get" action=(format!("{base}/load")) {
                        label .visually-hidden for=(format!("strategy-{}", snapshot.name)) {
                            "How to load " (snapshot.name)
                        }
                        select #(format!("strategy-{}", snapshot.name)) name="strategy" {
                            option value="overwrite" { "overwrite" }
                            option value="merge" { "merge" }
                        }
                        " "
                        button type="submit" .small
                            aria-label=(format!("Load snapshot {}", snapshot.name)) { "Load…" }
                    }
                    form .inline method="post" action=(format!("{base}/delete")) {
                        (csrf_field(session))
                        input #(confirm) type="checkbox" name="confirm" value="yes" required;
                        label .inline-label for=(confirm) { "Yes, delete " (snapshot.name) }
                        " "
                        button type="submit" .small .danger
                            aria-label=(format!("Delete snapshot {}", snapshot.name)) { "Delete" }
                    }
                }
            }
        }
    }
}

/// Bytes, in the largest binary unit below them: `12.3 KiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The total and the kinds there are any of: `5 (2 VPC, 3 Subnet)`.
fn counts(counts: &ResourceCounts) -> String {
    let kinds: Vec<String> = [
        (counts.vpc, "VPC"),
        (counts.subnet, "Subnet"),
        (counts.node_group, "NodeGroup"),
        (counts.database_instance, "DatabaseInstance"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, kind)| format!("{n} {kind}"))
    .collect();
    if kinds.is_empty() {
        "0".to_owned()
    } else {
        format!("{} ({})", counts.total(), kinds.join(", "))
    }
}

/// `1 call`, `2 calls`.
fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn recorder_section(session: &CurrentSession, recording: &RecorderStatus) -> Markup {
    let started = recording
        .started_at
        .map(|t| html::date_time(t.as_millisecond()));
    html! {
        section aria-labelledby="recorder-heading" {
            h2 #recorder-heading { "Request recorder" }
            p #recorder-state {
                @match (&started, recording.recording) {
                    (None, _) => "Nothing recorded yet.",
                    (Some(at), true) => {
                        "Recording since " (at) ": " (plural(recording.requests, "call")) " so far."
                    }
                    (Some(at), false) => {
                        "Not recording. The last recording started " (at) " and holds "
                        (plural(recording.requests, "call")) "."
                    }
                }
            }
            p .muted { "While it runs, every " code { "/v1" } " call served is kept (secrets \
                replaced), for " code { "fakecloud replay" } ". Starting discards the last \
                recording, and is refused while one runs." }
            div .row-actions {
                @if recording.recording {
                    form .inline method="post" action="/console/recorder/stop" {
                        (csrf_field(session))
                        button type="submit" { "Stop recording" }
                    }
                } @else {
                    form .inline method="post" action="/console/recorder/start" {
                        (csrf_field(session))
                        button type="submit" { "Start recording" }
                    }
                }
                @if started.is_some() {
                    a href="/console/recorder/file" download { "Download the recording" }
                }
            }
        }
    }
}

/// Reads an admin handler's JSON answer.
async fn answer<T: DeserializeOwned>(response: Response) -> Result<T, ApiError> {
    let body = axum::body::to_bytes(response.into_body(), ANSWER_LIMIT)
        .await
        .map_err(|e| ApiError::internal("reading an admin handler's answer", e))?;
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::internal("decoding an admin handler's answer", e))
}

/// Audits the console's admin action and goes back to the page with its
/// outcome.
fn done(
    console: &ConsoleState,
    session: &CurrentSession,
    path: &str,
    status: StatusCode,
    flash: Flash,
) -> Response {
    console.audit(session, Actor::Admin, None, path.to_owned(), status);
    back(console, session, flash)
}

/// Back to the page with the outcome, unaudited.
fn back(console: &ConsoleState, session: &CurrentSession, flash: Flash) -> Response {
    console.sessions.set_flash(&session.key, flash);
    Redirect::to(PAGE).into_response()
}

#[derive(Deserialize)]
pub struct SaveForm {
    #[serde(default)]
    name: String,
}

/// `POST /console/snapshots`: saves the state under the form's name.
pub async fn save(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Form(form): Form<SaveForm>,
) -> Result<Response, ConsoleError> {
    let name = form.name.trim();
    let body = serde_json::to_vec(&json!({ "name": name })).map_err(|_| ConsoleError::Body)?;
    let saved = match routes::save_snapshot(State(console.app.clone()), Bytes::from(body)).await {
        Ok(response) => answer::<SnapshotInfo>(response).await,
        Err(err) => Err(err),
    };
    Ok(match saved {
        Ok(info) => {
            let flash = Flash::ok(format!(
                "Snapshot {} saved: {}, {}.",
                info.name,
                plural(info.resources.total(), "resource"),
                size(info.size)
            ));
            done(&console, &session, PAGE, StatusCode::CREATED, flash)
        }
        Err(err) => done(
            &console,
            &session,
            PAGE,
            err.status,
            Flash::error(err.detail),
        ),
    })
}

/// `GET /console/snapshots/{name}/file`: the file, as `/admin` serves it.
pub async fn download(
    State(console): State<ConsoleState>,
    Path(name): Path<String>,
) -> Result<Response, ConsoleError> {
    Ok(routes::get_snapshot(State(console.app.clone()), Path(name)).await?)
}

#[derive(Deserialize)]
pub struct LoadQuery {
    strategy: Option<String>,
}

/// The strategy named, refused in the admin API's words when it is none.
fn strategy(name: Option<String>) -> Result<LoadStrategy, ApiError> {
    let body = json!({ "strategy": name.unwrap_or_default() }).to_string();
    Ok(validate::parse_body::<LoadSnapshot>(body.as_bytes())?.strategy)
}

fn strategy_name(strategy: LoadStrategy) -> &'static str {
    match strategy {
        LoadStrategy::Overwrite => "overwrite",
        LoadStrategy::Merge => "merge",
    }
}

/// `GET /console/snapshots/{name}/load?strategy=`: what a load would
/// replace, and the button that loads.
pub async fn confirm_load(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(name): Path<String>,
    Query(query): Query<LoadQuery>,
) -> Result<Markup, ConsoleError> {
    catalog::check_name(&name)?;
    let strategy = strategy(query.strategy)?;
    let snapshot = catalog::list(&console.app.db.read)
        .await?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| catalog::not_found(&name))?;
    let current = accounts(&console).await?;
    let body = html! {
        dl .facts {
            dt { "Saved" } dd { (html::date_time(snapshot.created_at.as_millisecond())) }
            dt { "Resources" } dd { (counts(&snapshot.resources)) }
            dt { "Accounts in the file" } dd { (list_or_none(&snapshot.accounts)) }
            dt { "Made by" } dd { "fakecloud " (snapshot.fakecloud_version) ", format v" (snapshot.format_version) }
        }
        section #what-is-replaced aria-labelledby="replaced-heading" {
            h2 #replaced-heading { "What will be replaced" }
            (replaced(strategy, &snapshot, &current))
            p { "A load is all or nothing, and cannot be undone: save a snapshot of the \
                current state first to be able to come back to it." }
        }
        form method="post" action=(format!("{PAGE}/{name}/load")) {
            (csrf_field(&session))
            input type="hidden" name="strategy" value=(strategy_name(strategy));
            input type="hidden" name="confirm" value="yes";
            div .row-actions {
                button type="submit" .danger {
                    "Load " (name) " (" (strategy_name(strategy)) ")"
                }
                a href=(PAGE) { "Cancel" }
            }
        }
    };
    let title = format!("Load snapshot {name}?");
    Ok(html::page(&title, Section::Snapshots, &session, None, body))
}

fn list_or_none(accounts: &[String]) -> String {
    if accounts.is_empty() {
        "none".to_owned()
    } else {
        accounts.join(", ")
    }
}

/// What a load of `snapshot` with `strategy` replaces, in words; `current`
/// are the accounts there are now.
fn replaced(strategy: LoadStrategy, snapshot: &SnapshotInfo, current: &[String]) -> Markup {
    match strategy {
        LoadStrategy::Overwrite => html! {
            p {
                strong { "The whole state" } ": every account's resources (now: "
                (list_or_none(current)) "), the audit, timing, faults and throttling, \
                become the file's. Resources not in the file are gone."
            }
        },
        LoadStrategy::Merge => {
            let kept: Vec<String> = current
                .iter()
                .filter(|a| !snapshot.accounts.contains(a))
                .cloned()
                .collect();
            html! {
                p {
                    "The accounts in the file: " strong { (list_or_none(&snapshot.accounts)) }
                    ". Their resources, idempotency records, audit entries and own throttling \
                    become the file's."
                }
                p {
                    @if kept.is_empty() {
                        "There is no other account. "
                    } @else {
                        "Every other account (" (kept.join(", ")) ") stays as it is. "
                    }
                    "The global settings (timing, faults, throttling) stay as they are."
                }
            }
        }
    }
}

#[derive(Deserialize)]
pub struct LoadForm {
    strategy: Option<String>,
    confirm: Option<String>,
}

/// `POST /console/snapshots/{name}/load`, from the confirmation page.
///
/// Not audited, as `/admin`'s load is not: the audit is now the file's.
pub async fn load(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(name): Path<String>,
    Form(form): Form<LoadForm>,
) -> Result<Response, ConsoleError> {
    if given(&form.confirm).as_deref() != Some("yes") {
        let flash = Flash::error(format!(
            "Nothing loaded: a load is confirmed on its own page (Load… beside {name})."
        ));
        return Ok(back(&console, &session, flash));
    }
    let body = json!({ "strategy": given(&form.strategy).unwrap_or_default() }).to_string();
    let loaded = match routes::load_snapshot(
        State(console.app.clone()),
        Path(name),
        Bytes::from(body),
    )
    .await
    {
        Ok(response) => answer::<LoadResult>(response).await,
        Err(err) => Err(err),
    };
    let flash = match loaded {
        Ok(result) => {
            let what = match result.strategy {
                LoadStrategy::Overwrite => "the whole state replaced".to_owned(),
                LoadStrategy::Merge => {
                    format!("accounts {} replaced", list_or_none(&result.accounts))
                }
            };
            Flash::ok(format!(
                "Snapshot {} loaded ({}): {what}; {} from the file.",
                result.name,
                strategy_name(result.strategy),
                plural(result.resources.total(), "resource")
            ))
        }
        Err(err) => Flash::error(err.detail),
    };
    Ok(back(&console, &session, flash))
}

#[derive(Deserialize)]
pub struct DeleteForm {
    confirm: Option<String>,
}

/// `POST /console/snapshots/{name}/delete`; the box must be ticked.
pub async fn delete(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(name): Path<String>,
    Form(form): Form<DeleteForm>,
) -> Response {
    let path = format!("{PAGE}/{name}/delete");
    if given(&form.confirm).as_deref() != Some("yes") {
        let flash = Flash::error(format!(
            "Nothing deleted: tick \"Yes, delete {name}\" to delete it."
        ));
        return back(&console, &session, flash);
    }
    match routes::delete_snapshot(State(console.app.clone()), Path(name.clone())).await {
        Ok(status) => {
            let flash = Flash::ok(format!("Snapshot {name} deleted; the state is untouched."));
            done(&console, &session, &path, status, flash)
        }
        Err(err) => done(
            &console,
            &session,
            &path,
            err.status,
            Flash::error(err.detail),
        ),
    }
}

/// `POST /console/recorder/start`.
pub async fn start_recorder(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Response {
    let path = "/console/recorder/start";
    match recorder::routes::start_recorder(State(console.app.clone())).await {
        Ok(_) => {
            let flash = Flash::ok("Recording: every /v1 call served from now on is kept.");
            done(&console, &session, path, StatusCode::OK, flash)
        }
        Err(err) => done(
            &console,
            &session,
            path,
            err.status,
            Flash::error(err.detail),
        ),
    }
}

/// `POST /console/recorder/stop`.
pub async fn stop_recorder(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Response {
    let status = recorder::routes::stop_recorder(State(console.app.clone()))
        .await
        .0;
    let flash = Flash::ok(format!(
        "Not recording. The recording holds {}, ready to download.",
        plural(status.requests, "call")
    ));
    done(
        &console,
        &session,
        "/console/recorder/stop",
        StatusCode::OK,
        flash,
    )
}

/// `GET /console/recorder/file`: the current or last recording, as a file
/// to save (for `fakecloud replay`).
pub async fn download_recording(
    State(console): State<ConsoleState>,
) -> Result<Response, ConsoleError> {
    let mut response = recorder::routes::get_recording(State(console.app.clone())).await?;
    response.headers_mut().insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"fakecloud-recording.jsonl\""),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(5 << 20), "5.0 MiB");
        assert_eq!(size(3 << 40), "3.0 TiB");
        assert_eq!(size(u64::MAX), "16777216.0 TiB");
    }

    #[test]
    fn counts_name_only_the_kinds_there_are() {
        assert_eq!(counts(&ResourceCounts::default()), "0");
        let some = ResourceCounts {
            vpc: 2,
            database_instance: 1,
            ..ResourceCounts::default()
        };
        assert_eq!(counts(&some), "3 (2 VPC, 1 DatabaseInstance)");
        assert_eq!(plural(1, "call"), "1 call");
        assert_eq!(plural(0, "call"), "0 calls");
    }

    #[test]
    fn the_confirmation_names_what_each_strategy_replaces_and_keeps() {
        let snapshot = SnapshotInfo {
            name: "s".into(),
            created_at: jiff::Timestamp::UNIX_EPOCH,
            size: 1,
            format_version: 1,
            fakecloud_version: "0.1.0".into(),
            accounts: vec!["team-a".into(), "<b>".into()],
            resources: ResourceCounts::default(),
        };
        let current = ["team-a".to_owned(), "team-c".to_owned()];
        let merge = replaced(LoadStrategy::Merge, &snapshot, &current).into_string();
        assert!(
            merge.contains("The accounts in the file: <strong>team-a, &lt;b&gt;</strong>"),
            "{merge}"
        );
        assert!(
            merge.contains("Every other account (team-c) stays as it is."),
            "{merge}"
        );
        let overwrite = replaced(LoadStrategy::Overwrite, &snapshot, &current).into_string();
        assert!(
            overwrite.contains("<strong>The whole state</strong>"),
            "{overwrite}"
        );
        assert!(overwrite.contains("(now: team-a, team-c)"), "{overwrite}");
    }

    #[test]
    fn a_strategy_is_overwrite_or_merge_in_the_admin_apis_words() {
        assert_eq!(strategy(Some("merge".into())).unwrap(), LoadStrategy::Merge);
        assert_eq!(
            strategy(Some("overwrite".into())).unwrap(),
            LoadStrategy::Overwrite
        );
        for bad in [None, Some("swap".to_owned()), Some("<b>".to_owned())] {
            let err = strategy(bad.clone()).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad:?}");
            assert!(err.detail.contains("strategy"), "{}", err.detail);
        }
    }
}

//! One resource: what its owner's `GET` returns, the calls about it (its
//! owner's and outside actors'), and what an outside actor would do to it:
//! change its tags, scale a node group, delete it.
//!
//! The changes go through the same code as the API's PATCH and DELETE
//! (`service`), with the same validation and transitions, and are audited
//! as actor `external`, so the provider meets them as real drift.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::console::ConsoleState;
use crate::console::data::{self, Call};
use crate::console::error::ConsoleError;
use crate::console::html::{self, Section, csrf_field};
use crate::console::pages::audit::call_rows;
use crate::console::session::{CurrentSession, Flash};
use crate::error::ApiError;
use crate::kinds::ResourceKind;
use crate::kinds::database::DatabaseKind;
use crate::kinds::nodegroup::NodeGroupKind;
use crate::kinds::subnet::SubnetKind;
use crate::kinds::vpc::VpcKind;
use crate::model::{Actor, Kind};
use crate::service;
use crate::state::AppState;
use crate::store::{Location, Row};

fn seq_of(text: &str) -> Result<i64, ConsoleError> {
    text.parse().map_err(|_| ConsoleError::NotFound)
}

async fn load(console: &ConsoleState, seq: i64) -> Result<(Row, Kind), ConsoleError> {
    let row = data::resource(console.pool(), seq)
        .await?
        .ok_or(ConsoleError::NotFound)?;
    let kind = Kind::parse(&row.kind).ok_or(ConsoleError::NotFound)?;
    Ok((row, kind))
}

/// The resource as its owner's `GET` renders it.
fn rendered(kind: Kind, row: &Row) -> Result<Value, ApiError> {
    fn to_value<K: ResourceKind>(row: &Row) -> Result<Value, ApiError> {
        serde_json::to_value(K::render(row)?).map_err(|e| ApiError::internal("render", e))
    }
    match kind {
        Kind::Vpc => to_value::<VpcKind>(row),
        Kind::Subnet => to_value::<SubnetKind>(row),
        Kind::NodeGroup => to_value::<NodeGroupKind>(row),
        Kind::DatabaseInstance => to_value::<DatabaseKind>(row),
    }
}

/// `GET /console/resources/{seq}`.
pub async fn page(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(seq): Path<String>,
) -> Result<Markup, ConsoleError> {
    let (row, kind) = load(&console, seq_of(&seq)?).await?;
    let flash = console.sessions.take_flash(&session.key);
    let resource = rendered(kind, &row)?;
    // What was answered before this page was asked for is in the history.
    console.app.audit.flush().await;
    let history = data::history(console.pool(), &row, kind).await?;
    let title = format!("{} {}", html::kind_label(kind), row.name);
    let body = html! {
        dl .facts {
            dt { "State" } dd { (html::state_badge(&row.state)) }
            dt { "Account" } dd { (row.account) }
            dt { "Region" } dd { (row.region) }
            @if kind.in_cluster() { dt { "Cluster" } dd { (row.scope) } }
            dt { "Created" } dd { (html::date_time(row.created_at)) }
            dt { "Updated" } dd { (html::date_time(row.updated_at)) }
            dt { "ETag" } dd { code { (row.etag()) } }
            dt { "API path" } dd { code { (data::api_path(kind, &row.region, &row.scope, &row.name)) } }
        }
        (actions(&session, &row, kind, &resource))
        (history_section(&history))
        section aria-labelledby="json-heading" {
            h2 #json-heading { "As its owner sees it" }
            pre .json tabindex="0" { code { (serde_json::to_string_pretty(&resource).unwrap_or_default()) } }
        }
    };
    Ok(html::page(
        &title,
        Section::Resources,
        &session,
        flash,
        body,
    ))
}

fn actions(session: &CurrentSession, row: &Row, kind: Kind, resource: &Value) -> Markup {
    let base = format!("/console/resources/{}", row.seq);
    let tags = data::tags_of(&row.spec);
    let scaling = &resource["scalingConfig"];
    html! {
        section .actions aria-labelledby="actions-heading" {
            h2 #actions-heading { "Act as an outside actor" }
            p .muted { "Another team or an autoscaler changing the resource behind its owner's back. \
                Each change is audited as " code { "external" } "." }
            div .action-grid {
                form method="post" action=(format!("{base}/tags")) aria-labelledby="set-tag-heading" {
                    h3 #set-tag-heading { "Set a tag" }
                    (csrf_field(session))
                    label for="tag-key" { "Key" }
                    input #tag-key type="text" name="key" required maxlength="128";
                    label for="tag-value" { "Value" }
                    input #tag-value type="text" name="value" maxlength="256";
                    button type="submit" { "Set tag" }
                }
                @if !tags.is_empty() {
                    div aria-labelledby="remove-tag-heading" role="group" {
                        h3 #remove-tag-heading { "Tags" }
                        ul .tag-list {
                            @for (key, value) in &tags {
                                li {
                                    span .key { (key) } "=" span .value { (value) }
                                    form .inline method="post" action=(format!("{base}/tags/remove")) {
                                        (csrf_field(session))
                                        input type="hidden" name="key" value=(key);
                                        button type="submit" .small aria-label=(format!("Remove tag {key}")) { "Remove" }
                                    }
                                }
                            }
                        }
                    }
                }
                @if kind == Kind::NodeGroup {
                    form method="post" action=(format!("{base}/desired-size")) aria-labelledby="scale-heading" {
                        h3 #scale-heading { "Scale (autoscaler)" }
                        (csrf_field(session))
                        label for="desired-size" {
                            "Desired size (" (scaling["minSize"]) " to " (scaling["maxSize"]) ")"
                        }
                        input #desired-size type="number" name="desiredSize" required
                            value=(scaling["desiredSize"])
                            min=(scaling["minSize"]) max=(scaling["maxSize"]);
                        button type="submit" { "Scale" }
                    }
                }
                form method="post" action=(format!("{base}/delete")) aria-labelledby="delete-heading" {
                    h3 #delete-heading { "Delete" }
                    (csrf_field(session))
                    div .check {
                        input #confirm-delete type="checkbox" name="confirm" value="yes" required;
                        label for="confirm-delete" { "Yes, delete " (row.name) }
                    }
                    button type="submit" .danger { "Delete" }
                }
            }
        }
    }
}

fn history_section(history: &[Call]) -> Markup {
    html! {
        section aria-labelledby="history-heading" {
            h2 #history-heading { "History" }
            p .muted { "The newest calls about this resource: its owner's (with an API key, \
                the provider's) and outside actors'." }
            @if history.is_empty() {
                p .empty { "No calls yet." }
            } @else {
                div .scroll {
                    table .calls #history {
                        (call_rows(history))
                    }
                }
            }
        }
    }
}

/// What an outside actor does to the resource.
enum Change {
    /// A JSON merge patch, as the API's PATCH takes.
    Patch(Value),
    Delete,
}

async fn apply(
    state: &AppState,
    kind: Kind,
    row: &Row,
    change: Change,
) -> Result<Response, ApiError> {
    let loc = Location {
        account: row.account.clone(),
        kind,
        region: row.region.clone(),
        scope: row.scope.clone(),
    };
    let name = row.name.as_str();
    let headers = HeaderMap::new();
    match change {
        Change::Patch(patch) => {
            let body = Bytes::from(patch.to_string());
            match kind {
                Kind::Vpc => service::patch::<VpcKind>(state, loc, name, &headers, &body).await,
                Kind::Subnet => {
                    service::patch::<SubnetKind>(state, loc, name, &headers, &body).await
                }
                Kind::NodeGroup => {
                    service::patch::<NodeGroupKind>(state, loc, name, &headers, &body).await
                }
                Kind::DatabaseInstance => {
                    service::patch::<DatabaseKind>(state, loc, name, &headers, &body).await
                }
            }
        }
        Change::Delete => match kind {
            Kind::Vpc => service::delete::<VpcKind>(state, loc, name, &headers).await,
            Kind::Subnet => service::delete::<SubnetKind>(state, loc, name, &headers).await,
            Kind::NodeGroup => service::delete::<NodeGroupKind>(state, loc, name, &headers).await,
            Kind::DatabaseInstance => {
                service::delete::<DatabaseKind>(state, loc, name, &headers).await
            }
        },
    }
}

/// Makes the change, audits it as an outside actor's, and goes back to the
/// resource (or to the list, when it is gone) with the outcome.
async fn change(
    console: &ConsoleState,
    session: &CurrentSession,
    seq: &str,
    action: &str,
    change: Change,
    done: String,
) -> Result<Response, ConsoleError> {
    let seq = seq_of(seq)?;
    let (row, kind) = load(console, seq).await?;
    let result = apply(&console.app, kind, &row, change).await;
    let status = match &result {
        Ok(response) => response.status(),
        Err(err) => err.status,
    };
    console.audit(
        session,
        Actor::External,
        Some(row.account.clone()),
        format!("{}/{action}", data::console_path(seq)),
        status,
    );
    let flash = match result {
        Ok(_) => Flash::ok(done),
        Err(err) => Flash::error(format!(
            "{} refused it ({}): {}",
            kind, err.code, err.detail
        )),
    };
    console.sessions.set_flash(&session.key, flash);
    let next = if data::resource(console.pool(), seq).await?.is_some() {
        format!("/console/resources/{seq}")
    } else {
        "/console/resources".to_owned()
    };
    Ok(Redirect::to(&next).into_response())
}

#[derive(Deserialize)]
pub struct TagForm {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: String,
}

/// `POST /console/resources/{seq}/tags`: sets one tag.
pub async fn set_tag(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(seq): Path<String>,
    Form(form): Form<TagForm>,
) -> Result<Response, ConsoleError> {
    let done = format!("Tag {}={} set.", form.key, form.value);
    let patch = json!({ "tags": { form.key: form.value } });
    change(&console, &session, &seq, "tags", Change::Patch(patch), done).await
}

/// `POST /console/resources/{seq}/tags/remove`: removes one tag.
pub async fn remove_tag(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(seq): Path<String>,
    Form(form): Form<TagForm>,
) -> Result<Response, ConsoleError> {
    let done = format!("Tag {} removed.", form.key);
    let patch = json!({ "tags": { form.key: null } });
    change(
        &console,
        &session,
        &seq,
        "tags/remove",
        Change::Patch(patch),
        done,
    )
    .await
}

#[derive(Deserialize)]
pub struct SizeForm {
    #[serde(default, rename = "desiredSize")]
    desired_size: String,
}

/// `POST /console/resources/{seq}/desired-size`: scales a node group, as
/// its autoscaler would.
pub async fn desired_size(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(seq): Path<String>,
    Form(form): Form<SizeForm>,
) -> Result<Response, ConsoleError> {
    let Ok(size) = form.desired_size.trim().parse::<i64>() else {
        console.sessions.set_flash(
            &session.key,
            Flash::error(format!("{:?} is not a whole number.", form.desired_size)),
        );
        return Ok(Redirect::to(&format!("/console/resources/{seq}")).into_response());
    };
    let patch = json!({ "scalingConfig": { "desiredSize": size } });
    let done = format!("Desired size set to {size}.");
    change(
        &console,
        &session,
        &seq,
        "desired-size",
        Change::Patch(patch),
        done,
    )
    .await
}

/// `POST /console/resources/{seq}/delete`.
pub async fn delete(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(seq): Path<String>,
) -> Result<Response, ConsoleError> {
    change(
        &console,
        &session,
        &seq,
        "delete",
        Change::Delete,
        "Delete requested.".into(),
    )
    .await
}

//! One reconcile of one query: check what the schema could not, list the
//! filter's matches (or reuse the last listing until the poll is due),
//! apply the managed resources of new matches, release those of matches
//! that went, and write the status if it changed. The decisions are
//! [`super::plan`]'s and [`super::status`]'s; this module carries them out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossplane_types::Query;
use crossplane_types::query::{MAX_QUERY_NAME, QueryStatus, name_label};
use crossplane_types::well_known::{POLL_INTERVAL_ANNOTATION, RECONCILE_REQUESTED_AT_ANNOTATION};
use futures::{StreamExt, stream};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;
use tracing::{Instrument, info, info_span, warn};

use super::plan::{self, Desired, Found, Template};
use super::state::{Asked, QueryController};
use super::status::{self, Noun, Outcome};
use super::{Page, QueryKind};
use crate::backoff::Intent;
use crate::cluster::ObjectKey;
use crate::connect::Connect;
use crate::context::{CONFLICT_RETRY, kind_label};
use crate::error::Never;
use crate::error::{ConnectError, ExternalError};
use crate::events::EventType;
use crate::requests::{self, InvalidPollInterval};

/// Pages one listing may take before the cloud is deemed to page for
/// ever: a million resources at the pages the reference provider asks for.
const MAX_PAGES: usize = 2000;

/// Managed resources applied at once. Every request still goes through the
/// API-server guard, which caps the process as a whole.
const APPLY_CONCURRENCY: usize = 16;

/// How many names an Event lists before it only counts the rest.
const NAMED_IN_EVENTS: usize = 5;

/// Why one reconcile of a query failed; the message goes to `Synced`.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    PollInterval(#[from] InvalidPollInterval),
    #[error(
        "the query's name is {0} characters long: its managed resources carry it as a label value, which holds at most {MAX_QUERY_NAME}; recreate the query under a shorter name"
    )]
    NameTooLong(usize),
    #[error("the query cannot be used: {0}")]
    Unusable(String),
    #[error("cannot connect to the cloud: {0}")]
    Connect(ConnectError),
    #[error("cannot list {kind}s: {error}")]
    List { kind: String, error: ExternalError },
    #[error("the cloud returned more than {MAX_PAGES} pages of {kind}s: listing stopped")]
    Paging { kind: String },
    #[error("cannot apply managed resource {kind} {name:?}: {error}")]
    Apply {
        kind: String,
        name: String,
        error: kube::Error,
    },
    #[error("cannot release managed resource {kind} {name:?}: {error}")]
    Release {
        kind: String,
        name: String,
        error: kube::Error,
    },
    #[error("cannot write the status: {0}")]
    Status(kube::Error),
    #[error(
        "the watch of the query's {kind}s has not listed them: can the provider list and watch {kind}s?"
    )]
    Unwatched { kind: String },
}

impl From<ConnectError> for QueryError {
    fn from(error: ConnectError) -> Self {
        QueryError::Connect(error)
    }
}

impl QueryError {
    /// A write refused because the copy it was based on was stale (409):
    /// retried quietly, as in every controller.
    fn is_conflict(&self) -> bool {
        matches!(
            self,
            QueryError::Release { error: kube::Error::Api(status), .. }
            | QueryError::Status(kube::Error::Api(status))
                if status.code == 409
        )
    }
}

/// Entry point for kube's `Controller::run`.
pub async fn reconcile<Q: QueryKind<C>, C: Connect>(
    query: Arc<Q>,
    controller: Arc<QueryController<Q, C>>,
) -> Result<Action, Never> {
    let ctx = controller.ctx.clone();
    let uid = query.uid().unwrap_or_default();
    if query.meta().deletion_timestamp.is_some() {
        // Kubernetes deletes the managed resources with the query.
        controller.forget(&uid);
        return Ok(Action::await_change());
    }
    // Its list then runs while this reconcile reads the cloud.
    controller.want_owned();
    let intent = Intent {
        generation: query.meta().generation,
        reconcile_requested_at: query
            .annotations()
            .get(RECONCILE_REQUESTED_AT_ANNOTATION)
            .cloned(),
        ..Intent::default()
    };
    // A failure writes `Synced`, whose watch event comes straight back:
    // wait out the backoff unless the user changed the query.
    if let Some(wait) = ctx.backoff.remaining(&uid, &intent) {
        return Ok(Action::requeue(wait));
    }
    let kind = kind_label::<Q>();
    let span = info_span!("reconcile", kind = %kind, namespace = %query.namespace().unwrap_or_default(), name = %query.name_any());
    let timer = Instant::now();
    let action = async {
        match once(&*query, &controller, &kind).await {
            Ok(next) => {
                ctx.backoff.succeeded(&uid);
                ctx.metrics
                    .record_reconcile(&kind, "success", timer.elapsed());
                Action::requeue(next)
            }
            Err(error) if error.is_conflict() => {
                tracing::debug!(%error, "stale copy; retrying");
                ctx.metrics
                    .record_reconcile(&kind, "conflict", timer.elapsed());
                Action::requeue(CONFLICT_RETRY)
            }
            Err(error) => {
                warn!(%error, "query reconcile failed");
                let message = error.to_string();
                let generation = query.meta().generation;
                if let Some(status) = status::failed(query.query_status(), &message, generation)
                    && let Err(error) = write_status(&*query, &controller, &kind, &status).await
                {
                    warn!(%error, "cannot write the status");
                }
                event(
                    &*query,
                    &controller,
                    &kind,
                    EventType::Warning,
                    "ReconcileError",
                    &message,
                )
                .await;
                ctx.metrics
                    .record_reconcile(&kind, "error", timer.elapsed());
                Action::requeue(ctx.backoff.failed(&uid, intent))
            }
        }
    }
    .instrument(span)
    .await;
    Ok(action)
}

/// One reconcile; returns when to come back.
async fn once<Q: QueryKind<C>, C: Connect>(
    query: &Q,
    controller: &QueryController<Q, C>,
    kind: &str,
) -> Result<Duration, QueryError> {
    let settings = &controller.ctx.settings;
    let poll = requests::poll_interval(
        query
            .annotations()
            .get(POLL_INTERVAL_ANNOTATION)
            .map(String::as_str),
        settings.poll_interval,
        settings.min_poll_interval,
    )?;
    let name = query.name_any();
    if name.len() > MAX_QUERY_NAME {
        return Err(QueryError::NameTooLong(name.len()));
    }
    let why = query.query_spec().contradiction().map(str::to_owned);
    if let Some(why) = why.or_else(|| query.unusable()) {
        return Err(QueryError::Unusable(why));
    }
    let uid = query.uid().unwrap_or_default();
    let generation = query.meta().generation;
    let asked = Asked {
        generation,
        poll,
        requested: query
            .annotations()
            .get(RECONCILE_REQUESTED_AT_ANNOTATION)
            .cloned(),
    };
    let (found, listed_at) = match controller.listing(&uid, &asked) {
        Some(remembered) => remembered,
        None => {
            let found = list_all(query, controller, kind).await?;
            controller.listed(&uid, asked, &found);
            (found, Instant::now())
        }
    };
    let selection = query.query_spec().selection();
    let (kept, total) = plan::select(found, selection);
    let desired = plan::desired(&name, kept);
    if !controller.owned_listed().await {
        return Err(QueryError::Unwatched {
            kind: <Q::Managed as Resource>::kind(&()).into_owned(),
        });
    }
    let owned = controller.owned_by(query);
    let unseen = controller.unseen(&uid, &owned);
    let plan = plan::plan(&desired, &owned, &unseen);
    let template = template(query);
    apply(query, controller, kind, &template, &plan.apply).await?;
    release(query, controller, kind, &template, &plan.release).await?;

    let noun = <Q::Managed as Resource>::kind(&());
    let outcome = Outcome {
        kept: &desired,
        total,
        selection,
        waiting: plan.waiting,
        generation,
    };
    if let Some(status) = status::settled(query.query_status(), Noun(&noun), &outcome) {
        write_status(query, controller, kind, &status).await?;
    }
    // Back soon while a managed resource waits for its name, or an applied
    // one has not shown in the watch; else when the listing is due.
    let pending = plan.waiting > 0 || !plan.apply.is_empty() || !unseen.is_empty();
    Ok(if pending {
        settings.pending_poll_interval
    } else {
        poll.saturating_sub(listed_at.elapsed())
            .max(settings.min_poll_interval.min(poll))
    })
}

/// Every page of the filter's matches.
async fn list_all<Q: QueryKind<C>, C: Connect>(
    query: &Q,
    controller: &QueryController<Q, C>,
    kind: &str,
) -> Result<Vec<Found>, QueryError> {
    let ctx = &controller.ctx;
    let key = query
        .query_spec()
        .provider_config_ref
        .locate(query.namespace().as_deref());
    let connected = ctx.connector.client(&key, &*controller.connect).await?;
    let (client, pacer) = (connected.client, connected.pacer);
    let managed_kind = <Q::Managed as Resource>::kind(&()).into_owned();
    let mut found = Vec::new();
    let mut page = None;
    for _ in 0..MAX_PAGES {
        let token = page.take();
        let Page { found: more, next } = ctx
            .call_unadmitted(kind, "list", &pacer, || query.list(&client, token.clone()))
            .await
            .map_err(|error| QueryError::List {
                kind: managed_kind.clone(),
                error,
            })?;
        found.extend(more);
        match next {
            Some(next) => page = Some(next),
            None => return Ok(found),
        }
    }
    Err(QueryError::Paging { kind: managed_kind })
}

/// What the managed resources of `query` share.
fn template<Q: Query>(query: &Q) -> Template {
    Template {
        api_version: <Q::Managed as Resource>::api_version(&()).into_owned(),
        kind: <Q::Managed as Resource>::kind(&()).into_owned(),
        namespace: query.namespace().unwrap_or_default(),
        label: name_label::<Q>(),
        query: query.name_any(),
        owner: json!(query.controller_owner_ref(&())),
        provider_config_ref: json!(query.query_spec().provider_config_ref),
    }
}

/// Server-side applies the managed resources of new (or edited) matches,
/// a few at a time; returns the first failure once all were tried.
async fn apply<Q: QueryKind<C>, C: Connect>(
    query: &Q,
    controller: &QueryController<Q, C>,
    kind: &str,
    template: &Template,
    desired: &[Desired],
) -> Result<(), QueryError> {
    if desired.is_empty() {
        return Ok(());
    }
    let uid = query.uid().unwrap_or_default();
    let results: Vec<Result<String, QueryError>> = stream::iter(desired.iter().cloned())
        .map(|d| apply_one::<Q, C>(controller, kind, template, &uid, d))
        .buffer_unordered(APPLY_CONCURRENCY)
        .collect()
        .await;
    let mut names: Vec<&str> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().map(String::as_str))
        .collect();
    names.sort_unstable();
    let made = names.len();
    if made > 0 {
        let message = format!(
            "applied {made} observe-only {}{} for the matches: {}",
            template.kind,
            if made == 1 { "" } else { "s" },
            some_of(&names)
        );
        info!("{message}");
        event(
            query,
            controller,
            kind,
            EventType::Normal,
            "AppliedManagedResources",
            &message,
        )
        .await;
    }
    match results.into_iter().find_map(Result::err) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Server-side applies the managed resource of one match; returns its name.
async fn apply_one<Q: QueryKind<C>, C: Connect>(
    controller: &QueryController<Q, C>,
    kind: &str,
    template: &Template,
    uid: &str,
    desired: Desired,
) -> Result<String, QueryError> {
    let ctx = &controller.ctx;
    let key = ObjectKey::of::<Q::Managed>(Some(&template.namespace), &desired.name);
    ctx.cluster
        .apply(&key, template.object(&desired), false)
        .await
        .map_err(|error| QueryError::Apply {
            kind: template.kind.clone(),
            name: desired.name.clone(),
            error,
        })?;
    ctx.metrics.kube_write(kind, "managed");
    controller.applied(uid, &desired.name);
    Ok(desired.name)
}

/// Releases the managed resources of matches that went
/// ([`Template::release_patch`]).
async fn release<Q: QueryKind<C>, C: Connect>(
    query: &Q,
    controller: &QueryController<Q, C>,
    kind: &str,
    template: &Template,
    owned: &[plan::Owned],
) -> Result<(), QueryError> {
    if owned.is_empty() {
        return Ok(());
    }
    let ctx = &controller.ctx;
    for o in owned {
        let key = ObjectKey::of::<Q::Managed>(Some(&template.namespace), &o.name);
        ctx.cluster
            .merge_patch(&key, template.release_patch(o, &absent_uid()))
            .await
            .map_err(|error| QueryError::Release {
                kind: template.kind.clone(),
                name: o.name.clone(),
                error,
            })?;
        ctx.metrics.kube_write(kind, "managed");
    }
    let names: Vec<&str> = owned.iter().map(|o| o.name.as_str()).collect();
    let message = format!(
        "released {} {}{} whose cloud resource no longer matches, for Kubernetes to delete: {}",
        owned.len(),
        template.kind,
        if owned.len() == 1 { "" } else { "s" },
        some_of(&names)
    );
    info!("{message}");
    event(
        query,
        controller,
        kind,
        EventType::Normal,
        "ReleasedManagedResources",
        &message,
    )
    .await;
    Ok(())
}

/// A uid no object has, for [`Template::release_patch`]: random, in the
/// form Kubernetes gives uids, so every release points at an owner of its
/// own.
fn absent_uid() -> String {
    let [a, b, c, d]: [u32; 4] = rand::random();
    format!(
        "{a:08x}-{:04x}-4{:03x}-{:04x}-{:04x}{d:08x}",
        b >> 16,
        b & 0xfff,
        (c >> 16 & 0x3fff) | 0x8000,
        c & 0xffff
    )
}

/// The first few of `names`, and how many more.
fn some_of(names: &[&str]) -> String {
    let shown = names[..names.len().min(NAMED_IN_EVENTS)].join(", ");
    match names.len().saturating_sub(NAMED_IN_EVENTS) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// Server-side applies `status` to the query's status subresource.
async fn write_status<Q: QueryKind<C>, C: Connect>(
    query: &Q,
    controller: &QueryController<Q, C>,
    kind: &str,
    status: &QueryStatus,
) -> Result<(), QueryError> {
    let key = ObjectKey::of::<Q>(query.namespace().as_deref(), &query.name_any());
    let body = json!({
        "apiVersion": Q::api_version(&()),
        "kind": Q::kind(&()),
        "metadata": { "name": key.name, "namespace": key.namespace },
        "status": status,
    });
    controller
        .ctx
        .cluster
        .apply(&key, body, true)
        .await
        .map_err(QueryError::Status)?;
    controller.ctx.metrics.kube_write(kind, "status");
    Ok(())
}

/// An Event about the query; a failure to write it is only logged.
async fn event<Q: QueryKind<C>, C: Connect>(
    query: &Q,
    controller: &QueryController<Q, C>,
    kind: &str,
    type_: EventType,
    reason: &str,
    message: &str,
) {
    let ctx = &controller.ctx;
    match ctx
        .recorder
        .publish(query.object_ref(&()), type_, reason, message)
        .await
    {
        Ok(()) => ctx.metrics.kube_write(kind, "event"),
        Err(error) => warn!(%error, "cannot publish event"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_uids_look_like_uids_and_differ() {
        let (a, b) = (absent_uid(), absent_uid());
        assert_ne!(a, b);
        let parts: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{a}");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn events_name_a_few_and_count_the_rest() {
        assert_eq!(some_of(&["a", "b"]), "a, b");
        let many = ["a", "b", "c", "d", "e", "f", "g"];
        assert_eq!(some_of(&many), "a, b, c, d, e and 2 more");
    }
}

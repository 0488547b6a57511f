//! One query kind's controller: its watch of the queries and its watch of
//! the managed resources they own; what its reconciles share is
//! [`super::state`].

use std::future::Future;
use std::sync::Arc;

use crossplane_types::query::name_label;
use crossplane_types::{Managed, ManagedStatus};
use futures::StreamExt;
use kube::runtime::reflector;
use kube::runtime::{Controller, WatchStreamExt};
use kube::{Api, ResourceExt};

use super::QueryKind;
use super::reconcile;
use super::state::QueryController;
use crate::connect::Connect;
use crate::context::Context;

/// Where `kubectl apply` keeps the last object it applied.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Runs the controller of the query kind `Q`, watching through `kube` and
/// connecting through `connect`, until `shutdown` resolves.
///
/// Besides the queries, it watches the managed resources carrying the
/// kind's label, less their status (the plan reads only their metadata and
/// policies): a change to one, its deletion included, reconciles the query
/// that controls it, which puts back a managed resource a user deleted.
/// A reconcile so woken reuses the query's last listing until its poll is
/// due, so the managed resources' own updates never make it call the cloud.
pub async fn run_query_controller<Q: QueryKind<C>, C: Connect>(
    ctx: Arc<Context>,
    connect: Arc<C>,
    kube: kube::Client,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let (owned, writer) = reflector::store();
    let managed: Api<Q::Managed> = Api::all(kube.clone());
    let (owned_wanted, wanted) = tokio::sync::watch::channel(false);
    // Few of a kind's managed resources belong to queries: a watch that
    // lists again when it ends ([`crate::watch::relisting`]), started by
    // the first reconcile of a query of the kind (which waits for its
    // list). A replica with no query of the kind has no such watch: every
    // watch of a busy kind is one more watcher the API server hands each
    // of its events to, and at 30,000 VPCs with three replicas the three
    // that found nothing were closed for falling behind and listed again
    // every few seconds, each list a pass over the kind's watch cache.
    let owned_changes = crate::watch::once_wanted(wanted, move || {
        crate::watch::relisting(managed, &name_label::<Q>())
    })
    .default_backoff()
    .modify(|mr: &mut Q::Managed| {
        mr.managed_fields_mut().clear();
        mr.annotations_mut().remove(LAST_APPLIED_ANNOTATION);
        *mr.managed_status_mut() = ManagedStatus::default();
    })
    .reflect(writer)
    .touched_objects();
    let controller = Arc::new(QueryController::<Q, C>::new(
        ctx,
        connect,
        owned,
        owned_wanted,
    ));
    let resyncs = crate::controller::resyncs(controller.ctx.settings.sync_interval);
    let queries = crate::controller::watch_config(controller.ctx.shard.as_deref());
    Controller::new(Api::<Q>::all(kube), queries)
        .owns_stream(owned_changes)
        .reconcile_all_on(resyncs)
        .graceful_shutdown_on(shutdown)
        .run(
            reconcile::reconcile::<Q, C>,
            |_, never, _| match *never {},
            controller,
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "query controller event");
            }
        })
        .await;
}

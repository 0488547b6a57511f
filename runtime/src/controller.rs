//! One kind's controller: its watch, its queue, and the entry point kube's
//! `Controller` calls for each reconcile; what every reconcile shares is
//! [`crate::context`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::{StreamExt, TryStreamExt, future};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

use kube::runtime::controller::Action;

use crate::cluster::ObjectKey;
use crate::connect::Connect;
use crate::context::{CONFLICT_RETRY, Context, kind_label};
use crate::error::Never;
use crate::kind::ManagedKind;
use crate::rate_limit::Wake;
use crate::reconcile::{Next, reconcile_once};
use crate::shard::{Shard, Standing};

/// Where `kubectl apply` keeps the last object it applied.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What the reconciles of one kind's controller share: the process's
/// [`Context`], the provider's [`Connect`] for the kind's client, and the
/// trigger that starts an object's reconcile when the rate cap's slot for
/// it comes ([`crate::rate_limit::LaneLimiter`]).
pub struct ControllerContext<K: ManagedKind<C>, C: Connect> {
    pub(crate) ctx: Arc<Context>,
    pub(crate) connect: Arc<C>,
    trigger: UnboundedSender<ObjectRef<K>>,
}

impl<K: ManagedKind<C>, C: Connect> ControllerContext<K, C> {
    /// The wake of `mr`: a send of its reference to the controller.
    pub(crate) fn wake(&self, mr: &K) -> Wake {
        let (trigger, target) = (self.trigger.clone(), ObjectRef::from_obj(mr));
        Box::new(move || {
            // An error means the controller has stopped: nothing to wake.
            let _ = trigger.unbounded_send(target);
        })
    }
}

/// Runs the controller of kind `K`, watching through `kube` and connecting
/// through `connect`, until `shutdown` resolves; in-flight reconciles
/// finish first.
///
/// The watch keeps no `managedFields` and no `kubectl apply` copy of the
/// object (the reconciler reads neither, and they are most of an object's
/// size: the copy repeats the whole spec), and drops the echoes of this
/// process's own writes, except the one a reconcile waits for ([`echo`]).
pub async fn run_controller<K: ManagedKind<C>, C: Connect>(
    ctx: Arc<Context>,
    connect: Arc<C>,
    kube: kube::Client,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api: Api<K> = Api::all(kube);
    let (reader, writer) = reflector::store();
    let filter_ctx = ctx.clone();
    // Keeps the kind's exists/ready/synced gauges in step with the watch.
    let mut states = ctx.metrics.standard.watch::<K>();
    let shard = ctx.shard.clone();
    let trigger = watcher(api, watch_config(ctx.shard.as_deref()))
        .default_backoff()
        .modify(|mr: &mut K| {
            mr.managed_fields_mut().clear();
            mr.annotations_mut().remove(LAST_APPLIED_ANNOTATION);
        })
        .reflect(writer)
        // A watch that keeps failing leaves this replica's objects
        // unreconciled: said at warn, not left to the debug log of the
        // controller's events.
        .inspect_err(|error| {
            tracing::warn!(%error, kind = %K::kind(&()), "watch of managed resources failed; listing again");
        })
        .inspect_ok(move |event| {
            states.event(event);
            if let (Some(shard), watcher::Event::Delete(mr)) = (&shard, event) {
                shard.left(&mr.uid().unwrap_or_default());
            }
        })
        .applied_objects()
        .try_filter(move |mr| {
            let triggers = match (mr.uid(), mr.resource_version()) {
                (Some(uid), Some(version)) => filter_ctx.own_writes.triggers(&uid, &version),
                _ => true,
            };
            future::ready(triggers)
        });
    let (wake, woken) = futures::channel::mpsc::unbounded();
    let controller = Arc::new(ControllerContext {
        ctx,
        connect,
        trigger: wake,
    });
    let resyncs = resyncs(controller.ctx.settings.sync_interval);
    Controller::for_stream(trigger, reader)
        .reconcile_on(woken)
        .reconcile_all_on(resyncs)
        .graceful_shutdown_on(shutdown)
        .run(reconcile::<K, C>, |_, never, _| match *never {}, controller)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "controller event");
            }
        })
        .await;
}

/// The watch of a controller's objects: all of them, or only this
/// replica's share when replicas share the work ([`crate::shard`]).
pub(crate) fn watch_config(shard: Option<&Shard>) -> watcher::Config {
    let config = crate::watch::whole_list();
    match shard {
        Some(shard) => config.labels(&shard.selector()),
        None => config,
    }
}

/// Ticks every `every` (never when zero), for `reconcile_all_on`: the
/// sync period of controller-runtime (`--sync`), which reconciles every
/// object in the cache again in case a watch event was missed.
pub(crate) fn resyncs(every: Duration) -> impl futures::Stream<Item = ()> + Send + 'static {
    futures::stream::unfold((), move |()| async move {
        if every.is_zero() {
            future::pending::<()>().await;
        }
        tokio::time::sleep(every).await;
        tracing::debug!(every = ?every, "sync period: reconciling every object");
        Some(((), ()))
    })
}

/// Entry point for kube's `Controller::run`.
pub async fn reconcile<K: ManagedKind<C>, C: Connect>(
    mr: Arc<K>,
    controller: Arc<ControllerContext<K, C>>,
) -> Result<Action, Never> {
    if let Some(shard) = &controller.ctx.shard {
        match shard.standing(mr.meta()) {
            Standing::Own => shard.entered(mr.meta(), kind_label::<K>, &controller.ctx.metrics),
            // A copy older than our own release, or one labelled for
            // another replica: its owner reconciles it.
            Standing::Foreign => return Ok(Action::await_change()),
            Standing::Drain(to) => return Ok(release(&*mr, &to, shard, &controller.ctx).await),
        }
    }
    let wake = || controller.wake(&*mr);
    Ok(
        match reconcile_once(&*mr, &controller.ctx, &*controller.connect, wake)
            .await
            .next
        {
            Next::After(wait) => Action::requeue(wait),
            Next::Change => Action::await_change(),
        },
    )
}

/// Hands `mr` to the replica `to`, as the assigner asked: this runs as
/// the object's next reconcile, so the one in flight has ended, and none
/// starts here after it (the object leaves this replica's watch, and
/// until it has, [`Shard::standing`] calls it foreign). Guarded by the
/// copy's resourceVersion: a newer copy is looked at again first.
async fn release<K: Resource<DynamicType = ()>>(
    mr: &K,
    to: &str,
    shard: &Shard,
    ctx: &Context,
) -> Action {
    let key = ObjectKey::of::<K>(mr.meta().namespace.as_deref(), &mr.name_any());
    let patch = json!({"metadata": {
        "resourceVersion": mr.meta().resource_version,
        "labels": {&shard.label: to},
        "annotations": {&shard.next: Value::Null, &shard.moved_at: jiff::Timestamp::now().to_string()},
    }});
    match ctx.cluster.merge_patch(&key, patch).await {
        Ok(_) => {
            shard.released(&mr.uid().unwrap_or_default());
            ctx.metrics.shard.moved(&kind_label::<K>(), "release");
            tracing::info!(kind = %kind_label::<K>(), name = %mr.name_any(), to, "handed over to another replica");
            Action::await_change()
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Action::requeue(CONFLICT_RETRY),
        Err(kube::Error::Api(e)) if e.code == 404 => Action::await_change(),
        Err(error) => {
            tracing::warn!(%error, name = %mr.name_any(), "cannot hand an object over; retrying");
            Action::requeue(shard.timing().retry_period)
        }
    }
}

//! A kind's reconciler without an API server: an in-memory cluster that
//! behaves as the API server does for the runtime's calls (merge patches,
//! server-side apply of status, finalizers, resource versions), a
//! [`Context`] over it, and one reconcile at a time. For a provider's own
//! tests of its kinds, and for trying the runtime out (the crate's
//! `minimal_provider` example). Behind the `testing` feature.
//!
//! Besides, what a test of the reconciler's finer behaviour asserts on:
//! the [`idempotency_key`] a create sends, the [`CATCH_UP_LIMIT`] a
//! reconcile of a stale copy waits at most, and whether a watch event
//! would start a reconcile ([`watch_event_triggers`]).

use std::sync::Arc;

use crate::connect::{Connect, ProviderConfigTypes};
use crate::context::{Context, Settings};
use crate::kind::ManagedKind;
use crate::metrics::Metrics;
use crate::pacing::{Ceilings, Pacers};

pub use crate::cluster::memory::MemoryCluster;
pub use crate::context::CATCH_UP_LIMIT;
pub use crate::plan::idempotency_key;
pub use crate::reconcile::{Next, Outcome};

/// A reconcile context on `cluster`, with fresh metrics and ceilings no
/// test reaches (1,000 requests a second, 64 at once, 1,000 reconciles a
/// second).
pub fn context(
    cluster: Arc<MemoryCluster>,
    provider_configs: ProviderConfigTypes,
    settings: Settings,
) -> Context {
    let metrics = Metrics::new();
    let ceilings = Ceilings {
        rate: 1_000.0,
        in_flight: 64,
    };
    let pacers = Arc::new(Pacers::new(&metrics, ceilings, ceilings));
    Context::new(cluster, provider_configs, settings, metrics, 1_000, pacers)
}

/// One reconcile of `mr` (the copy as the cluster holds it now), as the
/// controller runs it: its outcome says when the controller would come
/// back. Panics if the reconcile-rate cap deferred it, which a test's
/// pace never reaches with [`context`]'s ceilings.
pub async fn reconcile_once<K: ManagedKind<C>, C: Connect>(
    mr: &K,
    ctx: &Context,
    connect: &C,
) -> Outcome {
    crate::reconcile::reconcile_once(mr, ctx, connect, || {
        panic!("the reconcile-rate cap deferred a reconcile: a test's pace should not reach it")
    })
    .await
}

/// Whether the watch event of version `resource_version` of the object
/// `uid` would start a reconcile in `ctx`'s controllers, as the controller
/// asks when the event arrives. An event of a version this process wrote
/// itself is dropped, except the one a reconcile handed an older copy
/// waits for ([`CATCH_UP_LIMIT`] bounds that wait), which is let through
/// once. Asking consumes that once, as the event would.
pub fn watch_event_triggers(ctx: &Context, uid: &str, resource_version: &str) -> bool {
    ctx.own_writes.triggers(uid, resource_version)
}

//! A provider's process when replicas share the work: its membership and
//! its share of the controllers, its view of the other members, and, while
//! it holds the leader Lease, the assigner and the provider's own
//! controllers.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tracing::{info, warn};

use super::Shard;
use super::assigner::{self, ShardedKind};
use super::membership::{Members, Membership, watch_members};
use crate::context::Context;
use crate::gate::{Gate, Gated};
use crate::leader::Elector;

/// Resolves once `stop` turns true.
fn stopped(stop: &watch::Receiver<bool>) -> impl Future<Output = ()> + Send + Sync + 'static {
    let mut stop = stop.clone();
    async move {
        let _ = stop.wait_for(|stop| *stop).await;
    }
}

/// Runs the replica until `shutdown` resolves, then stops its
/// controllers, lets in-flight reconciles end and leaves the membership.
pub(crate) async fn run(
    ctx: Arc<Context>,
    kube: kube::Client,
    shard: Arc<Shard>,
    kinds: Vec<Gated>,
    ready: watch::Sender<bool>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let (stop, stopping) = watch::channel(false);
    let (sharded, own): (Vec<Gated>, Vec<Gated>) =
        kinds.into_iter().partition(|k| k.sharded.is_some());
    let assigned: Vec<ShardedKind> = sharded.iter().filter_map(|k| k.sharded.clone()).collect();
    let members = Members::new();
    // Every replica calls every account (objects are spread by a hash of
    // their keys): the cloud pacers' growth is shared among the members.
    let share_clouds = {
        let (ctx, mut live) = (ctx.clone(), members.live.subscribe());
        let mut stop = stopping.clone();
        async move {
            loop {
                let replicas = live.borrow_and_update().len();
                ctx.connector.pacers().share_clouds(replicas);
                tokio::select! {
                    changed = live.changed() => if changed.is_err() { return },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    };
    let work = async {
        tokio::join!(
            share_clouds,
            watch_members(
                kube.clone(),
                shard.clone(),
                members.clone(),
                ctx.metrics.clone(),
                stopped(&stopping)
            ),
            share(
                ctx.clone(),
                kube.clone(),
                shard.clone(),
                sharded,
                ready,
                &stopping
            ),
            lead(
                ctx.clone(),
                kube.clone(),
                shard.clone(),
                members.clone(),
                own,
                assigned,
                &stopping
            ),
        )
    };
    tokio::pin!(work);
    tokio::pin!(shutdown);
    tokio::select! {
        _ = &mut work => {}
        () = &mut shutdown => {
            let _ = stop.send(true);
            work.await;
        }
    }
}

/// This replica's share: joins, runs the sharded kinds' controllers on
/// its label while the Lease is its own, and when it is revoked stops
/// them (dropping their caches) before joining again as a new member.
async fn share(
    ctx: Arc<Context>,
    kube: kube::Client,
    shard: Arc<Shard>,
    kinds: Vec<Gated>,
    ready: watch::Sender<bool>,
    stopping: &watch::Receiver<bool>,
) {
    let membership = Membership::new(kube.clone(), shard.clone());
    loop {
        let version = tokio::select! {
            version = membership.join() => version,
            () = stopped(stopping) => return,
        };
        let (leave, leaving) = watch::channel(false);
        let gate = Gate::new(ctx.clone(), kube.clone(), kinds.clone(), ready.clone());
        let stop_gate = {
            let (mut leaving, stopping) = (leaving.clone(), stopping.clone());
            async move {
                let mut stopping = stopping;
                tokio::select! {
                    _ = leaving.wait_for(|l| *l) => {}
                    _ = stopping.wait_for(|s| *s) => {}
                }
            }
        };
        let (_, revoked) = tokio::join!(gate.run(stop_gate), async {
            let revoked = membership.renew(version, stopped(stopping)).await;
            let _ = leave.send(true);
            revoked
        });
        if !revoked {
            membership.leave().await;
            return;
        }
        info!("controllers stopped after the revocation; joining again");
    }
}

/// While this replica holds the leader Lease: the assigner and the
/// provider's own controllers. Losing the Lease stops them; the replica
/// stays a member and competes again.
async fn lead(
    ctx: Arc<Context>,
    kube: kube::Client,
    shard: Arc<Shard>,
    members: Arc<Members>,
    own: Vec<Gated>,
    assigned: Vec<ShardedKind>,
    stopping: &watch::Receiver<bool>,
) {
    let elector = Elector::new(
        kube.clone(),
        shard.config.namespace(),
        shard.config.leader_lease(),
        shard.identity(),
    );
    loop {
        tokio::select! {
            () = elector.acquire() => {}
            () = stopped(stopping) => return,
        }
        let (resign, resigned) = watch::channel(false);
        let stop_leading = {
            let (mut resigned, mut stopping) = (resigned.clone(), stopping.clone());
            async move {
                tokio::select! {
                    _ = resigned.wait_for(|r| *r) => {}
                    _ = stopping.wait_for(|s| *s) => {}
                }
            }
        };
        let (stop_assigner, assigner_stops) = watch::channel(false);
        let gate = Gate::new(
            ctx.clone(),
            kube.clone(),
            own.clone(),
            watch::Sender::new(false),
        );
        let leading = async {
            tokio::join!(
                gate.run(stop_leading),
                assigner::run(
                    ctx.clone(),
                    kube.clone(),
                    shard.clone(),
                    members.clone(),
                    assigned.clone(),
                    assigner_stops,
                ),
            )
        };
        tokio::pin!(leading);
        let lost = tokio::select! {
            _ = &mut leading => false,
            lost = elector.hold() => {
                warn!(error = %lost, "no longer the leader: stopping the assigner and the provider's own controllers");
                true
            }
            () = stopped(stopping) => false,
        };
        let _ = resign.send(true);
        let _ = stop_assigner.send(true);
        leading.await;
        if !lost {
            return;
        }
    }
}

//! The assigner, run by the holder of the leader Lease: labels every new
//! object with its owner, and on each membership change moves the objects
//! whose owner changed, by a handover when the old owner is live and by a
//! takeover (after revoking its Lease) when it is not.
//!
//! It keeps no cache of the objects: new ones come from a watch of the
//! unlabelled objects only (each leaves it once labelled), and a
//! membership change pages through every labelled object's metadata once. Its
//! writes are merge patches guarded by the resourceVersion it read, so a
//! write based on a stale copy is refused (409) and the next pass looks
//! again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::membership::{Members, revoke};
use super::slim::Slim;
use super::{Shard, object_key, owner};
use crate::context::Context;
use crate::watch::whole_list;

/// A kind whose objects are assigned.
#[derive(Clone, Debug)]
pub(crate) struct ShardedKind {
    pub resource: ApiResource,
    /// For metrics and logs.
    pub kind: String,
    /// Whether a move waits for the old owner to let go: managed kinds,
    /// whose reconciles call the cloud. A query's reconcile only lists and
    /// writes Kubernetes objects idempotently, so it moves at once.
    pub drains: bool,
}

/// What the assigner does to one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Move {
    /// Label it with this owner (new, or its owner is gone).
    Assign(String),
    /// Ask its live owner to hand it to this one.
    Drain(String),
    /// Withdraw a handover no longer wanted.
    Undrain,
}

/// The move for an object labelled `current` with handover `next`, whose
/// owner by the hash is `desired`, given the `live` members and whether a
/// Lease still names an identity (`held`: its objects wait for the
/// revocation).
pub(crate) fn decide(
    current: Option<&str>,
    next: Option<&str>,
    desired: &str,
    live: &[String],
    held: impl Fn(&str) -> bool,
    drains: bool,
) -> Option<Move> {
    match current {
        Some(owner) if owner == desired => next.map(|_| Move::Undrain),
        None => Some(Move::Assign(desired.to_owned())),
        Some(owner) if live.iter().any(|m| m == owner) => {
            if !drains {
                Some(Move::Assign(desired.to_owned()))
            } else if next == Some(desired) {
                None
            } else {
                Some(Move::Drain(desired.to_owned()))
            }
        }
        Some(owner) if held(owner) => None,
        Some(_) => Some(Move::Assign(desired.to_owned())),
    }
}

/// What one object's placement came to.
enum Placed {
    Stays,
    Moved,
    /// Not moved: it changed since it was read, or the write failed.
    Stale,
}

/// A pass's counts, added to by its concurrent placements.
#[derive(Default)]
struct Tally {
    objects: AtomicUsize,
    moved: AtomicUsize,
    stale: AtomicUsize,
}

impl Tally {
    fn counts(&self) -> (usize, usize, usize) {
        let get = |n: &AtomicUsize| n.load(Ordering::Relaxed);
        (get(&self.objects), get(&self.moved), get(&self.stale))
    }
}

/// Objects patched at once by a pass.
const CONCURRENT_WRITES: usize = 32;
/// Objects per page of a pass's listing.
const PAGE: u32 = 500;
/// A pass waits this long after a membership change for the next one (a
/// rolling restart changes it several times in a row).
const SETTLE: Duration = Duration::from_secs(1);
/// How long the membership must hold still before a new assigner starts.
const STARTUP_SETTLE: Duration = Duration::from_secs(3);
/// A pass runs at least this often, in case an event was missed: the
/// default sync period of controller-runtime. A pass pages through every
/// object's metadata, which the API server reads from etcd; at 30,000 VPCs
/// a five-minute period cost minutes of a busy server's time.
const FULL_PASS_EVERY: Duration = Duration::from_secs(3_600);

/// Runs the assigner until `stop` turns true.
pub(crate) async fn run(
    ctx: Arc<Context>,
    kube: kube::Client,
    shard: Arc<Shard>,
    members: Arc<Members>,
    kinds: Vec<ShardedKind>,
    mut stop: watch::Receiver<bool>,
) {
    let assigner = Arc::new(Assigner {
        ctx,
        kube: kube.clone(),
        leases: Api::namespaced(kube, shard.config.namespace()),
        shard,
        members,
        stopped_at: std::sync::Mutex::new(HashMap::new()),
    });
    let settled = tokio::select! {
        _ = stop.wait_for(|stop| *stop) => return,
        members = assigner.settled() => members,
    };
    info!(
        kinds = kinds.len(),
        members = ?settled,
        "assigning objects to the shard members"
    );
    let new_objects = futures::future::join_all(
        kinds
            .iter()
            .cloned()
            .map(|kind| assigner.clone().assign_new(kind)),
    );
    let passes = assigner.clone().passes(kinds);
    tokio::select! {
        _ = stop.wait_for(|stop| *stop) => {}
        _ = new_objects => {}
        () = passes => {}
    }
    info!("stopped assigning");
}

struct Assigner {
    ctx: Arc<Context>,
    kube: kube::Client,
    leases: Api<Lease>,
    shard: Arc<Shard>,
    members: Arc<Members>,
    /// When each revoked member stopped mutating, by its own clock: the
    /// start of its objects' time without an owner.
    stopped_at: std::sync::Mutex<HashMap<String, jiff::Timestamp>>,
}

impl Assigner {
    fn live(&self) -> Vec<String> {
        self.members.live.borrow().clone()
    }

    /// Waits, when it starts, until the membership has held still for
    /// [`STARTUP_SETTLE`] (at most a lease duration): replicas of one
    /// Deployment start within seconds of each other, and objects assigned
    /// to the first member alone would then all move again, two writes
    /// each, as the others join.
    async fn settled(&self) -> Vec<String> {
        let mut changes = self.members.live.subscribe();
        let deadline = tokio::time::Instant::now() + self.shard.timing().lease_duration;
        loop {
            let quiet = tokio::time::timeout(STARTUP_SETTLE, changes.changed()).await;
            let live = self.live();
            let timed_out = tokio::time::Instant::now() >= deadline;
            if (quiet.is_err() && !live.is_empty()) || timed_out || matches!(quiet, Ok(Err(_))) {
                return live;
            }
        }
    }

    /// Labels each object that appears without the label.
    async fn assign_new(self: Arc<Self>, kind: ShardedKind) {
        // Parsed without managedFields (`slim`): the list is held until
        // each object is labelled.
        let api: Api<Slim> = Api::all_with(self.kube.clone(), &kind.resource);
        let selector = format!("!{}", self.shard.label);
        // Listed from the API server's watch cache, in one piece, as the
        // controllers' watches are: 100,000 VPCs applied before start,
        // listed page by page from etcd while the API server was busy,
        // outlived etcd's compaction on every attempt (410 Expired), and
        // 52,000 of them were never labelled.
        let config = whole_list().labels(&selector);
        let objects = watcher(api, config).default_backoff().applied_objects();
        objects
            .filter_map(|object| async move {
                object
                    .inspect_err(
                        |error| warn!(%error, "watch of unassigned objects failed; listing again"),
                    )
                    .ok()
            })
            .for_each_concurrent(CONCURRENT_WRITES, |object| {
                let this = self.clone();
                let kind = kind.clone();
                async move { this.assign(&kind, object.metadata).await }
            })
            .await;
    }

    /// Labels one new object; one that changed since it was read (its
    /// owner-to-be cannot see it until labelled) is read again and tried
    /// again after [`SETTLE`], until it is labelled or gone.
    async fn assign(&self, kind: &ShardedKind, mut meta: ObjectMeta) {
        loop {
            let live = self.live();
            if !matches!(self.place(kind, &meta, &live).await, Placed::Stale) {
                return;
            }
            tokio::time::sleep(SETTLE).await;
            let api: Api<DynamicObject> = match meta.namespace.as_deref() {
                Some(namespace) => {
                    Api::namespaced_with(self.kube.clone(), namespace, &kind.resource)
                }
                None => Api::all_with(self.kube.clone(), &kind.resource),
            };
            let name = meta.name.clone().unwrap_or_default();
            meta = match api.get_metadata_opt(&name).await {
                Ok(Some(fresh)) => fresh.metadata,
                Ok(None) => return,
                Err(error) => {
                    debug!(%error, kind = %kind.kind, "cannot read an object to assign; retrying");
                    continue;
                }
            };
            let labelled = meta
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(&self.shard.label));
            if labelled {
                return;
            }
        }
    }

    /// A pass over every object at the start, after each membership
    /// change and every [`FULL_PASS_EVERY`]; again after [`SETTLE`] while
    /// a pass left work undone (a move refused because the object changed
    /// since it was listed, a kind that could not be listed): deferred,
    /// never dropped.
    async fn passes(self: Arc<Self>, kinds: Vec<ShardedKind>) {
        let mut changes = self.members.live.subscribe();
        loop {
            self.revoke_silent().await;
            let live = self.live();
            let mut undone = false;
            if !live.is_empty() {
                let tally = Tally::default();
                for kind in &kinds {
                    if let Err(error) = self.pass(kind, &live, &tally).await {
                        debug!(%error, kind = %kind.kind, "cannot list for assignment; retrying");
                        tally.stale.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let (objects, moved, stale) = tally.counts();
                info!(members = ?live, objects, moved, stale, "assignment pass");
                undone = stale > 0;
            }
            let next_pass = if undone { SETTLE } else { FULL_PASS_EVERY };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    tokio::time::sleep(SETTLE).await;
                    changes.mark_unchanged();
                }
                () = tokio::time::sleep(next_pass) => {}
            }
        }
    }

    /// Revokes every Lease silent for its whole duration, at the version
    /// seen: one renewed meanwhile stays.
    async fn revoke_silent(&self) {
        let silent = self
            .members
            .view
            .lock()
            .expect("member view lock")
            .silent(Instant::now());
        for lease in silent {
            match revoke(&self.leases, &lease).await {
                Ok(true) => {
                    info!(member = %lease.holder, lease = %lease.lease, "revoked a silent member's Lease; taking its objects");
                    self.members
                        .view
                        .lock()
                        .expect("member view lock")
                        .gone(&lease.lease);
                    let stopped = lease.renewed.map_or_else(jiff::Timestamp::now, |at| {
                        at + jiff::SignedDuration::try_from(self.shard.timing().renew_deadline)
                            .unwrap_or_default()
                    });
                    self.stopped_at
                        .lock()
                        .expect("stopped lock")
                        .insert(lease.holder.clone(), stopped);
                }
                Ok(false) => debug!(member = %lease.holder, "a silent member renewed; kept"),
                Err(error) => {
                    warn!(%error, member = %lease.holder, "cannot revoke a silent member's Lease")
                }
            }
        }
    }

    /// One kind's objects, page by page, counted into `tally`.
    async fn pass(
        &self,
        kind: &ShardedKind,
        live: &[String],
        tally: &Tally,
    ) -> Result<(), kube::Error> {
        let api: Api<DynamicObject> = Api::all_with(self.kube.clone(), &kind.resource);
        // Only labelled objects: an unlabelled one is `assign_new`'s, whose
        // watch lists it too, and the pass would only skip it. At a start
        // with 30,000 objects unlabelled, the first pass listed all their
        // metadata at once (the watch cache answers in one piece), beside
        // the watch's own listing of the same: the leader's memory peak.
        let labelled = ListParams::default().labels(&self.shard.label);
        // From the watch cache too (see `assign_new`): a pass that writes
        // between its pages outlives a continue token on a large cluster.
        let mut params = labelled.clone().match_any().limit(PAGE);
        loop {
            let page = api.list_metadata(&params).await?;
            tally.objects.fetch_add(page.items.len(), Ordering::Relaxed);
            futures::stream::iter(page.items.iter())
                .for_each_concurrent(CONCURRENT_WRITES, |object| async {
                    let counter = match self.place(kind, &object.metadata, live).await {
                        Placed::Stays => return,
                        Placed::Moved => &tally.moved,
                        Placed::Stale => &tally.stale,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                })
                .await;
            match page.metadata.continue_ {
                // A continued list names no resourceVersion.
                Some(token) if !token.is_empty() => {
                    params = labelled.clone().limit(PAGE).continue_token(&token)
                }
                _ => return Ok(()),
            }
        }
    }

    /// Makes the move `object` needs, if any.
    async fn place(&self, kind: &ShardedKind, meta: &ObjectMeta, live: &[String]) -> Placed {
        let name = meta.name.clone().unwrap_or_default();
        let key = object_key(
            &kind.resource.group,
            &kind.resource.kind,
            meta.namespace.as_deref(),
            &name,
        );
        let Some(desired) = owner(&key, live) else {
            return Placed::Stays;
        };
        let current = entry(meta.labels.as_ref(), &self.shard.label);
        let next = entry(meta.annotations.as_ref(), &self.shard.next);
        let held = |identity: &str| {
            self.members
                .view
                .lock()
                .expect("member view lock")
                .holds(identity)
        };
        let Some(step) = decide(current, next, desired, live, held, kind.drains) else {
            return Placed::Stays;
        };
        let (patch, how) = match &step {
            Move::Assign(to) => {
                let how = if current.is_some() {
                    "takeover"
                } else {
                    "assign"
                };
                let moved_at = self.unowned_since(current, meta);
                (
                    json!({"metadata": {
                        "labels": {&self.shard.label: to},
                        "annotations": {&self.shard.next: Value::Null, &self.shard.moved_at: moved_at},
                    }}),
                    how,
                )
            }
            Move::Drain(to) => (
                json!({"metadata": {"annotations": {&self.shard.next: to}}}),
                "drain",
            ),
            Move::Undrain => (
                json!({"metadata": {"annotations": {&self.shard.next: Value::Null}}}),
                "undrain",
            ),
        };
        let mut patch = patch;
        patch["metadata"]["resourceVersion"] = json!(meta.resource_version);
        // Straight to the API server, not through the reconciles' pacing:
        // every reconcile of the object waits for this write, so it goes
        // first, bounded by CONCURRENT_WRITES.
        let api: Api<DynamicObject> = match meta.namespace.as_deref() {
            Some(namespace) => Api::namespaced_with(self.kube.clone(), namespace, &kind.resource),
            None => Api::all_with(self.kube.clone(), &kind.resource),
        };
        match api
            .patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                debug!(kind = %kind.kind, name, ?step, "shard move");
                self.ctx.metrics.shard.moved(&kind.kind, how);
                Placed::Moved
            }
            // Gone; or changed since it was listed: the next pass, soon,
            // reads the newer copy.
            Err(kube::Error::Api(e)) if e.code == 404 => Placed::Stays,
            Err(kube::Error::Api(e)) if e.code == 409 => Placed::Stale,
            Err(error) => {
                warn!(%error, kind = %kind.kind, name, "cannot assign an object; the next pass retries");
                Placed::Stale
            }
        }
    }

    /// When the object was last owned: a revoked member's last moment, or
    /// the object's creation for a new one.
    fn unowned_since(&self, current: Option<&str>, meta: &ObjectMeta) -> String {
        let since = match current {
            None => meta.creation_timestamp.as_ref().map(|t| t.0),
            Some(owner) => self
                .stopped_at
                .lock()
                .expect("stopped lock")
                .get(owner)
                .copied(),
        };
        since.unwrap_or_else(jiff::Timestamp::now).to_string()
    }
}

/// The value of `key` in a label or annotation map.
fn entry<'a>(
    map: Option<&'a std::collections::BTreeMap<String, String>>,
    key: &str,
) -> Option<&'a str> {
    map.and_then(|m| m.get(key)).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn a_new_object_is_assigned() {
        assert_eq!(
            decide(None, None, "a", &live(), |_| false, true),
            Some(Move::Assign("a".into()))
        );
    }

    #[test]
    fn an_object_in_place_stays_and_a_stale_handover_is_withdrawn() {
        assert_eq!(decide(Some("a"), None, "a", &live(), |_| false, true), None);
        assert_eq!(
            decide(Some("a"), Some("b"), "a", &live(), |_| false, true),
            Some(Move::Undrain)
        );
    }

    #[test]
    fn a_live_owner_is_asked_to_hand_over_once() {
        assert_eq!(
            decide(Some("b"), None, "a", &live(), |_| true, true),
            Some(Move::Drain("a".into()))
        );
        assert_eq!(
            decide(Some("b"), Some("a"), "a", &live(), |_| true, true),
            None
        );
        // A handover to someone else is redirected.
        assert_eq!(
            decide(Some("b"), Some("c"), "a", &live(), |_| true, true),
            Some(Move::Drain("a".into()))
        );
    }

    #[test]
    fn a_kind_that_does_not_drain_moves_at_once() {
        assert_eq!(
            decide(Some("b"), None, "a", &live(), |_| true, false),
            Some(Move::Assign("a".into()))
        );
    }

    #[test]
    fn a_dead_owners_objects_wait_for_its_lease_to_be_revoked() {
        assert_eq!(
            decide(Some("c"), None, "a", &live(), |who| who == "c", true),
            None
        );
        assert_eq!(
            decide(Some("c"), None, "a", &live(), |_| false, true),
            Some(Move::Assign("a".into()))
        );
    }
}

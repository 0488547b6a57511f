//! The assigner, run by the holder of the leader Lease: labels every new
//! object with its owner, and on each membership change moves the objects
//! whose owner changed, by a handover when the old owner is live and by a
//! takeover (after revoking its Lease) when it is not.
//!
//! It keeps no cache of the objects: the ones unlabelled when it starts
//! are listed a page at a time and labelled page by page, new ones come
//! from a watch of the unlabelled objects only (each leaves it once
//! labelled), and a membership change lists every object's metadata
//! once, a page at a time. Its writes are merge patches guarded by the
//! resourceVersion it read, so a write based on a stale copy is refused
//! (409) and the next pass looks again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::membership::{Members, revoke};
use super::slim::Slim;
use super::{Shard, object_key, owner};
use crate::context::Context;
use crate::in_flight::finished;
use crate::watch::relisting;

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

/// What the assigner found of a kind when it started: whether any of its
/// objects were labelled before ([`assigned_before`]).
enum FirstLook {
    /// The first object carries the label.
    Before,
    /// It does not, or there is no object.
    Never,
    /// The API server does not serve the kind (no CRD yet).
    NotServed,
    /// The read failed: the unassigned objects are listed (as for
    /// `Never`) and the start's pass goes over the kind (as for `Before`).
    Unknown,
}

impl FirstLook {
    /// Whether the start's pass goes over the kind: not when none of its
    /// objects was labelled before, since every label on it is then this
    /// assigner's, put by the membership the pass would check it against
    /// (a change of membership from here on makes a pass of its own). At
    /// 30,000 VPCs that pass read 60 pages from etcd while the start-up
    /// listing labelled them, and moved nothing.
    fn start_pass(&self) -> bool {
        matches!(self, FirstLook::Before | FirstLook::Unknown)
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
/// Objects per page of a listing the API server answers from etcd.
const PAGE: u32 = 500;
/// A pass waits this long after a member joins for the next change (a
/// rolling restart changes the membership several times in a row); a
/// loss is acted on at once.
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
    let looks = futures::future::join_all(kinds.iter().map(|kind| assigner.first_look(kind))).await;
    let start_pass: Vec<bool> = looks.iter().map(FirstLook::start_pass).collect();
    let new_objects = futures::future::join_all(
        kinds
            .iter()
            .cloned()
            .zip(looks)
            .map(|(kind, look)| assigner.clone().assign_new(kind, look)),
    );
    let passes = assigner.clone().passes(kinds, start_pass);
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

    /// Labels each object that is, or appears, without the label: first
    /// those already there ([`Assigner::assign_listed`]), then each new one
    /// as the watch sees it.
    async fn assign_new(self: Arc<Self>, kind: ShardedKind, look: FirstLook) {
        self.assign_listed(&kind, look).await;
        // Parsed without managedFields (`slim`): the watch's list is held
        // until each object in it is labelled.
        let api: Api<Slim> = Api::all_with(self.kube.clone(), &kind.resource);
        let selector = self.unlabelled();
        // Listed from the API server's watch cache, in one piece, as the
        // controllers' watches are. What is unlabelled now is what was
        // created while `assign_listed` ran, a few objects, and once they
        // are labelled the selector matches none of the kind's objects
        // until a new one comes: a watch that lists again whenever it ends
        // ([`crate::watch::relisting`]), cheaply, whatever the cluster
        // holds.
        let objects = relisting(api, &selector)
            .default_backoff()
            .applied_objects();
        let name = kind.kind.as_str();
        objects
            .filter_map(|object| async move {
                object
                    .inspect_err(|error| {
                        if watch_not_served(error) {
                            debug!(kind = %name, "not served (no CRD); listing again later");
                        } else {
                            warn!(%error, kind = %name, "watch of unassigned objects failed; listing again");
                        }
                    })
                    .ok()
            })
            .for_each_concurrent(CONCURRENT_WRITES, |object| {
                let this = self.clone();
                let kind = kind.clone();
                async move { this.assign(&kind, object.metadata).await }
            })
            .await;
    }

    /// The label selector of the objects not yet assigned.
    fn unlabelled(&self) -> String {
        format!("!{}", self.shard.label)
    }

    /// Labels the objects unlabelled when the assigner starts, listed a
    /// page at a time from etcd ([`paged`]), each page labelled before the
    /// next is asked for, unless the kind was assigned before
    /// ([`assigned_before`]).
    ///
    /// Not from the watch cache, which answers in one piece: at a start
    /// with 30,000 VPCs unlabelled (sharding turned on over existing
    /// objects, or the benchmark's start) the leader held that whole
    /// answer, every object's full JSON at once, and its memory peaked
    /// above the other replicas'. A page is asked for as soon as the
    /// previous one is labelled, so the listing does not wait on anything
    /// slower than its own writes.
    ///
    /// A failure other than an expired continue token ends the listing
    /// early: the watch that follows lists whatever is still unlabelled
    /// from the watch cache, in one piece (the memory this listing saves,
    /// spent only then).
    ///
    /// A kind assigned before (a new leader, or the same one leading
    /// again) is left to that watch: its unlabelled objects are the few
    /// created while no assigner ran. Paging for them was what made the
    /// API server read every labelled object from etcd to find the first
    /// unlabelled one: at 100,000 VPCs, longer than its one-minute limit,
    /// a 504 at each change of leader. Listing every object and skipping
    /// the labelled ones, as a pass does, was worse: each change of
    /// leader started it again at the first page, and the new leader
    /// paged through every VPC labelled so far (15 s a page on the
    /// saturated API server) before it labelled another.
    async fn assign_listed(&self, kind: &ShardedKind, look: FirstLook) {
        match look {
            FirstLook::Before => {
                info!(kind = %kind.kind, "assigned before: the watch lists the unassigned objects");
                return;
            }
            FirstLook::NotServed => {
                debug!(kind = %kind.kind, "not served (no CRD): the watch lists its objects once it is");
                return;
            }
            FirstLook::Never | FirstLook::Unknown => {}
        }
        let api: Api<Slim> = Api::all_with(self.kube.clone(), &kind.resource);
        let listed = paged(&api, Some(&self.unlabelled()), kind, |items| async move {
            futures::stream::iter(items)
                .for_each_concurrent(CONCURRENT_WRITES, |object| async move {
                    self.assign(kind, object.metadata).await
                })
                .await;
        })
        .await;
        match listed {
            Ok(objects) => {
                info!(kind = %kind.kind, objects, "assigned the objects found unassigned at the start")
            }
            Err(error) => {
                warn!(%error, kind = %kind.kind, "cannot list unassigned objects; the watch of new ones lists the rest")
            }
        }
    }

    /// Whether `kind`'s objects were assigned before this assigner
    /// started ([`assigned_before`]).
    async fn first_look(&self, kind: &ShardedKind) -> FirstLook {
        let api: Api<Slim> = Api::all_with(self.kube.clone(), &kind.resource);
        match assigned_before(&api, &self.shard.label).await {
            Ok(true) => FirstLook::Before,
            Ok(false) => FirstLook::Never,
            Err(error) if not_served(&error) => FirstLook::NotServed,
            Err(error) => {
                warn!(%error, kind = %kind.kind, "cannot read the first object; listing unassigned ones a page at a time");
                FirstLook::Unknown
            }
        }
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
    /// since it was listed): deferred, never dropped. A pass that could not
    /// list a kind is tried again later each time it fails
    /// ([`retry_after`]): at 30,000 objects on a busy API server a listing
    /// cut at its one-minute limit, tried again a second later, kept the
    /// server reading every object from etcd for 23 minutes.
    ///
    /// The first pass goes over only the kinds whose place in
    /// `start_pass` is true ([`FirstLook::start_pass`]).
    async fn passes(self: Arc<Self>, kinds: Vec<ShardedKind>, mut start_pass: Vec<bool>) {
        let mut changes = self.members.live.subscribe();
        let mut failed_listings = 0;
        loop {
            self.revoke_silent().await;
            let live = self.live();
            let mut undone = false;
            let mut unlisted = false;
            if !live.is_empty() {
                let tally = Tally::default();
                for (i, kind) in kinds.iter().enumerate() {
                    if start_pass.get(i) == Some(&false) {
                        continue;
                    }
                    if let Err(error) = self.pass(kind, &live, &tally).await {
                        warn!(%error, kind = %kind.kind, failed_before = failed_listings, "cannot list for assignment; the pass is tried again");
                        unlisted = true;
                    }
                }
                let (objects, moved, stale) = tally.counts();
                info!(members = ?live, objects, moved, stale, "assignment pass");
                undone = stale > 0;
            }
            start_pass.clear();
            failed_listings = if unlisted { failed_listings + 1 } else { 0 };
            let next_pass = if unlisted {
                retry_after(failed_listings)
            } else if undone {
                SETTLE
            } else {
                FULL_PASS_EVERY
            };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // A member lost leaves its objects without an owner
                    // until they move: at once. A member joined takes
                    // objects from live owners, and a rolling restart
                    // changes the membership several times in a row: the
                    // pass waits for the next change.
                    if joined(&live, &changes.borrow_and_update()) {
                        tokio::time::sleep(SETTLE).await;
                        changes.mark_unchanged();
                    }
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

    /// One kind's labelled objects, page by page, counted into `tally`.
    ///
    /// Every object of the kind is listed, a page at a time from etcd
    /// ([`paged`]), and the unlabelled ones are skipped: they are
    /// `assign_new`'s, whose watch lists them too. Not with the label as
    /// the selector: a page is then the next [`PAGE`] labelled objects,
    /// and where few follow the API server reads every object after them
    /// from etcd to find them. At a start with 100,000 VPCs of which a few
    /// thousand were labelled, that read outlasted the API server's
    /// one-minute limit on every try (504), a minute of its time each,
    /// and no pass ended until all were labelled. Nor from the watch cache,
    /// which answers in one piece: at 100,000 objects, all their metadata
    /// at once in the leader.
    async fn pass(
        &self,
        kind: &ShardedKind,
        live: &[String],
        tally: &Tally,
    ) -> Result<(), kube::Error> {
        let api: Api<Slim> = Api::all_with(self.kube.clone(), &kind.resource);
        let listed = paged(&api, None, kind, |items| async move {
            let labelled: Vec<_> = items
                .into_iter()
                .filter(|object| {
                    entry(object.metadata.labels.as_ref(), &self.shard.label).is_some()
                })
                .collect();
            tally.objects.fetch_add(labelled.len(), Ordering::Relaxed);
            futures::stream::iter(labelled.iter())
                .for_each_concurrent(CONCURRENT_WRITES, |object| async {
                    let counter = match self.place(kind, &object.metadata, live).await {
                        Placed::Stays => return,
                        Placed::Moved => &tally.moved,
                        Placed::Stale => &tally.stale,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                })
                .await;
        })
        .await;
        match listed {
            // A kind whose CRD is not installed (an inactive MRD) has no
            // objects to move. Counted as a failure, it made every pass
            // be tried again within a minute, each a listing of every
            // other kind's objects from etcd.
            Err(error) if not_served(&error) => Ok(()),
            listed => listed.map(|_| ()),
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
        let api: Api<Slim> = match meta.namespace.as_deref() {
            Some(namespace) => Api::namespaced_with(self.kube.clone(), namespace, &kind.resource),
            None => Api::all_with(self.kube.clone(), &kind.resource),
        };
        // Let finish if the assigner stops meanwhile: guarded by the
        // resourceVersion it read, it is as safe after a change of leader
        // as before, and one cancelled in flight is a 500 at the API
        // server ([`finished`]).
        let params = PatchParams {
            field_manager: Some(self.shard.field_manager.clone()),
            ..PatchParams::default()
        };
        let written = {
            let name = name.clone();
            finished(async move { Slim::patch(&api, &name, &params, &Patch::Merge(&patch)).await })
                .await
        };
        match written {
            Some(Ok(_)) => {
                debug!(kind = %kind.kind, name, ?step, "shard move");
                self.ctx.metrics.shard.moved(&kind.kind, how);
                Placed::Moved
            }
            // Gone; or changed since it was listed: the next pass, soon,
            // reads the newer copy.
            Some(Err(kube::Error::Api(e))) if e.code == 404 => Placed::Stays,
            Some(Err(kube::Error::Api(e))) if e.code == 409 => Placed::Stale,
            Some(Err(error)) => {
                warn!(%error, kind = %kind.kind, name, "cannot assign an object; the next pass retries");
                Placed::Stale
            }
            None => {
                warn!(kind = %kind.kind, name, "an assignment's write failed; the next pass retries");
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

/// Lists the metadata of the objects of `kind` that `selector` matches
/// (all of them without one) from etcd, [`PAGE`] at a time, handing each
/// page to `each` before asking for the next, so that a listing holds one
/// page however many objects there are, each object parsed as a [`Slim`]
/// (no `managedFields`). Returns how many it listed.
///
/// kube 5 sends no `resourceVersion=0` beside a limit, so a paged list is
/// always a read from etcd, never from the watch cache.
///
/// Labelling or moving 100,000 objects takes longer than etcd keeps the
/// version a continue token names (410 Expired); the API server then
/// answers with a token that continues after the same object at the
/// current version, and the listing goes on with it. Starting again from
/// the first page instead made the API server read every object labelled
/// so far from etcd to skip it, which at 77,000 took longer than its
/// one-minute limit on every try, and the listing stalled.
async fn paged<F, Fut>(
    api: &Api<Slim>,
    selector: Option<&str>,
    kind: &ShardedKind,
    mut each: F,
) -> Result<usize, kube::Error>
where
    F: FnMut(Vec<Slim>) -> Fut,
    Fut: Future<Output = ()>,
{
    let first = match selector {
        Some(selector) => ListParams::default().labels(selector),
        None => ListParams::default(),
    }
    .limit(PAGE);
    let mut params = first.clone();
    let mut listed = 0;
    loop {
        let page = match Slim::list(api, &params).await {
            Ok(page) => page,
            Err(error) => match continue_after_expiry(&error) {
                Some(token) => {
                    debug!(kind = %kind.kind, listed, "continue token expired; continuing at the current version");
                    params = first.clone().continue_token(token);
                    continue;
                }
                None => return Err(error),
            },
        };
        listed += page.items.len();
        let next = page.metadata.continue_.filter(|token| !token.is_empty());
        each(page.items).await;
        match next {
            Some(token) => params = first.clone().continue_token(&token),
            None => return Ok(listed),
        }
    }
}

/// Whether the objects of the kind `api` serves were assigned before:
/// the first of them in etcd's order carries `label`. One object read
/// from etcd, cheap however many the kind holds, where a listing of the
/// unlabelled objects reads all the labelled ones to skip them.
///
/// A start-up listing labels in etcd's order and the watch labels each
/// new object within seconds, so once the first object is labelled, the
/// unlabelled ones are those created while no assigner ran, or the rest
/// of a start-up listing whose leader stopped halfway (then the watch's
/// list holds them all at once, as after a failed listing). A kind with
/// no objects was not.
async fn assigned_before(api: &Api<Slim>, label: &str) -> Result<bool, kube::Error> {
    let first = Slim::list(api, &ListParams::default().limit(1)).await?;
    Ok(first
        .items
        .first()
        .is_some_and(|object| entry(object.metadata.labels.as_ref(), label).is_some()))
}

/// The longest a pass whose listing failed waits before it is tried
/// again.
const RETRY_AT_MOST_AFTER: Duration = Duration::from_secs(60);

/// How long a pass waits after its listing failed `failures` times in a
/// row: [`SETTLE`], doubled at each failure, at most
/// [`RETRY_AT_MOST_AFTER`].
fn retry_after(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    SETTLE
        .saturating_mul(1 << doublings)
        .min(RETRY_AT_MOST_AFTER)
}

/// Whether `now` names a member that `before` did not.
fn joined(before: &[String], now: &[String]) -> bool {
    now.iter().any(|member| !before.contains(member))
}

/// The token the API server offers with a 410 for an expired continue
/// token: it continues after the same object, at the current version.
fn continue_after_expiry(error: &kube::Error) -> Option<&str> {
    match error {
        kube::Error::Api(status) if status.code == 410 => status
            .metadata
            .as_ref()
            .and_then(|m| m.continue_.as_deref())
            .filter(|token| !token.is_empty()),
        _ => None,
    }
}

/// Whether the API server answered that it does not serve the kind: its
/// CRD is not installed (an MRD not activated) or not yet established.
/// It answers such a path with a plain-text 404, not a `Status`.
fn not_served(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// [`not_served`], as the watch of unassigned objects reports it.
fn watch_not_served(error: &kube::runtime::watcher::Error) -> bool {
    use kube::runtime::watcher::Error;
    match error {
        Error::InitialListFailed(error) | Error::WatchStartFailed(error) => not_served(error),
        _ => false,
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

    fn api_error(code: u16, continue_: Option<&str>) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            metadata: continue_.map(|token| {
                k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta {
                    continue_: Some(token.to_owned()),
                    ..Default::default()
                }
            }),
            ..kube::core::Status::failure("listing", "Expired")
        }))
    }

    fn vpcs() -> ApiResource {
        ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "fakecloud.crossplane.io",
            "v1",
            "VPC",
        ))
    }

    fn first_of(items: Vec<Value>) -> String {
        json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
            "metadata": {"resourceVersion": "7", "continue": "more"}, "items": items,
        })
        .to_string()
    }

    fn vpc(labels: Value) -> Value {
        json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5", "labels": labels},
        })
    }

    /// What `assigned_before` says when the API server answers `answer`,
    /// and what it asked.
    async fn assigned_before_with(answer: String) -> (Result<bool, kube::Error>, Vec<String>) {
        let (client, asked) = crate::watch::tests::scripted(vec![answer]);
        let api: Api<Slim> = Api::all_with(client, &vpcs());
        let said = assigned_before(&api, "fakecloud.crossplane.io/shard").await;
        let asked = asked.lock().unwrap().clone();
        (said, asked)
    }

    #[test]
    fn the_start_pass_skips_only_a_kind_known_never_assigned() {
        assert!(FirstLook::Before.start_pass());
        assert!(
            FirstLook::Unknown.start_pass(),
            "a failed read is passed over"
        );
        assert!(!FirstLook::Never.start_pass());
        assert!(!FirstLook::NotServed.start_pass());
    }

    #[tokio::test]
    async fn a_kind_whose_first_object_is_labelled_was_assigned_before() {
        let (said, asked) = assigned_before_with(first_of(vec![vpc(
            json!({"fakecloud.crossplane.io/shard": "replica-1", "team": "a"}),
        )]))
        .await;
        assert!(said.unwrap());
        // One object, from etcd (no resourceVersion), whatever its label:
        // no selector for the API server to filter every object through.
        let [list] = asked.as_slice() else {
            panic!("one request: {asked:?}")
        };
        let (path, query) = list.split_once('?').expect("a query");
        assert_eq!(path, "/apis/fakecloud.crossplane.io/v1/vpcs");
        let params: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
        assert_eq!(params, ["limit=1"], "{list}");
    }

    #[tokio::test]
    async fn a_kind_whose_first_object_is_unlabelled_or_with_none_was_not() {
        let unlabelled = first_of(vec![vpc(json!({"team": "a"}))]);
        assert!(!assigned_before_with(unlabelled).await.0.unwrap());
        assert!(!assigned_before_with(first_of(vec![])).await.0.unwrap());
    }

    #[tokio::test]
    async fn a_failed_read_of_the_first_object_is_an_error_not_an_answer() {
        let (said, _) = assigned_before_with("not json".to_owned()).await;
        assert!(said.is_err());
    }

    #[tokio::test]
    async fn a_kind_without_its_crd_is_not_served_and_other_failures_are_failures() {
        // What kube-apiserver answers for the path of a resource no CRD
        // defines: a plain-text 404.
        let (client, _) = crate::watch::tests::scripted_with_status(vec![
            (404, "404 page not found\n".to_owned()),
            (500, "etcd is down".to_owned()),
        ]);
        let api: Api<Slim> = Api::all_with(client, &vpcs());
        let kind = ShardedKind {
            resource: vpcs(),
            kind: "VPC".to_owned(),
            drains: true,
        };
        let absent = paged(&api, None, &kind, |_| async {}).await.unwrap_err();
        assert!(not_served(&absent), "{absent}");
        let watch = kube::runtime::watcher::Error::InitialListFailed(absent);
        assert!(watch_not_served(&watch));
        let failed = paged(&api, None, &kind, |_| async {}).await.unwrap_err();
        assert!(!not_served(&failed), "{failed}");
        assert!(!not_served(&api_error(410, Some("next"))));
    }

    #[test]
    fn an_expired_continue_goes_on_with_the_token_the_api_server_offers() {
        assert_eq!(
            continue_after_expiry(&api_error(410, Some("next"))),
            Some("next")
        );
    }

    #[test]
    fn other_list_failures_offer_no_way_to_continue() {
        // A 410 without a token, an empty token, a timeout (504, as a
        // listing that reads every labelled object from etcd met), a
        // transport error.
        assert_eq!(continue_after_expiry(&api_error(410, None)), None);
        assert_eq!(continue_after_expiry(&api_error(410, Some(""))), None);
        assert_eq!(continue_after_expiry(&api_error(504, Some("next"))), None);
        let transport = kube::Error::ReadEvents(std::io::Error::other("reset"));
        assert_eq!(continue_after_expiry(&transport), None);
    }

    #[test]
    fn a_failing_listing_is_tried_again_later_each_time() {
        let waits: Vec<u64> = (1..=8).map(|n| retry_after(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(retry_after(u32::MAX), RETRY_AT_MOST_AFTER);
    }

    #[test]
    fn only_a_member_that_joined_makes_a_pass_wait() {
        let three: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
        assert!(!joined(&three, &live()), "a loss goes at once");
        assert!(joined(&live(), &three), "a join settles");
        let swapped: Vec<String> = vec!["a".into(), "d".into()];
        assert!(joined(&live(), &swapped), "a loss and a join settle");
        assert!(!joined(&live(), &live()));
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

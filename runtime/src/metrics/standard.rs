//! The metric families of crossplane-runtime v2 and controller-runtime,
//! under their names, labels and buckets, so that the dashboards and alerts
//! written for Go providers work on this one unchanged. Served beside the
//! provider's own `provider_*` families, in the same registry.
//!
//! What each counts here, where this runtime differs from a Go provider:
//!
//! - `crossplane_managed_resource_exists`, `_ready`, `_synced` (gauges,
//!   `gvk`): the managed resources of each kind that exist, and those whose
//!   `Ready` / `Synced` condition is `True`. crossplane-runtime's state
//!   recorder lists its cache periodically; here the counts are kept by
//!   resource uid, from the controller's watch (every applied object, every
//!   deletion, and each relist, which drops what was deleted while the watch
//!   was down) and from each reconcile's final status (so they are right
//!   the moment a reconcile ends, and without a watch, in tests). A
//!   resource whose finalizer this process removed is counted out at once.
//!   A kind's counts go when its controller stops.
//! - `crossplane_managed_resource_first_time_to_reconcile_seconds`: from
//!   a resource's creation to a reconcile that finds no `Synced` condition
//!   on it (its first, as crossplane-runtime judges it).
//! - `crossplane_managed_resource_first_time_to_readiness_seconds`: from
//!   creation to the first `Ready=True`, for resources whose first
//!   reconcile this process saw (a restart does not count old resources).
//! - `crossplane_managed_resource_deletion_seconds`: from the deletion
//!   timestamp to the removal of the managed-resource finalizer.
//! - `crossplane_managed_resource_drift_seconds`: when a reconcile updates
//!   the external resource, the time since this process last found it up
//!   to date (so a user's spec edit counts as crossplane-runtime counts
//!   it); nothing for a resource not yet seen up to date since the start.
//! - `controller_runtime_reconcile_total` (`controller`, `result`): each
//!   reconcile that ran (one the backoff or the rate cap held back did
//!   nothing and is not counted). `result` is `error` when it failed (the
//!   runtime sets `Synced=False` and backs off, as controller-runtime does
//!   for a returned error), `requeue` when it met a stale copy and retries
//!   shortly, `requeue_after` when it asks to run again after a delay (a
//!   poll: most successful reconciles, as in crossplane-runtime), and
//!   `success` when it waits for the next change (paused, deleted).
//! - `controller_runtime_reconcile_errors_total` (`controller`): the
//!   reconciles counted with `result="error"`.
//! - `controller_runtime_reconcile_time_seconds` (`controller`): each
//!   reconcile's run time, controller-runtime's buckets.
//!
//! The `workqueue_*` families (`name` and `controller`, both the
//! controller's name, as controller-runtime labels them). kube-rs's
//! `Controller` owns the real queue and does not expose it; what follows
//! maps the queue onto what this runtime sees, a reconcile request
//! arriving from that queue and the reconcile-rate cap, which queues
//! deferred reconciles:
//!
//! - `workqueue_adds_total`: reconcile requests that reached the rate cap
//!   and were not already waiting in it (a request the backoff holds back
//!   is re-delayed, not added, as a delaying queue adds only when the
//!   delay ends; the re-arrival of a woken deferred request is its
//!   admission, not a new add);
//! - `workqueue_depth`: reconciles of this controller waiting in the rate
//!   cap's queue;
//! - `workqueue_queue_duration_seconds`: from a request's arrival to its
//!   admission by the rate cap (zero when admitted at once; time spent in
//!   kube-rs's own queue before arriving is not visible);
//! - `workqueue_work_duration_seconds`: the reconcile's run time;
//! - `workqueue_retries_total`: reconciles that ended in an error or a
//!   stale-copy conflict, each of which is requeued (controller-runtime's
//!   rate-limited requeues).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossplane_types::ManagedStatus;
use crossplane_types::condition::{TYPE_READY, TYPE_SYNCED};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The labels of the `crossplane_managed_resource_*` families.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GvkLabels {
    /// `schema.GroupVersionKind.String()`: see [`gvk_label`].
    pub gvk: String,
}

/// The labels of the `controller_runtime_*` families counted by
/// controller only.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller's name: see [`controller_name`].
    pub controller: String,
}

/// The labels of `controller_runtime_reconcile_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerResultLabels {
    /// The controller's name: see [`controller_name`].
    pub controller: String,
    /// `success`, `error`, `requeue` or `requeue_after`.
    pub result: String,
}

/// The labels of the `workqueue_*` families.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The queue's name: the controller's name, as controller-runtime
    /// names a controller's queue.
    pub name: String,
    /// The controller's name: see [`controller_name`].
    pub controller: String,
}

/// The `gvk` label of kind `K`, as Go's `schema.GroupVersionKind.String()`
/// writes it: `network.fakecloud.m.crossplane.io/v1alpha1, Kind=VPC`.
pub fn gvk_label<K: Resource<DynamicType = ()>>() -> String {
    format_gvk(&K::group(&()), &K::version(&()), &K::kind(&()))
}

/// `group/version, Kind=kind`; the core group is empty (`/v1, Kind=Pod`).
pub fn format_gvk(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// The name of kind `K`'s controller, crossplane-runtime's
/// `managed.ControllerName(GroupKind.String())`: `managed/` and the
/// lower-cased `Kind.group`, e.g. `managed/vpc.network.fakecloud.m.crossplane.io`.
pub fn controller_name<K: Resource<DynamicType = ()>>() -> String {
    format!("managed/{}.{}", K::kind(&()), K::group(&())).to_lowercase()
}

/// Whether a status holds `Ready=True` and `Synced=True`.
pub fn ready_synced<A>(status: Option<&ManagedStatus<A>>) -> (bool, bool) {
    let holds = |type_| {
        status
            .and_then(|s| s.condition(type_))
            .is_some_and(|c| c.is_true())
    };
    (holds(TYPE_READY), holds(TYPE_SYNCED))
}

/// crossplane-runtime's buckets for first-time-to-readiness and deletion.
fn lifecycle() -> Histogram {
    Histogram::new([
        1.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ])
}

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`.
fn reconcile_time() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// `ExponentialBuckets(10e-9, 10, 10)`: crossplane-runtime's for
/// first-time-to-reconcile and drift.
fn tiny_to_large() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

/// `ExponentialBuckets(10e-9, 10, 12)`: client-go's workqueue durations.
fn queue_seconds() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

type HistogramFamily<S> = Family<S, Histogram>;

fn histograms<S: Clone + std::hash::Hash + Eq>(make: fn() -> Histogram) -> HistogramFamily<S> {
    Family::new_with_constructor(make)
}

/// One tracked managed resource.
struct Tracked {
    gvk: String,
    ready: bool,
    synced: bool,
}

/// Per-resource state behind the gauges and lifecycle histograms, by uid
/// (unique across kinds).
#[derive(Default)]
struct Tracker {
    resources: HashMap<String, Tracked>,
    /// Uids of resources known deleted, and when: a reconcile that ends
    /// after the watch reported the deletion does not count them back in.
    deleted: HashMap<String, Instant>,
    /// Resources whose first reconcile this process saw, not yet Ready.
    first_seen: HashSet<String>,
    /// When each resource was last found up to date.
    in_sync_at: HashMap<String, Instant>,
    /// Requests waiting in the rate cap: their controller and arrival.
    waiting: HashMap<String, (String, Instant)>,
}

/// How long a deleted uid is remembered: far longer than any reconcile.
const DELETED_MEMORY: Duration = Duration::from_secs(600);

/// The standard families, cheap to clone (shared handles).
#[derive(Clone)]
pub struct Standard {
    /// `crossplane_managed_resource_exists`.
    pub exists: Family<GvkLabels, Gauge>,
    /// `crossplane_managed_resource_ready`.
    pub ready: Family<GvkLabels, Gauge>,
    /// `crossplane_managed_resource_synced`.
    pub synced: Family<GvkLabels, Gauge>,
    /// `crossplane_managed_resource_first_time_to_reconcile_seconds`.
    pub first_time_to_reconcile: HistogramFamily<GvkLabels>,
    /// `crossplane_managed_resource_first_time_to_readiness_seconds`.
    pub first_time_to_readiness: HistogramFamily<GvkLabels>,
    /// `crossplane_managed_resource_deletion_seconds`.
    pub deletion: HistogramFamily<GvkLabels>,
    /// `crossplane_managed_resource_drift_seconds`.
    pub drift: HistogramFamily<GvkLabels>,
    /// `controller_runtime_reconcile_total`.
    pub reconcile_total: Family<ControllerResultLabels, Counter>,
    /// `controller_runtime_reconcile_errors_total`.
    pub reconcile_errors: Family<ControllerLabels, Counter>,
    /// `controller_runtime_reconcile_time_seconds`.
    pub reconcile_time: HistogramFamily<ControllerLabels>,
    /// `workqueue_depth`.
    pub queue_depth: Family<QueueLabels, Gauge>,
    /// `workqueue_adds_total`.
    pub queue_adds: Family<QueueLabels, Counter>,
    /// `workqueue_queue_duration_seconds`.
    pub queue_duration: HistogramFamily<QueueLabels>,
    /// `workqueue_work_duration_seconds`.
    pub work_duration: HistogramFamily<QueueLabels>,
    /// `workqueue_retries_total`.
    pub queue_retries: Family<QueueLabels, Counter>,
    tracker: Arc<Mutex<Tracker>>,
}

impl Standard {
    /// Registers every standard family, unprefixed, in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let this = Self {
            exists: Family::default(),
            ready: Family::default(),
            synced: Family::default(),
            first_time_to_reconcile: histograms(tiny_to_large),
            first_time_to_readiness: histograms(lifecycle),
            deletion: histograms(lifecycle),
            drift: histograms(tiny_to_large),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: histograms(reconcile_time),
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_duration: histograms(queue_seconds),
            work_duration: histograms(queue_seconds),
            queue_retries: Family::default(),
            tracker: Arc::default(),
        };
        let r = registry;
        r.register(
            "crossplane_managed_resource_exists",
            "The number of managed resources that exist",
            this.exists.clone(),
        );
        r.register(
            "crossplane_managed_resource_ready",
            "The number of managed resources in Ready=True state",
            this.ready.clone(),
        );
        r.register(
            "crossplane_managed_resource_synced",
            "The number of managed resources in Synced=True state",
            this.synced.clone(),
        );
        r.register(
            "crossplane_managed_resource_first_time_to_reconcile_seconds",
            "The time it took for a managed resource to be detected by the controller",
            this.first_time_to_reconcile.clone(),
        );
        r.register(
            "crossplane_managed_resource_first_time_to_readiness_seconds",
            "The time it took for a managed resource to become ready first time after creation",
            this.first_time_to_readiness.clone(),
        );
        r.register(
            "crossplane_managed_resource_deletion_seconds",
            "The time it took for a managed resource to be deleted",
            this.deletion.clone(),
        );
        r.register(
            "crossplane_managed_resource_drift_seconds",
            "ALPHA: How long since the previous successful reconcile when a resource was found to be out of sync; excludes restart of the provider",
            this.drift.clone(),
        );
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            this.reconcile_total.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            this.reconcile_errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            this.reconcile_time.clone(),
        );
        r.register(
            "workqueue_depth",
            "Current depth of workqueue (here: reconciles waiting in the reconcile-rate cap's queue)",
            this.queue_depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue (here: reconcile requests reaching the rate cap)",
            this.queue_adds.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested (here: arrival to rate-cap admission)",
            this.queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            this.work_duration.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue (here: reconciles ending in an error or a conflict)",
            this.queue_retries.clone(),
        );
        this
    }

    fn tracker(&self) -> std::sync::MutexGuard<'_, Tracker> {
        self.tracker.lock().expect("metrics tracker lock")
    }

    fn gauges(&self, gvk: &str) -> [Gauge; 3] {
        let labels = GvkLabels {
            gvk: gvk.to_owned(),
        };
        [&self.exists, &self.ready, &self.synced].map(|f| f.get_or_create(&labels).clone())
    }

    /// Records that the resource `uid` of kind `gvk` exists, with these
    /// conditions; nothing if it is known deleted.
    pub fn resource_state(&self, gvk: &str, uid: &str, ready: bool, synced: bool) {
        if uid.is_empty() {
            return;
        }
        let mut tracker = self.tracker();
        if tracker.deleted.contains_key(uid) {
            return;
        }
        let [exists, ready_gauge, synced_gauge] = self.gauges(gvk);
        let old = tracker.resources.insert(
            uid.to_owned(),
            Tracked {
                gvk: gvk.to_owned(),
                ready,
                synced,
            },
        );
        let (was_ready, was_synced) = match old {
            Some(old) => (old.ready, old.synced),
            None => {
                exists.inc();
                (false, false)
            }
        };
        ready_gauge.inc_by(i64::from(ready) - i64::from(was_ready));
        synced_gauge.inc_by(i64::from(synced) - i64::from(was_synced));
    }

    /// Counts the resource `uid` out; with `deleted`, for good.
    fn forget(&self, tracker: &mut Tracker, uid: &str, deleted: bool) {
        if let Some(old) = tracker.resources.remove(uid) {
            let [exists, ready, synced] = self.gauges(&old.gvk);
            exists.dec();
            ready.dec_by(i64::from(old.ready));
            synced.dec_by(i64::from(old.synced));
        }
        tracker.first_seen.remove(uid);
        tracker.in_sync_at.remove(uid);
        if let Some((controller, _)) = tracker.waiting.remove(uid) {
            self.queue_depth.get_or_create(&queue(&controller)).dec();
        }
        if deleted {
            let now = Instant::now();
            if tracker.deleted.len() >= 1024 {
                tracker
                    .deleted
                    .retain(|_, at| now.duration_since(*at) < DELETED_MEMORY);
            }
            tracker.deleted.insert(uid.to_owned(), now);
        }
    }

    /// The resource `uid` is gone (its deletion was watched).
    pub fn resource_deleted(&self, uid: &str) {
        let mut tracker = self.tracker();
        self.forget(&mut tracker, uid, true);
    }

    /// This process removed the finalizer of the resource `uid` of kind
    /// `gvk`, whose deletion was requested at `deletion` (if known).
    pub fn finalizer_removed(&self, gvk: &str, uid: &str, deletion: Option<jiff::Timestamp>) {
        if let Some(at) = deletion {
            self.deletion
                .get_or_create(&gvk_labels(gvk))
                .observe(seconds_since(at));
        }
        self.resource_deleted(uid);
    }

    /// Counts out every resource of kind `gvk` but `present` (a relist).
    pub fn resources_listed(&self, gvk: &str, present: &HashSet<String>) {
        let mut tracker = self.tracker();
        let gone: Vec<String> = tracker
            .resources
            .iter()
            .filter(|(uid, t)| t.gvk == gvk && !present.contains(*uid))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in gone {
            self.forget(&mut tracker, &uid, true);
        }
    }

    /// Counts out every resource of kind `gvk`: its controller stopped.
    pub fn kind_stopped(&self, gvk: &str) {
        let mut tracker = self.tracker();
        let all: Vec<String> = tracker
            .resources
            .iter()
            .filter(|(_, t)| t.gvk == gvk)
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in all {
            self.forget(&mut tracker, &uid, false);
        }
    }

    /// A reconcile of `uid` is starting; `synced_set` says whether the copy
    /// it holds has a `Synced` condition at all (if not, this is its first,
    /// as crossplane-runtime judges it).
    pub fn reconcile_started(
        &self,
        gvk: &str,
        uid: &str,
        synced_set: bool,
        created: Option<jiff::Timestamp>,
    ) {
        if synced_set {
            return;
        }
        if let Some(created) = created {
            self.first_time_to_reconcile
                .get_or_create(&gvk_labels(gvk))
                .observe(seconds_since(created));
        }
        self.tracker().first_seen.insert(uid.to_owned());
    }

    /// A reconcile of `uid` ended with the status that is now on the API
    /// server: counts it in the gauges and, on its first `Ready=True` after
    /// a first reconcile seen here, its time to readiness.
    pub fn reconcile_ended(
        &self,
        gvk: &str,
        uid: &str,
        (ready, synced): (bool, bool),
        created: Option<jiff::Timestamp>,
    ) {
        let first_ready = ready && self.tracker().first_seen.remove(uid);
        if first_ready && let Some(created) = created {
            self.first_time_to_readiness
                .get_or_create(&gvk_labels(gvk))
                .observe(seconds_since(created));
        }
        self.resource_state(gvk, uid, ready, synced);
    }

    /// A reconcile found `uid` up to date (`updated` false), or updated the
    /// external resource to correct a drift (`updated` true).
    pub fn observed(&self, gvk: &str, uid: &str, updated: bool) {
        let now = Instant::now();
        let last = self.tracker().in_sync_at.insert(uid.to_owned(), now);
        if updated && let Some(last) = last {
            self.drift
                .get_or_create(&gvk_labels(gvk))
                .observe(now.duration_since(last).as_secs_f64());
        }
    }

    /// A reconcile request of `uid` reached the rate cap, which admitted
    /// it now or queued it.
    pub fn arrived(&self, controller: &str, uid: &str, admitted: bool) {
        let labels = queue(controller);
        // The series exists from the first request on, at 0 when none waits.
        let depth = self.queue_depth.get_or_create(&labels).clone();
        let mut tracker = self.tracker();
        match (tracker.waiting.remove(uid), admitted) {
            (None, true) => {
                self.queue_adds.get_or_create(&labels).inc();
                self.queue_duration.get_or_create(&labels).observe(0.0);
            }
            (None, false) => {
                self.queue_adds.get_or_create(&labels).inc();
                depth.inc();
                tracker
                    .waiting
                    .insert(uid.to_owned(), (controller.to_owned(), Instant::now()));
            }
            (Some(waiting), false) => {
                tracker.waiting.insert(uid.to_owned(), waiting);
            }
            (Some((_, since)), true) => {
                depth.dec();
                self.queue_duration
                    .get_or_create(&labels)
                    .observe(since.elapsed().as_secs_f64());
            }
        }
    }

    /// A reconcile of `controller` ran for `took` and ended with `result`
    /// (the runtime's: `success`, `paused`, `conflict`, `error`), asking to
    /// run again after a delay (`requeue_after`) or on the next change.
    pub fn reconciled(&self, controller: &str, result: &str, requeue_after: bool, took: Duration) {
        let result = match result {
            "error" => "error",
            "conflict" => "requeue",
            _ if requeue_after => "requeue_after",
            _ => "success",
        };
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.reconcile_total
            .get_or_create(&ControllerResultLabels {
                controller: controller.to_owned(),
                result: result.to_owned(),
            })
            .inc();
        self.reconcile_time
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        let queue = queue(controller);
        self.work_duration
            .get_or_create(&queue)
            .observe(took.as_secs_f64());
        if result == "error" {
            self.reconcile_errors.get_or_create(&labels).inc();
        }
        if matches!(result, "error" | "requeue") {
            self.queue_retries.get_or_create(&queue).inc();
        }
    }

    /// What keeps kind `K`'s gauges in step with its controller's watch;
    /// dropped when the controller stops, which counts the kind out.
    pub fn watch<K: Resource<DynamicType = ()>>(&self) -> StateWatch {
        StateWatch {
            standard: self.clone(),
            gvk: gvk_label::<K>(),
            relist: None,
        }
    }
}

fn gvk_labels(gvk: &str) -> GvkLabels {
    GvkLabels {
        gvk: gvk.to_owned(),
    }
}

fn queue(controller: &str) -> QueueLabels {
    QueueLabels {
        name: controller.to_owned(),
        controller: controller.to_owned(),
    }
}

fn seconds_since(at: jiff::Timestamp) -> f64 {
    jiff::Timestamp::now()
        .duration_since(at)
        .as_secs_f64()
        .max(0.0)
}

/// Follows one kind's watch events into the resource gauges.
pub struct StateWatch {
    standard: Standard,
    gvk: String,
    /// The uids listed since the last `Init`, during a relist.
    relist: Option<HashSet<String>>,
}

impl StateWatch {
    /// Counts what `event`, from the kind's watch, says of its resources:
    /// an applied object's `Ready` and `Synced`, a deletion, a relist.
    pub fn event<K: crossplane_types::Managed>(&mut self, event: &watcher::Event<K>) {
        let state = |mr: &K| {
            let (ready, synced) = ready_synced(mr.managed_status());
            (mr.uid().unwrap_or_default(), ready, synced)
        };
        match event {
            watcher::Event::Apply(mr) | watcher::Event::InitApply(mr) => {
                let (uid, ready, synced) = state(mr);
                if let (watcher::Event::InitApply(_), Some(listed)) = (event, &mut self.relist) {
                    listed.insert(uid.clone());
                }
                self.standard.resource_state(&self.gvk, &uid, ready, synced);
            }
            watcher::Event::Delete(mr) => {
                self.standard
                    .resource_deleted(&mr.uid().unwrap_or_default());
            }
            watcher::Event::Init => self.relist = Some(HashSet::new()),
            watcher::Event::InitDone => {
                if let Some(listed) = self.relist.take() {
                    self.standard.resources_listed(&self.gvk, &listed);
                }
            }
        }
    }
}

impl Drop for StateWatch {
    fn drop(&mut self) {
        self.standard.kind_stopped(&self.gvk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metrics, sum_samples};

    #[test]
    fn gvk_label_is_go_group_version_kind_string() {
        assert_eq!(
            format_gvk("network.fakecloud.m.crossplane.io", "v1alpha1", "VPC"),
            "network.fakecloud.m.crossplane.io/v1alpha1, Kind=VPC"
        );
        use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
        assert_eq!(gvk_label::<Pod>(), "/v1, Kind=Pod");
        assert_eq!(gvk_label::<Deployment>(), "apps/v1, Kind=Deployment");
        assert_eq!(controller_name::<Deployment>(), "managed/deployment.apps");
    }

    const GVK: &str = "network.fakecloud.m.crossplane.io/v1alpha1, Kind=VPC";

    fn gauges(metrics: &Metrics) -> [f64; 3] {
        let text = metrics.encode();
        ["exists", "ready", "synced"].map(|state| {
            sum_samples(
                &text,
                &format!("crossplane_managed_resource_{state}"),
                &[("gvk", GVK)],
            )
        })
    }

    #[test]
    fn resource_gauges_follow_conditions_deletions_and_relists() {
        let metrics = Metrics::new();
        let s = &metrics.standard;
        s.resource_state(GVK, "a", false, true);
        s.resource_state(GVK, "b", false, false);
        assert_eq!(gauges(&metrics), [2.0, 0.0, 1.0]);
        s.resource_state(GVK, "a", true, true);
        s.resource_state(GVK, "a", true, true);
        assert_eq!(gauges(&metrics), [2.0, 1.0, 1.0], "counted once");
        s.resource_state(GVK, "a", true, false);
        assert_eq!(gauges(&metrics), [2.0, 1.0, 0.0]);
        s.finalizer_removed(GVK, "a", Some(jiff::Timestamp::now()));
        assert_eq!(gauges(&metrics), [1.0, 0.0, 0.0]);
        s.resource_state(GVK, "a", true, true);
        assert_eq!(gauges(&metrics), [1.0, 0.0, 0.0], "a deleted uid stays out");
        let samples = "crossplane_managed_resource_deletion_seconds_count";
        assert_eq!(metrics.total_with(samples, &[("gvk", GVK)]), 1.0);
        s.resource_state(GVK, "c", true, true);
        s.resources_listed(GVK, &HashSet::from(["c".to_owned()]));
        assert_eq!(gauges(&metrics), [1.0, 1.0, 1.0], "b went during a relist");
        s.kind_stopped(GVK);
        assert_eq!(gauges(&metrics), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn first_times_and_drift_are_observed_once_each() {
        let metrics = Metrics::new();
        let s = &metrics.standard;
        let created = Some(jiff::Timestamp::now() - jiff::SignedDuration::from_secs(3));
        s.reconcile_started(GVK, "a", false, created);
        s.reconcile_ended(GVK, "a", (false, true), created);
        s.reconcile_started(GVK, "a", true, created);
        s.reconcile_ended(GVK, "a", (true, true), created);
        s.reconcile_ended(GVK, "a", (true, true), created);
        s.observed(GVK, "a", true);
        s.observed(GVK, "a", false);
        s.observed(GVK, "a", true);
        let count = |family: &str| {
            metrics.total_with(
                &format!("crossplane_managed_resource_{family}_seconds_count"),
                &[("gvk", GVK)],
            )
        };
        assert_eq!(count("first_time_to_reconcile"), 1.0);
        assert_eq!(count("first_time_to_readiness"), 1.0);
        assert_eq!(
            count("drift"),
            1.0,
            "no drift without an earlier in-sync look"
        );
        let readiness = "crossplane_managed_resource_first_time_to_readiness_seconds_sum";
        assert!(metrics.total(readiness) >= 3.0);
    }

    #[test]
    fn controller_results_and_queue_follow_controller_runtime() {
        let metrics = Metrics::new();
        let s = &metrics.standard;
        let c = "managed/vpc.network.fakecloud.m.crossplane.io";
        s.arrived(c, "a", true);
        s.arrived(c, "b", false);
        s.arrived(c, "b", false);
        let depth = || metrics.total_with("workqueue_depth", &[("name", c)]);
        assert_eq!(depth(), 1.0);
        s.arrived(c, "b", true);
        assert_eq!(depth(), 0.0);
        assert_eq!(
            metrics.total_with("workqueue_adds_total", &[("name", c)]),
            2.0
        );
        let queued = "workqueue_queue_duration_seconds_count";
        assert_eq!(metrics.total_with(queued, &[("controller", c)]), 2.0);
        s.reconciled(c, "success", true, Duration::from_millis(3));
        s.reconciled(c, "paused", false, Duration::ZERO);
        s.reconciled(c, "error", true, Duration::ZERO);
        s.reconciled(c, "conflict", true, Duration::ZERO);
        let result = |r| {
            metrics.total_with(
                "controller_runtime_reconcile_total",
                &[("controller", c), ("result", r)],
            )
        };
        assert_eq!(
            [
                result("requeue_after"),
                result("success"),
                result("error"),
                result("requeue")
            ],
            [1.0, 1.0, 1.0, 1.0]
        );
        assert_eq!(
            metrics.total("controller_runtime_reconcile_errors_total"),
            1.0
        );
        assert_eq!(metrics.total("workqueue_retries_total"), 2.0);
        assert_eq!(
            metrics.total("controller_runtime_reconcile_time_seconds_count"),
            4.0
        );
        assert_eq!(metrics.total("workqueue_work_duration_seconds_count"), 4.0);
    }

    #[test]
    fn exposition_parses_and_holds_every_standard_family() {
        let metrics = Metrics::new();
        let s = &metrics.standard;
        s.resource_state(GVK, "a", true, true);
        s.reconcile_started(GVK, "a", false, Some(jiff::Timestamp::now()));
        s.reconciled("managed/x", "success", true, Duration::ZERO);
        s.arrived("managed/x", "a", true);
        metrics.kube_write("VPC", "status");
        let text = metrics.encode();
        assert!(text.ends_with("# EOF\n"), "{text}");
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            assert!(
                value.parse::<f64>().is_ok() || value == "+Inf",
                "value of {line}"
            );
            let name = series.split('{').next().unwrap_or_default();
            assert!(
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                "name of {line}"
            );
            assert_eq!(
                series.matches('{').count(),
                series.matches('}').count(),
                "{line}"
            );
        }
        for family in [
            "crossplane_managed_resource_exists",
            "crossplane_managed_resource_ready",
            "crossplane_managed_resource_synced",
            "crossplane_managed_resource_first_time_to_reconcile_seconds_count",
            "controller_runtime_reconcile_total",
            "controller_runtime_reconcile_time_seconds_bucket",
            "workqueue_adds_total",
            "workqueue_depth",
            "workqueue_queue_duration_seconds_count",
            "provider_kube_writes_total",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(family)),
                "{family} in\n{text}"
            );
        }
        #[cfg(target_os = "linux")]
        {
            assert!(sum_samples(&text, "process_resident_memory_bytes", &[]) > 0.0);
            assert!(sum_samples(&text, "process_open_fds", &[]) > 0.0);
            assert!(sum_samples(&text, "process_max_fds", &[]) > 0.0);
            assert!(sum_samples(&text, "process_start_time_seconds", &[]) > 1.6e9);
            assert!(
                text.contains("# TYPE process_cpu_seconds counter"),
                "{text}"
            );
            assert!(
                text.lines()
                    .any(|l| l.starts_with("process_cpu_seconds_total "))
            );
            assert!(
                text.lines()
                    .any(|l| l.starts_with("process_virtual_memory_bytes "))
            );
        }
    }
}

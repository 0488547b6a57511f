//! Prometheus metrics of the provider, served on `--metrics-addr`.
//!
//! One registry for the process; every controller records into the same
//! families, labelled by kind, so a dashboard needs no per-kind queries.
//!
//! Beside the provider's own `provider_*` families, the registry serves
//! crossplane-runtime's and controller-runtime's standard families
//! ([`standard`]) and the `process_*` families, so that the
//! dashboards and alerts written for Go providers work unchanged.

pub mod conversion;
mod process;
pub mod shard;
pub mod standard;

pub use standard::{Standard, controller_name, gvk_label};

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The labels of a family counted by kind only.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The kind, as [`crate::kind_label`] names it.
    pub kind: String,
}

/// The labels of `provider_reconciles_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// The kind, as [`crate::kind_label`] names it.
    pub kind: String,
    /// `success`, `error`, `paused`, `missing` (observing a cloud resource
    /// that does not exist, without Create: polled, not a failure),
    /// `conflict` (the copy was stale: no
    /// failure, looked at again shortly) or `waiting` (the cloud server
    /// asked to wait: looked at again at its pace).
    pub result: String,
}

/// The labels of `provider_cloud_calls_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudCallLabels {
    /// The kind, as [`crate::kind_label`] names it.
    pub kind: String,
    /// `observe`, `create`, `update` or `delete`.
    pub operation: String,
    /// The HTTP status, or `error` when no response arrived.
    pub status: String,
}

/// The labels of `provider_kube_writes_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KubeWriteLabels {
    /// The kind, as [`crate::kind_label`] names it.
    pub kind: String,
    /// What was written: `status`, `metadata`, `spec`, `secret`, `usage`, `event`.
    pub target: String,
}

/// The labels of the reconcile-rate cap's families.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LaneLabels {
    /// The reconcile-rate cap's queue: `poll` (a settled resource's
    /// periodic look) or `work` (everything else).
    pub lane: String,
}

/// The labels of the pacing families counted by server.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PacingLabels {
    /// The server a pacer paces: `kube-apiserver`, or a cloud endpoint
    /// with its credentials' fingerprint (see [`crate::pacing`]).
    pub server: String,
}

/// The labels of `provider_pacing_answers_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PacingAnswerLabels {
    /// The server that answered, as in [`PacingLabels::server`].
    pub server: String,
    /// `good`, `throttled` (429) or `overloaded` (5xx, timeout, no answer).
    pub answer: String,
}

/// The labels of `provider_changelog_errors_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChangeLogErrorLabels {
    /// `send` (the change-log service did not take the entry: no socket,
    /// an error, a timeout) or `dropped` (the queue to it was full).
    pub reason: String,
}

/// The provider's metric families, cheap to clone (shared handles): the
/// `provider_*` families each controller records into, the [`Standard`]
/// families and the `process_*` ones, in one registry that
/// [`Metrics::encode_as`] serves. A provider makes one
/// ([`Metrics::new`]), hands it to [`crate::Provider::run`] and serves it
/// on its `/metrics` endpoint.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// crossplane-runtime's and controller-runtime's families, unprefixed.
    pub standard: Standard,
    /// `provider_reconciles_total`: reconciles by kind and result.
    pub reconciles: Family<ReconcileLabels, Counter>,
    /// `provider_reconcile_duration_seconds`: the time one reconcile took,
    /// by kind.
    pub reconcile_duration: Family<KindLabels, Histogram>,
    /// `provider_cloud_calls_total`: calls to the cloud by kind, operation
    /// and HTTP status.
    pub cloud_calls: Family<CloudCallLabels, Counter>,
    /// Writes to the API server. A steady-state reconcile adds none; tests
    /// and the benchmark read this to prove it.
    pub kube_writes: Family<KubeWriteLabels, Counter>,
    /// `provider_time_to_ready_seconds`: from a managed resource's
    /// creation to its first `Ready=True`, by kind.
    pub time_to_ready: Family<KindLabels, Histogram>,
    /// `provider_active_controllers`: 1 for each kind whose controller
    /// runs (while its CRD is established).
    pub active_controllers: Family<KindLabels, Gauge>,
    /// `provider_activation_latency_seconds`: from a CRD becoming
    /// established to the first reconcile of its kind.
    pub activation_latency: Family<KindLabels, Histogram>,
    /// Reconciles the rate cap admitted, by lane: the poll lane's rate
    /// during a burst of new resources shows whether polls starve.
    pub rate_limit_slots: Family<LaneLabels, Counter>,
    /// Objects queued for a slot of the rate cap, by lane: a poll lane
    /// that never empties says `--max-reconcile-rate` x `--poll-interval`
    /// is below the number of resources.
    pub rate_limit_waiting: Family<LaneLabels, Gauge>,
    /// Change-log entries (`--enable-changelogs`) that never reached the
    /// change-log service, by reason (see [`crate::changelog`]).
    pub changelog_errors: Family<ChangeLogErrorLabels, Counter>,
    /// From the first reconcile that found a field drifted (its
    /// `status.drift` entry's `since`) to the first that found it corrected
    /// by an update, by kind. crossplane-runtime's
    /// `crossplane_managed_resource_drift_seconds` (in [`Standard`]) keeps
    /// its own meaning, the time since the resource was last seen in sync.
    pub drift_correction: Family<KindLabels, Histogram>,
    /// Each server's current rate limit, calls a second ([`crate::pacing`]).
    pub pacing_rate: Family<PacingLabels, Gauge<f64, AtomicU64>>,
    /// Each server's current limit of calls in flight.
    pub pacing_in_flight: Family<PacingLabels, Gauge>,
    /// Answers by server and what they said of its load.
    pub pacing_answers: Family<PacingAnswerLabels, Counter>,
    /// Time callers spent waiting for each server's limits and pauses.
    pub pacing_wait: Family<PacingLabels, Counter<f64, AtomicU64>>,
    /// Reconciles deferred to their server's line because it was paused
    /// or its rate booked ahead.
    pub pacing_deferred: Family<PacingLabels, Counter>,
    /// `provider_reference_reads_total`: reads of referenced objects (a
    /// GET, or a list for a selector) by the referencing kind: direct
    /// reads of the API server, wherever the referenced object's share is.
    pub reference_reads: Family<KindLabels, Counter>,
    /// The `provider_shard_*` families ([`crate::shard`]).
    pub shard: shard::ShardMetrics,
    /// The `provider_conversion_*` families ([`crate::conversion`]).
    pub conversion: conversion::ConversionMetrics,
}

fn seconds_histogram() -> Histogram {
    // 5 ms .. ~80 s: reconciles are milliseconds, time-to-ready is seconds.
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every family registered, each empty: the process's one set of
    /// metrics.
    pub fn new() -> Self {
        let mut root = Registry::default();
        let registry = root.sub_registry_with_prefix("provider");
        let reconciles = Family::default();
        let reconcile_duration =
            Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let cloud_calls = Family::default();
        let kube_writes = Family::default();
        let time_to_ready = Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let active_controllers = Family::default();
        let activation_latency =
            Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let rate_limit_slots = Family::default();
        let rate_limit_waiting = Family::default();
        let changelog_errors = Family::default();
        let drift_correction = Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let pacing_rate = Family::default();
        let pacing_in_flight = Family::default();
        let pacing_answers = Family::default();
        let pacing_wait = Family::default();
        let pacing_deferred = Family::default();
        registry.register(
            "pacing_rate",
            "Each server's current rate limit, in calls a second",
            pacing_rate.clone(),
        );
        registry.register(
            "pacing_in_flight_limit",
            "Each server's current limit of calls in flight",
            pacing_in_flight.clone(),
        );
        registry.register(
            "pacing_answers",
            "Answers by server and what they said of its load: good, throttled (429), overloaded (5xx, timeout)",
            pacing_answers.clone(),
        );
        registry.register(
            "pacing_wait_seconds",
            "Time callers spent waiting for a server's limits and pauses",
            pacing_wait.clone(),
        );
        registry.register(
            "pacing_deferred",
            "Reconciles deferred to their server's line because it was paused or its rate booked ahead",
            pacing_deferred.clone(),
        );
        registry.register(
            "reconciles",
            "Reconciles by kind and result",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            reconcile_duration.clone(),
        );
        registry.register(
            "cloud_calls",
            "Calls to the cloud by kind, operation and HTTP status",
            cloud_calls.clone(),
        );
        registry.register(
            "kube_writes",
            "Writes to the Kubernetes API server by kind and target",
            kube_writes.clone(),
        );
        registry.register(
            "time_to_ready_seconds",
            "From a managed resource's creation to its first Ready=True",
            time_to_ready.clone(),
        );
        registry.register(
            "active_controllers",
            "Running controllers by kind (1 while its CRD is established)",
            active_controllers.clone(),
        );
        registry.register(
            "activation_latency_seconds",
            "From a CRD becoming Established to the first reconcile of its kind",
            activation_latency.clone(),
        );
        registry.register(
            "rate_limit_slots",
            "Reconciles admitted by the global reconcile-rate cap, by lane",
            rate_limit_slots.clone(),
        );
        registry.register(
            "rate_limit_waiting",
            "Objects queued for a slot of the global reconcile-rate cap, by lane",
            rate_limit_waiting.clone(),
        );
        registry.register(
            "changelog_errors",
            "Change-log entries not delivered to the change-log service, by reason",
            changelog_errors.clone(),
        );
        registry.register(
            "drift_correction_seconds",
            "From first finding a field drifted to finding it corrected by an update",
            drift_correction.clone(),
        );
        let reference_reads = Family::default();
        registry.register(
            "reference_reads",
            "Reads of referenced objects (a get, or a list for a selector) by referencing kind",
            reference_reads.clone(),
        );
        let shard = shard::ShardMetrics::register(registry);
        let conversion = conversion::ConversionMetrics::register(registry);
        let standard = Standard::register(&mut root);
        root.register_collector(Box::new(process::ProcessCollector));
        Self {
            registry: Arc::new(root),
            standard,
            reconciles,
            reconcile_duration,
            cloud_calls,
            kube_writes,
            time_to_ready,
            active_controllers,
            activation_latency,
            rate_limit_slots,
            rate_limit_waiting,
            changelog_errors,
            drift_correction,
            pacing_rate,
            pacing_in_flight,
            pacing_answers,
            pacing_wait,
            pacing_deferred,
            reference_reads,
            shard,
            conversion,
        }
    }

    /// The OpenMetrics text exposition of every family.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }

    /// The exposition of every family in `format`, for `/metrics`: the
    /// format a scrape's `Accept` header asks for
    /// ([`metrics_exposition::Format::negotiate`]), so that Prometheus gets
    /// OpenMetrics and everything else (promtool, curl) the text format.
    pub fn encode_as(
        &self,
        format: metrics_exposition::Format,
    ) -> Result<String, metrics_exposition::Error> {
        metrics_exposition::encode(&self.registry, format)
    }

    /// Counts one reconcile of `kind` that ended with `result` (see
    /// [`ReconcileLabels::result`]) after `took`.
    pub fn record_reconcile(&self, kind: &str, result: &str, took: std::time::Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                kind: kind.to_owned(),
                result: result.to_owned(),
            })
            .inc();
        self.reconcile_duration
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// Records that a resource of `kind` became ready `seconds` after its
    /// creation.
    pub fn record_time_to_ready(&self, kind: &str, seconds: f64) {
        self.time_to_ready
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .observe(seconds);
    }

    /// Counts one call to the cloud for `kind`: its `operation` and the
    /// `status` it got (see [`CloudCallLabels`]).
    pub fn record_cloud_call(&self, kind: &str, operation: &str, status: &str) {
        self.cloud_calls
            .get_or_create(&CloudCallLabels {
                kind: kind.to_owned(),
                operation: operation.to_owned(),
                status: status.to_owned(),
            })
            .inc();
    }

    /// The sum of every sample of the named counter family in the
    /// exposition (e.g. `provider_kube_writes_total`), for tests and
    /// benchmarks that want one number.
    pub fn total(&self, family: &str) -> f64 {
        sum_samples(&self.encode(), family, &[])
    }

    /// The sum of a family's samples whose labels include every
    /// `key="value"` pair of `labels`.
    pub fn total_with(&self, family: &str, labels: &[(&str, &str)]) -> f64 {
        sum_samples(&self.encode(), family, labels)
    }

    /// Counts one write to the API server for `kind`, to `target` (see
    /// [`KubeWriteLabels::target`]).
    pub fn kube_write(&self, kind: &str, target: &str) {
        self.kube_write_counter(kind, target).inc();
    }

    /// The counter of one kind's writes to one target, for code that writes
    /// without knowing its kind (the connection Secret of a session).
    pub fn kube_write_counter(&self, kind: &str, target: &str) -> Counter {
        self.kube_writes
            .get_or_create(&KubeWriteLabels {
                kind: kind.to_owned(),
                target: target.to_owned(),
            })
            .clone()
    }
}

/// The sum of the samples of `family` in Prometheus text (this provider's,
/// or any other server's `/metrics`) whose labels include every
/// `key="value"` pair of `labels`.
pub fn sum_samples(text: &str, family: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| {
            line.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .filter(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_recorded_values_with_labels() {
        let metrics = Metrics::new();
        metrics.kube_write("VPC", "status");
        metrics.kube_write("VPC", "status");
        metrics
            .active_controllers
            .get_or_create(&KindLabels {
                kind: "Subnet".into(),
            })
            .set(1);
        let text = metrics.encode();
        assert!(
            text.contains(r#"provider_kube_writes_total{kind="VPC",target="status"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"provider_active_controllers{kind="Subnet"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn samples_of_another_servers_text_sum_by_family_and_labels() {
        let text = "# HELP apiserver_request_total x\n\
            apiserver_request_total{code=\"403\",verb=\"GET\"} 2\n\
            apiserver_request_total{code=\"200\",verb=\"GET\"} 7\n\
            apiserver_request_total{code=\"403\",verb=\"LIST\"} 1\n\
            apiserver_request_total_other{code=\"403\"} 50\n";
        let family = "apiserver_request_total";
        assert_eq!(sum_samples(text, family, &[("code", "403")]), 3.0);
        assert_eq!(sum_samples(text, family, &[]), 10.0);
        assert_eq!(sum_samples(text, family, &[("code", "500")]), 0.0);
    }

    #[test]
    fn totals_filter_by_labels() {
        let metrics = Metrics::new();
        metrics.kube_write("VPC", "status");
        metrics.kube_write("VPC", "secret");
        metrics
            .kube_write_counter("DatabaseInstance", "secret")
            .inc();
        let writes = "provider_kube_writes_total";
        assert_eq!(metrics.total_with(writes, &[("target", "secret")]), 2.0);
        assert_eq!(
            metrics.total_with(writes, &[("kind", "VPC"), ("target", "status")]),
            1.0
        );
        assert_eq!(metrics.total_with(writes, &[("target", "usage")]), 0.0);
        assert_eq!(metrics.total(writes), 3.0);
    }
}

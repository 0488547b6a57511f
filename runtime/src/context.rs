//! What every reconcile of every controller shares: the [`Settings`] it
//! reads, and the [`Context`] (the cluster, the metrics, the rate cap, the
//! connector, the backoff, the pacing of every server) it runs in.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::activation::Activations;
use crate::backoff::Backoff;
use crate::changelog::ChangeLogger;
use crate::cluster::Cluster;
use crate::connect::{Connector, ProviderConfigTypes};
use crate::echo;
use crate::error::ExternalError;
use crate::events::Recorder;
use crate::metrics::Metrics;
use crate::pacing::{Answer, Deferral, Pacer, Pacers, Pacing};
use crate::rate_limit::LaneLimiter;
use crate::shard::{Fenced, Shard};

/// How soon a reconcile that met a resourceVersion conflict (its copy was
/// stale) runs again, in every controller: quietly, without a backoff.
pub const CONFLICT_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a reconcile handed a copy older than this process's own last
/// write waits at most for the watch to deliver the newer one. The watch
/// event of that write wakes it first (this process lets the event of its
/// own write through for it); this bound only matters if that event never
/// comes.
pub const CATCH_UP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The label of kind `K` in metrics, logs and activation tracking: its
/// kind, followed by `.m` for the kinds of a `*.m.crossplane.io` group
/// (the namespaced managed kinds and their ProviderConfigs), so that
/// `VPC` (legacy, cluster-scoped) and `VPC.m` (namespaced) are told apart.
pub fn kind_label<K: kube::Resource<DynamicType = ()>>() -> String {
    let kind = K::kind(&());
    if K::group(&()).contains(".m.") {
        format!("{kind}.m")
    } else {
        kind.into_owned()
    }
}

/// The settings every reconcile reads: the provider's name and how often
/// resources are looked at. [`Settings::named`] gives crossplane-runtime's
/// defaults; a provider sets its own with [`crate::Provider::settings`],
/// usually from its flags.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The provider's name: the `source.component` of its Events.
    pub provider_name: String,
    /// How often a settled resource (its cloud resource
    /// [`crate::Readiness::Available`]) is observed again, unless its
    /// `crossplane.io/poll-interval` annotation asks for another period
    /// (the provider's `--poll-interval`).
    pub poll_interval: Duration,
    /// The shortest poll period a `crossplane.io/poll-interval` annotation
    /// may ask for; shorter ones are clamped up to it.
    pub min_poll_interval: Duration,
    /// How often a resource on its way is observed again: one its cloud
    /// reports creating, deleting or unavailable, one just updated, one
    /// being deleted (see [`crate::Readiness`]).
    pub pending_poll_interval: Duration,
    /// How far a settled resource's next poll moves either side at
    /// random, so that resources created together spread their polls out;
    /// `None`: 5 % of its poll interval. Never below
    /// [`Self::min_poll_interval`].
    pub poll_jitter: Option<Duration>,
    /// How often every watched object is reconciled again regardless of
    /// events (controller-runtime's sync period); zero: never.
    pub sync_interval: Duration,
    /// Give created cloud resources Crossplane's identifying tags
    /// ([`crate::CloudKind::TAGS`]).
    pub external_tags: bool,
    /// Honour each resource's `spec.managementPolicies` (Crossplane's
    /// management-policies feature). Off, the field is ignored: every
    /// action is allowed and `deletionPolicy` alone decides deletion.
    pub management_policies_enabled: bool,
}

impl Settings {
    /// crossplane-runtime's defaults for the provider `name`: a 1 minute
    /// poll (1 second at least, 1 second while a resource is pending), 5 %
    /// jitter, a 1 hour sync period, Crossplane's tags on created
    /// resources, management policies honoured.
    ///
    /// ```
    /// use std::time::Duration;
    /// use crossplane_managed_runtime::Settings;
    ///
    /// let settings = Settings {
    ///     poll_interval: Duration::from_secs(300),
    ///     ..Settings::named("provider-example")
    /// };
    /// assert_eq!(settings.provider_name, "provider-example");
    /// assert_eq!(settings.sync_interval, Duration::from_secs(3_600));
    /// assert!(settings.management_policies_enabled && settings.external_tags);
    /// ```
    pub fn named(name: &str) -> Self {
        Self {
            provider_name: name.to_owned(),
            poll_interval: Duration::from_secs(60),
            min_poll_interval: Duration::from_secs(1),
            pending_poll_interval: Duration::from_secs(1),
            poll_jitter: None,
            sync_interval: Duration::from_secs(3_600),
            external_tags: true,
            management_policies_enabled: true,
        }
    }
}

/// What every reconcile of every controller shares: the cluster, the
/// settings, the metrics, the per-object backoff and the pacing of every
/// server. [`crate::Provider::run`] makes one and hands it to every
/// controller, the provider's own ones too ([`crate::gate::Starter`]),
/// which reach its parts through the methods below; a test makes one with
/// `testing::context` (feature `testing`). Its Kubernetes side is
/// a [`Cluster`], so that reconciles run the same on an API server and in
/// tests; watches take their own `kube::Client`.
pub struct Context {
    pub(crate) cluster: Arc<dyn Cluster>,
    pub(crate) settings: Settings,
    pub(crate) metrics: Metrics,
    pub(crate) limiter: LaneLimiter,
    pub(crate) connector: Connector,
    pub(crate) recorder: Recorder,
    pub(crate) backoff: Backoff,
    pub(crate) activations: Activations,
    /// Versions this process wrote, whose watch events are dropped.
    pub(crate) own_writes: echo::OwnWrites,
    /// Where change-log entries go, when change logs are enabled.
    pub(crate) changelog: Option<ChangeLogger>,
    /// This replica's share, when replicas share the work.
    pub(crate) shard: Option<Arc<Shard>>,
}

/// Reconciles in flight per request the API server's pacing allows in
/// flight: a reconcile has at most one request out at a time and spends
/// part of its time between requests, so twice as many keep the API
/// server's allowance in use without piling up reconciles (and their
/// copies of objects) that can only wait.
pub(crate) const RECONCILES_PER_KUBE_REQUEST: usize = 2;

impl Context {
    /// The context of a provider whose ProviderConfig and usage kinds are
    /// `provider_configs`, whose calls to every server are paced by
    /// `pacers`, and which starts at most `max_reconcile_rate` reconciles
    /// a second. Reconciles in flight are bounded by the API server's
    /// pacing ([`RECONCILES_PER_KUBE_REQUEST`]).
    pub(crate) fn new(
        cluster: Arc<dyn Cluster>,
        provider_configs: ProviderConfigTypes,
        settings: Settings,
        metrics: Metrics,
        max_reconcile_rate: u32,
        pacers: Arc<Pacers>,
    ) -> Self {
        let kube = pacers.kube().clone();
        let in_flight = move || kube.in_flight_limit() * RECONCILES_PER_KUBE_REQUEST;
        Self {
            connector: Connector::new(cluster.clone(), provider_configs, metrics.clone(), pacers),
            recorder: Recorder::new(cluster.clone(), &settings.provider_name),
            cluster,
            settings,
            limiter: LaneLimiter::new(max_reconcile_rate, &metrics).in_flight_by(in_flight),
            metrics,
            backoff: Backoff::default(),
            activations: Activations::default(),
            own_writes: echo::OwnWrites::default(),
            changelog: None,
            shard: None,
        }
    }

    /// The cluster every reconcile reads and writes through: the API
    /// server, or the in-memory cluster of a test. A provider's own
    /// controller makes its object reads and writes here, so that they are
    /// paced with the managed resources' (every request to the API server
    /// waits its turn under the same limits).
    pub fn cluster(&self) -> &dyn Cluster {
        self.cluster.as_ref()
    }

    /// The settings every reconcile reads.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The provider's metrics, into which every controller records its
    /// reconciles and writes.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The per-object backoff after failed reconciles, shared by every
    /// controller: a provider's own controller records its failures and
    /// successes here to back off as the managed ones do.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// The provider's kinds of ProviderConfig and usage, as given to
    /// [`crate::Provider::new`].
    pub fn provider_config_types(&self) -> &ProviderConfigTypes {
        self.connector.types()
    }

    /// Sends a change-log entry for every change the reconciles make to
    /// `logger` from now on ([`crate::Provider::change_logs`] sets this up
    /// for a provider's process; a test sets it on its own context).
    pub fn set_change_logger(&mut self, logger: ChangeLogger) {
        self.changelog = Some(logger);
    }

    /// Runs one call of a reconcile to the cloud under its server's pacing,
    /// counting each attempt by operation and outcome; a [`Deferral`] when
    /// it gives way, before it goes out or when the server answers 429
    /// with a pause ([`Pacing::run`]).
    pub(crate) async fn call<T, F, Fut>(
        &self,
        kind: &str,
        operation: &str,
        pacing: &Pacing<'_>,
        call: F,
    ) -> Result<Result<T, ExternalError>, Deferral>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ExternalError>>,
    {
        let counted = || self.counted(kind, operation, call());
        pacing.run(counted, answer).await
    }

    /// As [`Self::call`], for a call that changes the cloud (a create, an
    /// update, a delete) of the object of `meta`: when replicas share the
    /// work, checked right before each attempt goes out that this replica
    /// still owns the object and holds its membership Lease
    /// ([`crate::shard`]). A refusal is a [`Deferral`] of a retry period:
    /// the call is not made, the object is looked at again soon, by
    /// whichever replica owns it then.
    pub(crate) async fn mutate<T, F, Fut>(
        &self,
        kind: &str,
        operation: &str,
        pacing: &Pacing<'_>,
        meta: &kube::api::ObjectMeta,
        call: F,
    ) -> Result<Result<T, ExternalError>, Deferral>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ExternalError>>,
    {
        let Some(shard) = &self.shard else {
            return self.call(kind, operation, pacing, call).await;
        };
        let refused: std::sync::Mutex<Option<Fenced>> = std::sync::Mutex::new(None);
        let guarded = || async {
            if let Err(fenced) = shard.may_mutate(meta) {
                let message = fenced.to_string();
                *refused.lock().expect("refusal lock") = Some(fenced);
                return Err(ExternalError::failed(message));
            }
            self.counted(kind, operation, call()).await
        };
        let result = pacing.run(guarded, answer).await?;
        match refused.into_inner().expect("refusal lock") {
            None => Ok(result),
            Some(fenced) => {
                tracing::info!(operation, reason = %fenced, "cloud mutation refused: not surely this replica's");
                self.metrics.shard.fenced(kind, &fenced);
                Err(Deferral {
                    after: shard.timing().retry_period,
                    message: format!("not {operation}d by this replica: {fenced}"),
                })
            }
        }
    }

    /// As [`Self::call`], for a call outside any reconcile (a query's
    /// listing), which waits for its start.
    pub(crate) async fn call_unadmitted<T, F, Fut>(
        &self,
        kind: &str,
        operation: &str,
        pacer: &Pacer,
        call: F,
    ) -> Result<T, ExternalError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ExternalError>>,
    {
        let counted = || self.counted(kind, operation, call());
        pacer.run(None, counted, answer).await
    }

    /// One attempt of a call, counted by operation and outcome.
    async fn counted<T>(
        &self,
        kind: &str,
        operation: &str,
        attempt: impl Future<Output = Result<T, ExternalError>>,
    ) -> Result<T, ExternalError> {
        let result = attempt.await;
        let status = match &result {
            Ok(_) => "ok".to_owned(),
            Err(e) => e
                .status()
                .map_or_else(|| "error".to_owned(), |s| s.to_string()),
        };
        self.metrics.record_cloud_call(kind, operation, &status);
        result
    }
}

/// What a cloud call's result says about its server's load.
fn answer<T>(result: &Result<T, ExternalError>) -> Answer {
    result
        .as_ref()
        .err()
        .map_or(Answer::Good, ExternalError::answer)
}

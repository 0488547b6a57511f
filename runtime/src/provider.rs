//! [`Provider`]: a whole provider from its parts, run until shutdown.
//!
//! A provider author names what is theirs (the managed kinds with the
//! [`Connect`] each uses, query kinds, controllers of their own such as the
//! ProviderConfig ones) and, optionally, the settings, ceilings, change
//! logs and leader election; [`Provider::run`] builds the shared
//! [`Context`], starts each kind's controller when its CRD is established
//! (late activation, [`crate::gate`]) and returns when every controller
//! has stopped. A kind's CRD name and version come from the kind itself,
//! so a kind at any version starts.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;
use tracing::info;

use crate::changelog::ChangeLogger;
use crate::cluster::{Guard, KubeCluster};
use crate::connect::{Connect, ProviderConfigTypes};
use crate::context::{Context, Settings, kind_label};
use crate::controller::run_controller;
use crate::gate::{Gate, Gated, Shutdown, Starter};
use crate::kind::ManagedKind;
use crate::leader::{Elector, LeaderError};
use crate::metrics::Metrics;
use crate::pacing::{Ceilings, Pacers};
use crate::query::{QueryKind, run_query_controller};
use crate::shard::assigner::ShardedKind;
use crate::shard::{Shard, Sharding, shared};

/// Leader election: which Lease, held as whom.
#[derive(Debug, Clone)]
struct Election {
    namespace: String,
    lease: String,
    identity: String,
}

/// A whole provider, built up kind by kind and run until shutdown.
///
/// A provider author names what is theirs (the managed kinds with the
/// [`Connect`] each uses, query kinds, controllers of their own such as the
/// ProviderConfig ones) and, optionally, the settings, ceilings, change
/// logs and leader election; [`Provider::run`] builds the shared
/// [`Context`], starts each kind's controller when its CRD is established
/// (late activation, [`crate::gate`]) and returns when every controller
/// has stopped. A kind's CRD name and version come from the kind itself,
/// so a kind at any version starts.
pub struct Provider {
    version: String,
    settings: Settings,
    provider_configs: ProviderConfigTypes,
    field_manager: String,
    kube: Ceilings,
    cloud: Ceilings,
    max_reconcile_rate: u32,
    change_logs: Option<PathBuf>,
    election: Option<Election>,
    sharding: Option<Sharding>,
    kinds: Vec<Gated>,
}

impl Provider {
    /// A provider named `name` (the `source.component` of its Events, its
    /// change logs' provider and its server-side applies' field manager)
    /// at `version` (its change logs' too), whose ProviderConfig and usage
    /// kinds are `provider_configs`, with crossplane-runtime's defaults
    /// ([`Settings::named`]) and no kinds yet.
    ///
    /// ```
    /// use crossplane_managed_runtime::{Provider, ProviderConfigTypes};
    /// use crossplane_managed_runtime::pacing::Ceilings;
    ///
    /// let types = ProviderConfigTypes::standard("example.m.org", "example.org", "v1alpha1");
    /// let provider = Provider::new("provider-example", "0.1.0", types)
    ///     .kube_ceilings(Ceilings { rate: 500.0, in_flight: 32 })
    ///     .max_reconcile_rate(100)
    ///     .leader_election("crossplane-system", "provider-example", "pod-0");
    /// // Kinds are added with `.managed::<K, _>(connect)` (see the crate's
    /// // example); each starts when its CRD is established.
    /// assert_eq!(provider.crd_names().count(), 0);
    /// ```
    pub fn new(name: &str, version: &str, provider_configs: ProviderConfigTypes) -> Self {
        Self {
            version: version.to_owned(),
            settings: Settings::named(name),
            provider_configs,
            field_manager: name.to_owned(),
            kube: Ceilings {
                rate: 2_000.0,
                in_flight: 64,
            },
            cloud: Ceilings {
                rate: 1_000.0,
                in_flight: 64,
            },
            max_reconcile_rate: 1_000,
            change_logs: None,
            election: None,
            sharding: None,
            kinds: Vec::new(),
        }
    }

    /// Replaces the reconcilers' settings (the name given to
    /// [`Provider::new`] stays unless these name another).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The field manager of the provider's server-side applies.
    pub fn field_manager(mut self, field_manager: &str) -> Self {
        self.field_manager = field_manager.to_owned();
        self
    }

    /// The ceilings of requests to the API server; the limits in force
    /// are learnt from its answers below them ([`crate::pacing`]).
    pub fn kube_ceilings(mut self, ceilings: Ceilings) -> Self {
        self.kube = ceilings;
        self
    }

    /// The ceilings of calls to each cloud server (an endpoint and its
    /// credentials).
    pub fn cloud_ceilings(mut self, ceilings: Ceilings) -> Self {
        self.cloud = ceilings;
        self
    }

    /// The most reconciles started a second, every kind together.
    pub fn max_reconcile_rate(mut self, rate: u32) -> Self {
        self.max_reconcile_rate = rate;
        self
    }

    /// Sends change logs to Crossplane's sidecar on `socket`
    /// ([`crate::changelog`]).
    pub fn change_logs(mut self, socket: impl Into<PathBuf>) -> Self {
        self.change_logs = Some(socket.into());
        self
    }

    /// Runs the controllers only while holding the Lease `lease` in
    /// `namespace`, as `identity` (a pod's name), so that several replicas
    /// can run with one active.
    pub fn leader_election(mut self, namespace: &str, lease: &str, identity: &str) -> Self {
        self.election = Some(Election {
            namespace: namespace.to_owned(),
            lease: lease.to_owned(),
            identity: identity.to_owned(),
        });
        self
    }

    /// Runs this process as one of several replicas that share the work
    /// ([`crate::shard`]): each reconciles only the managed and query
    /// resources labelled with its identity, and the holder of the
    /// leader Lease assigns them and runs the provider's own controllers.
    /// Replaces [`Provider::leader_election`].
    pub fn sharding(mut self, sharding: Sharding) -> Self {
        self.sharding = Some(sharding);
        self
    }

    /// Adds the managed kind `K`, whose cloud client comes from `connect`:
    /// the runtime's reconciler runs it once its CRD is established.
    pub fn managed<K: ManagedKind<C>, C: Connect>(self, connect: Arc<C>) -> Self {
        let start: Starter = Arc::new(
            move |ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown| {
                Box::pin(run_controller::<K, C>(ctx, connect.clone(), kube, shutdown))
            },
        );
        self.gated::<K>(start, Some(true))
    }

    /// Adds the query kind `Q` ([`crate::query`]), listing through
    /// `connect`.
    pub fn query<Q: QueryKind<C>, C: Connect>(self, connect: Arc<C>) -> Self {
        self.gated::<Q>(
            Arc::new(
                move |ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown| {
                    Box::pin(run_query_controller::<Q, C>(
                        ctx,
                        connect.clone(),
                        kube,
                        shutdown,
                    ))
                },
            ),
            Some(false),
        )
    }

    /// Adds a controller of the provider's own for the kind `K` (its
    /// ProviderConfig's, say), started by `start` when `K`'s CRD is
    /// established and stopped when it goes.
    pub fn controller<K: kube::Resource<DynamicType = ()>>(self, start: Starter) -> Self {
        self.gated::<K>(start, None)
    }

    /// Adds `K`'s controller; `drains` is `None` for a kind that is not
    /// sharded, else whether its moves wait for the old owner
    /// ([`ShardedKind::drains`]).
    fn gated<K: kube::Resource<DynamicType = ()>>(
        mut self,
        start: Starter,
        drains: Option<bool>,
    ) -> Self {
        let kind = kind_label::<K>();
        self.kinds.push(Gated {
            crd_name: format!("{}.{}", K::plural(&()), K::group(&())),
            version: K::version(&()).into_owned(),
            sharded: drains.map(|drains| ShardedKind {
                resource: kube::api::ApiResource::erase::<K>(&()),
                kind: kind.clone(),
                drains,
            }),
            kind,
            start,
        });
        self
    }

    /// The CRD names of the kinds added so far, in order.
    pub fn crd_names(&self) -> impl Iterator<Item = &str> {
        self.kinds.iter().map(|k| k.crd_name.as_str())
    }

    /// Runs the provider through `kube` until `shutdown` resolves, with
    /// its metrics in `metrics`; `ready` turns true once the CRDs have
    /// been listed (so the controllers are where they should be: a
    /// readiness probe). With leader election, the controllers start once
    /// the Lease is held, and losing it ends the run with an error; a
    /// replica that finds another leading is ready as it stands by, as a
    /// controller-runtime manager's standby is: otherwise a Deployment of
    /// several replicas is never Available, its rollouts stall, and only
    /// the leader would serve what every replica serves (the conversion
    /// webhook behind the provider's Service).
    pub async fn run(
        self,
        kube: kube::Client,
        metrics: Metrics,
        ready: watch::Sender<bool>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), LeaderError> {
        let pacers = Arc::new(Pacers::new(&metrics, self.kube, self.cloud));
        let cluster = KubeCluster::new(
            kube.clone(),
            &self.field_manager,
            Guard::new(pacers.kube().clone()),
        );
        let name = self.settings.provider_name.clone();
        let mut ctx = Context::new(
            Arc::new(cluster),
            self.provider_configs,
            self.settings,
            metrics,
            self.max_reconcile_rate,
            pacers,
        );
        if let Some(socket) = &self.change_logs {
            info!(socket = %socket.display(), "sending change logs");
            // Named as crossplane-runtime's providers name themselves in
            // change logs: `name:version`.
            let provider = format!("{name}:v{}", self.version);
            ctx.changelog = Some(ChangeLogger::start(socket, provider, &ctx.metrics));
        }
        if let Some(sharding) = self.sharding {
            let shard = Arc::new(Shard::new(sharding, &self.field_manager));
            ctx.shard = Some(shard.clone());
            shared::run(Arc::new(ctx), kube, shard, self.kinds, ready, shutdown).await;
            return Ok(());
        }
        let standby_ready = ready.clone();
        let gate = Gate::new(Arc::new(ctx), kube.clone(), self.kinds, ready);
        let Some(election) = self.election else {
            gate.run(shutdown).await;
            return Ok(());
        };
        let elector = Elector::new(
            kube,
            &election.namespace,
            &election.lease,
            &election.identity,
        );
        tokio::pin!(shutdown);
        tokio::select! {
            () = &mut shutdown => Ok(()),
            () = elector.acquire_standing_by(|| {
                standby_ready.send_replace(true);
            }) => tokio::select! {
                () = gate.run(shutdown) => Ok(()),
                lost = elector.hold() => Err(lost),
            },
        }
    }
}

//! A whole system for one test (or the demo): a control plane, fakecloud on
//! a temp SQLite file, the `default` ProviderConfig with its credentials
//! Secret, and the provider running in-process against them.
//!
//! In-process so that a test can read the provider's metrics directly (API
//! writes per reconcile) and stop it precisely; the binary runs the same
//! `provider::run`. fakecloud runs in-process too, except on the container
//! backend (`E2E_CLUSTER=containers`), where it runs from its image.

use std::fmt::Debug;
use std::time::Duration;

use fakecloud::client::{AdminClient, Client as CloudClient};
use fakecloud::model::{AuditEntry, AuditQuery};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use runtime::metrics::Metrics;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use crate::managed::{
    at_provider, condition, external_name, is_ready, is_synced, observed_generation, spec_of,
};
use crate::objects::{Kind, Objects, ObjectsError};
use crate::scenarios::{Narration, Stage};
use crate::{Backend, ClusterError, ClusterOptions, TestCluster};

/// The namespace the world keeps its Secrets in.
pub const NAMESPACE: &str = "crossplane-system";
/// The field manager tests apply with, as a user's kubectl would.
pub const USER_MANAGER: &str = "e2e-user";

/// How to build a [`World`].
#[derive(Debug, Clone)]
pub struct WorldOptions {
    /// Install the package's CRDs before the provider starts (false for the
    /// late-activation tests).
    pub install_crds: bool,
    /// fakecloud's provisioning delay for every kind.
    pub provisioning_delay: Duration,
    /// Extra provider flags, e.g. `--poll-interval=2s`.
    pub provider_args: Vec<String>,
    /// The cluster backend; `None`: the one the environment selects.
    pub backend: Option<Backend>,
    /// fakecloud accounts besides the default one ([`World::account`]),
    /// each given an API key of its own ([`World::api_key_of`]), e.g. for
    /// ProviderConfigs that must not share an account
    /// ([`World::create_namespaced_provider_config`]). In-process fakecloud
    /// only: on the container backend, any is [`WorldError::Accounts`].
    pub accounts: Vec<String>,
}

impl Default for WorldOptions {
    fn default() -> Self {
        Self {
            install_crds: true,
            provisioning_delay: Duration::from_millis(300),
            provider_args: vec![
                // Short polls, so outside changes show within a second.
                "--poll-interval=1s".into(),
                "--pending-poll-interval=250ms".into(),
            ],
            backend: None,
            accounts: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("fakecloud: {0}")]
    Cloud(fakecloud::Error),
    #[error("fakecloud client: {0}")]
    CloudClient(fakecloud::client::ClientError),
    #[error("kubernetes: {0}")]
    Kube(kube::Error),
    #[error("provider flags: {0}")]
    Flags(clap::Error),
    #[error(transparent)]
    Objects(#[from] ObjectsError),
    #[error(transparent)]
    Scenario(#[from] crate::scenarios::ScenarioError),
    #[error("io: {0}")]
    Io(std::io::Error),
    /// [`WorldOptions::accounts`] asked of a fakecloud that cannot have
    /// them, or an account fakecloud was not started with.
    #[error("fakecloud accounts: {0}")]
    Accounts(String),
}

impl From<fakecloud::Error> for WorldError {
    fn from(error: fakecloud::Error) -> Self {
        WorldError::Cloud(error)
    }
}

impl From<fakecloud::client::ClientError> for WorldError {
    fn from(error: fakecloud::client::ClientError) -> Self {
        WorldError::CloudClient(error)
    }
}

impl From<kube::Error> for WorldError {
    fn from(error: kube::Error) -> Self {
        WorldError::Kube(error)
    }
}

impl From<clap::Error> for WorldError {
    fn from(error: clap::Error) -> Self {
        WorldError::Flags(error)
    }
}

impl From<std::io::Error> for WorldError {
    fn from(error: std::io::Error) -> Self {
        WorldError::Io(error)
    }
}

/// fakecloud, wherever it runs.
enum Cloud {
    InProcess(fakecloud::RunningServer),
    #[cfg(feature = "containers")]
    Container(Box<crate::containers::FakecloudContainer>),
}

impl Cloud {
    /// In-process on a temp SQLite file, or from its image on the container
    /// backend.
    async fn start(
        backend: &Backend,
        dir: &tempfile::TempDir,
        delay: Duration,
        accounts: &[String],
    ) -> Result<Self, WorldError> {
        #[cfg(feature = "containers")]
        if *backend == Backend::Containers {
            if !accounts.is_empty() {
                return Err(WorldError::Accounts(format!(
                    "{accounts:?} besides the default one need the in-process fakecloud"
                )));
            }
            return Ok(Self::Container(Box::new(
                crate::containers::FakecloudContainer::start(delay).await?,
            )));
        }
        let _ = backend;
        let mut config =
            fakecloud::Config::new(dir.path().join("fakecloud.db").display().to_string());
        config.default_delay = delay;
        if !accounts.is_empty() {
            // Naming any key stops fakecloud minting the default one, so
            // the default (first) key is minted here, as fakecloud would.
            let key = |account: &str| {
                let key = format!("fcdev_{}", uuid::Uuid::new_v4().simple());
                fakecloud::ApiKey::new(key, account)
            };
            config.api_keys = std::iter::once(fakecloud::DEV_ACCOUNT)
                .chain(accounts.iter().map(String::as_str))
                .map(key)
                .collect();
        }
        Ok(Self::InProcess(fakecloud::spawn(config).await?))
    }

    /// Every API key and the account it acts for, the default one first.
    fn api_keys(&self) -> Vec<fakecloud::ApiKey> {
        match self {
            Self::InProcess(server) => server.api_keys().to_vec(),
            // `FakecloudContainer::start` names its one key's account `e2e`.
            #[cfg(feature = "containers")]
            Self::Container(container) => {
                vec![fakecloud::ApiKey::new(container.api_key(), "e2e")]
            }
        }
    }

    fn base_url(&self) -> String {
        match self {
            Self::InProcess(server) => server.base_url(),
            #[cfg(feature = "containers")]
            Self::Container(container) => container.base_url(),
        }
    }

    fn api_key(&self) -> &str {
        match self {
            Self::InProcess(server) => server.api_key(),
            #[cfg(feature = "containers")]
            Self::Container(container) => container.api_key(),
        }
    }

    fn admin_token(&self) -> &str {
        match self {
            Self::InProcess(server) => server.admin_token(),
            #[cfg(feature = "containers")]
            Self::Container(container) => container.admin_token(),
        }
    }
}

struct RunningProvider {
    token: CancellationToken,
    task: JoinHandle<Result<(), provider::RunError>>,
}

/// Control plane + fakecloud + provider; torn down on drop (the provider
/// task is cancelled, fakecloud and the control plane stop).
pub struct World {
    pub cluster: TestCluster,
    /// apply / patch / get / delete / wait, as the test's user.
    pub objects: Objects,
    pub cloud: CloudClient,
    pub admin: AdminClient,
    pub metrics: Metrics,
    cloud_server: Option<Cloud>,
    /// The in-process provider's own client, built as the binary builds it.
    provider_kube: kube::Client,
    provider: Option<RunningProvider>,
    options: WorldOptions,
    /// The provider's poll interval plus a second: how long a scenario
    /// watches for "nothing more happens".
    settle: Duration,
    _dir: tempfile::TempDir,
}

impl World {
    pub async fn start() -> Result<Self, WorldError> {
        Self::start_with(WorldOptions::default()).await
    }

    pub async fn start_with(options: WorldOptions) -> Result<Self, WorldError> {
        let backend = match options.backend.clone() {
            Some(backend) => backend,
            None => Backend::from_env()?,
        };
        let mut cluster_options = ClusterOptions::default().backend(backend.clone());
        if !options.install_crds {
            cluster_options = cluster_options.without_package_crds();
        }
        let (cluster, cloud_server) = tokio::join!(cluster_options.start(), async {
            let dir = tempfile::tempdir()?;
            let cloud = Cloud::start(
                &backend,
                &dir,
                options.provisioning_delay,
                &options.accounts,
            )
            .await?;
            Ok::<_, WorldError>((dir, cloud))
        });
        let cluster = cluster?;
        let (dir, cloud_server) = cloud_server?;
        let provider_kube =
            crate::kubeconfig::provider_client_from_file(cluster.kubeconfig()).await?;
        let poll_interval = provider_config(&options.provider_args)?.poll_interval;
        let cloud = CloudClient::new(cloud_server.base_url(), cloud_server.api_key());
        let admin = AdminClient::new(cloud_server.base_url(), cloud_server.admin_token());
        let mut world = Self {
            objects: Objects::new(cluster.client(), USER_MANAGER),
            cluster,
            cloud,
            admin,
            metrics: Metrics::new(),
            provider_kube,
            provider: None,
            options,
            settle: poll_interval + Duration::from_secs(1),
            _dir: dir,
            cloud_server: Some(cloud_server),
        };
        for namespace in [NAMESPACE, crate::scope::APP, crate::scope::NET] {
            world.create_namespace(namespace).await?;
        }
        if world.options.install_crds {
            world.create_provider_config("default").await?;
            world.create_cluster_provider_config("default").await?;
        }
        world.start_provider()?;
        Ok(world)
    }

    pub fn kube(&self) -> kube::Client {
        self.cluster.client()
    }

    /// The user's view of this world, where [`crate::scenarios`] play; their
    /// narration goes to the test's log.
    pub fn stage(&self) -> Stage<'_> {
        Stage {
            objects: &self.objects,
            cloud: &self.cloud,
            admin: &self.admin,
            settle: self.settle,
            narration: Narration::Log,
        }
    }

    pub fn cloud_url(&self) -> String {
        self.cloud_server
            .as_ref()
            .expect("fakecloud runs while the world lives")
            .base_url()
    }

    pub fn api_key(&self) -> &str {
        self.cloud_server
            .as_ref()
            .expect("fakecloud runs while the world lives")
            .api_key()
    }

    /// The account of [`World::api_key`]: the one the `default`
    /// ProviderConfig and ClusterProviderConfig act for.
    pub fn account(&self) -> String {
        self.cloud_server
            .as_ref()
            .expect("fakecloud runs while the world lives")
            .api_keys()
            .swap_remove(0)
            .account
    }

    /// The API key of `account`: the default one ([`World::account`]) or
    /// one of [`WorldOptions::accounts`]; `None` for any other.
    pub fn api_key_of(&self, account: &str) -> Option<String> {
        self.cloud_server
            .as_ref()
            .expect("fakecloud runs while the world lives")
            .api_keys()
            .into_iter()
            .find(|k| k.account == account)
            .map(|k| k.key)
    }

    /// A namespaced ProviderConfig (`fakecloud.m.crossplane.io`) `name` in
    /// `namespace`, pointing at this fakecloud with `account`'s API key
    /// (see [`World::api_key_of`]), kept in the Secret
    /// `<name>-credentials` (key `apiKey`) beside it. Creates the namespace
    /// if need be. Namespaced managed resources there use it with
    /// `providerConfigRef: { kind: ProviderConfig, name }`.
    pub async fn create_namespaced_provider_config(
        &self,
        namespace: &str,
        name: &str,
        account: &str,
    ) -> Result<(), WorldError> {
        let key = self
            .api_key_of(account)
            .ok_or_else(|| WorldError::Accounts(format!("fakecloud has no account {account:?}")))?;
        self.create_namespace(namespace).await?;
        let objects = self.objects.in_namespace(namespace);
        let secret_name = format!("{name}-credentials");
        objects
            .apply_namespaced::<Secret>(
                namespace,
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": { "name": secret_name, "namespace": namespace },
                    "stringData": { "apiKey": key },
                }),
            )
            .await?;
        objects
            .apply::<apis::kinds::provider_config::m::ProviderConfig>(json!({
                "apiVersion": "fakecloud.m.crossplane.io/v1alpha1", "kind": "ProviderConfig",
                "metadata": { "name": name, "namespace": namespace },
                "spec": {
                    "endpoint": self.cloud_url(),
                    "credentials": { "source": "Secret",
                        "secretRef": { "name": secret_name, "key": "apiKey" } },
                },
            }))
            .await?;
        Ok(())
    }

    /// Creates the namespace `name`, if it does not exist yet.
    pub async fn create_namespace(&self, name: &str) -> Result<(), WorldError> {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.kube());
        let ns = serde_json::from_value(json!({ "metadata": { "name": name } }))
            .expect("valid namespace");
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A cluster-scoped ProviderConfig of kind `K` named `name`, pointing at
    /// this fakecloud, with its credentials Secret `<name>-credentials`
    /// (key `apiKey`) in [`NAMESPACE`].
    async fn create_config<K: Kind>(&self, name: &str) -> Result<(), WorldError> {
        let secret_name = format!("{name}-credentials");
        self.objects
            .apply_namespaced::<Secret>(
                NAMESPACE,
                json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": { "name": secret_name, "namespace": NAMESPACE },
                "stringData": { "apiKey": self.api_key() },
                }),
            )
            .await?;
        self.apply::<K>(json!({
            "apiVersion": K::api_version(&()), "kind": K::kind(&()),
            "metadata": { "name": name },
            "spec": {
                "endpoint": self.cloud_url(),
                "credentials": { "source": "Secret",
                    "secretRef": { "namespace": NAMESPACE, "name": secret_name, "key": "apiKey" } },
            },
        }))
        .await
        .map(drop)
    }

    /// A legacy ProviderConfig named `name` (see [`World::create_config`]).
    pub async fn create_provider_config(&self, name: &str) -> Result<(), WorldError> {
        self.create_config::<apis::kinds::provider_config::ProviderConfig>(name)
            .await
    }

    /// A ClusterProviderConfig named `name`: `default` is the one namespaced
    /// managed resources use unless they name another (see
    /// [`World::create_config`]).
    pub async fn create_cluster_provider_config(&self, name: &str) -> Result<(), WorldError> {
        self.create_config::<apis::kinds::provider_config::m::ClusterProviderConfig>(name)
            .await
    }

    /// Starts the provider in-process (again, after [`World::stop_provider`]).
    pub fn start_provider(&mut self) -> Result<(), WorldError> {
        self.provider =
            Some(self.spawn_provider(self.provider_kube.clone(), self.metrics.clone())?);
        Ok(())
    }

    /// Runs `provider::run` in a task with the world's provider flags.
    fn spawn_provider(
        &self,
        kube: kube::Client,
        metrics: Metrics,
    ) -> Result<RunningProvider, WorldError> {
        let config = provider_config(&self.options.provider_args)?;
        let token = CancellationToken::new();
        let task = tokio::spawn(provider::run(config, kube, metrics, token.clone()));
        Ok(RunningProvider { token, task })
    }

    /// Stops the provider gracefully and waits until it has.
    pub async fn stop_provider(&mut self) {
        if let Some(running) = self.provider.take() {
            running.token.cancel();
            let _ = running.task.await;
        }
    }

    /// Another provider instance against the same cluster and cloud, as a
    /// second replica of a Deployment without leader election (or the old
    /// and new pods of a rolling update) would run: its own kube client,
    /// informer caches, controllers, backoff and metrics.
    pub async fn start_replica(&self) -> Result<Replica, WorldError> {
        let kube = crate::kubeconfig::provider_client_from_file(self.cluster.kubeconfig()).await?;
        Ok(Replica {
            running: self.spawn_provider(kube, Metrics::new())?,
        })
    }

    /// Server-side applies a cluster-scoped object as the test's user.
    pub async fn apply<K: Kind>(&self, object: Value) -> Result<K, WorldError> {
        Ok(self.objects.apply(object).await?)
    }

    /// Merge-patches an object as a user editing it would.
    pub async fn patch<K: Kind>(&self, name: &str, patch: Value) -> Result<K, WorldError> {
        Ok(self.objects.patch(name, patch).await?)
    }

    pub async fn get<K: Kind>(&self, name: &str) -> Result<Option<K>, WorldError> {
        Ok(self.objects.get(name).await?)
    }

    pub async fn delete<K: Kind>(&self, name: &str) -> Result<(), WorldError> {
        Ok(self.objects.delete::<K>(name).await?)
    }

    /// Polls the object until `done` holds, returning it; a timeout carries
    /// the object as last seen.
    pub async fn wait_for<K: Kind>(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        done: impl Fn(&K) -> bool,
    ) -> Result<K, WorldError> {
        Ok(self.objects.wait_for(name, what, timeout, done).await?)
    }

    /// Polls until the object no longer exists.
    pub async fn wait_gone<K: Kind>(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<(), WorldError> {
        Ok(self.objects.wait_gone::<K>(name, timeout).await?)
    }

    /// The newest audit sequence number: calls after it are "from now on".
    pub async fn audit_mark(&self) -> Result<i64, WorldError> {
        Ok(self.stage().audit_mark().await?)
    }

    /// Mutating calls made with an API key (the provider's) on paths
    /// starting with `path_prefix`, after `mark`.
    pub async fn mutating_calls(
        &self,
        path_prefix: &str,
        mark: i64,
    ) -> Result<Vec<AuditEntry>, WorldError> {
        Ok(self
            .admin
            .audit(&AuditQuery {
                actor: Some(fakecloud::model::Actor::Api),
                path_prefix: Some(path_prefix.to_owned()),
                mutating: Some(true),
                after_seq: Some(mark),
                ..AuditQuery::default()
            })
            .await?)
    }

    /// All calls made with an API key on paths under `path_prefix` after `mark`.
    pub async fn calls(&self, path_prefix: &str, mark: i64) -> Result<Vec<AuditEntry>, WorldError> {
        Ok(self
            .admin
            .audit(&AuditQuery {
                actor: Some(fakecloud::model::Actor::Api),
                path_prefix: Some(path_prefix.to_owned()),
                after_seq: Some(mark),
                ..AuditQuery::default()
            })
            .await?)
    }

    /// Stops everything in order: provider, fakecloud, then (on drop) the
    /// control plane.
    pub async fn shutdown(mut self) {
        self.stop_provider().await;
        if let Some(Cloud::InProcess(server)) = self.cloud_server.take() {
            let _ = server.shutdown().await;
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(running) = self.provider.take() {
            running.token.cancel();
            running.task.abort();
        }
    }
}

/// The in-process provider's configuration: `extra` flags after the
/// world's own (ephemeral metrics and health ports).
fn provider_config(extra: &[String]) -> Result<provider::config::Config, clap::Error> {
    let mut args = vec![
        "provider".to_owned(),
        "--metrics-addr=127.0.0.1:0".to_owned(),
        "--health-addr=127.0.0.1:0".to_owned(),
    ];
    args.extend(extra.iter().cloned());
    <provider::config::Config as clap::Parser>::try_parse_from(args)
}

/// A provider replica started by [`World::start_replica`].
pub struct Replica {
    running: RunningProvider,
}

impl Replica {
    /// Kills it as SIGKILL would: every future of it is dropped where it
    /// stands, HTTP calls in flight included (a create the cloud may have
    /// accepted whose answer nobody reads), with no graceful shutdown.
    pub fn kill(self) {
        self.running.task.abort();
    }

    /// Stops it gracefully and waits until it has.
    pub async fn stop(self) {
        self.running.token.cancel();
        let _ = self.running.task.await;
    }
}

//! The running system: control plane, fakecloud and the provider process,
//! started in that order with progress lines, stopped in reverse; or, with
//! `--existing`, a system someone else runs (docker-compose.yml's services),
//! which the demo only connects to.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fakecloud::client::{AdminClient, Client as CloudClient};
use fakecloud::model::AuditQuery;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use serde_json::json;

use e2e::crossplane_standin::{self, StandIn};
use e2e::objects::Objects;
use e2e::scenarios::{Narration, Stage};

use super::{DemoError, DemoOptions, Existing, Progress, ProviderProcess, Target};

#[cfg(feature = "node")]
mod node;
use e2e::provider_process::active_controllers_at;
use e2e::{Backend, TestCluster};

/// The namespace of the credentials and connection Secrets.
pub const NAMESPACE: &str = "crossplane-system";
/// The credentials Secret of the `default` ProviderConfig.
pub const CREDENTIALS_SECRET: &str = "default-credentials";
/// The field manager the demo applies with, as a user's kubectl would.
pub(crate) const DEMO_MANAGER: &str = "demo-user";
/// How long the provider may take to answer `/readyz`.
const PROVIDER_READY: Duration = Duration::from_secs(30);
/// How long compose's `crossplane-standin` service may take to install the
/// MRD and MRAP CRDs.
const STANDIN_READY: Duration = Duration::from_secs(60);

/// The demo's own folder: its log, the provider's log and fakecloud's
/// database. Removed after a clean run, kept (and printed) after a failure.
pub struct RunDir {
    dir: tempfile::TempDir,
}

impl RunDir {
    pub fn create() -> Result<Self, DemoError> {
        let dir = tempfile::Builder::new()
            .prefix("fakecloud-demo-")
            .tempdir()
            .map_err(|e| DemoError::io("creating the demo's folder", e))?;
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps the folder on disk and returns its path.
    pub fn keep(self) -> PathBuf {
        self.dir.keep()
    }
}

pub struct System {
    pub cluster: TestCluster,
    pub cloud: CloudClient,
    pub admin: AdminClient,
    pub(crate) objects: Objects,
    pub options: DemoOptions,
    endpoint: CloudEndpoint,
    /// fakecloud in this process (local mode only).
    cloud_server: Option<fakecloud::RunningServer>,
    provider: Option<Provider>,
    /// The stand-in for Crossplane's MRD and MRAP controllers, in this
    /// process (local mode only; compose runs it as a service).
    standin: Option<StandIn>,
    /// fakecloud's SQLite file (local mode only).
    database: Option<PathBuf>,
}

/// fakecloud's settings when it runs in the demo's process: its SQLite
/// file in the run folder, the demo's provisioning delay, and where it
/// listens (`listen`, else fakecloud's default, loopback).
struct LocalCloud {
    config: fakecloud::Config,
    database: PathBuf,
}

impl LocalCloud {
    fn config(run_dir: &RunDir, options: &DemoOptions, listen: Option<SocketAddr>) -> Self {
        let database = run_dir.path().join("fakecloud.db");
        let mut config = fakecloud::Config::new(database.display().to_string());
        config.default_delay = options.provisioning_delay;
        if let Some(listen) = listen {
            config.listen = listen;
        }
        Self { config, database }
    }
}

/// How the demo and the provider reach fakecloud.
#[derive(Debug, Clone)]
struct CloudEndpoint {
    url: String,
    api_key: String,
    admin_token: String,
}

/// The provider the stories watch: a process the demo started, one that
/// runs elsewhere and is known by its metrics address, or the pods of the
/// package's Deployment on the node.
enum Provider {
    Process(ProviderProcess),
    Remote {
        metrics: String,
    },
    #[cfg(feature = "node")]
    Pods(node::Pods),
}

impl System {
    /// Starts everything (the provider last, with none of its CRDs
    /// installed), or connects to the existing system.
    pub async fn start(
        options: DemoOptions,
        run_dir: &RunDir,
        progress: &Progress,
    ) -> Result<Self, DemoError> {
        match options.target.clone() {
            Target::Local { provider_bin } => {
                Self::start_local(options, provider_bin, run_dir, progress).await
            }
            Target::Existing(existing) => Self::connect(options, existing, progress).await,
            #[cfg(feature = "node")]
            Target::Node => node::start(options, run_dir, progress).await,
        }
    }

    async fn start_local(
        options: DemoOptions,
        provider_bin: PathBuf,
        run_dir: &RunDir,
        progress: &Progress,
    ) -> Result<Self, DemoError> {
        progress.step(
            "starting the control plane: etcd, kube-apiserver, kube-controller-manager (local processes)",
        );
        let cloud = LocalCloud::config(run_dir, &options, None);
        let (cluster, cloud_server) = tokio::join!(
            TestCluster::options().without_package_crds().start(),
            fakecloud::spawn(cloud.config.clone()),
        );
        let cluster = cluster?;
        let cloud_server = cloud_server?;
        progress.step(format!(
            "control plane ready in {:.1}s: Kubernetes {}, no CRDs installed",
            cluster.startup_time().as_secs_f64(),
            cluster.server_version().git_version,
        ));
        progress.step(format!(
            "fakecloud serving {} (in-process, SQLite {})",
            cloud_server.base_url(),
            cloud.database.display()
        ));
        let standin =
            StandIn::start(cluster.client(), Some(cluster.conversion_target().await?)).await?;
        progress.step(
            "Crossplane stand-in running in-process (e2e::crossplane_standin; real Crossplane on the kind path): CRDs ManagedResourceDefinition and ManagedResourceActivationPolicy installed",
        );
        let mut system = Self::with_local_cloud(cluster, options, cloud_server, cloud.database);
        system.standin = Some(standin);
        // The control plane's logs die with it: keep them if the rest fails.
        match system
            .start_provider(&provider_bin, run_dir, progress)
            .await
        {
            Ok(()) => Ok(system),
            Err(error) => {
                system.save_control_plane_logs(run_dir.path());
                Err(error)
            }
        }
    }

    /// Connects to a system that runs already (docker-compose.yml): its
    /// API server through `kubeconfig`, fakecloud at its URL, the provider's
    /// metrics at their address. The cluster must not know the provider's
    /// CRDs yet, since the first story installs them.
    async fn connect(
        options: DemoOptions,
        existing: Existing,
        progress: &Progress,
    ) -> Result<Self, DemoError> {
        progress.step(format!(
            "connecting to the running system: API server of {}, fakecloud {}, provider metrics {}",
            existing.kubeconfig.display(),
            existing.cloud_url,
            existing.provider_metrics
        ));
        let cluster = TestCluster::options()
            .backend(Backend::Kubeconfig(existing.kubeconfig.clone()))
            .without_package_crds()
            .start()
            .await?;
        let leftover = e2e::crds::installed_package_crds(&cluster.client()).await?;
        if !leftover.is_empty() {
            return Err(DemoError::Unexpected(format!(
                "the cluster already has the provider's CRDs ({}): the demo plays its stories on a fresh system; start over with `docker compose down -v`",
                leftover.join(", ")
            )));
        }
        let endpoint = CloudEndpoint {
            url: existing.cloud_url.clone(),
            api_key: existing.api_key.clone(),
            admin_token: existing.admin_token.clone(),
        };
        crossplane_standin::wait_for_definitions(&cluster.client(), STANDIN_READY).await?;
        progress.step(
            "the crossplane-standin service (Crossplane's MRD and MRAP controllers, stand-in) has installed the ManagedResourceDefinition and ManagedResourceActivationPolicy CRDs",
        );
        let mut system = Self::assemble(cluster, endpoint, options);
        system.admin.audit(&AuditQuery::default()).await?;
        progress.step(format!(
            "Kubernetes {}, no provider CRD installed; fakecloud answers",
            system.cluster.server_version().git_version
        ));
        system.create_credentials().await?;
        system.provider = Some(Provider::Remote {
            metrics: existing.provider_metrics,
        });
        Ok(system)
    }

    /// The system around `cluster` with fakecloud running in this
    /// process, its SQLite file at `database`.
    fn with_local_cloud(
        cluster: TestCluster,
        options: DemoOptions,
        cloud_server: fakecloud::RunningServer,
        database: PathBuf,
    ) -> Self {
        let endpoint = CloudEndpoint {
            url: cloud_server.base_url(),
            api_key: cloud_server.api_key().to_owned(),
            admin_token: cloud_server.admin_token().to_owned(),
        };
        let mut system = Self::assemble(cluster, endpoint, options);
        system.cloud_server = Some(cloud_server);
        system.database = Some(database);
        system
    }

    fn assemble(cluster: TestCluster, endpoint: CloudEndpoint, options: DemoOptions) -> Self {
        Self {
            objects: Objects::new(cluster.client(), DEMO_MANAGER),
            cloud: CloudClient::new(endpoint.url.clone(), &endpoint.api_key),
            admin: AdminClient::new(endpoint.url.clone(), &endpoint.admin_token),
            cluster,
            options,
            endpoint,
            cloud_server: None,
            provider: None,
            standin: None,
            database: None,
        }
    }

    /// Creates the credentials, then starts the provider binary and waits
    /// until it is ready.
    async fn start_provider(
        &mut self,
        provider_bin: &Path,
        run_dir: &RunDir,
        progress: &Progress,
    ) -> Result<(), DemoError> {
        self.create_credentials().await?;

        progress.step(format!(
            "starting the provider binary {} with KUBECONFIG only",
            provider_bin.display()
        ));
        let mut provider = ProviderProcess::start(
            provider_bin,
            self.cluster.kubeconfig(),
            &[
                format!(
                    "--poll-interval={}ms",
                    self.options.poll_interval.as_millis()
                ),
                "--pending-poll-interval=250ms".to_owned(),
            ],
            run_dir.path().join("provider.log"),
        )?;
        provider.wait_ready(PROVIDER_READY).await?;
        progress.step(format!(
            "provider ready (pid {}), log {}",
            provider.pid(),
            provider.log().display()
        ));
        let pids: Vec<String> = self
            .cluster
            .process_ids()
            .iter()
            .chain(std::iter::once(&provider.pid()))
            .map(u32::to_string)
            .collect();
        progress.step(format!(
            "processes (pid): control plane + provider {}",
            pids.join(" ")
        ));
        self.provider = Some(Provider::Process(provider));
        Ok(())
    }

    /// The namespaces (the credentials', and `app` and `net` of the
    /// namespaced stories) and the Secret holding fakecloud's API key;
    /// plain Kubernetes objects, so they exist before any CRD does.
    async fn create_credentials(&self) -> Result<(), DemoError> {
        for namespace in [NAMESPACE, e2e::scope::APP, e2e::scope::NET] {
            self.objects
                .apply::<Namespace>(json!({
                    "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": namespace },
                }))
                .await?;
        }
        self.objects
            .apply_namespaced::<Secret>(
                NAMESPACE,
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": { "name": CREDENTIALS_SECRET, "namespace": NAMESPACE },
                    "stringData": { "apiKey": self.api_key() },
                }),
            )
            .await?;
        Ok(())
    }

    /// fakecloud's URL, as the provider reaches it too.
    pub fn cloud_url(&self) -> String {
        self.endpoint.url.clone()
    }

    pub fn api_key(&self) -> &str {
        &self.endpoint.api_key
    }

    pub fn admin_token(&self) -> &str {
        &self.endpoint.admin_token
    }

    /// fakecloud's SQLite file, when fakecloud runs in this process.
    pub fn database(&self) -> Option<&Path> {
        self.database.as_deref()
    }

    /// The provider process the demo started (none with `--existing`).
    pub fn provider_process(&self) -> Option<&ProviderProcess> {
        match &self.provider {
            Some(Provider::Process(process)) => Some(process),
            _ => None,
        }
    }

    /// Kinds whose controller runs, per the provider's
    /// `provider_active_controllers` metric.
    pub async fn active_controllers(&self) -> Result<Vec<String>, DemoError> {
        match self
            .provider
            .as_ref()
            .expect("the provider runs until shutdown")
        {
            Provider::Process(process) => Ok(process.active_controllers().await?),
            Provider::Remote { metrics } => Ok(active_controllers_at(metrics).await?),
            #[cfg(feature = "node")]
            Provider::Pods(pods) => {
                let metrics = pods.metrics_addr(self.cluster.client()).await?;
                Ok(active_controllers_at(&metrics).await?)
            }
        }
    }

    /// Where the provider runs and how to look at it, for the closing hints.
    pub fn provider_hint(&self) -> String {
        match &self.provider {
            Some(Provider::Process(process)) => format!(
                "pid {}, metrics http://{}/metrics, log {}",
                process.pid(),
                process.metrics_addr,
                process.log().display()
            ),
            Some(Provider::Remote { metrics }) => format!("metrics http://{metrics}/metrics"),
            #[cfg(feature = "node")]
            Some(Provider::Pods(pods)) => pods.hint(),
            None => "not running".to_owned(),
        }
    }

    /// An error if the provider or a control-plane process has died (or
    /// the provider's pod restarted): after that no story can hold, so the
    /// demo stops with the logs. A system run by someone else restarts its
    /// own parts; nothing to check here.
    pub async fn ensure_healthy(&mut self) -> Result<(), DemoError> {
        match self.provider.as_mut() {
            Some(Provider::Process(process)) => process.ensure_running()?,
            #[cfg(feature = "node")]
            Some(Provider::Pods(pods)) => pods.ensure_running(self.cluster.client()).await?,
            _ => {}
        }
        if self.standin.as_ref().is_some_and(|s| !s.is_running()) {
            return Err(DemoError::Unexpected(
                "the Crossplane stand-in stopped; see demo.log".to_owned(),
            ));
        }
        let dead = self.cluster.dead_components();
        if dead.is_empty() {
            Ok(())
        } else {
            Err(DemoError::Unexpected(format!(
                "control-plane processes exited: {}",
                dead.join("; ")
            )))
        }
    }

    /// The user's view of the system, where the stories play; their
    /// narration is printed.
    pub fn stage(&self) -> Stage<'_> {
        Stage {
            objects: &self.objects,
            cloud: &self.cloud,
            admin: &self.admin,
            settle: self.options.poll_interval + Duration::from_secs(1),
            narration: Narration::Print,
        }
    }

    /// Copies the control plane's logs into `dir` (they are deleted with the
    /// cluster), so a failed run keeps every log in one folder.
    pub fn save_control_plane_logs(&self, dir: &Path) {
        let Some(logs) = self.cluster.logs_dir() else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&logs) else {
            return;
        };
        for entry in entries.flatten() {
            let _ = std::fs::copy(entry.path(), dir.join(entry.file_name()));
        }
    }

    /// Stops the provider (SIGTERM, then kill), fakecloud, then the control
    /// plane; returns once every process is gone.
    pub async fn shutdown(mut self) {
        match self.provider.take() {
            Some(Provider::Process(provider)) => provider.stop().await,
            #[cfg(feature = "node")]
            Some(Provider::Pods(pods)) => pods.uninstall(self.cluster.client()).await,
            _ => {}
        }
        if let Some(standin) = self.standin.take()
            && let Err(error) = standin.stop().await
        {
            tracing::warn!(%error, "the Crossplane stand-in ended with an error");
        }
        if let Some(server) = self.cloud_server.take() {
            let _ = server.shutdown().await;
        }
        // Dropping the cluster kills and reaps its process groups.
    }
}

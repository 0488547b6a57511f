//! [`TestCluster`]: the one handle a test holds on "a Kubernetes API server".
//!
//! Which cluster it is comes from the environment, so the same tests run on
//! a laptop, in CI and against kind or K3s:
//!
//! | environment                 | cluster                                        |
//! |-----------------------------|------------------------------------------------|
//! | nothing set                 | local etcd + kube-apiserver + controller manager |
//! | `E2E_KUBECONFIG=<file>`     | the existing cluster of that kubeconfig         |
//! | `E2E_CLUSTER=k3s`           | K3s through testcontainers (needs Docker)       |
//! | `E2E_CLUSTER=containers`    | etcd + kube-apiserver + controller manager from the compose images, through testcontainers |
//!
//! Every failure to get a cluster is an error: a test that needs Kubernetes
//! can fail, never silently pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::version::Info;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::assets::AssetSearch;
#[cfg(feature = "containers")]
use crate::containers::ContainerControlPlane;
use crate::conversion::{ConversionStandIn, WebhookTarget, converts_by_webhook};
use crate::crds;
use crate::error::ClusterError;
#[cfg(feature = "containers")]
use crate::k3s::K3sCluster;
use crate::local::LocalControlPlane;

/// Selects the backend: `local`, `k3s`, `containers` or `kubeconfig`.
pub const CLUSTER_ENV: &str = "E2E_CLUSTER";
/// Kubeconfig of an existing cluster to test against.
pub const KUBECONFIG_ENV: &str = "E2E_KUBECONFIG";

/// Default time the local API server gets to answer `/readyz` with `ok`.
/// Generous: on 2 cores under a parallel test run it takes a few seconds.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(90);

/// Which cluster a [`TestCluster`] talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// etcd, kube-apiserver and kube-controller-manager started by the harness.
    Local,
    /// An existing cluster, from the kubeconfig at this path.
    Kubeconfig(PathBuf),
    /// K3s in a container, through testcontainers.
    K3s,
    /// The control plane from docker-compose.yml's images, through
    /// testcontainers (and fakecloud from its image, in a [`crate::world::World`]).
    Containers,
    /// The local control plane, reachable from Docker's bridge, plus a
    /// node: kube-scheduler, a kubelet over this machine's Docker engine
    /// and kube-proxy, so Deployments run as pods ([`crate::node`]). One
    /// at a time per machine; needs root.
    Node,
}

impl Backend {
    /// The backend chosen by `E2E_CLUSTER` and `E2E_KUBECONFIG`.
    pub fn from_env() -> Result<Self, ClusterError> {
        let cluster = std::env::var(CLUSTER_ENV).ok();
        let kubeconfig = std::env::var(KUBECONFIG_ENV).ok();
        Self::select(cluster.as_deref(), kubeconfig.as_deref())
    }

    /// The backend for these values of `E2E_CLUSTER` and `E2E_KUBECONFIG`
    /// (empty counts as unset). Conflicting choices are an error rather
    /// than a guess.
    pub fn select(cluster: Option<&str>, kubeconfig: Option<&str>) -> Result<Self, ClusterError> {
        let cluster = cluster.map(str::trim).filter(|s| !s.is_empty());
        let kubeconfig = kubeconfig.filter(|s| !s.is_empty()).map(PathBuf::from);
        match (cluster, kubeconfig) {
            (None, None) | (Some("local"), None) => Ok(Self::Local),
            (None | Some("kubeconfig"), Some(path)) => Ok(Self::Kubeconfig(path)),
            (Some("k3s"), None) => Ok(Self::K3s),
            (Some("containers"), None) => Ok(Self::Containers),
            (Some("node"), None) => Ok(Self::Node),
            (Some("kubeconfig"), None) => Err(ClusterError::InvalidSelection(format!(
                "{CLUSTER_ENV}=kubeconfig needs {KUBECONFIG_ENV} to name a kubeconfig file"
            ))),
            (Some(other @ ("local" | "k3s" | "containers" | "node")), Some(path)) => {
                Err(ClusterError::InvalidSelection(format!(
                    "{CLUSTER_ENV}={other} conflicts with {KUBECONFIG_ENV}={}; set only one",
                    path.display()
                )))
            }
            (Some(other), _) => Err(ClusterError::InvalidSelection(format!(
                "{CLUSTER_ENV}={other:?} is not one of local, k3s, containers, node, kubeconfig"
            ))),
        }
    }
}

/// How to start a [`TestCluster`]; defaults: backend from the environment,
/// package CRDs installed, garbage collector on.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    backend: Option<Backend>,
    assets: Option<AssetSearch>,
    package_crds: bool,
    extra_crd_files: Vec<PathBuf>,
    garbage_collector: bool,
    ready_timeout: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            backend: None,
            assets: None,
            package_crds: true,
            extra_crd_files: Vec::new(),
            garbage_collector: true,
            ready_timeout: DEFAULT_READY_TIMEOUT,
        }
    }
}

impl ClusterOptions {
    /// Start with no CRD installed (the provider's late-activation tests).
    pub fn without_package_crds(mut self) -> Self {
        self.package_crds = false;
        self
    }

    /// Also install the CRDs of these files at start. Unlike CRDs installed
    /// later, the garbage collector watches their kinds from its first
    /// moment instead of after its 30 s discovery resync.
    pub fn with_crd_files(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.extra_crd_files.extend(files);
        self
    }

    /// Do not start kube-controller-manager (local backend): for assets
    /// folders that lack it, such as controller-runtime's envtest binaries.
    pub fn without_garbage_collector(mut self) -> Self {
        self.garbage_collector = false;
        self
    }

    /// Use this backend instead of the one the environment selects.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Look for binaries here instead of `KUBEBUILDER_ASSETS` and the cache.
    pub fn assets(mut self, search: AssetSearch) -> Self {
        self.assets = Some(search);
        self
    }

    /// How long the local API server may take to become ready.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts (or connects to) the cluster and installs the CRDs asked for.
    pub async fn start(self) -> Result<TestCluster, ClusterError> {
        let began = Instant::now();
        let backend = match self.backend.clone() {
            Some(backend) => backend,
            None => Backend::from_env()?,
        };
        let (inner, client, kubeconfig) = match &backend {
            Backend::Local => {
                let search = self.assets.clone().unwrap_or_else(AssetSearch::from_env);
                let assets = search.locate(self.garbage_collector)?;
                tracing::debug!(assets = %assets.dir.display(), "using control-plane binaries");
                let plane = LocalControlPlane::start(&assets, self.ready_timeout).await?;
                let client = plane.client.clone();
                let kubeconfig = plane.kubeconfig.clone();
                (
                    Inner::Local {
                        plane: Box::new(plane),
                        controller_manager: assets.kube_controller_manager,
                    },
                    client,
                    kubeconfig,
                )
            }
            Backend::Kubeconfig(path) => {
                let client = crate::kubeconfig::client_from_file(path).await?;
                (Inner::Existing, client, path.clone())
            }
            #[cfg(feature = "containers")]
            Backend::K3s => {
                let k3s = K3sCluster::start().await?;
                let client = k3s.client.clone();
                let kubeconfig = k3s.kubeconfig.clone();
                (
                    Inner::K3s {
                        _k3s: Box::new(k3s),
                    },
                    client,
                    kubeconfig,
                )
            }
            #[cfg(feature = "containers")]
            Backend::Containers => {
                let plane = ContainerControlPlane::start(self.ready_timeout).await?;
                let client = plane.client.clone();
                let kubeconfig = plane.kubeconfig.clone();
                (
                    Inner::Containers {
                        plane: Box::new(plane),
                        garbage_collector: self.garbage_collector,
                    },
                    client,
                    kubeconfig,
                )
            }
            #[cfg(feature = "containers")]
            Backend::Node => {
                let search = self.assets.clone().unwrap_or_else(AssetSearch::from_env);
                let assets = search.locate(true)?;
                let node_assets = crate::node::NodeAssets::in_dir(&assets.dir)?;
                let (host, pods_subnet) = crate::node::bridge()?;
                let lock = crate::node::NodeLock::acquire().await?;
                let plane =
                    LocalControlPlane::start_on(&assets, self.ready_timeout, host.into()).await?;
                let client = plane.client.clone();
                let kubeconfig = plane.kubeconfig.clone();
                (
                    Inner::Node {
                        node: None,
                        plane: Box::new(plane),
                        pending: Some(PendingNode {
                            lock,
                            assets: node_assets,
                            controller_manager: assets.kube_controller_manager.unwrap_or_default(),
                            host,
                            pods_subnet,
                            ready_timeout: self.ready_timeout,
                        }),
                    },
                    client,
                    kubeconfig,
                )
            }
            #[cfg(not(feature = "containers"))]
            Backend::K3s | Backend::Containers | Backend::Node => {
                return Err(ClusterError::InvalidSelection(format!(
                    "{backend:?} needs the e2e crate's `containers` feature (on by default)"
                )));
            }
        };
        let version = client
            .apiserver_version()
            .await
            .map_err(|e| ClusterError::kube("reading the server version", e))?;
        let mut cluster = TestCluster {
            client,
            kubeconfig,
            backend,
            version,
            inner,
            installed_crds: Vec::new(),
            startup: Duration::ZERO,
            conversion: tokio::sync::OnceCell::new(),
        };
        let mut crd_files = Vec::new();
        if self.package_crds {
            crd_files.extend(crds::yaml_files(&crds::package_crds_dir())?);
        }
        crd_files.extend(self.extra_crd_files);
        if !crd_files.is_empty() {
            cluster.installed_crds = cluster.install_crd_files(&crd_files).await?;
        }
        cluster.start_garbage_collector().await?;
        cluster.startup = began.elapsed();
        Ok(cluster)
    }
}

enum Inner {
    Local {
        plane: Box<LocalControlPlane>,
        /// Started once the start-up CRDs are installed; `None` when not wanted.
        controller_manager: Option<PathBuf>,
    },
    Existing,
    /// Held for its Drop, which removes the container.
    #[cfg(feature = "containers")]
    K3s {
        _k3s: Box<K3sCluster>,
    },
    /// The node is dropped before the control plane (fields drop in
    /// order), so its kubelet stops while the API server still answers.
    #[cfg(feature = "containers")]
    Node {
        node: Option<Box<crate::node::Node>>,
        plane: Box<LocalControlPlane>,
        /// What starts the node once the start-up CRDs are installed.
        pending: Option<PendingNode>,
    },
    /// Held for its Drop, which removes the containers.
    #[cfg(feature = "containers")]
    Containers {
        plane: Box<ContainerControlPlane>,
        /// Whether kube-controller-manager is to run.
        garbage_collector: bool,
    },
}

/// The node backend's parts, between the API server's start and the
/// node's.
#[cfg(feature = "containers")]
struct PendingNode {
    lock: crate::node::NodeLock,
    assets: crate::node::NodeAssets,
    controller_manager: PathBuf,
    host: std::net::Ipv4Addr,
    /// The Docker bridge's subnet, where pods get their addresses.
    pods_subnet: String,
    ready_timeout: Duration,
}

/// A Kubernetes API server for one test: started on demand, torn down (all
/// processes killed) on drop. When the dropping thread is panicking (a
/// failed test), the local control plane's logs are kept and their folder
/// printed.
pub struct TestCluster {
    client: Client,
    kubeconfig: PathBuf,
    backend: Backend,
    version: Info,
    inner: Inner,
    installed_crds: Vec<String>,
    startup: Duration,
    /// The conversion webhook of this cluster's CRDs, started when the
    /// first CRD that converts by webhook is installed.
    conversion: tokio::sync::OnceCell<ConversionStandIn>,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("backend", &self.backend)
            .field("kubeconfig", &self.kubeconfig)
            .field("version", &self.version.git_version)
            .finish_non_exhaustive()
    }
}

impl TestCluster {
    /// A cluster from the environment with the package's CRDs installed.
    pub async fn start() -> Result<Self, ClusterError> {
        ClusterOptions::default().start().await
    }

    /// A cluster from the environment with no CRD installed by the harness.
    pub async fn start_empty() -> Result<Self, ClusterError> {
        ClusterOptions::default()
            .without_package_crds()
            .start()
            .await
    }

    /// Options for anything else.
    pub fn options() -> ClusterOptions {
        ClusterOptions::default()
    }

    /// A client authenticated as cluster admin.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// A kubeconfig file for this cluster (for kubectl or a provider binary
    /// started as a separate process).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// How containers reach this cluster's API server from its Docker
    /// network; only the container backend has one.
    #[cfg(feature = "containers")]
    pub fn in_network(&self) -> Option<crate::containers::InNetwork> {
        match &self.inner {
            Inner::Containers { plane, .. } => Some(plane.in_network()),
            _ => None,
        }
    }

    /// The server's `/version`.
    pub fn server_version(&self) -> &Info {
        &self.version
    }

    /// Whether this server enforces CEL rules; when not, CRDs are installed
    /// without them.
    pub fn supports_cel_rules(&self) -> bool {
        crds::supports_cel_rules(&self.version.major, &self.version.minor)
    }

    /// Time from the start call until the cluster was usable, CRDs included.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Names of the CRDs installed at start.
    pub fn installed_crds(&self) -> &[String] {
        &self.installed_crds
    }

    /// Whether owned objects are garbage-collected: always on an existing
    /// cluster or K3s; locally only with kube-controller-manager running.
    pub fn has_garbage_collector(&self) -> bool {
        match &self.inner {
            Inner::Local {
                controller_manager, ..
            } => controller_manager.is_some(),
            #[cfg(feature = "containers")]
            Inner::Containers {
                garbage_collector, ..
            } => *garbage_collector,
            _ => true,
        }
    }

    /// The node backend's node: how long it took to be Ready, and the
    /// folder of its kubelet's state (where its mounts were).
    #[cfg(feature = "containers")]
    pub fn node(&self) -> Option<(Duration, PathBuf)> {
        match &self.inner {
            Inner::Node {
                node: Some(node), ..
            } => Some((node.startup, node.state_dir().to_path_buf())),
            _ => None,
        }
    }

    /// The control-plane logs folder (local backend only).
    pub fn logs_dir(&self) -> Option<PathBuf> {
        match &self.inner {
            Inner::Local { plane, .. } => Some(plane.logs_dir()),
            #[cfg(feature = "containers")]
            Inner::Node { plane, .. } => Some(plane.logs_dir()),
            _ => None,
        }
    }

    /// Local control-plane processes that have died, with their logs; for
    /// error messages of tests that time out waiting for the cluster.
    pub fn dead_components(&mut self) -> Vec<String> {
        match &mut self.inner {
            Inner::Local { plane, .. } => plane.exited_components(),
            #[cfg(feature = "containers")]
            Inner::Node { plane, .. } => plane.exited_components(),
            _ => Vec::new(),
        }
    }

    /// Process ids of the local control plane (empty for other backends),
    /// so tests can prove teardown leaves nothing running.
    pub fn process_ids(&self) -> Vec<u32> {
        match &self.inner {
            Inner::Local { plane, .. } => plane.process_ids(),
            _ => Vec::new(),
        }
    }

    /// Installs the CRDs of `package/crds` (when not done at start).
    pub async fn install_package_crds(&self) -> Result<Vec<String>, ClusterError> {
        self.install_crd_files(&crds::yaml_files(&crds::package_crds_dir())?)
            .await
    }

    /// Applies every CRD of these YAML files server-side and waits until all
    /// are Established. CEL rules are stripped (with a warning) when the
    /// server predates them. Returns the CRD names.
    pub async fn install_crd_files(&self, files: &[PathBuf]) -> Result<Vec<String>, ClusterError> {
        let mut docs = Vec::new();
        for file in files {
            docs.extend(crds::load_manifests(file)?);
        }
        self.install_wired(docs).await
    }

    /// Installs `crds`, those converting by webhook pointed at this
    /// cluster's conversion webhook.
    async fn install_wired(
        &self,
        crds: Vec<serde_json::Value>,
    ) -> Result<Vec<String>, ClusterError> {
        let webhook = if crds.iter().any(converts_by_webhook) {
            Some(self.conversion_target().await?)
        } else {
            None
        };
        crds::install(
            &self.client,
            crds,
            !self.supports_cel_rules(),
            webhook.as_ref(),
        )
        .await
    }

    /// Where this cluster's CRDs send conversions: the webhook the harness
    /// serves from this process for the cluster's life
    /// ([`crate::conversion::ConversionStandIn`]), started on first use.
    pub async fn conversion_target(&self) -> Result<WebhookTarget, ClusterError> {
        let standin = self
            .conversion
            .get_or_try_init(ConversionStandIn::start)
            .await?;
        Ok(standin.target().clone())
    }

    /// Points every installed CRD that converts by webhook at `target`
    /// instead (a provider's own webhook, for a test of it); returns their
    /// names.
    pub async fn point_conversions_at(
        &self,
        target: &WebhookTarget,
    ) -> Result<Vec<String>, ClusterError> {
        target.point_installed_crds(&self.client).await
    }

    /// Applies CRDs given as JSON (e.g. made from MRDs, as Crossplane makes
    /// them) server-side and waits until every one is Established. CEL
    /// rules are stripped (with a warning) when the server predates them.
    /// Returns the CRD names.
    pub async fn install_crd_values(
        &self,
        crds: Vec<serde_json::Value>,
    ) -> Result<Vec<String>, ClusterError> {
        self.install_wired(crds).await
    }

    /// Applies one CRD (e.g. `VPC::crd()`) and waits until it is Established.
    pub async fn install_crd(
        &self,
        crd: &CustomResourceDefinition,
    ) -> Result<String, ClusterError> {
        let mut value = serde_json::to_value(crd).map_err(|e| ClusterError::Manifest {
            path: PathBuf::from(format!(
                "<CustomResourceDefinition {}>",
                crd.metadata.name.as_deref().unwrap_or_default()
            )),
            reason: e.to_string(),
        })?;
        // The typed struct omits these two; server-side apply needs them.
        value["apiVersion"] = "apiextensions.k8s.io/v1".into();
        value["kind"] = "CustomResourceDefinition".into();
        let mut names = self.install_wired(vec![value]).await?;
        Ok(names.remove(0))
    }

    /// Deletes a CRD and waits until it and its objects are gone.
    pub async fn delete_crd(&self, name: &str) -> Result<(), ClusterError> {
        crds::delete(&self.client, name).await
    }

    /// Creates a namespace with a unique name starting with `prefix`, so
    /// tests sharing a cluster never collide. Returns its name.
    pub async fn create_namespace(&self, prefix: &str) -> Result<String, ClusterError> {
        let name = crate::names::unique_name(prefix);
        let namespace = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(|e| ClusterError::kube(format!("creating namespace {name}"), e))?;
        Ok(name)
    }

    async fn start_garbage_collector(&mut self) -> Result<(), ClusterError> {
        let minor = self.minor_version();
        match &mut self.inner {
            Inner::Local {
                plane,
                controller_manager: Some(binary),
            } => plane.start_controller_manager(binary, minor).await?,
            #[cfg(feature = "containers")]
            Inner::Containers {
                plane,
                garbage_collector: true,
            } => plane.start_controller_manager().await?,
            #[cfg(feature = "containers")]
            Inner::Node {
                node,
                plane,
                pending,
            } => {
                if let Some(parts) = pending.take() {
                    let extra = [
                        format!(
                            "--service-account-private-key-file={}",
                            plane.pki.service_account_key.display()
                        ),
                        format!("--root-ca-file={}", plane.pki.ca_cert.display()),
                        // A pod on a node that stops reporting is marked
                        // soon, so a killed kubelet shows in seconds.
                        "--node-monitor-grace-period=16s".to_owned(),
                    ];
                    plane
                        .start_controllers(
                            &parts.controller_manager,
                            minor,
                            crate::node::NODE_CONTROLLERS,
                            &extra,
                        )
                        .await?;
                    let started = crate::node::Node::start(
                        &parts.assets,
                        parts.lock,
                        &self.client,
                        &plane.kubeconfig,
                        (parts.host, &parts.pods_subnet),
                        &plane.logs_dir(),
                        parts.ready_timeout,
                    )
                    .await?;
                    *node = Some(Box::new(started));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn minor_version(&self) -> u32 {
        self.version
            .minor
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_set_means_the_local_control_plane() {
        assert_eq!(Backend::select(None, None).unwrap(), Backend::Local);
        assert_eq!(Backend::select(Some(""), Some("")).unwrap(), Backend::Local);
        assert_eq!(
            Backend::select(Some("local"), None).unwrap(),
            Backend::Local
        );
    }

    #[test]
    fn a_kubeconfig_selects_the_existing_cluster() {
        let expected = Backend::Kubeconfig(PathBuf::from("/tmp/kc"));
        assert_eq!(Backend::select(None, Some("/tmp/kc")).unwrap(), expected);
        assert_eq!(
            Backend::select(Some("kubeconfig"), Some("/tmp/kc")).unwrap(),
            expected
        );
    }

    #[test]
    fn k3s_containers_and_node_are_chosen_explicitly() {
        assert_eq!(Backend::select(Some("k3s"), None).unwrap(), Backend::K3s);
        assert_eq!(
            Backend::select(Some("containers"), None).unwrap(),
            Backend::Containers
        );
        assert_eq!(Backend::select(Some("node"), None).unwrap(), Backend::Node);
        assert!(Backend::select(Some("node"), Some("/tmp/kc")).is_err());
    }

    #[test]
    fn conflicting_or_unknown_choices_are_errors() {
        for (cluster, kubeconfig, needle) in [
            (
                Some("k3s"),
                Some("/tmp/kc"),
                "conflicts with E2E_KUBECONFIG",
            ),
            (
                Some("local"),
                Some("/tmp/kc"),
                "conflicts with E2E_KUBECONFIG",
            ),
            (Some("kubeconfig"), None, "needs E2E_KUBECONFIG"),
            (Some("kind"), None, "\"kind\" is not one of"),
        ] {
            let err = Backend::select(cluster, kubeconfig).unwrap_err();
            assert!(
                matches!(err, ClusterError::InvalidSelection(_)),
                "{cluster:?} {kubeconfig:?}: {err}"
            );
            assert!(err.to_string().contains(needle), "{err}");
        }
    }
}

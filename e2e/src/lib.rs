//! End-to-end test harness: a real Kubernetes API server for each test.
//!
//! By default [`TestCluster::start`] runs etcd, kube-apiserver and
//! kube-controller-manager as local processes (the envtest pattern; binaries
//! from `KUBEBUILDER_ASSETS` or the cache of `e2e/control-plane/install.sh`),
//! installs the package's CRDs and hands out a [`kube::Client`] and a
//! kubeconfig file. `E2E_KUBECONFIG` targets an existing cluster instead and
//! `E2E_CLUSTER=k3s` starts K3s through testcontainers, and
//! `E2E_CLUSTER=containers` the control plane and fakecloud from
//! docker-compose.yml's images, and `E2E_CLUSTER=node` the local control
//! plane with a real node (kubelet over the Docker engine, scheduler,
//! kube-proxy), where Deployments run as pods ([`node`]). See
//! `e2e/README.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), e2e::ClusterError> {
//! let cluster = e2e::TestCluster::start().await?;
//! let client = cluster.client();
//! let name = e2e::unique_name("vpc");
//! # let _ = (client, name);
//! # Ok(()) }
//! ```

pub mod apiserver_metrics;
pub mod assets;
pub mod browser;
mod cluster;
pub mod compose;
#[cfg(feature = "containers")]
pub mod containers;
pub mod conversion;
pub mod crds;
pub mod crossplane_standin;
mod error;
pub mod grants;
mod http;
#[cfg(feature = "containers")]
mod k3s;
mod kubeconfig;
mod local;
mod managed;
mod names;
#[cfg(feature = "containers")]
pub mod node;
pub mod objects;
mod pki;
pub mod process;
pub mod provider_process;
mod readyz;
pub mod reference;
pub mod scenarios;
pub mod scope;
pub mod world;

pub use assets::AssetSearch;
pub use cluster::{
    Backend, CLUSTER_ENV, ClusterOptions, DEFAULT_READY_TIMEOUT, KUBECONFIG_ENV, TestCluster,
};
pub use error::ClusterError;
pub use names::unique_name;

/// Default log filter. kube's client logs every 5xx answer as an error,
/// including the expected ones while `/readyz` is not yet ok; the errors
/// that matter reach the caller as `Result`s anyway.
pub const DEFAULT_LOG_FILTER: &str = "info,kube_client::client::builder=off";

/// Routes `tracing` output to the test's captured output (`RUST_LOG`
/// filters; default [`DEFAULT_LOG_FILTER`]). Safe to call from every test.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

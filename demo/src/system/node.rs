//! `--on-node`: the system with a real node, and the provider running as
//! the package's pods on it, the way Crossplane runs a provider.
//!
//! - The control plane plus kube-scheduler, a kubelet over this machine's
//!   Docker engine and kube-proxy: the e2e harness's node backend
//!   ([`e2e::Backend::Node`]; one node per machine, root, cgroup v1).
//! - The package (`.xpkg`) built from the provider's image and installed by
//!   the stand-in for Crossplane's package manager
//!   ([`e2e::crossplane_standin::runtime`]): a Deployment of one pod, its
//!   ServiceAccount and RBAC, and its webhook Service, to which the CRDs
//!   the MRD stand-in makes later send their conversions.
//! - fakecloud in this process, on the Docker bridge's address, where the
//!   pods reach it.
//!
//! The provider starts before any of its CRDs exists, as in the local
//! demo, so the late-activation story plays the same way.

use std::net::SocketAddr;
use std::time::Duration;

use e2e::crossplane_standin::StandIn;
use e2e::crossplane_standin::runtime::{ProviderPackage, ProviderRuntime, is_pod_ready};
use e2e::{Backend, TestCluster};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use super::{LocalCloud, NAMESPACE, Provider, System};
use crate::{DemoError, DemoOptions, Progress, RunDir};

/// How long the provider's pod may take from the install to Ready.
const POD_READY: Duration = Duration::from_secs(120);
/// The port the image serves `/metrics` on, on every interface.
const METRICS_PORT: u16 = 8080;

/// The provider's pods: the Deployment the package manager's stand-in made.
pub(super) struct Pods {
    runtime: ProviderRuntime,
}

/// Starts the node, fakecloud, the package's Deployment and the MRD stand-in.
pub(super) async fn start(
    options: DemoOptions,
    run_dir: &RunDir,
    progress: &Progress,
) -> Result<System, DemoError> {
    progress.step(
        "making the images (scripts/images, then scripts/host-images from this checkout's binaries; the first time, the whole workspace's build: many minutes)",
    );
    blocking(e2e::containers::build_images).await??;
    progress.step(
        "starting the control plane and a node: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet over this machine's Docker engine, kube-proxy",
    );
    let cluster = TestCluster::options()
        .backend(Backend::Node)
        .without_package_crds()
        .start()
        .await?;
    let (node_ready, _) = cluster.node().expect("the node backend has a node");
    progress.step(format!(
        "node Ready {:.1}s after the API server: Kubernetes {}, no CRDs installed",
        node_ready.as_secs_f64(),
        cluster.server_version().git_version,
    ));

    let host = e2e::node::bridge_address()?;
    let cloud = LocalCloud::config(run_dir, &options, Some(SocketAddr::new(host.into(), 0)));
    let cloud_server = fakecloud::spawn(cloud.config).await?;
    progress.step(format!(
        "fakecloud serving {} (in-process, on the Docker bridge where the pods reach it; SQLite {})",
        cloud_server.base_url(),
        cloud.database.display()
    ));
    let poll_interval = options.poll_interval;
    let mut system = System::with_local_cloud(cluster, options, cloud_server, cloud.database);
    system.create_credentials().await?;

    progress.step("building the package (.xpkg) from the provider's image and loading it");
    let out = run_dir.path().to_path_buf();
    let package = blocking(move || ProviderPackage::build(&out)).await??;
    let client = system.cluster.client();
    let runtime =
        ProviderRuntime::install(&client, &package, NAMESPACE, &runtime_config(poll_interval))
            .await?;
    // On an error the node's teardown removes the pods with the cluster.
    let ready_in = runtime.wait_ready(&client, 1, POD_READY).await?;
    progress.step(format!(
        "provider installed as Crossplane installs a package (stand-in for its package manager): Deployment {} in {NAMESPACE}, image {}, its pod Ready by its readiness probe in {:.1}s",
        runtime.deployment,
        package.image,
        ready_in.as_secs_f64()
    ));
    system.standin = Some(StandIn::start(client, Some(runtime.webhook.clone())).await?);
    system.provider = Some(Provider::Pods(Pods { runtime }));
    progress.step(
        "Crossplane stand-in running in-process: CRDs ManagedResourceDefinition and ManagedResourceActivationPolicy installed; the CRDs it makes send conversions to the provider's Service",
    );
    Ok(system)
}

/// A `DeploymentRuntimeConfig`'s spec: one pod of the runtime container
/// with the demo's poll intervals and a readiness probe on `/readyz` (the
/// image serves it on 8081).
fn runtime_config(poll_interval: Duration) -> Value {
    json!({ "deploymentTemplate": { "spec": {
        "replicas": 1,
        "selector": {},
        "template": { "spec": { "containers": [{
            "name": "package-runtime",
            "args": [
                format!("--poll-interval={}ms", poll_interval.as_millis()),
                "--pending-poll-interval=250ms",
            ],
            "readinessProbe": {
                "httpGet": { "path": "/readyz", "port": 8081 },
                "periodSeconds": 1,
            },
        }] } },
    } } })
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DemoError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| DemoError::Unexpected(format!("a blocking step failed: {e}")))
}

impl Pods {
    /// `host:port` of the ready pod's metrics (the pod's IP on the Docker
    /// bridge): looked up each time, so a replaced pod is found too.
    pub(super) async fn metrics_addr(&self, client: Client) -> Result<String, DemoError> {
        let pods = self.runtime.pods(&client).await?;
        pods.iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && is_pod_ready(p))
            .find_map(|p| p.status.as_ref()?.pod_ip.clone())
            .map(|ip| format!("{ip}:{METRICS_PORT}"))
            .ok_or_else(|| {
                DemoError::Unexpected(format!(
                    "no ready pod of Deployment {}",
                    self.runtime.deployment
                ))
            })
    }

    /// An error when a provider container restarted or no pod is ready:
    /// the provider crashed or failed its probe mid-demo.
    pub(super) async fn ensure_running(&self, client: Client) -> Result<(), DemoError> {
        let pods = self.runtime.pods(&client).await?;
        for pod in &pods {
            let statuses = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.clone())
                .unwrap_or_default();
            if let Some(restarted) = statuses.iter().find(|c| c.restart_count > 0) {
                return Err(DemoError::Unexpected(format!(
                    "the provider's container in pod {} restarted {} times (last state {:?}); `docker logs` of its containers has why",
                    pod.name_any(),
                    restarted.restart_count,
                    restarted.last_state
                )));
            }
        }
        if !pods.iter().any(is_pod_ready) {
            return Err(DemoError::Unexpected(format!(
                "no ready pod of Deployment {}",
                self.runtime.deployment
            )));
        }
        Ok(())
    }

    pub(super) fn hint(&self) -> String {
        format!(
            "Deployment {} in {NAMESPACE} (kubectl -n {NAMESPACE} get deploy,pods,svc), image {}",
            self.runtime.deployment, self.runtime.package.image
        )
    }

    /// Removes the Deployment and the rest the install made (the node's
    /// teardown then removes the pods' containers).
    pub(super) async fn uninstall(self, client: Client) {
        if let Err(error) = self.runtime.uninstall(&client).await {
            tracing::warn!(%error, "removing the provider's Deployment");
        }
    }
}

//! The K3s backend (`E2E_CLUSTER=k3s`): a real single-node cluster in a
//! privileged container started through testcontainers. Machines without a
//! Docker engine get a clear error, never a skipped test.

use std::path::PathBuf;

use kube::Client;
use kube::config::Kubeconfig;
use tempfile::TempDir;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ImageExt};
use testcontainers_modules::k3s::{K3s, KUBE_SECURE_PORT};

use crate::error::ClusterError;
use crate::kubeconfig;

pub(crate) struct K3sCluster {
    /// Removed from the Docker engine when dropped.
    _container: ContainerAsync<K3s>,
    /// Holds K3s's kubeconfig and the rewritten one the tests use.
    _conf_dir: TempDir,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) client: Client,
}

impl std::fmt::Debug for K3sCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("K3sCluster")
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

impl K3sCluster {
    pub(crate) async fn start() -> Result<Self, ClusterError> {
        let conf_dir = tempfile::Builder::new()
            .prefix("e2e-k3s-")
            .tempdir()
            .map_err(|e| ClusterError::io("creating the K3s config folder", e))?;
        let container = K3s::default()
            .with_conf_mount(conf_dir.path())
            .with_privileged(true)
            .with_userns_mode("host")
            .start()
            .await
            .map_err(|e| ClusterError::K3s(e.to_string()))?;
        let port = container
            .get_host_port_ipv4(KUBE_SECURE_PORT)
            .await
            .map_err(|e| ClusterError::K3s(format!("reading the API server port: {e}")))?;
        let original = container
            .image()
            .read_kube_config()
            .map_err(|e| ClusterError::K3s(format!("reading K3s's kubeconfig: {e}")))?;
        let path = conf_dir.path().join("kubeconfig-host.yaml");
        let mut config =
            Kubeconfig::from_yaml(&original).map_err(|e| ClusterError::Kubeconfig {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        // K3s writes its in-container address; point at the mapped host port.
        for named in &mut config.clusters {
            if let Some(cluster) = named.cluster.as_mut() {
                cluster.server = Some(format!("https://127.0.0.1:{port}"));
            }
        }
        let yaml = serde_yaml::to_string(&config).map_err(|e| ClusterError::Kubeconfig {
            path: path.clone(),
            reason: format!("serialising: {e}"),
        })?;
        crate::pki::write_private(&path, &yaml)?;
        let client = kubeconfig::client_from(config, &path).await?;
        Ok(Self {
            _container: container,
            _conf_dir: conf_dir,
            kubeconfig: path,
            client,
        })
    }
}

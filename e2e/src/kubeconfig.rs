//! Kubeconfig files: written for the local control plane (so kubectl, the
//! provider binary and kube-controller-manager can reach it exactly as a
//! test does) and read for an existing cluster.

use std::path::Path;

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::error::ClusterError;

/// Writes a self-contained kubeconfig (CA embedded) that authenticates with
/// a bearer token. The file is private to the user: it holds the token.
pub(crate) fn write_token_kubeconfig(
    path: &Path,
    server: &str,
    ca_pem: &str,
    token: &str,
) -> Result<(), ClusterError> {
    let ca_data = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": server,
            "certificate-authority-data": ca_data,
        }}],
        "users": [{"name": "e2e-admin", "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e-admin"}}],
        "current-context": "e2e",
    });
    let yaml = serde_yaml::to_string(&doc).map_err(|e| ClusterError::Kubeconfig {
        path: path.to_path_buf(),
        reason: format!("serialising: {e}"),
    })?;
    crate::pki::write_private(path, &yaml)
}

/// A client for the current context of the kubeconfig at `path`.
pub(crate) async fn client_from_file(path: &Path) -> Result<Client, ClusterError> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| ClusterError::Kubeconfig {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    client_from(kubeconfig, path).await
}

/// The client a provider instance makes (`runtime::kube_client`, as the
/// provider binary does) for the current context of the kubeconfig at
/// `path`: the provider a test runs in-process talks to the API server as
/// the deployed one does.
pub(crate) async fn provider_client_from_file(path: &Path) -> Result<Client, ClusterError> {
    let failed = |reason: String| ClusterError::Kubeconfig {
        path: path.to_path_buf(),
        reason,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| failed(e.to_string()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| failed(e.to_string()))?;
    runtime::kube_client::build(config).map_err(|e| failed(e.to_string()))
}

/// A client for the current context of `kubeconfig` (read from `path`,
/// named in errors).
pub(crate) async fn client_from(
    kubeconfig: Kubeconfig,
    path: &Path,
) -> Result<Client, ClusterError> {
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| ClusterError::Kubeconfig {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    Client::try_from(config).map_err(|e| ClusterError::kube("building a client", e))
}

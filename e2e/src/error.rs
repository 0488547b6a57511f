//! The one error type of the harness: every variant says what was being done
//! and, where a process was involved, where its log is, so a failing e2e run
//! can be diagnosed from the message alone.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// What went wrong while starting, using or tearing down a test cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No folder held the control-plane binaries. Never turned into a skip:
    /// a test that needs the control plane must fail without one.
    #[error(
        "control-plane binaries not found; {searched}.\n\
         Provision them with `e2e/control-plane/install.sh` (Debian; prints the folder, \
         then `export KUBEBUILDER_ASSETS=<folder>`), point KUBEBUILDER_ASSETS at a folder \
         holding etcd, kube-apiserver and kube-controller-manager, or set E2E_KUBECONFIG \
         to use an existing cluster"
    )]
    AssetsNotFound {
        /// Every folder looked at and what it lacked, in search order.
        searched: String,
    },

    /// `E2E_CLUSTER` / `E2E_KUBECONFIG` name no usable backend.
    #[error("invalid e2e cluster selection: {0}")]
    InvalidSelection(String),

    /// A file or folder operation failed.
    #[error("{context}: {error}")]
    Io {
        context: String,
        error: std::io::Error,
    },

    /// The conversion webhook stand-in could not start.
    #[error("starting the conversion webhook stand-in: {0}")]
    Webhook(String),

    /// Generating the test PKI (CA, serving certificate, service-account key).
    #[error("generating {what}: {error}")]
    Pki {
        what: &'static str,
        error: rcgen::Error,
    },

    /// A control-plane binary could not be started at all.
    #[error("starting {component} ({binary}): {error}")]
    Spawn {
        component: &'static str,
        binary: PathBuf,
        error: std::io::Error,
    },

    /// A control-plane process exited while the harness still needed it.
    #[error("{component} exited with {status} before the cluster was ready; log {log:?}:\n{tail}")]
    ExitedEarly {
        component: &'static str,
        status: ExitStatus,
        log: PathBuf,
        tail: String,
    },

    /// The API server did not answer `/readyz` with `ok` in time.
    #[error(
        "kube-apiserver not ready after {waited:?} (last answer: {last}); logs in {logs:?}:\n{tail}"
    )]
    NotReady {
        waited: Duration,
        last: String,
        logs: PathBuf,
        tail: String,
    },

    /// Reading or using a kubeconfig.
    #[error("kubeconfig {path:?}: {reason}")]
    Kubeconfig { path: PathBuf, reason: String },

    /// A request to the API server failed.
    #[error("{context}: {error}")]
    Kube { context: String, error: kube::Error },

    /// Watching for a condition failed.
    #[error("{context}: {error}")]
    Wait {
        context: String,
        error: kube::runtime::wait::Error,
    },

    /// A step of the node backend (`E2E_CLUSTER=node`) failed.
    #[error("E2E_CLUSTER=node: {what}: {reason}")]
    Node { what: String, reason: String },

    /// The node backend's node did not become Ready and schedulable.
    #[error("node {node} not Ready and schedulable after {waited:?}: {last}")]
    NodeNotReady {
        node: &'static str,
        waited: Duration,
        last: String,
    },

    /// A YAML manifest could not be read as Kubernetes objects.
    #[error("manifest {path:?}: {reason}")]
    Manifest { path: PathBuf, reason: String },

    /// A CRD did not reach the wanted state in time.
    #[error("CRD {name}: not {wanted} after {waited:?}")]
    CrdTimeout {
        name: String,
        wanted: &'static str,
        waited: Duration,
    },

    /// Starting K3s through testcontainers failed (typically: no Docker engine).
    #[error(
        "E2E_CLUSTER=k3s: could not start K3s through testcontainers ({0}). \
         K3s needs a reachable Docker engine with privileged containers; \
         unset E2E_CLUSTER to use the local control plane instead"
    )]
    K3s(String),

    /// An image the container backend runs is not on the Docker engine.
    /// Never pulled: there may be no registry, and a pull would hide that
    /// the project's own images were not built.
    #[error("image {image} is not on the Docker engine; make it with {make}")]
    ImageMissing { image: String, make: &'static str },

    /// The TokenRequest API answered without a token for this account.
    #[error("the TokenRequest API granted no token for ServiceAccount {0}")]
    NoToken(String),

    /// The container backend could not do `what` (no Docker engine, ...).
    #[error("E2E_CLUSTER=containers: {what}: {reason}")]
    Containers { what: String, reason: String },

    /// The API server in its container did not answer `/readyz` in time.
    #[error(
        "kube-apiserver (container) not ready after {waited:?} (last answer: {last}); its last log lines:\n{tail}"
    )]
    ContainerNotReady {
        waited: Duration,
        last: String,
        tail: String,
    },
}

impl ClusterError {
    pub(crate) fn io(context: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            error,
        }
    }

    pub(crate) fn kube(context: impl Into<String>, error: kube::Error) -> Self {
        Self::Kube {
            context: context.into(),
            error,
        }
    }
}

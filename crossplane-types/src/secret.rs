//! Pointers to Kubernetes Secrets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Secret, by namespace and name (a cluster-scoped resource's
/// `writeConnectionSecretToRef`): the namespace cannot be implied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretReference {
    /// Name of the Secret.
    pub name: String,
    /// Namespace of the Secret.
    pub namespace: String,
}

/// One key of a Secret (`masterPasswordSecretRef`, ProviderConfig
/// credentials).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeySelector {
    /// Namespace of the Secret.
    pub namespace: String,
    /// Name of the Secret.
    pub name: String,
    /// The key within the Secret's data.
    pub key: String,
}

/// A Secret in the resource's own namespace, by name (a namespaced
/// resource's `writeConnectionSecretToRef`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalSecretReference {
    /// Name of the Secret.
    pub name: String,
}

/// One key of a Secret in the resource's own namespace (a namespaced
/// resource's `masterPasswordSecretRef`, a namespaced ProviderConfig's
/// credentials): another namespace's Secrets are out of reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalSecretKeySelector {
    /// Name of the Secret.
    pub name: String,
    /// The key within the Secret's data.
    pub key: String,
}

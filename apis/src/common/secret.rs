//! Pointers to Kubernetes Secrets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Secret, by namespace and name (`writeConnectionSecretToRef`).
///
/// MRs are cluster-scoped, so the namespace cannot be implied.
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

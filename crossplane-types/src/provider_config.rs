//! What every kind of ProviderConfig shares: where its credentials come
//! from, and its status (how many managed resources use it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::Condition;
use crate::rules::with_rule;
use crate::scope::Scope;

/// Where the credentials come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CredentialsSource {
    /// The credentials are read from `secretRef`.
    Secret,
    /// No credentials: for an external system that checks none.
    None,
}

/// The credentials a ProviderConfig names, as every Crossplane provider
/// spells them (`spec.credentials`). A namespaced ProviderConfig's Secret
/// is in its own namespace (`S` is [`crate::Namespaced`]); the
/// cluster-scoped ones name the Secret's namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = with_rule(kube::core::Rule::new("self.source != 'Secret' || has(self.secretRef)").message("secretRef is required when source is Secret")))]
pub struct ProviderCredentials<S: Scope> {
    /// `Secret` or `None`.
    pub source: CredentialsSource,
    /// The Secret key holding the credentials; required when `source` is
    /// `Secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<S::SecretKeySelector>,
}

/// The observed state of a ProviderConfig.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigStatus {
    /// How many managed resources use this ProviderConfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<i64>,
    /// Conditions of the ProviderConfig.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

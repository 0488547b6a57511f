//! The `spec` fields every managed resource shares.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::policy::{DeletionPolicy, ManagementAction, default_management_policies};
use crate::reference::{NamespacedProviderConfigReference, ProviderConfigReference};
use crate::secret::{LocalSecretReference, SecretReference};

/// The Crossplane fields of a cluster-scoped (legacy) managed resource's
/// `spec`, flattened into each kind's spec beside `forProvider` and
/// `initProvider`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// What Crossplane may do to the external resource: `["*"]` (default)
    /// for everything, `["Observe"]` to only observe, `[]` to pause.
    #[serde(default = "default_management_policies")]
    pub management_policies: Vec<ManagementAction>,
    /// What happens to the external resource when this object is deleted.
    /// `Orphan` wins over a `Delete` in `managementPolicies`.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// The `ProviderConfig` holding the endpoint and credentials to use.
    #[serde(default)]
    pub provider_config_ref: ProviderConfigReference,
    /// The Secret to write this resource's connection details to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_connection_secret_to_ref: Option<SecretReference>,
}

impl Default for ResourceSpec {
    fn default() -> Self {
        Self {
            management_policies: default_management_policies(),
            deletion_policy: DeletionPolicy::default(),
            provider_config_ref: ProviderConfigReference::default(),
            write_connection_secret_to_ref: None,
        }
    }
}

/// The Crossplane fields of a namespaced managed resource's `spec`
/// (crossplane-runtime v2): no `deletionPolicy` (leaving `Delete` out of
/// `managementPolicies` orphans), a typed `providerConfigRef`, and a
/// connection Secret that is always in the resource's namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedResourceSpec {
    /// What Crossplane may do to the external resource: `["*"]` (default)
    /// for everything, `["Observe"]` to only observe, `[]` to pause; leave
    /// out `Delete` to keep the external resource when this one is deleted.
    #[serde(default = "default_management_policies")]
    pub management_policies: Vec<ManagementAction>,
    /// The ProviderConfig or ClusterProviderConfig holding the endpoint and
    /// credentials to use; `{kind: ClusterProviderConfig, name: default}`
    /// when unset.
    #[serde(default)]
    pub provider_config_ref: NamespacedProviderConfigReference,
    /// The Secret, in this resource's namespace, to write its connection
    /// details to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_connection_secret_to_ref: Option<LocalSecretReference>,
}

impl Default for NamespacedResourceSpec {
    fn default() -> Self {
        Self {
            management_policies: default_management_policies(),
            provider_config_ref: NamespacedProviderConfigReference::default(),
            write_connection_secret_to_ref: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_spec_takes_the_crossplane_defaults() {
        let spec: ResourceSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec, ResourceSpec::default());
        assert_eq!(spec.management_policies, vec![ManagementAction::All]);
        assert_eq!(spec.deletion_policy, DeletionPolicy::Delete);
        assert_eq!(spec.provider_config_ref.name, "default");
    }

    #[test]
    fn an_empty_policy_list_stays_empty() {
        let spec: ResourceSpec = serde_json::from_str(r#"{"managementPolicies":[]}"#).unwrap();
        assert!(spec.management_policies.is_empty());
    }
}

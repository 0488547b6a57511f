//! The two scopes a managed resource comes in. Crossplane v2 namespaces
//! managed resources (groups `*.m.crossplane.io`): an application team
//! applies its own resources in its own namespace. The cluster-scoped kinds
//! (groups without `.m`) are the legacy ones, kept for existing users.
//!
//! The kinds are written once: the few spec fields whose shape depends on
//! the scope (references, selectors, Secret keys, the Crossplane fields)
//! are the associated types of [`Scope`], and each kind's parameters are
//! generic over it. Everything else (`forProvider` fields, observations,
//! rules, the cloud calls) is shared.

use std::fmt::Debug;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::policy::{DeletionPolicy, ManagementAction};
use crate::reference::{
    NamespacedProviderConfigReference, NamespacedReference, NamespacedSelector, Reference, Selector,
};
use crate::secret::{
    LocalSecretKeySelector, LocalSecretReference, SecretKeySelector, SecretReference,
};
use crate::spec::{NamespacedResourceSpec, ResourceSpec};

/// What every scope-dependent spec type is: plain data with a schema.
pub trait SpecType:
    Clone + Debug + PartialEq + Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static
{
}

impl<T> SpecType for T where
    T: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + JsonSchema
        + Send
        + Sync
        + 'static
{
}

/// A scope: the shapes of the spec fields that differ between namespaced
/// and cluster-scoped managed resources.
///
/// The implementors are markers; they derive what the kinds' derives ask of
/// a type parameter, and never appear in a schema or on the wire.
pub trait Scope: SpecType + Copy + Default + Eq {
    /// Whether objects of this scope live in a namespace.
    const NAMESPACED: bool;
    /// A reference to another managed resource by name (`vpcIdRef`).
    type Reference: SpecType;
    /// A label selection of other managed resources (`vpcIdSelector`).
    type Selector: SpecType;
    /// One key of a Secret the resource reads (`masterPasswordSecretRef`).
    type SecretKeySelector: SpecType + LocateSecretKey;
    /// The Crossplane fields of the spec: policies, ProviderConfig,
    /// connection Secret.
    type Spec: SpecType + CommonSpec + Default;
}

/// The legacy scope: cluster-scoped managed resources, which name the
/// namespace of every Secret they touch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterScoped;

/// Crossplane v2's scope: namespaced managed resources, whose Secrets are
/// in their own namespace and whose references default to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Namespaced;

impl Scope for ClusterScoped {
    const NAMESPACED: bool = false;
    type Reference = Reference;
    type Selector = Selector;
    type SecretKeySelector = SecretKeySelector;
    type Spec = ResourceSpec;
}

impl Scope for Namespaced {
    const NAMESPACED: bool = true;
    type Reference = NamespacedReference;
    type Selector = NamespacedSelector;
    type SecretKeySelector = LocalSecretKeySelector;
    type Spec = NamespacedResourceSpec;
}

/// Which kind of ProviderConfig a managed resource uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderConfigKind {
    /// The legacy `ProviderConfig` (cluster-scoped, in the provider's own
    /// group), used by
    /// the legacy kinds.
    Legacy,
    /// The `ProviderConfig` of the provider's `.m.` group, in the managed
    /// resource's own namespace.
    Namespaced,
    /// The `ClusterProviderConfig` of the provider's `.m.` group.
    Cluster,
}

/// The ProviderConfig a managed resource uses, located: its kind, its
/// namespace (for [`ProviderConfigKind::Namespaced`] only) and its name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProviderConfigKey {
    /// Which kind it is.
    pub kind: ProviderConfigKind,
    /// Its namespace, when it is namespaced.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

/// A Secret, located: the legacy kinds name its namespace, the namespaced
/// ones take their own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretLocation {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub name: String,
}

/// One key of a Secret, located.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretKeyLocation {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub name: String,
    /// The key within the Secret's data.
    pub key: String,
}

/// The Crossplane spec fields as the runtime reads them, whatever the scope.
///
/// `namespace` is the managed resource's own (`None` for a cluster-scoped
/// one): where a namespaced resource's Secrets and ProviderConfig are.
pub trait CommonSpec {
    /// `managementPolicies`.
    fn management_policies(&self) -> &[ManagementAction];
    /// `deletionPolicy`; a namespaced resource has none (leaving `Delete`
    /// out of `managementPolicies` orphans), so it is always `Delete`.
    fn deletion_policy(&self) -> DeletionPolicy;
    /// The ProviderConfig to use.
    fn provider_config(&self, namespace: Option<&str>) -> ProviderConfigKey;
    /// The Secret to write connection details to, if any.
    fn connection_secret(&self, namespace: Option<&str>) -> Option<SecretLocation>;
}

/// Locates a Secret key a resource reads.
pub trait LocateSecretKey {
    /// Where the key is, for a resource in `namespace` (`None` when the
    /// resource is cluster-scoped).
    fn locate(&self, namespace: Option<&str>) -> SecretKeyLocation;
}

impl LocateSecretKey for SecretKeySelector {
    fn locate(&self, _: Option<&str>) -> SecretKeyLocation {
        SecretKeyLocation {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            key: self.key.clone(),
        }
    }
}

impl LocateSecretKey for LocalSecretKeySelector {
    /// Always in the resource's own namespace: a namespaced resource cannot
    /// name another namespace's Secret.
    fn locate(&self, namespace: Option<&str>) -> SecretKeyLocation {
        SecretKeyLocation {
            namespace: namespace.unwrap_or_default().to_owned(),
            name: self.name.clone(),
            key: self.key.clone(),
        }
    }
}

impl CommonSpec for ResourceSpec {
    fn management_policies(&self) -> &[ManagementAction] {
        &self.management_policies
    }

    fn deletion_policy(&self) -> DeletionPolicy {
        self.deletion_policy
    }

    fn provider_config(&self, _: Option<&str>) -> ProviderConfigKey {
        ProviderConfigKey {
            kind: ProviderConfigKind::Legacy,
            namespace: None,
            name: self.provider_config_ref.name.clone(),
        }
    }

    fn connection_secret(&self, _: Option<&str>) -> Option<SecretLocation> {
        self.write_connection_secret_to_ref
            .as_ref()
            .map(|SecretReference { name, namespace }| SecretLocation {
                namespace: namespace.clone(),
                name: name.clone(),
            })
    }
}

impl NamespacedProviderConfigReference {
    /// The ProviderConfig this names, for an object in `namespace`: a
    /// `ProviderConfig` is in that namespace, a `ClusterProviderConfig` in
    /// none. Shared by namespaced managed resources and the query kinds
    /// ([`crate::query`]), which name their ProviderConfig the same way.
    pub fn locate(&self, namespace: Option<&str>) -> ProviderConfigKey {
        let kind = match self.kind {
            crate::reference::ProviderConfigRefKind::ProviderConfig => {
                ProviderConfigKind::Namespaced
            }
            crate::reference::ProviderConfigRefKind::ClusterProviderConfig => {
                ProviderConfigKind::Cluster
            }
        };
        ProviderConfigKey {
            kind,
            namespace: (kind == ProviderConfigKind::Namespaced)
                .then(|| namespace.unwrap_or_default().to_owned()),
            name: self.name.clone(),
        }
    }
}

impl CommonSpec for NamespacedResourceSpec {
    fn management_policies(&self) -> &[ManagementAction] {
        &self.management_policies
    }

    fn deletion_policy(&self) -> DeletionPolicy {
        DeletionPolicy::Delete
    }

    fn provider_config(&self, namespace: Option<&str>) -> ProviderConfigKey {
        self.provider_config_ref.locate(namespace)
    }

    fn connection_secret(&self, namespace: Option<&str>) -> Option<SecretLocation> {
        self.write_connection_secret_to_ref
            .as_ref()
            .map(|LocalSecretReference { name }| SecretLocation {
                namespace: namespace.unwrap_or_default().to_owned(),
                name: name.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespaced_spec_defaults_to_the_default_cluster_provider_config() {
        let spec: NamespacedResourceSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec.management_policies(), [ManagementAction::All]);
        assert_eq!(spec.deletion_policy(), DeletionPolicy::Delete);
        assert_eq!(
            spec.provider_config(Some("app")),
            ProviderConfigKey {
                kind: ProviderConfigKind::Cluster,
                namespace: None,
                name: "default".into()
            }
        );
    }

    #[test]
    fn a_namespaced_provider_config_and_secrets_are_in_the_resources_namespace() {
        let spec: NamespacedResourceSpec = serde_json::from_value(serde_json::json!({
            "providerConfigRef": { "kind": "ProviderConfig", "name": "team" },
            "writeConnectionSecretToRef": { "name": "conn" },
        }))
        .unwrap();
        assert_eq!(
            spec.provider_config(Some("app")),
            ProviderConfigKey {
                kind: ProviderConfigKind::Namespaced,
                namespace: Some("app".into()),
                name: "team".into()
            }
        );
        assert_eq!(
            spec.connection_secret(Some("app")),
            Some(SecretLocation {
                namespace: "app".into(),
                name: "conn".into()
            })
        );
        let key = LocalSecretKeySelector {
            name: "pw".into(),
            key: "password".into(),
        };
        assert_eq!(key.locate(Some("app")).namespace, "app");
    }

    #[test]
    fn a_provider_config_kind_is_one_of_the_two() {
        let bad = serde_json::json!({ "providerConfigRef": { "kind": "Other", "name": "x" } });
        assert!(serde_json::from_value::<NamespacedResourceSpec>(bad).is_err());
    }

    #[test]
    fn the_legacy_spec_locates_what_it_names() {
        let spec: ResourceSpec = serde_json::from_value(serde_json::json!({
            "deletionPolicy": "Orphan",
            "providerConfigRef": { "name": "team" },
            "writeConnectionSecretToRef": { "name": "conn", "namespace": "apps" },
        }))
        .unwrap();
        assert_eq!(spec.deletion_policy(), DeletionPolicy::Orphan);
        assert_eq!(spec.provider_config(None).kind, ProviderConfigKind::Legacy);
        assert_eq!(spec.connection_secret(None).unwrap().namespace, "apps");
    }
}

//! Cross-resource references: `*Ref` (by name) and `*Selector` (by labels).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When a reference is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ResolvePolicy {
    /// Resolve on every reconcile, following the referenced object.
    Always,
    /// Resolve only while the target field is unset (the behaviour when no
    /// policy is given).
    IfNotPresent,
}

/// Whether an unresolvable reference is an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ResolutionPolicy {
    /// An unresolvable reference stops the reconcile with `Synced=False`.
    #[default]
    Required,
    /// An unresolvable reference leaves the target field unset.
    Optional,
}

/// How a reference or selector is resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReferencePolicy {
    /// `Always` re-resolves on every reconcile; unset means `IfNotPresent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve: Option<ResolvePolicy>,
    /// `Required` (default) or `Optional`.
    #[serde(default)]
    pub resolution: ResolutionPolicy,
}

impl ReferencePolicy {
    /// Whether to resolve even though the target field already has a value.
    pub fn resolves_always(&self) -> bool {
        self.resolve == Some(ResolvePolicy::Always)
    }

    /// Whether an unresolvable reference may be skipped.
    pub fn is_optional(&self) -> bool {
        self.resolution == ResolutionPolicy::Optional
    }
}

/// A reference to another managed resource by `metadata.name`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reference {
    /// Name of the referenced object.
    pub name: String,
    /// How to resolve the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ReferencePolicy>,
}

/// Selects a managed resource to reference by labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    /// Select objects carrying all of these labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Select only objects with the same controller reference as this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_controller_ref: Option<bool>,
    /// How to resolve the selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ReferencePolicy>,
}

/// A reference from a namespaced managed resource to another by name; the
/// namespace defaults to the referencing resource's own (Crossplane v2
/// allows references across namespaces).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespacedReference {
    /// Name of the referenced object.
    pub name: String,
    /// Namespace of the referenced object; the referencing resource's own
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// How to resolve the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ReferencePolicy>,
}

/// Selects a managed resource to reference by labels, in one namespace:
/// the selecting resource's own unless `namespace` names another.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedSelector {
    /// Select objects carrying all of these labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Select only objects with the same controller reference as this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_controller_ref: Option<bool>,
    /// Namespace to select in; the selecting resource's own when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// How to resolve the selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ReferencePolicy>,
}

/// The kinds of ProviderConfig a namespaced managed resource can use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ProviderConfigRefKind {
    /// A `ProviderConfig` in the resource's own namespace.
    ProviderConfig,
    /// A cluster-wide `ClusterProviderConfig` (the default).
    #[default]
    ClusterProviderConfig,
}

/// Which ProviderConfig a namespaced managed resource uses (Crossplane v2):
/// `{kind: ClusterProviderConfig, name: default}` when unset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespacedProviderConfigReference {
    /// `ProviderConfig` (in the resource's namespace) or
    /// `ClusterProviderConfig`.
    pub kind: ProviderConfigRefKind,
    /// Name of the ProviderConfig.
    pub name: String,
}

impl Default for NamespacedProviderConfigReference {
    fn default() -> Self {
        Self {
            kind: ProviderConfigRefKind::default(),
            name: crate::well_known::DEFAULT_PROVIDER_CONFIG_NAME.to_owned(),
        }
    }
}

/// Which `ProviderConfig` a cluster-scoped MR uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderConfigReference {
    /// Name of the `ProviderConfig`.
    pub name: String,
}

impl Default for ProviderConfigReference {
    fn default() -> Self {
        Self {
            name: crate::well_known::DEFAULT_PROVIDER_CONFIG_NAME.to_owned(),
        }
    }
}

/// A reference to an object of any kind, as `ProviderConfigUsage` records
/// the MR that uses a `ProviderConfig`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedReference {
    /// API version of the referenced object.
    pub api_version: String,
    /// Kind of the referenced object.
    pub kind: String,
    /// Name of the referenced object.
    pub name: String,
    /// UID of the referenced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_without_fields_is_resolve_if_not_present_and_required() {
        let policy: ReferencePolicy = serde_json::from_str("{}").unwrap();
        assert!(!policy.resolves_always());
        assert!(!policy.is_optional());
    }

    #[test]
    fn policy_values_parse() {
        let policy: ReferencePolicy =
            serde_json::from_str(r#"{"resolve":"Always","resolution":"Optional"}"#).unwrap();
        assert!(policy.resolves_always());
        assert!(policy.is_optional());
        assert!(serde_json::from_str::<ReferencePolicy>(r#"{"resolve":"Sometimes"}"#).is_err());
    }

    #[test]
    fn the_default_provider_config_is_named_default() {
        assert_eq!(ProviderConfigReference::default().name, "default");
    }
}

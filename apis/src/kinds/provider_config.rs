//! Where fakecloud is and which API key to use, and which managed
//! resources use it.
//!
//! The legacy cluster-scoped kinds use `ProviderConfig` and
//! `ProviderConfigUsage` in `fakecloud.crossplane.io`. The namespaced kinds
//! (Crossplane v2) use the ones in `fakecloud.m.crossplane.io` ([`m`]): a
//! namespaced `ProviderConfig`, whose credentials are in its own namespace,
//! for one team; a `ClusterProviderConfig`, which the platform team
//! provides to every namespace; and their usages.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{ClusterScoped, Condition, ProviderConfigReference, Scope, TypedReference};
use crate::rules::with_rule;

/// Where the credentials come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CredentialsSource {
    /// The API key is read from `secretRef`.
    Secret,
    /// No credentials: for a fakecloud that does not check API keys.
    None,
}

/// The fakecloud API key to use. A namespaced ProviderConfig's Secret is in
/// its own namespace (`S` is [`crate::common::Namespaced`]); the
/// cluster-scoped ones name the Secret's namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = with_rule(kube::core::Rule::new("self.source != 'Secret' || has(self.secretRef)").message("secretRef is required when source is Secret")))]
pub struct ProviderCredentials<S: Scope> {
    /// `Secret` or `None`.
    pub source: CredentialsSource,
    /// The Secret key holding the API key; required when `source` is
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

/// `spec` of a ProviderConfig.
#[derive(CustomResource, JsonSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "fakecloud.crossplane.io",
    version = "v1alpha1",
    kind = "ProviderConfig",
    singular = "providerconfig",
    plural = "providerconfigs",
    status = "ProviderConfigStatus",
    derive = "PartialEq",
    doc = "How the provider reaches fakecloud: its endpoint and the API key to use.",
    category = "crossplane",
    category = "provider",
    category = "fakecloud",
    printcolumn = r#"{"name":"ENDPOINT","type":"string","jsonPath":".spec.endpoint"}"#,
    printcolumn = r#"{"name":"SECRET-NAME","type":"string","jsonPath":".spec.credentials.secretRef.name","priority":1}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigSpec {
    /// Base URL of the fakecloud API, e.g. `http://fakecloud:8080`.
    #[schemars(regex(pattern = r"^https?://"))]
    pub endpoint: String,
    /// The API key to use.
    pub credentials: ProviderCredentials<ClusterScoped>,
}

/// Records that a managed resource uses a ProviderConfig, so that the
/// ProviderConfig is not deleted from under it.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "fakecloud.crossplane.io",
    version = "v1alpha1",
    kind = "ProviderConfigUsage",
    singular = "providerconfigusage",
    plural = "providerconfigusages",
    no_spec,
    derive = "PartialEq",
    doc = "Records that a managed resource uses a ProviderConfig.",
    category = "crossplane",
    category = "provider",
    category = "fakecloud",
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"CONFIG-NAME","type":"string","jsonPath":".providerConfigRef.name"}"#,
    printcolumn = r#"{"name":"RESOURCE-KIND","type":"string","jsonPath":".resourceRef.kind"}"#,
    printcolumn = r#"{"name":"RESOURCE-NAME","type":"string","jsonPath":".resourceRef.name"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigUsageFields {
    /// The ProviderConfig in use.
    pub provider_config_ref: ProviderConfigReference,
    /// The managed resource using it.
    pub resource_ref: TypedReference,
}

/// The ProviderConfig kinds of the namespaced managed resources, in
/// `fakecloud.m.crossplane.io`.
pub mod m {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::{ProviderConfigStatus, ProviderCredentials};
    use crate::common::{
        ClusterScoped, Namespaced, NamespacedProviderConfigReference, TypedReference,
    };

    /// `spec` of a namespaced ProviderConfig.
    #[derive(CustomResource, JsonSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[kube(
        group = "fakecloud.m.crossplane.io",
        version = "v1alpha1",
        kind = "ProviderConfig",
        namespaced,
        singular = "providerconfig",
        plural = "providerconfigs",
        status = "ProviderConfigStatus",
        derive = "PartialEq",
        doc = "How the managed resources of one namespace reach fakecloud: its endpoint and the API key, from a Secret in the same namespace.",
        category = "crossplane",
        category = "provider",
        category = "fakecloud",
        printcolumn = r#"{"name":"ENDPOINT","type":"string","jsonPath":".spec.endpoint"}"#,
        printcolumn = r#"{"name":"SECRET-NAME","type":"string","jsonPath":".spec.credentials.secretRef.name","priority":1}"#,
        printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
    )]
    #[serde(rename_all = "camelCase")]
    pub struct ProviderConfigSpec {
        /// Base URL of the fakecloud API, e.g. `http://fakecloud:8080`.
        #[schemars(regex(pattern = r"^https?://"))]
        pub endpoint: String,
        /// The API key to use, from a Secret in this namespace.
        pub credentials: ProviderCredentials<Namespaced>,
    }

    /// `spec` of a ClusterProviderConfig.
    #[derive(CustomResource, JsonSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[kube(
        group = "fakecloud.m.crossplane.io",
        version = "v1alpha1",
        kind = "ClusterProviderConfig",
        singular = "clusterproviderconfig",
        plural = "clusterproviderconfigs",
        status = "ProviderConfigStatus",
        derive = "PartialEq",
        doc = "How namespaced managed resources in any namespace reach fakecloud: its endpoint and the API key to use.",
        category = "crossplane",
        category = "provider",
        category = "fakecloud",
        printcolumn = r#"{"name":"ENDPOINT","type":"string","jsonPath":".spec.endpoint"}"#,
        printcolumn = r#"{"name":"SECRET-NAME","type":"string","jsonPath":".spec.credentials.secretRef.name","priority":1}"#,
        printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
    )]
    #[serde(rename_all = "camelCase")]
    pub struct ClusterProviderConfigSpec {
        /// Base URL of the fakecloud API, e.g. `http://fakecloud:8080`.
        #[schemars(regex(pattern = r"^https?://"))]
        pub endpoint: String,
        /// The API key to use.
        pub credentials: ProviderCredentials<ClusterScoped>,
    }

    /// Records, in a namespaced managed resource's own namespace, that it
    /// uses a ProviderConfig or ClusterProviderConfig, so that neither is
    /// deleted from under it. Labelled `crossplane.io/provider-config` and
    /// `crossplane.io/provider-config-kind`.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "fakecloud.m.crossplane.io",
        version = "v1alpha1",
        kind = "ProviderConfigUsage",
        namespaced,
        singular = "providerconfigusage",
        plural = "providerconfigusages",
        no_spec,
        derive = "PartialEq",
        doc = "Records that a namespaced managed resource uses a ProviderConfig or ClusterProviderConfig.",
        category = "crossplane",
        category = "provider",
        category = "fakecloud",
        printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
        printcolumn = r#"{"name":"CONFIG-KIND","type":"string","jsonPath":".providerConfigRef.kind"}"#,
        printcolumn = r#"{"name":"CONFIG-NAME","type":"string","jsonPath":".providerConfigRef.name"}"#,
        printcolumn = r#"{"name":"RESOURCE-KIND","type":"string","jsonPath":".resourceRef.kind"}"#,
        printcolumn = r#"{"name":"RESOURCE-NAME","type":"string","jsonPath":".resourceRef.name"}"#
    )]
    #[serde(rename_all = "camelCase")]
    pub struct ProviderConfigUsageFields {
        /// The ProviderConfig or ClusterProviderConfig in use.
        pub provider_config_ref: NamespacedProviderConfigReference,
        /// The managed resource using it, in the usage's namespace.
        pub resource_ref: TypedReference,
    }

    /// The cluster-scoped usage kind of Crossplane v2's provider API,
    /// installed so that tools that list it find it. This provider records
    /// every use, of a ProviderConfig or a ClusterProviderConfig, as a
    /// [`ProviderConfigUsage`] in the managed resource's own namespace
    /// (where the resource's owner can see it, and from where Kubernetes
    /// collects it with the resource), so it never writes this kind.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "fakecloud.m.crossplane.io",
        version = "v1alpha1",
        kind = "ClusterProviderConfigUsage",
        singular = "clusterproviderconfigusage",
        plural = "clusterproviderconfigusages",
        no_spec,
        derive = "PartialEq",
        doc = "Records that a managed resource uses a ClusterProviderConfig.",
        category = "crossplane",
        category = "provider",
        category = "fakecloud",
        printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
        printcolumn = r#"{"name":"CONFIG-NAME","type":"string","jsonPath":".providerConfigRef.name"}"#,
        printcolumn = r#"{"name":"RESOURCE-KIND","type":"string","jsonPath":".resourceRef.kind"}"#,
        printcolumn = r#"{"name":"RESOURCE-NAME","type":"string","jsonPath":".resourceRef.name"}"#
    )]
    #[serde(rename_all = "camelCase")]
    pub struct ClusterProviderConfigUsageFields {
        /// The ClusterProviderConfig in use.
        pub provider_config_ref: NamespacedProviderConfigReference,
        /// The managed resource using it.
        pub resource_ref: TypedReference,
    }
}

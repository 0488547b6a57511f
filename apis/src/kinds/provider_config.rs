//! Where fakecloud is and which API key to use, and which managed
//! resources use it.
//!
//! The legacy cluster-scoped kinds use `ProviderConfig` and
//! `ProviderConfigUsage` in `fakecloud.crossplane.io`. The namespaced kinds
//! (Crossplane v2) use the ones in `fakecloud.m.crossplane.io` ([`m`]): a
//! namespaced `ProviderConfig`, whose credentials are in its own namespace,
//! for one team; a `ClusterProviderConfig`, which the platform team
//! provides to every namespace; and their usages.

use crossplane_types::{
    ClusterScoped, ProviderConfigReference, ProviderConfigStatus, ProviderCredentials,
    TypedReference,
};

/// Emits one ProviderConfig kind: its group, name, scope (`[namespaced]`
/// or `[]`), description and the scope of its credentials Secret reference.
/// The three kinds share everything else.
macro_rules! provider_config_kind {
    ($spec:ident, $group:tt, $kind:tt, $singular:tt, $plural:tt, [$($scope:tt)*], $doc:tt,
     $credentials_doc:tt, $credentials_scope:ty) => {
        #[doc = concat!("`spec` of a ", $kind, ".")]
        #[derive(
            kube::CustomResource,
            schemars::JsonSchema,
            Clone,
            Debug,
            PartialEq,
            serde::Serialize,
            serde::Deserialize
        )]
        #[kube(
            group = $group,
            version = "v1alpha1",
            kind = $kind,
            singular = $singular,
            plural = $plural,
            status = "ProviderConfigStatus",
            derive = "PartialEq",
            doc = $doc,
            category = "crossplane",
            category = "provider",
            category = "fakecloud",
            printcolumn = r#"{"name":"ENDPOINT","type":"string","jsonPath":".spec.endpoint"}"#,
            printcolumn = r#"{"name":"SECRET-NAME","type":"string","jsonPath":".spec.credentials.secretRef.name","priority":1}"#,
            printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
        )]
        $(#[kube($scope)])*
        #[serde(rename_all = "camelCase")]
        pub struct $spec {
            /// Base URL of the fakecloud API, e.g. `http://fakecloud:8080`.
            #[schemars(regex(pattern = r"^https?://"))]
            pub endpoint: String,
            #[doc = $credentials_doc]
            pub credentials: ProviderCredentials<$credentials_scope>,
        }
    };
}

/// Emits one usage kind: its group, name, scope, description, the type of
/// its `providerConfigRef`, and printer columns before the common ones.
macro_rules! usage_kind {
    ($fields:ident, $group:tt, $kind:tt, $singular:tt, $plural:tt, [$($scope:tt)*], $doc:tt,
     $type_doc:tt, $config_ref:ty, $config_doc:tt, [$($column:tt),*]) => {
        #[doc = $type_doc]
        #[derive(
            kube::CustomResource,
            Clone,
            Debug,
            PartialEq,
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema
        )]
        #[kube(
            group = $group,
            version = "v1alpha1",
            kind = $kind,
            singular = $singular,
            plural = $plural,
            no_spec,
            derive = "PartialEq",
            doc = $doc,
            category = "crossplane",
            category = "provider",
            category = "fakecloud",
            printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
            $(printcolumn = $column,)*
            printcolumn = r#"{"name":"CONFIG-NAME","type":"string","jsonPath":".providerConfigRef.name"}"#,
            printcolumn = r#"{"name":"RESOURCE-KIND","type":"string","jsonPath":".resourceRef.kind"}"#,
            printcolumn = r#"{"name":"RESOURCE-NAME","type":"string","jsonPath":".resourceRef.name"}"#
        )]
        $(#[kube($scope)])*
        #[serde(rename_all = "camelCase")]
        pub struct $fields {
            #[doc = $config_doc]
            pub provider_config_ref: $config_ref,
            /// The managed resource using it.
            pub resource_ref: TypedReference,
        }
    };
}

provider_config_kind!(
    ProviderConfigSpec,
    "fakecloud.crossplane.io",
    "ProviderConfig",
    "providerconfig",
    "providerconfigs",
    [],
    "How the provider reaches fakecloud: its endpoint and the API key to use.",
    "The API key to use.",
    ClusterScoped
);

usage_kind!(
    ProviderConfigUsageFields,
    "fakecloud.crossplane.io",
    "ProviderConfigUsage",
    "providerconfigusage",
    "providerconfigusages",
    [],
    "Records that a managed resource uses a ProviderConfig.",
    "Records that a managed resource uses a ProviderConfig, so that the\nProviderConfig is not deleted from under it.",
    ProviderConfigReference,
    "The ProviderConfig in use.",
    []
);

/// The ProviderConfig kinds of the namespaced managed resources, in
/// `fakecloud.m.crossplane.io`.
pub mod m {
    use super::{ProviderConfigStatus, ProviderCredentials};
    use crossplane_types::{
        ClusterScoped, Namespaced, NamespacedProviderConfigReference, TypedReference,
    };

    provider_config_kind!(
        ProviderConfigSpec,
        "fakecloud.m.crossplane.io",
        "ProviderConfig",
        "providerconfig",
        "providerconfigs",
        [namespaced],
        "How the managed resources of one namespace reach fakecloud: its endpoint and the API key, from a Secret in the same namespace.",
        "The API key to use, from a Secret in this namespace.",
        Namespaced
    );

    provider_config_kind!(
        ClusterProviderConfigSpec,
        "fakecloud.m.crossplane.io",
        "ClusterProviderConfig",
        "clusterproviderconfig",
        "clusterproviderconfigs",
        [],
        "How namespaced managed resources in any namespace reach fakecloud: its endpoint and the API key to use.",
        "The API key to use.",
        ClusterScoped
    );

    usage_kind!(
        ProviderConfigUsageFields,
        "fakecloud.m.crossplane.io",
        "ProviderConfigUsage",
        "providerconfigusage",
        "providerconfigusages",
        [namespaced],
        "Records that a namespaced managed resource uses a ProviderConfig or ClusterProviderConfig.",
        "Records, in a namespaced managed resource's own namespace, that it uses a\nProviderConfig or ClusterProviderConfig, so that neither is deleted from\nunder it. Labelled `crossplane.io/provider-config` and\n`crossplane.io/provider-config-kind`.",
        NamespacedProviderConfigReference,
        "The ProviderConfig or ClusterProviderConfig in use.",
        [r#"{"name":"CONFIG-KIND","type":"string","jsonPath":".providerConfigRef.kind"}"#]
    );

    usage_kind!(
        ClusterProviderConfigUsageFields,
        "fakecloud.m.crossplane.io",
        "ClusterProviderConfigUsage",
        "clusterproviderconfigusage",
        "clusterproviderconfigusages",
        [],
        "Records that a managed resource uses a ClusterProviderConfig.",
        "The cluster-scoped usage kind of Crossplane v2's provider API, installed\nso that tools that list it find it. This provider records every use, of a\nProviderConfig or a ClusterProviderConfig, as a [`ProviderConfigUsage`]\nin the managed resource's own namespace (where the resource's owner can\nsee it, and from where Kubernetes collects it with the resource), so it\nnever writes this kind.",
        NamespacedProviderConfigReference,
        "The ClusterProviderConfig in use.",
        []
    );
}

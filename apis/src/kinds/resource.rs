//! The one definition of a managed kind's two custom resources: the
//! namespaced one (Crossplane v2, in a `*.m.crossplane.io` group, in the
//! kind module's `m` submodule) and the legacy cluster-scoped one (in the
//! kind module itself). They share everything but the group, the scope and
//! the types that depend on the scope ([`crossplane_types::Scope`]).

/// Emits both custom resources of a managed kind.
///
/// `for_provider` names the legacy and the namespaced `forProvider` types;
/// `rules` are the spec's object-level CEL rules.
macro_rules! managed_resource {
    (
        kind: $kind:tt, root: $root:tt, spec: $spec:ident, singular: $singular:tt, plural: $plural:tt,
        groups: [$legacy_group:tt, $group:tt],
        docs: [$legacy_doc:tt, $doc:tt],
        noun: $noun:tt,
        status: $status:tt,
        for_provider: [$legacy_for:ty, $for:ty],
        init_provider: $init:ty,
        rules: [$($rule:expr),* $(,)?] $(,)?
    ) => {
        managed_resource!(@resource [] $kind, $root, $spec, $singular, $plural, $legacy_group, $legacy_doc,
            $noun, $status, ::crossplane_types::ResourceSpec, $legacy_for, $init, [$($rule),*]);

        /// The namespaced (Crossplane v2) form of the kind, in its
        /// `*.m.crossplane.io` group.
        pub mod m {
            #[allow(unused_imports)]
            use super::*;

            managed_resource!(@resource [#[kube(namespaced)]] $kind, $root, $spec, $singular, $plural,
                $group, $doc, $noun, $status, ::crossplane_types::NamespacedResourceSpec, $for, $init,
                [$($rule),*]);
        }
    };
    (@resource [$($scope:tt)*] $kind:tt, $root:tt, $spec:ident, $singular:tt, $plural:tt, $group:tt, $doc:tt,
        $noun:tt, $status:tt, $common:ty, $for:ty, $init:ty, [$($rule:expr),*]) => {
        #[doc = concat!("`spec` of a ", $kind, ".")]
        #[derive(kube::CustomResource, kube::KubeSchema, Clone, Debug, PartialEq,
            serde::Serialize, serde::Deserialize)]
        #[kube(
            group = $group,
            version = "v1alpha1",
            kind = $kind,
            root = $root,
            singular = $singular,
            plural = $plural,
            status = $status,
            derive = "PartialEq",
            doc = $doc,
            category = "crossplane",
            category = "managed",
            category = "fakecloud",
            printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type=='Ready')].status"}"#,
            printcolumn = r#"{"name":"SYNCED","type":"string","jsonPath":".status.conditions[?(@.type=='Synced')].status"}"#,
            printcolumn = r#"{"name":"DRIFT","type":"integer","jsonPath":".status.drift.count"}"#,
            printcolumn = r#"{"name":"EXTERNAL-NAME","type":"string","jsonPath":".metadata.annotations.crossplane\\.io/external-name"}"#,
            printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
        )]
        $($scope)*
        $(#[x_kube(validation = $rule)])*
        #[serde(rename_all = "camelCase")]
        pub struct $spec {
            /// The Crossplane fields: policies, provider config, connection secret.
            #[serde(flatten)]
            pub resource: $common,
            #[doc = concat!("The desired state of ", $noun, ".")]
            pub for_provider: $for,
            #[doc = concat!("Values used only when creating ", $noun, ".")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub init_provider: Option<$init>,
        }
    };
}

//! What the provider's generic runtime needs to know about each managed
//! kind, in one trait, so that it can reconcile all four the same way.

use std::fmt::Debug;

use kube::{CustomResourceExt, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::common::{ClusterScoped, ManagedStatus, Namespaced, Scope};
use crate::kinds::database_instance::{self, DatabaseInstanceParameters};
use crate::kinds::nodegroup::{self, NodeGroupParameters};
use crate::kinds::subnet::{self, SubnetParameters};
use crate::kinds::vpc;

/// One key a kind writes to its connection Secret.
///
/// The MRD generator documents exactly these in `spec.connectionDetails`
/// and the provider publishes exactly these, so the two cannot drift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionDetail {
    /// The Secret data key.
    pub name: &'static str,
    /// What the value is, for users reading the MRD.
    pub description: &'static str,
}

/// Where a kind's external name comes from before the resource exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternalNameOrigin {
    /// The cloud assigns an id on create (`vpc-...`); until then the
    /// annotation is unset, and the provider records the id after create.
    AssignedByCloud,
    /// The client chooses the name; when the annotation is unset the
    /// provider sets it to `metadata.name` before creating.
    MetadataName,
}

/// A `forProvider` field that can be filled from other managed resources by
/// reference (`<field>Ref` / `<field>Refs`) or selector (`<field>Selector`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceField {
    /// The field that receives the value(s), e.g. `vpcId`.
    pub field: &'static str,
    /// The field holding the reference(s) by name, e.g. `vpcIdRef`.
    pub reference_field: &'static str,
    /// The field holding the label selector, e.g. `vpcIdSelector`.
    pub selector_field: &'static str,
    /// Whether `field` is a list (`subnetIds`, filled from `subnetIdRefs`)
    /// rather than a single value (`vpcId`, filled from `vpcIdRef`).
    pub many: bool,
    /// API group of the referenced kind.
    pub target_group: &'static str,
    /// API version of the referenced kind.
    pub target_version: &'static str,
    /// Kind of the referenced objects.
    pub target_kind: &'static str,
    /// Plural (resource) name of the referenced kind.
    pub target_plural: &'static str,
    /// JSON pointer, into the referenced object, of the value to copy.
    pub target_value_pointer: &'static str,
}

/// A managed-resource kind in one scope: its Crossplane spec fields, its
/// `forProvider` / `initProvider` / `atProvider` types and its status.
///
/// The runtime treats the three parameter types as JSON (it merges
/// `initProvider` under `forProvider` and compares `forProvider` with
/// `atProvider` field by field), which works because their fields share
/// names (see `docs/field-names.md`).
pub trait Managed:
    Resource<DynamicType = ()>
    + CustomResourceExt
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Namespaced or cluster-scoped, and the spec shapes that go with it.
    /// (Named so as not to clash with [`Resource::Scope`], kube's marker of
    /// the same fact.)
    type Scoped: Scope;
    /// `spec.forProvider`.
    type ForProvider: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// `spec.initProvider`.
    type InitProvider: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// `status.atProvider`.
    type AtProvider: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;

    /// The keys this kind writes to its connection Secret, in order.
    const CONNECTION_DETAILS: &'static [ConnectionDetail];
    /// The `forProvider` fields that references and selectors fill in.
    const REFERENCES: &'static [ReferenceField];
    /// Where the external name comes from before the resource exists.
    const EXTERNAL_NAME_ORIGIN: ExternalNameOrigin;

    /// `managementPolicies`, `providerConfigRef`,
    /// `writeConnectionSecretToRef` and, for the legacy kinds,
    /// `deletionPolicy`.
    fn resource_spec(&self) -> &<Self::Scoped as Scope>::Spec;
    /// `spec.forProvider`.
    fn for_provider(&self) -> &Self::ForProvider;
    /// `spec.forProvider`, for late initialisation and reference resolution.
    fn for_provider_mut(&mut self) -> &mut Self::ForProvider;
    /// `spec.initProvider`, if set.
    fn init_provider(&self) -> Option<&Self::InitProvider>;
    /// `status`, if set.
    fn managed_status(&self) -> Option<&ManagedStatus<Self::AtProvider>>;
    /// `status`, created empty if unset.
    fn managed_status_mut(&mut self) -> &mut ManagedStatus<Self::AtProvider>;
}

macro_rules! impl_managed {
    ($kind:ty, $scope:ty, $for_provider:ty, $init_provider:ty, $at_provider:ty,
     connection_details: $details:expr, references: $references:expr, external_name: $origin:expr) => {
        impl Managed for $kind {
            type Scoped = $scope;
            type ForProvider = $for_provider;
            type InitProvider = $init_provider;
            type AtProvider = $at_provider;

            const CONNECTION_DETAILS: &'static [ConnectionDetail] = $details;
            const REFERENCES: &'static [ReferenceField] = $references;
            const EXTERNAL_NAME_ORIGIN: ExternalNameOrigin = $origin;

            fn resource_spec(&self) -> &<$scope as Scope>::Spec {
                &self.spec.resource
            }
            fn for_provider(&self) -> &Self::ForProvider {
                &self.spec.for_provider
            }
            fn for_provider_mut(&mut self) -> &mut Self::ForProvider {
                &mut self.spec.for_provider
            }
            fn init_provider(&self) -> Option<&Self::InitProvider> {
                self.spec.init_provider.as_ref()
            }
            fn managed_status(&self) -> Option<&ManagedStatus<Self::AtProvider>> {
                self.status.as_ref()
            }
            fn managed_status_mut(&mut self) -> &mut ManagedStatus<Self::AtProvider> {
                self.status.get_or_insert_with(ManagedStatus::default)
            }
        }
    };
}

/// The connection details of a DatabaseInstance.
pub const DATABASE_INSTANCE_CONNECTION_DETAILS: &[ConnectionDetail] = &[
    ConnectionDetail {
        name: "endpoint",
        description: "Host name clients connect to (status.atProvider.endpoint.address).",
    },
    ConnectionDetail {
        name: "port",
        description: "TCP port clients connect to (status.atProvider.endpoint.port), as decimal text.",
    },
    ConnectionDetail {
        name: "username",
        description: "Name of the master user (masterUsername).",
    },
    ConnectionDetail {
        name: "password",
        description: "Password of the master user: the value of masterPasswordSecretRef, or the password the provider generated when that is unset.",
    },
];

/// The group of the network kinds in each scope.
const NETWORK_GROUPS: [&str; 2] = [
    "network.fakecloud.crossplane.io",
    "network.fakecloud.m.crossplane.io",
];

/// A reference from a `forProvider` field to the `status.atProvider.id` of
/// a network kind in `target_group`, the referencing kind's own scope.
const fn network_id_reference(
    target_group: &'static str,
    field: &'static str,
    reference_field: &'static str,
    selector_field: &'static str,
    many: bool,
    target_kind: &'static str,
    target_plural: &'static str,
) -> ReferenceField {
    ReferenceField {
        field,
        reference_field,
        selector_field,
        many,
        target_group,
        target_version: "v1alpha1",
        target_kind,
        target_plural,
        target_value_pointer: "/status/atProvider/id",
    }
}

/// `subnetIds` from `subnetIdRefs` / `subnetIdSelector`, in a scope's group.
const fn subnet_ids_reference(target_group: &'static str) -> ReferenceField {
    network_id_reference(
        target_group,
        "subnetIds",
        "subnetIdRefs",
        "subnetIdSelector",
        true,
        "Subnet",
        "subnets",
    )
}

/// `vpcId` from `vpcIdRef` / `vpcIdSelector`, in a scope's group.
const fn vpc_id_reference(target_group: &'static str) -> ReferenceField {
    network_id_reference(
        target_group,
        "vpcId",
        "vpcIdRef",
        "vpcIdSelector",
        false,
        "VPC",
        "vpcs",
    )
}

/// Implements [`Managed`] for a kind's two resources, the legacy one
/// (`$legacy`) and the namespaced one (`$namespaced`): the same types and
/// facts, each scope's references pointing into its own scope.
macro_rules! impl_managed_scopes {
    ($legacy:ty, $namespaced:ty, $for_provider:ident, $init_provider:ty, $at_provider:ty,
     connection_details: $details:expr, references: [$($reference:ident),*],
     external_name: $origin:expr) => {
        impl_managed!($legacy, ClusterScoped, $for_provider<ClusterScoped>, $init_provider,
            $at_provider, connection_details: $details,
            references: &[$($reference(NETWORK_GROUPS[0])),*],
            external_name: $origin);
        impl_managed!($namespaced, Namespaced, $for_provider<Namespaced>, $init_provider,
            $at_provider, connection_details: $details,
            references: &[$($reference(NETWORK_GROUPS[1])),*],
            external_name: $origin);
    };
}

// VPC, Subnet and NodeGroup publish no connection details: nothing about
// them is secret or needed to connect, and everything they report is in
// `status.atProvider`, which references read.
impl_managed!(vpc::Vpc, ClusterScoped, vpc::VpcParameters, vpc::VpcInitParameters,
    vpc::VpcObservation, connection_details: &[], references: &[],
    external_name: ExternalNameOrigin::AssignedByCloud);
impl_managed!(vpc::m::Vpc, Namespaced, vpc::VpcParameters, vpc::VpcInitParameters,
    vpc::VpcObservation, connection_details: &[], references: &[],
    external_name: ExternalNameOrigin::AssignedByCloud);

impl_managed_scopes!(subnet::Subnet, subnet::m::Subnet, SubnetParameters,
    subnet::SubnetInitParameters, subnet::SubnetObservation,
    connection_details: &[],
    references: [vpc_id_reference],
    external_name: ExternalNameOrigin::AssignedByCloud);

impl_managed_scopes!(nodegroup::NodeGroup, nodegroup::m::NodeGroup, NodeGroupParameters,
    nodegroup::NodeGroupInitParameters, nodegroup::NodeGroupObservation,
    connection_details: &[],
    references: [subnet_ids_reference],
    external_name: ExternalNameOrigin::MetadataName);

impl_managed_scopes!(database_instance::DatabaseInstance, database_instance::m::DatabaseInstance,
    DatabaseInstanceParameters, database_instance::DatabaseInstanceInitParameters,
    database_instance::DatabaseInstanceObservation,
    connection_details: DATABASE_INSTANCE_CONNECTION_DETAILS,
    references: [subnet_ids_reference],
    external_name: ExternalNameOrigin::MetadataName);

//! The four kinds' facts for the generic runtime: each kind's
//! [`Managed`] implementation, in both scopes, with its connection-detail
//! keys, references and external-name origin.

use crossplane_types::{
    ClusterScoped, ConnectionDetail, ExternalNameOrigin, Managed, ManagedStatus, Namespaced,
    ReferenceField, Scope,
};

use crate::kinds::database_instance::{self, DatabaseInstanceParameters};
use crate::kinds::nodegroup::{self, NodeGroupParameters};
use crate::kinds::subnet::{self, SubnetParameters};
use crate::kinds::vpc;

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

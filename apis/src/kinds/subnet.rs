//! `Subnet`: a range of a VPC in one availability zone
//! (`network.fakecloud.crossplane.io/v1alpha1`).

/// The namespaced kind at `v1beta1`, the stored version, and how it
/// converts from the namespaced `v1alpha1` one here (`m`), which stays
/// served, deprecated.
pub mod v1beta1;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::rules::{immutable, required_to_create, required_to_create_or_referenced};
use crossplane_types::{ManagedResource, Scope};

/// The desired state of a Subnet (`spec.forProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(
    kind = "Subnet", plural = "subnets", version = "v1alpha1",
    group = "network.fakecloud.m.crossplane.io", legacy_group = "network.fakecloud.crossplane.io",
    doc = "A Subnet: a range of a VPC's addresses in one availability zone.", noun = "the Subnet",
    category = "fakecloud", observed = SubnetReported,
    rule = required_to_create_or_referenced("vpcId", &["vpcIdRef", "vpcIdSelector"]),
    rule = required_to_create("cidrBlock"),
    rule = required_to_create("availabilityZone"),
)]
pub struct SubnetParameters<S: Scope> {
    /// Region of the Subnet. Identifies the resource, so it is always required.
    #[managed(identifier)]
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// Id of the VPC the Subnet belongs to. Set it directly, or let
    /// `vpcIdRef` / `vpcIdSelector` fill it in.
    #[managed(reference(kind = "VPC", plural = "vpcs"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("vpcId"))]
    pub vpc_id: Option<String>,
    /// The VPC object whose `status.atProvider.id` becomes `vpcId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_id_ref: Option<S::Reference>,
    /// Selects the VPC object whose `status.atProvider.id` becomes `vpcId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_id_selector: Option<S::Selector>,
    /// IPv4 range of the Subnet, inside the VPC's range. Needed to create;
    /// cannot change afterwards.
    #[managed(
        init_doc = "IPv4 range of the Subnet.",
        observed_doc = "IPv4 range of the Subnet."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("cidrBlock"))]
    pub cidr_block: Option<String>,
    /// Availability zone of the Subnet, e.g. `eu-west-1a`. Needed to
    /// create; cannot change afterwards.
    #[managed(
        init_doc = "Availability zone of the Subnet.",
        observed_doc = "Availability zone of the Subnet."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("availabilityZone"))]
    pub availability_zone: Option<String>,
    /// Whether instances launched in the Subnet get a public IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_public_ip_on_launch: Option<bool>,
    /// Tags of the Subnet.
    #[managed(observed_doc = "Tags of the Subnet, including ones set outside Crossplane.")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// What fakecloud reports of a Subnet beyond its parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubnetReported {
    /// Cloud-assigned id, `subnet-` and 17 hex digits; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// How many addresses of the range are still free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_ip_address_count: Option<i64>,
    /// `pending` or `available`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When the Subnet was created (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the Subnet last changed (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

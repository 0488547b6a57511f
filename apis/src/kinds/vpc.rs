//! `VPC`: an isolated network (`network.fakecloud.crossplane.io/v1alpha1`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::ManagedStatus;
use crossplane_types::rules::{immutable, required_to_create};

/// Whether instances in the VPC run on shared or dedicated hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InstanceTenancy {
    /// Shared hardware.
    Default,
    /// Dedicated hardware; can only be changed back to `default`.
    Dedicated,
}

/// The desired state of a VPC (`spec.forProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcParameters {
    /// Region of the VPC. Identifies the resource, so it is always required.
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// IPv4 range of the VPC in CIDR notation, e.g. `10.0.0.0/16`. Needed to
    /// create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("cidrBlock"))]
    pub cidr_block: Option<String>,
    /// Whether the VPC resolves DNS names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_support: Option<bool>,
    /// Whether instances get public DNS host names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_hostnames: Option<bool>,
    /// `default` or `dedicated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_tenancy: Option<InstanceTenancy>,
    /// Tags of the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// Values used only to create a VPC (`spec.initProvider`); `forProvider`
/// wins where both are set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcInitParameters {
    /// IPv4 range of the VPC in CIDR notation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr_block: Option<String>,
    /// Whether the VPC resolves DNS names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_support: Option<bool>,
    /// Whether instances get public DNS host names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_hostnames: Option<bool>,
    /// `default` or `dedicated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_tenancy: Option<InstanceTenancy>,
    /// Tags of the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// The observed state of a VPC (`status.atProvider`): everything fakecloud
/// reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcObservation {
    /// Cloud-assigned id, `vpc-` and 17 hex digits; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Region of the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// IPv4 range of the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr_block: Option<String>,
    /// Whether the VPC resolves DNS names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_support: Option<bool>,
    /// Whether instances get public DNS host names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_hostnames: Option<bool>,
    /// `default` or `dedicated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_tenancy: Option<InstanceTenancy>,
    /// Tags of the VPC, including ones set outside Crossplane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    /// `pending` or `available`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When the VPC was created (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the VPC last changed (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// `status` of a VPC.
pub type VpcStatus = ManagedStatus<VpcObservation>;

managed_resource! {
    kind: "VPC", root: "Vpc", spec: VpcSpec, singular: "vpc", plural: "vpcs",
    groups: ["network.fakecloud.crossplane.io", "network.fakecloud.m.crossplane.io"],
    docs: [
        "A VPC: an isolated network in a fakecloud region.",
        "A VPC: an isolated network in a fakecloud region."
    ],
    noun: "the VPC",
    status: "VpcStatus",
    for_provider: [VpcParameters, VpcParameters],
    init_provider: VpcInitParameters,
    rules: [required_to_create("cidrBlock")],
}

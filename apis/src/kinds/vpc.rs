//! `VPC`: an isolated network (`network.fakecloud.crossplane.io/v1alpha1`).

/// The namespaced kind at `v1beta1`, the stored version, and how it
/// converts from the namespaced `v1alpha1` one here (`m`), which stays
/// served, deprecated.
pub mod v1beta1;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::ManagedResource;
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(
    kind = "VPC", root = "Vpc", plural = "vpcs", version = "v1alpha1",
    group = "network.fakecloud.m.crossplane.io", legacy_group = "network.fakecloud.crossplane.io",
    doc = "A VPC: an isolated network in a fakecloud region.", noun = "the VPC",
    category = "fakecloud", observed = VpcReported,
    rule = required_to_create("cidrBlock"),
)]
pub struct VpcParameters {
    /// Region of the VPC. Identifies the resource, so it is always required.
    #[managed(identifier)]
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// IPv4 range of the VPC in CIDR notation, e.g. `10.0.0.0/16`. Needed to
    /// create; cannot change afterwards.
    #[managed(
        init_doc = "IPv4 range of the VPC in CIDR notation.",
        observed_doc = "IPv4 range of the VPC."
    )]
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
    #[managed(observed_doc = "Tags of the VPC, including ones set outside Crossplane.")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// What fakecloud reports of a VPC beyond its parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcReported {
    /// Cloud-assigned id, `vpc-` and 17 hex digits; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
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

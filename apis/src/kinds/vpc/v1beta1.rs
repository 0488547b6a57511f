//! `VPC` at `v1beta1` (`network.fakecloud.m.crossplane.io`), the stored
//! version from now on. Leaving alpha, two things were tidied:
//!
//! - `enableDnsSupport` and `enableDnsHostnames` are one concern, name
//!   resolution inside the VPC, so they are grouped as `dns.resolution`
//!   and `dns.hostnames` (restructured), where later DNS settings can join
//!   them without crowding the top level;
//! - `instanceTenancy` is `tenancy` (renamed): it is the VPC's tenancy,
//!   and no field of the VPC is about instances otherwise.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::ManagedResource;
use crossplane_types::conversion::{FieldMove, KindVersions, VersionStep};
use crossplane_types::rules::{immutable, required_to_create};

use super::InstanceTenancy;

/// The VPC's versions and what moved between them.
pub static VERSIONS: KindVersions = KindVersions {
    group: "network.fakecloud.m.crossplane.io",
    kind: "VPC",
    oldest: "v1alpha1",
    steps: &[VersionStep {
        older: "v1alpha1",
        newer: "v1beta1",
        moves: &[
            FieldMove {
                older: "/enableDnsSupport",
                newer: "/dns/resolution",
            },
            FieldMove {
                older: "/enableDnsHostnames",
                newer: "/dns/hostnames",
            },
            FieldMove {
                older: "/instanceTenancy",
                newer: "/tenancy",
            },
        ],
    }],
};

/// Name resolution inside the VPC.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dns {
    /// Whether the VPC resolves DNS names (v1alpha1's `enableDnsSupport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<bool>,
    /// Whether instances get public DNS host names (v1alpha1's
    /// `enableDnsHostnames`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostnames: Option<bool>,
}

/// The desired state of a VPC (`spec.forProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(
    kind = "VPC", root = "Vpc", plural = "vpcs", version = "v1beta1",
    group = "network.fakecloud.m.crossplane.io",
    doc = "A VPC: an isolated network in a fakecloud region.", noun = "the VPC",
    category = "fakecloud", observed = super::VpcReported,
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
    /// Name resolution inside the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// `default` or `dedicated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenancy: Option<InstanceTenancy>,
    /// Tags of the VPC.
    #[managed(observed_doc = "Tags of the VPC, including ones set outside Crossplane.")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

//! `VPC`: an isolated network (`network.fakecloud.crossplane.io/v1alpha1`).

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{ManagedStatus, ResourceSpec};
use crate::rules::{immutable, required_to_create};

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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcParameters {
    /// Region of the VPC. Identifies the resource, so it is always required.
    #[x_kube(validation = immutable("region"))]
    pub region: String,
    /// IPv4 range of the VPC in CIDR notation, e.g. `10.0.0.0/16`. Needed to
    /// create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = immutable("cidrBlock"))]
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

/// `spec` of a VPC.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "network.fakecloud.crossplane.io",
    version = "v1alpha1",
    kind = "VPC",
    root = "Vpc",
    singular = "vpc",
    plural = "vpcs",
    status = "VpcStatus",
    derive = "PartialEq",
    doc = "A VPC: an isolated network in a fakecloud region.",
    category = "crossplane",
    category = "managed",
    category = "fakecloud",
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type=='Ready')].status"}"#,
    printcolumn = r#"{"name":"SYNCED","type":"string","jsonPath":".status.conditions[?(@.type=='Synced')].status"}"#,
    printcolumn = r#"{"name":"EXTERNAL-NAME","type":"string","jsonPath":".metadata.annotations.crossplane\\.io/external-name"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[x_kube(validation = required_to_create("cidrBlock"))]
#[serde(rename_all = "camelCase")]
pub struct VpcSpec {
    /// The Crossplane fields: policies, provider config, connection secret.
    #[serde(flatten)]
    pub resource: ResourceSpec,
    /// The desired state of the VPC.
    pub for_provider: VpcParameters,
    /// Values used only when creating the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_provider: Option<VpcInitParameters>,
}

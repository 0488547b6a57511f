//! `NodeGroup` at `v1beta1` (`compute.fakecloud.m.crossplane.io`), the
//! stored version from now on. Its fields are v1alpha1's: the step to it
//! moves nothing, and its `subnetIdRefs` name Subnets at the same version.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::conversion::{KindVersions, VersionStep};
use crossplane_types::rules::{immutable, required_to_create, required_to_create_or_referenced};
use crossplane_types::{ManagedResource, Scope};

use super::ScalingConfig;

/// The NodeGroup's versions: nothing moved.
pub static VERSIONS: KindVersions = KindVersions {
    group: "compute.fakecloud.m.crossplane.io",
    kind: "NodeGroup",
    oldest: "v1alpha1",
    steps: &[VersionStep {
        older: "v1alpha1",
        newer: "v1beta1",
        moves: &[],
    }],
};

/// The desired state of a NodeGroup (`spec.forProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(
    kind = "NodeGroup", plural = "nodegroups", version = "v1beta1",
    group = "compute.fakecloud.m.crossplane.io",
    doc = "A NodeGroup: worker nodes of a fakecloud cluster.", noun = "the node group",
    category = "fakecloud", observed = super::NodeGroupReported, external_name = MetadataName,
    rule = required_to_create("nodeRole"),
    rule = required_to_create_or_referenced("subnetIds", &["subnetIdRefs", "subnetIdSelector"]),
    rule = required_to_create("scalingConfig"),
)]
pub struct NodeGroupParameters<S: Scope> {
    /// Region of the cluster. Identifies the resource, so it is always required.
    #[managed(identifier)]
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// Name of the cluster the group belongs to. Identifies the resource, so
    /// it is always required.
    #[managed(identifier)]
    #[schemars(transform = immutable("clusterName"))]
    pub cluster_name: String,
    /// Ids of the Subnets the nodes run in. Set them directly, or let
    /// `subnetIdRefs` / `subnetIdSelector` fill them in. Cannot change
    /// once set.
    #[managed(reference(
        kind = "Subnet",
        plural = "subnets",
        group = "network.fakecloud.m.crossplane.io",
        legacy_group = "network.fakecloud.crossplane.io"
    ))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("subnetIds"))]
    pub subnet_ids: Option<Vec<String>>,
    /// Subnet objects whose `status.atProvider.id` become `subnetIds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id_refs: Option<Vec<S::Reference>>,
    /// Selects the Subnet objects whose `status.atProvider.id` become
    /// `subnetIds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id_selector: Option<S::Selector>,
    /// Role the nodes run as. Needed to create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("nodeRole"))]
    pub node_role: Option<String>,
    /// Instance types of the nodes. Cannot change once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("instanceTypes"))]
    pub instance_types: Option<Vec<String>>,
    /// Kubernetes version of the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Kubernetes labels put on the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Tags of the node group.
    #[managed(observed_doc = "Tags of the node group, including ones set outside Crossplane.")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    /// How many nodes the group runs. Needed to create; leave `desiredSize`
    /// to `initProvider` when an autoscaler changes it.
    #[managed(
        init_doc = "How many nodes the group starts with.",
        observed_doc = "Current sizes, including changes made by an autoscaler."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling_config: Option<ScalingConfig>,
}

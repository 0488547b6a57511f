//! `NodeGroup`: worker nodes of a cluster
//! (`compute.fakecloud.crossplane.io/v1alpha1`).

/// The namespaced kind at `v1beta1`, the stored version, and how it
/// converts from the namespaced `v1alpha1` one here (`m`), which stays
/// served, deprecated.
pub mod v1beta1;

use std::collections::BTreeMap;

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::rules::{
    immutable, min_not_above_max, required_to_create, required_to_create_or_referenced,
};
use crossplane_types::{ManagedResource, Scope};

/// How many nodes the group runs. Each size can be set on its own, so that
/// `desiredSize` can live in `initProvider` while an autoscaler owns it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = min_not_above_max("minSize", "maxSize"))]
pub struct ScalingConfig {
    /// Fewest nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_size: Option<i32>,
    /// Most nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_size: Option<i32>,
    /// Nodes wanted now, between `minSize` and `maxSize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub desired_size: Option<i32>,
}

/// The desired state of a NodeGroup (`spec.forProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(
    kind = "NodeGroup", plural = "nodegroups", version = "v1alpha1",
    group = "compute.fakecloud.m.crossplane.io", legacy_group = "compute.fakecloud.crossplane.io",
    doc = "A NodeGroup: worker nodes of a fakecloud cluster.", noun = "the node group",
    category = "fakecloud", observed = NodeGroupReported, external_name = MetadataName,
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

/// What fakecloud reports of a node group beyond its parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupReported {
    /// Name of the node group; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `CREATING`, `ACTIVE`, `UPDATING` or `DELETING`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// When the node group was created (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the node group last changed (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

//! The query kinds (`query.fakecloud.m.crossplane.io/v1alpha1`):
//! `VPCQuery`, `SubnetQuery`, `NodeGroupQuery` and `DatabaseInstanceQuery`.
//! Each finds the cloud's resources of its kind by a filter and owns one
//! observe-only managed resource per match, in its own namespace (seed
//! 000, Future Work, Option A; see [`crossplane_types::query`]).
//!
//! One group for all four, apart from the managed kinds' groups: a query
//! is not a managed resource (no MRD, no management policies, not in
//! `kubectl get managed`), and an activation policy naming the managed
//! groups (`*.network.fakecloud.m.crossplane.io`) must not reach it. The
//! `.m.` says what it says for the managed kinds: namespaced, Crossplane
//! v2. Queries exist only in that scope, since the managed resources they
//! create live in the query's namespace.
//!
//! Validation sits where a user meets it first. The schema holds what it
//! can say (required fields, enums, patterns, bounds), which every API
//! server enforces; CEL rules hold what it cannot ([`most_recent_or_limit`],
//! [`name_fits_a_label`]), enforced from Kubernetes 1.25. What neither can
//! say (two values for one tag key, a CIDR block with host bits set) the
//! controller reports on `Synced`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::query::{
    Query, QuerySpec, QueryStatus, most_recent_or_limit, name_fits_a_label,
};

use crate::kinds::database_instance::Engine;
use crate::kinds::{database_instance, nodegroup, subnet, vpc};

/// The API group of every query kind.
pub const GROUP: &str = "query.fakecloud.m.crossplane.io";

/// The fields every filter has: where to look, and the tags to match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilterBase {
    /// The region to list, e.g. `us-east-1`.
    #[schemars(regex(pattern = r"^[a-z]{2}-[a-z]+-[0-9]+$"))]
    pub region: String,
    /// Tags every match carries, each `key` (the tag is set, to anything)
    /// or `key=value` (set to exactly that value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 50), inner(regex(pattern = r"^[^=]{1,128}(=.{0,256})?$")))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Option<Vec<String>>,
}

/// `pending` or `available`, the states of the network kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NetworkState {
    /// Being provisioned.
    Pending,
    /// Ready for use.
    Available,
}

/// The states of a NodeGroup, as the cloud spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeGroupState {
    /// Nodes are starting.
    Creating,
    /// Ready for use.
    Active,
    /// A change is rolling out.
    Updating,
    /// Being deleted.
    Deleting,
}

/// The states of a DatabaseInstance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseState {
    /// Being provisioned.
    Creating,
    /// Ready for use.
    Available,
    /// A change is being applied.
    Modifying,
    /// Being deleted.
    Deleting,
}

/// Which VPCs match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcFilter {
    /// Region and tags.
    #[serde(flatten)]
    pub base: FilterBase,
    /// The VPC's IPv4 range exactly, e.g. `10.0.0.0/16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$"))]
    pub cidr_block: Option<String>,
    /// Only VPCs in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<NetworkState>,
}

/// Which Subnets match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubnetFilter {
    /// Region and tags.
    #[serde(flatten)]
    pub base: FilterBase,
    /// Only Subnets of this VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^vpc-[0-9a-f]{17}$"))]
    pub vpc_id: Option<String>,
    /// Only Subnets in this availability zone, e.g. `us-east-1a`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-z]{2}-[a-z]+-[0-9]+[a-z]$"))]
    pub availability_zone: Option<String>,
    /// Only Subnets in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<NetworkState>,
}

/// Which NodeGroups match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupFilter {
    /// Region and tags.
    #[serde(flatten)]
    pub base: FilterBase,
    /// The cluster whose NodeGroups to list: the cloud lists NodeGroups
    /// per cluster.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$"))]
    pub cluster_name: String,
    /// Only NodeGroups in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<NodeGroupState>,
}

/// Which DatabaseInstances match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceFilter {
    /// Region and tags.
    #[serde(flatten)]
    pub base: FilterBase,
    /// Only instances of this engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Only instances in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<DatabaseState>,
}

/// Emits one query kind: its custom resource, with the shared spec fields
/// beside its `filter`, and its [`Query`] impl naming the managed kind its
/// matches become.
macro_rules! query_kind {
    (kind: $kind:tt, root: $root_name:tt $root:ident, spec: $spec:ident, singular: $singular:tt, plural: $plural:tt,
     filter: $filter:ty, managed: $managed:ty, doc: $doc:tt) => {
        #[doc = concat!("`spec` of a ", $kind, ".")]
        #[derive(kube::CustomResource, kube::KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[kube(
            group = "query.fakecloud.m.crossplane.io",
            version = "v1alpha1",
            kind = $kind,
            root = $root_name,
            singular = $singular,
            plural = $plural,
            namespaced,
            status = "QueryStatus",
            derive = "PartialEq",
            doc = $doc,
            category = "crossplane",
            category = "query",
            category = "fakecloud",
            validation = name_fits_a_label(),
            printcolumn = r#"{"name":"MATCHES","type":"integer","jsonPath":".status.matchCount"}"#,
            printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type=='Ready')].status"}"#,
            printcolumn = r#"{"name":"SYNCED","type":"string","jsonPath":".status.conditions[?(@.type=='Synced')].status"}"#,
            printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
        )]
        #[x_kube(validation = most_recent_or_limit())]
        #[serde(rename_all = "camelCase")]
        pub struct $spec {
            /// The ProviderConfig to list with, and which matches to keep.
            #[serde(flatten)]
            pub query: QuerySpec,
            /// Which cloud resources match: every field set must hold.
            pub filter: $filter,
        }

        impl Query for $root {
            type Managed = $managed;

            fn query_spec(&self) -> &QuerySpec {
                &self.spec.query
            }

            fn query_status(&self) -> Option<&QueryStatus> {
                self.status.as_ref()
            }
        }
    };
}

query_kind! {
    kind: "VPCQuery", root: "VpcQuery" VpcQuery, spec: VpcQuerySpec, singular: "vpcquery", plural: "vpcqueries",
    filter: VpcFilter, managed: vpc::v1beta1::Vpc,
    doc: "Finds VPCs by a filter and owns one observe-only VPC per match."
}

query_kind! {
    kind: "SubnetQuery", root: "SubnetQuery" SubnetQuery, spec: SubnetQuerySpec, singular: "subnetquery",
    plural: "subnetqueries",
    filter: SubnetFilter, managed: subnet::v1beta1::Subnet,
    doc: "Finds Subnets by a filter and owns one observe-only Subnet per match."
}

query_kind! {
    kind: "NodeGroupQuery", root: "NodeGroupQuery" NodeGroupQuery, spec: NodeGroupQuerySpec,
    singular: "nodegroupquery", plural: "nodegroupqueries",
    filter: NodeGroupFilter, managed: nodegroup::v1beta1::NodeGroup,
    doc: "Finds a cluster's NodeGroups by a filter and owns one observe-only NodeGroup per match."
}

query_kind! {
    kind: "DatabaseInstanceQuery", root: "DatabaseInstanceQuery" DatabaseInstanceQuery, spec: DatabaseInstanceQuerySpec,
    singular: "databaseinstancequery", plural: "databaseinstancequeries",
    filter: DatabaseInstanceFilter, managed: database_instance::v1beta1::DatabaseInstance,
    doc: "Finds DatabaseInstances by a filter and owns one observe-only DatabaseInstance per match."
}

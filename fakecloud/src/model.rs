//! Wire models: the JSON bodies fakecloud accepts and returns.
//!
//! One set of types serves the server (parsing, rendering, OpenAPI) and the
//! typed client, so the two cannot drift. Their OpenAPI schemas (utoipa
//! derives and `#[schema]` attributes) are compiled with feature `server`
//! only: the client needs the types, not the document. Field names follow
//! `docs/field-names.md`: the provider compares `spec.forProvider` with these
//! JSON objects field by field.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
#[cfg(feature = "server")]
use utoipa::{
    PartialSchema, ToSchema,
    openapi::{
        RefOr,
        schema::{ObjectBuilder, Schema, Type},
    },
};

/// Tags and labels: string keys to string values, kept sorted so renders are
/// stable.
pub type Tags = BTreeMap<String, String>;

pub use crate::regions::REGIONS;

/// The four resource kinds, as named in admin paths and audit queries.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    Vpc,
    Subnet,
    NodeGroup,
    DatabaseInstance,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Vpc,
        Kind::Subnet,
        Kind::NodeGroup,
        Kind::DatabaseInstance,
    ];

    /// The name used on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Vpc => "vpc",
            Kind::Subnet => "subnet",
            Kind::NodeGroup => "nodeGroup",
            Kind::DatabaseInstance => "databaseInstance",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The kind's collection, the last segment of its `/v1` collection path
    /// (`/v1/regions/{region}/vpcs`); the client and the server's routes
    /// both build their paths from it.
    pub fn collection(self) -> &'static str {
        match self {
            Kind::Vpc => "vpcs",
            Kind::Subnet => "subnets",
            Kind::NodeGroup => "nodegroups",
            Kind::DatabaseInstance => "databaseInstances",
        }
    }

    /// Node groups belong to a cluster: their collection is below
    /// `/v1/regions/{region}/clusters/{cluster}`.
    pub fn in_cluster(self) -> bool {
        self == Kind::NodeGroup
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------- VPC

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum InstanceTenancy {
    #[default]
    Default,
    Dedicated,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum NetworkState {
    Pending,
    Available,
}

/// `POST /v1/regions/{region}/vpcs`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateVpc {
    /// IPv4 block, /16 to /28; stored canonical (host bits cleared).
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::cidr_block))]
    pub cidr_block: String,
    /// Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_support: Option<bool>,
    /// Default false; needs `enableDnsSupport`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_hostnames: Option<bool>,
    /// Default `default`; may later only be changed to `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_tenancy: Option<InstanceTenancy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags))]
    pub tags: Option<Tags>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Vpc {
    pub id: String,
    pub region: String,
    pub cidr_block: String,
    pub enable_dns_support: bool,
    pub enable_dns_hostnames: bool,
    pub instance_tenancy: InstanceTenancy,
    pub tags: Tags,
    pub state: NetworkState,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// JSON merge patch of a VPC's mutable fields. A `None` tag value removes
/// the tag.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VpcPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_support: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_hostnames: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_tenancy: Option<InstanceTenancy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags_patch))]
    pub tags: Option<BTreeMap<String, Option<String>>>,
}

// ---------------------------------------------------------------- Subnet

/// `POST /v1/regions/{region}/subnets`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSubnet {
    pub vpc_id: String,
    /// Inside the VPC's block, overlapping no sibling, /16 to /28.
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::cidr_block))]
    pub cidr_block: String,
    /// A zone of the region; default `<region>a`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::availability_zone))]
    pub availability_zone: Option<String>,
    /// Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_public_ip_on_launch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags))]
    pub tags: Option<Tags>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Subnet {
    pub id: String,
    pub region: String,
    pub vpc_id: String,
    pub cidr_block: String,
    pub availability_zone: String,
    pub map_public_ip_on_launch: bool,
    pub tags: Tags,
    /// Addresses in the block minus the five the cloud reserves.
    pub available_ip_address_count: u32,
    pub state: NetworkState,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubnetPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_public_ip_on_launch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags_patch))]
    pub tags: Option<BTreeMap<String, Option<String>>>,
}

// ---------------------------------------------------------------- NodeGroup

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScalingConfig {
    pub min_size: i64,
    pub max_size: i64,
    pub desired_size: i64,
}

/// Scaling config as sent on create: every size optional (defaults: min 1,
/// desired = min, max = max(desired, 2)).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScalingConfigInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 0))]
    pub min_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 1))]
    pub max_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 0))]
    pub desired_size: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeGroupStatus {
    Creating,
    Active,
    Updating,
    Deleting,
}

/// `POST /v1/regions/{region}/clusters/{cluster}/nodegroups`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateNodeGroup {
    /// Client-chosen, unique per cluster.
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::name))]
    pub name: String,
    /// Existing subnets, all in one VPC.
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::node_group_subnet_ids))]
    pub subnet_ids: Vec<String>,
    #[cfg_attr(feature = "server", schema(min_length = 1, max_length = 2048))]
    pub node_role: String,
    /// Default `["t3.medium"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::instance_types))]
    pub instance_types: Option<Vec<String>>,
    /// Kubernetes version, default `1.31`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::kubernetes_version))]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags))]
    pub labels: Option<Tags>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags))]
    pub tags: Option<Tags>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling_config: Option<ScalingConfigInput>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NodeGroup {
    pub name: String,
    pub cluster_name: String,
    pub region: String,
    pub subnet_ids: Vec<String>,
    pub node_role: String,
    pub instance_types: Vec<String>,
    pub version: String,
    pub labels: Tags,
    pub tags: Tags,
    pub scaling_config: ScalingConfig,
    pub status: NodeGroupStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeGroupPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::kubernetes_version))]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags_patch))]
    pub labels: Option<BTreeMap<String, Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags_patch))]
    pub tags: Option<BTreeMap<String, Option<String>>>,
    /// Each size merges independently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling_config: Option<ScalingConfigInput>,
}

// ---------------------------------------------------------------- DatabaseInstance

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    Postgres,
    Mysql,
}

impl Engine {
    pub fn default_port(self) -> u16 {
        match self {
            Engine::Postgres => 5432,
            Engine::Mysql => 3306,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DatabaseStatus {
    Creating,
    Available,
    Modifying,
    Deleting,
}

/// `POST /v1/regions/{region}/databaseInstances`.
#[derive(Serialize, Deserialize, Clone, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateDatabaseInstance {
    /// Client-chosen, unique per account and region.
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::identifier))]
    pub identifier: String,
    pub engine: Engine,
    /// Default per engine (`16.4` / `8.0.39`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::engine_version))]
    pub engine_version: Option<String>,
    /// Default `db.t3.micro`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::instance_class))]
    pub instance_class: Option<String>,
    /// GiB, 20..=65536, default 20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 20, maximum = 65536))]
    pub allocated_storage: Option<i64>,
    /// 1-16 characters, starts with a letter.
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::master_username))]
    pub master_username: String,
    /// 8-128 characters, none of `/ " @`. Write-only.
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::master_password))]
    pub master_password: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::database_subnet_ids))]
    pub subnet_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publicly_accessible: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags))]
    pub tags: Option<Tags>,
}

/// Hand-written so the password never reaches a log line.
impl std::fmt::Debug for CreateDatabaseInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateDatabaseInstance")
            .field("identifier", &self.identifier)
            .field("engine", &self.engine)
            .field("engine_version", &self.engine_version)
            .field("instance_class", &self.instance_class)
            .field("allocated_storage", &self.allocated_storage)
            .field("master_username", &self.master_username)
            .field("master_password", &"<redacted>")
            .field("subnet_ids", &self.subnet_ids)
            .field("publicly_accessible", &self.publicly_accessible)
            .field("deletion_protection", &self.deletion_protection)
            .field("tags", &self.tags)
            .finish()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub address: String,
    pub port: u16,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstance {
    pub identifier: String,
    pub region: String,
    pub engine: Engine,
    pub engine_version: String,
    pub instance_class: String,
    pub allocated_storage: i64,
    pub master_username: String,
    pub subnet_ids: Vec<String>,
    pub publicly_accessible: bool,
    pub deletion_protection: bool,
    pub tags: Tags,
    pub endpoint: Endpoint,
    pub status: DatabaseStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatabaseInstancePatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::engine_version))]
    pub engine_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::instance_class))]
    pub instance_class: Option<String>,
    /// May only grow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 20, maximum = 65536))]
    pub allocated_storage: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::master_password))]
    pub master_password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publicly_accessible: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::tags_patch))]
    pub tags: Option<BTreeMap<String, Option<String>>>,
}

impl std::fmt::Debug for DatabaseInstancePatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseInstancePatch")
            .field("engine_version", &self.engine_version)
            .field("instance_class", &self.instance_class)
            .field("allocated_storage", &self.allocated_storage)
            .field(
                "master_password",
                &self.master_password.as_ref().map(|_| "<redacted>"),
            )
            .field("publicly_accessible", &self.publicly_accessible)
            .field("deletion_protection", &self.deletion_protection)
            .field("tags", &self.tags)
            .finish()
    }
}

/// `POST .../databaseInstances/{identifier}/authenticate`: 200 when the
/// credentials are the instance's master credentials, 401 otherwise.
#[derive(Serialize, Deserialize, Clone, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateResult {
    pub authenticated: bool,
}

// ---------------------------------------------------------------- lists and errors

/// One page of a list. `nextPageToken` is absent on the last page.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// `application/problem+json` (RFC 9457) with fakecloud's stable `code`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable machine-readable code, e.g. `InvalidSubnet.Range`.
    pub code: String,
    pub request_id: String,
    /// The request field at fault, when there is one (`scalingConfig.minSize`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

// ---------------------------------------------------------------- admin

/// A resource as the admin API shows it: any account, any kind.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdminResource {
    pub kind: Kind,
    pub account: String,
    pub region: String,
    /// The node group's cluster; absent for other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Cloud id, node group name or database identifier.
    pub id: String,
    pub etag: String,
    /// The resource exactly as `GET` renders it to its owner.
    #[cfg_attr(feature = "server", schema(value_type = Object))]
    pub resource: serde_json::Value,
}

/// Longest provisioning delay or injected latency the admin API takes, in
/// milliseconds: one day. A longer one would only hang a test, and could
/// overflow the transition timestamps.
pub const MAX_DELAY_MS: u64 = 86_400_000;
/// Longest `Retry-After` a fault rule sends, in seconds: one day.
pub const MAX_RETRY_AFTER_SECS: u64 = 86_400;

/// Provisioning delay of one kind; `0` means immediate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timing {
    #[cfg_attr(feature = "server", schema(maximum = 86400000))] // MAX_DELAY_MS
    pub delay_ms: u64,
}

/// Delays for every kind.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TimingTable {
    pub vpc: Timing,
    pub subnet: Timing,
    pub node_group: Timing,
    pub database_instance: Timing,
}

/// A fault rule: calls whose method and path match get `status`/`code`
/// instead of being served, after `latencyMs`; with `afterCall`, the call is
/// served first and only its answer is replaced (a response lost on the way
/// back, the case idempotency keys exist for).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRuleSpec {
    /// HTTP method to match; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path prefix to match, e.g. `/v1/regions/us-east-1/vpcs`.
    pub path_prefix: String,
    /// Status to answer; absent means "serve normally, only add latency".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 400, maximum = 599))]
    pub status: Option<u16>,
    /// Problem code of the injected error; default `InjectedFault`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Fire for the next N matching calls only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 4294967295_u64))]
    pub times: Option<u32>,
    /// Fire with this probability (0..=1); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(minimum = 0, maximum = 1))]
    pub probability: Option<f64>,
    /// Delay added before answering, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(maximum = 86400000))] // MAX_DELAY_MS
    pub latency_ms: Option<u64>,
    /// `Retry-After` seconds sent with the injected error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(maximum = 86400))] // MAX_RETRY_AFTER_SECS
    pub retry_after_secs: Option<u64>,
    /// Serve the call (its changes are committed), then answer with the
    /// injected error instead of its result; default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_call: bool,
}

/// A stored fault rule: its spec, its `id` (for `DELETE /admin/faults/{id}`)
/// and how often it fired.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FaultRule {
    pub id: u64,
    #[serde(flatten)]
    pub spec: FaultRuleSpec,
    /// Times this rule has fired.
    pub fired: u64,
}

/// The spec's schema with `id` and `fired` added, built from the spec's so
/// the two cannot drift. The derive would render the flattened spec as an
/// `allOf` that keeps the spec's `additionalProperties: false`, which
/// forbids `id` and `fired` themselves.
#[cfg(feature = "server")]
impl PartialSchema for FaultRule {
    fn schema() -> RefOr<Schema> {
        let mut schema = FaultRuleSpec::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object.description = Some("A stored fault rule.".into());
            for (name, minimum, description) in [
                (
                    "id",
                    1,
                    "Identifies the rule in `DELETE /admin/faults/{id}`.",
                ),
                ("fired", 0, "Times this rule has fired."),
            ] {
                let property = ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(minimum))
                    .description(Some(description));
                object.properties.insert(name.into(), property.into());
                object.required.push(name.into());
            }
        }
        schema
    }
}

#[cfg(feature = "server")]
impl ToSchema for FaultRule {}

/// Token bucket per account: `ratePerSecond` refill, `burst` capacity.
/// The bucket starts full; `ratePerSecond: 0` refuses every call, so a
/// test can cut one account off entirely.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Throttling {
    /// Tokens added per second: at most this many calls a second, once the
    /// burst is spent.
    #[cfg_attr(feature = "server", schema(minimum = 0))]
    pub rate_per_second: f64,
    /// Tokens the bucket holds: calls that may come at once. At least 1, as
    /// a bucket that holds no token could never let a call through.
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 4294967295_u64))]
    pub burst: u32,
}

/// One account's own token bucket, in force instead of the default one
/// (`/admin/throttling`) for that account only.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccountThrottling {
    /// The account, as an API key names it (`--api-key KEY=ACCOUNT`).
    pub account: String,
    pub throttling: Throttling,
}

/// Who made a call.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Actor {
    /// A caller holding an account's API key (the provider, a test, a user).
    Api,
    /// An outside actor (autoscaler, another team) acting via the admin API.
    External,
    /// The admin API itself (reset, inspection, fault set-up).
    Admin,
    /// A call without valid credentials.
    Anonymous,
}

impl Actor {
    pub const ALL: [Actor; 4] = [Actor::Api, Actor::External, Actor::Admin, Actor::Anonymous];

    /// The actor `as_str` names.
    pub fn parse(s: &str) -> Option<Actor> {
        Actor::ALL.into_iter().find(|a| a.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Api => "api",
            Actor::External => "external",
            Actor::Admin => "admin",
            Actor::Anonymous => "anonymous",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub seq: i64,
    pub time: Timestamp,
    /// Account the call acted for; absent for unauthenticated and global admin calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub actor: Actor,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub request_id: String,
    /// The caller's `User-Agent` header, so the audit tells which client
    /// (which provider replica: it sends `fakecloud-provider/<version>
    /// (<identity>)`) made each call. At most 256 bytes: a longer one is
    /// cut on a character boundary, bytes that are not UTF-8 replaced.
    /// Absent when the call sent none, and on calls recorded before
    /// fakecloud kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(max_length = 256))]
    pub user_agent: Option<String>,
}

/// Filters for `GET /admin/audit`; all optional, combined with AND.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema, utoipa::IntoParams))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "server", into_params(parameter_in = Query))]
pub struct AuditQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// Only calls that are not GET/HEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutating: Option<bool>,
    /// Only calls whose `userAgent` is exactly this (as stored: cut to 256
    /// bytes), e.g. one provider replica's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Only entries with a larger `seq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<i64>,
}

// ---------------------------------------------------------------- snapshots, seed, recorder

/// Resources per kind.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceCounts {
    pub vpc: u64,
    pub subnet: u64,
    pub node_group: u64,
    pub database_instance: u64,
}

impl ResourceCounts {
    /// Counts `n` more (or, negative, fewer) resources of `kind`.
    pub fn add(&mut self, kind: Kind, n: i64) {
        let count = match kind {
            Kind::Vpc => &mut self.vpc,
            Kind::Subnet => &mut self.subnet,
            Kind::NodeGroup => &mut self.node_group,
            Kind::DatabaseInstance => &mut self.database_instance,
        };
        *count = count.saturating_add_signed(n);
    }

    pub fn total(&self) -> u64 {
        self.vpc + self.subnet + self.node_group + self.database_instance
    }
}

/// `POST /admin/snapshots`: save the whole state under `name`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveSnapshot {
    #[cfg_attr(feature = "server", schema(schema_with = crate::schemas::snapshot_name))]
    pub name: String,
}

/// A stored snapshot, as `GET /admin/snapshots` lists it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SnapshotInfo {
    pub name: String,
    /// When it was saved, or uploaded.
    pub created_at: Timestamp,
    /// Bytes of the file (`GET /admin/snapshots/{name}`).
    pub size: u64,
    /// Format version of the file (see the README's versioning rule).
    pub format_version: u32,
    /// Version of the fakecloud that made the file.
    pub fakecloud_version: String,
    /// The accounts the file holds: the ones a `merge` load replaces.
    pub accounts: Vec<String>,
    /// Resources in the file, per kind.
    pub resources: ResourceCounts,
}

/// How a load treats the state it finds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum LoadStrategy {
    /// The file's state replaces the whole state: every account, the
    /// audit, timing, faults and throttling.
    Overwrite,
    /// The file's accounts replace those accounts (their resources,
    /// idempotency records, audit entries and own throttling); every other
    /// account and the global settings stay as they are.
    Merge,
}

/// `POST /admin/snapshots/{name}/load`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadSnapshot {
    pub strategy: LoadStrategy,
}

/// What a load did.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoadResult {
    pub name: String,
    pub strategy: LoadStrategy,
    /// The accounts replaced (for `overwrite`, every account there is now).
    pub accounts: Vec<String>,
    /// Resources loaded from the file, per kind.
    pub resources: ResourceCounts,
}

/// `PUT /admin/seed`: makes generated ids and secrets reproducible.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedSettings {
    #[cfg_attr(feature = "server", schema(maximum = 18446744073709551615_u64))]
    pub seed: u64,
    /// Draws of ids and secrets to skip: a replay sets the position its
    /// recording started at. Default 0.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(maximum = 18446744073709551615_u64))]
    pub position: u64,
}

/// The id generator: seeded or random.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SeedState {
    /// `null`: ids and secrets are random.
    pub seed: Option<u64>,
    /// Ids and secrets drawn since seeding.
    pub position: u64,
}

/// The request recorder.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "server", derive(ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecorderStatus {
    pub recording: bool,
    /// When the current (or last) recording started; absent before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// `/v1` calls recorded so far.
    pub requests: u64,
}

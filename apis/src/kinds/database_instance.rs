//! `DatabaseInstance`: a managed SQL database
//! (`database.fakecloud.crossplane.io/v1alpha1`).

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{ManagedStatus, Reference, ResourceSpec, SecretKeySelector, Selector};
use crate::rules::{immutable, never_shrinks, required_to_create};

/// The database engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// PostgreSQL.
    Postgres,
    /// MySQL.
    Mysql,
}

/// The desired state of a DatabaseInstance (`spec.forProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceParameters {
    /// Region of the instance. Identifies the resource, so it is always required.
    #[x_kube(validation = immutable("region"))]
    pub region: String,
    /// `postgres` or `mysql`. Needed to create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = immutable("engine"))]
    pub engine: Option<Engine>,
    /// Engine version, e.g. `16.2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// Size class of the instance, e.g. `db.small`. Needed to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_class: Option<String>,
    /// Storage in GiB. Needed to create; can only grow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    #[x_kube(validation = never_shrinks("allocatedStorage"))]
    pub allocated_storage: Option<i32>,
    /// Name of the master user. Needed to create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = immutable("masterUsername"))]
    pub master_username: Option<String>,
    /// The Secret key holding the master password. When absent, the
    /// provider generates a password and publishes it as the `password`
    /// connection detail. Changing the value in this Secret rotates the
    /// password, when writeConnectionSecretToRef is set (the provider
    /// records the applied password there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_password_secret_ref: Option<SecretKeySelector>,
    /// Ids of the Subnets the instance is reachable in. Set them directly,
    /// or let `subnetIdRefs` / `subnetIdSelector` fill them in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_ids: Option<Vec<String>>,
    /// Subnet objects whose `status.atProvider.id` become `subnetIds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id_refs: Option<Vec<Reference>>,
    /// Selects the Subnet objects whose `status.atProvider.id` become
    /// `subnetIds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id_selector: Option<Selector>,
    /// Whether the endpoint is reachable from outside the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publicly_accessible: Option<bool>,
    /// Whether the cloud refuses to delete the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    /// Tags of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// Values used only to create a DatabaseInstance (`spec.initProvider`);
/// `forProvider` wins where both are set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceInitParameters {
    /// `postgres` or `mysql`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Engine version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// Size class of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_class: Option<String>,
    /// Storage in GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub allocated_storage: Option<i32>,
    /// Name of the master user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_username: Option<String>,
    /// Ids of the Subnets the instance is reachable in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_ids: Option<Vec<String>>,
    /// Whether the endpoint is reachable from outside the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publicly_accessible: Option<bool>,
    /// Whether the cloud refuses to delete the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    /// Tags of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// Where clients connect to the instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Endpoint {
    /// Host name of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// TCP port of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// The observed state of a DatabaseInstance (`status.atProvider`):
/// everything fakecloud reports. The master password is never reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceObservation {
    /// Name of the instance; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifier: Option<String>,
    /// Region of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// `postgres` or `mysql`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Engine version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// Size class of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_class: Option<String>,
    /// Storage in GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_storage: Option<i32>,
    /// Name of the master user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_username: Option<String>,
    /// Ids of the Subnets the instance is reachable in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_ids: Option<Vec<String>>,
    /// Whether the endpoint is reachable from outside the VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publicly_accessible: Option<bool>,
    /// Whether the cloud refuses to delete the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    /// Tags of the instance, including ones set outside Crossplane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    /// Where clients connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    /// `creating`, `available`, `modifying` or `deleting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// When the instance was created (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the instance last changed (RFC 3339, as fakecloud reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// `status` of a DatabaseInstance.
pub type DatabaseInstanceStatus = ManagedStatus<DatabaseInstanceObservation>;

/// `spec` of a DatabaseInstance.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "database.fakecloud.crossplane.io",
    version = "v1alpha1",
    kind = "DatabaseInstance",
    singular = "databaseinstance",
    plural = "databaseinstances",
    status = "DatabaseInstanceStatus",
    derive = "PartialEq",
    doc = "A DatabaseInstance: a managed PostgreSQL or MySQL database.",
    category = "crossplane",
    category = "managed",
    category = "fakecloud",
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type=='Ready')].status"}"#,
    printcolumn = r#"{"name":"SYNCED","type":"string","jsonPath":".status.conditions[?(@.type=='Synced')].status"}"#,
    printcolumn = r#"{"name":"EXTERNAL-NAME","type":"string","jsonPath":".metadata.annotations.crossplane\\.io/external-name"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[x_kube(validation = required_to_create("engine"))]
#[x_kube(validation = required_to_create("instanceClass"))]
#[x_kube(validation = required_to_create("allocatedStorage"))]
#[x_kube(validation = required_to_create("masterUsername"))]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceSpec {
    /// The Crossplane fields: policies, provider config, connection secret.
    #[serde(flatten)]
    pub resource: ResourceSpec,
    /// The desired state of the instance.
    pub for_provider: DatabaseInstanceParameters,
    /// Values used only when creating the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_provider: Option<DatabaseInstanceInitParameters>,
}

//! `DatabaseInstance`: a managed SQL database
//! (`database.fakecloud.crossplane.io/v1alpha1`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::rules::{immutable, never_shrinks, required_to_create};
use crossplane_types::{ClusterScoped, ManagedStatus, Namespaced, Scope};

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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceParameters<S: Scope> {
    /// Region of the instance. Identifies the resource, so it is always required.
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// `postgres` or `mysql`. Needed to create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("engine"))]
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
    #[schemars(transform = never_shrinks("allocatedStorage"))]
    pub allocated_storage: Option<i32>,
    /// Name of the master user. Needed to create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("masterUsername"))]
    pub master_username: Option<String>,
    /// The Secret key holding the master password. When absent, the
    /// provider generates a password and publishes it as the `password`
    /// connection detail. Changing the value in this Secret rotates the
    /// password, when writeConnectionSecretToRef is set (the provider
    /// records the applied password there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_password_secret_ref: Option<S::SecretKeySelector>,
    /// Ids of the Subnets the instance is reachable in. Set them directly,
    /// or let `subnetIdRefs` / `subnetIdSelector` fill them in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_ids: Option<Vec<String>>,
    /// Subnet objects whose `status.atProvider.id` become `subnetIds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id_refs: Option<Vec<S::Reference>>,
    /// Selects the Subnet objects whose `status.atProvider.id` become
    /// `subnetIds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id_selector: Option<S::Selector>,
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

managed_resource! {
    kind: "DatabaseInstance", root: "DatabaseInstance", spec: DatabaseInstanceSpec,
    singular: "databaseinstance", plural: "databaseinstances",
    groups: ["database.fakecloud.crossplane.io", "database.fakecloud.m.crossplane.io"],
    docs: [
        "A DatabaseInstance: a managed PostgreSQL or MySQL database.",
        "A DatabaseInstance: a managed PostgreSQL or MySQL database."
    ],
    noun: "the instance",
    status: "DatabaseInstanceStatus",
    for_provider: [
        DatabaseInstanceParameters<ClusterScoped>,
        DatabaseInstanceParameters<Namespaced>
    ],
    init_provider: DatabaseInstanceInitParameters,
    rules: [
        required_to_create("engine"),
        required_to_create("instanceClass"),
        required_to_create("allocatedStorage"),
        required_to_create("masterUsername"),
    ],
}

//! `DatabaseInstance`: a managed SQL database
//! (`database.fakecloud.crossplane.io/v1alpha1`).

/// The namespaced kind at `v1beta1`, the stored version, and how it
/// converts from the namespaced `v1alpha1` one here (`m`), which stays
/// served, deprecated.
pub mod v1beta1;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crossplane_types::rules::{immutable, never_shrinks, required_to_create};
use crossplane_types::{ConnectionDetail, ManagedResource, Scope};

/// The connection details of a DatabaseInstance.
pub const CONNECTION_DETAILS: &[ConnectionDetail] = &[
    ConnectionDetail {
        name: "endpoint",
        description: "Host name clients connect to (status.atProvider.endpoint.address).",
    },
    ConnectionDetail {
        name: "port",
        description: "TCP port clients connect to (status.atProvider.endpoint.port), as decimal text.",
    },
    ConnectionDetail {
        name: "username",
        description: "Name of the master user (masterUsername).",
    },
    ConnectionDetail {
        name: "password",
        description: "Password of the master user: the value of masterPasswordSecretRef, or the password the provider generated when that is unset.",
    },
];

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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(
    kind = "DatabaseInstance", plural = "databaseinstances", version = "v1alpha1",
    group = "database.fakecloud.m.crossplane.io", legacy_group = "database.fakecloud.crossplane.io",
    doc = "A DatabaseInstance: a managed PostgreSQL or MySQL database.", noun = "the instance",
    category = "fakecloud", observed = DatabaseInstanceReported, external_name = MetadataName,
    connection_details = CONNECTION_DETAILS,
    rule = required_to_create("engine"),
    rule = required_to_create("instanceClass"),
    rule = required_to_create("allocatedStorage"),
    rule = required_to_create("masterUsername"),
)]
pub struct DatabaseInstanceParameters<S: Scope> {
    /// Region of the instance. Identifies the resource, so it is always required.
    #[managed(identifier)]
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// `postgres` or `mysql`. Needed to create; cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = immutable("engine"))]
    pub engine: Option<Engine>,
    /// Engine version, e.g. `16.2`.
    #[managed(init_doc = "Engine version.", observed_doc = "Engine version.")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// Size class of the instance, e.g. `db.small`. Needed to create.
    #[managed(
        init_doc = "Size class of the instance.",
        observed_doc = "Size class of the instance."
    )]
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
    #[managed(reference(
        kind = "Subnet",
        plural = "subnets",
        group = "network.fakecloud.m.crossplane.io",
        legacy_group = "network.fakecloud.crossplane.io"
    ))]
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
    #[managed(observed_doc = "Tags of the instance, including ones set outside Crossplane.")]
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

/// What fakecloud reports of an instance beyond its parameters. The master
/// password is never reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInstanceReported {
    /// Name of the instance; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifier: Option<String>,
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

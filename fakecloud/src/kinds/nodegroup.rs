//! NodeGroup: worker nodes of a cluster, with a scaling config an outside
//! autoscaler may change.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::SqliteConnection;

use super::{Prepared, ResourceKind, Revised, States, validate};
use crate::error::ApiError;
use crate::field_rules::INSTANCE_TYPES_MAX;
use crate::ids::Ids;
use crate::model::{CreateNodeGroup, Kind, NodeGroup, ScalingConfig, Tags};
use crate::store::{Location, Row};

pub struct NodeGroupKind;

#[derive(Serialize, Deserialize, PartialEq, Clone)]
#[serde(rename_all = "camelCase")]
struct Spec {
    name: String,
    subnet_ids: Vec<String>,
    node_role: String,
    instance_types: Vec<String>,
    version: String,
    labels: Tags,
    tags: Tags,
    scaling_config: ScalingConfig,
}

fn normalize(input: CreateNodeGroup) -> Result<Spec, ApiError> {
    validate::name("name", &input.name)?;
    if input.subnet_ids.is_empty() {
        return Err(ApiError::invalid("subnetIds", "at least one subnet"));
    }
    validate::non_empty("nodeRole", &input.node_role, 2048)?;
    let instance_types = input
        .instance_types
        .unwrap_or_else(|| vec!["t3.medium".to_string()]);
    if instance_types.is_empty() || instance_types.len() > INSTANCE_TYPES_MAX {
        return Err(ApiError::invalid(
            "instanceTypes",
            format!("1 to {INSTANCE_TYPES_MAX} instance types"),
        ));
    }
    for t in &instance_types {
        let valid = t.split_once('.').is_some_and(|(family, size)| {
            [family, size].iter().all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            })
        });
        if !valid {
            return Err(ApiError::invalid(
                "instanceTypes",
                format!("{t:?} is not an instance type like t3.medium"),
            ));
        }
    }
    let version = input.version.unwrap_or_else(|| "1.31".to_string());
    validate::version("version", &version, 2)?;
    let labels = input.labels.unwrap_or_default();
    validate::tags("labels", &labels)?;
    let tags = input.tags.unwrap_or_default();
    validate::tags("tags", &tags)?;
    let scaling = input.scaling_config.unwrap_or_default();
    let min_size = scaling.min_size.unwrap_or(1);
    let desired_size = scaling.desired_size.unwrap_or(min_size);
    let max_size = scaling.max_size.unwrap_or(desired_size.max(2));
    if min_size < 0 {
        return Err(ApiError::invalid("scalingConfig.minSize", "must be >= 0"));
    }
    if max_size < 1 {
        return Err(ApiError::invalid("scalingConfig.maxSize", "must be >= 1"));
    }
    if min_size > max_size {
        return Err(ApiError::invalid(
            "scalingConfig.minSize",
            format!("minSize {min_size} exceeds maxSize {max_size}"),
        ));
    }
    if desired_size < min_size || desired_size > max_size {
        return Err(ApiError::invalid(
            "scalingConfig.desiredSize",
            format!("desiredSize {desired_size} must be within {min_size}..={max_size}"),
        ));
    }
    Ok(Spec {
        name: input.name,
        subnet_ids: input.subnet_ids,
        node_role: input.node_role,
        instance_types,
        version,
        labels,
        tags,
        scaling_config: ScalingConfig {
            min_size,
            max_size,
            desired_size,
        },
    })
}

fn to_value(spec: &Spec) -> Result<Value, ApiError> {
    serde_json::to_value(spec).map_err(|e| ApiError::internal("encoding spec", e))
}

impl ResourceKind for NodeGroupKind {
    const KIND: Kind = Kind::NodeGroup;
    const NOT_FOUND: &'static str = "ResourceNotFoundException";
    const ALREADY_EXISTS: &'static str = "ResourceInUseException";
    const BUSY: &'static str = "ResourceInUseException";
    const FIELDS: &'static [&'static str] = &[
        "name",
        "subnetIds",
        "nodeRole",
        "instanceTypes",
        "version",
        "labels",
        "tags",
        "scalingConfig",
    ];
    const IMMUTABLE: &'static [&'static str] = &["name", "subnetIds", "nodeRole", "instanceTypes"];
    const STATES: States = States {
        creating: "CREATING",
        ready: "ACTIVE",
        updating: Some("UPDATING"),
        deleting: Some("DELETING"),
    };
    type Resource = NodeGroup;

    async fn prepare(
        conn: &mut SqliteConnection,
        loc: &Location,
        body: &[u8],
        _ids: &Ids,
    ) -> Result<Prepared, ApiError> {
        let spec = normalize(validate::parse_body(body)?)?;
        let now = crate::clock::now_ms();
        validate::subnets_in_one_vpc(conn, loc, &spec.subnet_ids, now).await?;
        Ok(Prepared {
            name: spec.name.clone(),
            parent: String::new(),
            spec: to_value(&spec)?,
            secret_hash: None,
        })
    }

    fn revise(
        old: &Value,
        merged: Value,
        _password: Option<Value>,
        _ids: &Ids,
    ) -> Result<Revised, ApiError> {
        let new = normalize(validate::parse_value(merged)?)?;
        let old: Spec = serde_json::from_value(old.clone())
            .map_err(|e| ApiError::internal("decoding stored spec", e))?;
        // Tags are metadata; anything else makes the nodes roll.
        let reprovision = Spec {
            tags: old.tags.clone(),
            ..new.clone()
        } != old;
        Ok(Revised {
            spec: to_value(&new)?,
            secret_hash: None,
            reprovision,
        })
    }

    async fn check_delete(_conn: &mut SqliteConnection, _row: &Row) -> Result<(), ApiError> {
        Ok(())
    }

    fn render(row: &Row) -> Result<NodeGroup, ApiError> {
        let spec: Spec = super::stored_spec(row)?;
        Ok(NodeGroup {
            name: spec.name,
            cluster_name: row.scope.clone(),
            region: row.region.clone(),
            subnet_ids: spec.subnet_ids,
            node_role: spec.node_role,
            instance_types: spec.instance_types,
            version: spec.version,
            labels: spec.labels,
            tags: spec.tags,
            scaling_config: spec.scaling_config,
            status: super::state(row)?,
            created_at: super::timestamp(row.created_at),
            updated_at: super::timestamp(row.updated_at),
        })
    }
}

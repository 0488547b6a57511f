//! Subnet: a block inside a VPC's block, in one zone.

use axum::http::StatusCode;
use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::SqliteConnection;

use super::{Prepared, ResourceKind, Revised, States, validate};
use crate::error::ApiError;
use crate::ids::Ids;
use crate::model::{CreateSubnet, Kind, Subnet, Tags};
use crate::store::{self, Location, Row};

pub struct SubnetKind;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    vpc_id: String,
    cidr_block: String,
    availability_zone: String,
    map_public_ip_on_launch: bool,
    tags: Tags,
}

fn normalize(region: &str, input: CreateSubnet) -> Result<(Spec, Ipv4Net), ApiError> {
    let cidr = validate::cidr("cidrBlock", &input.cidr_block)?;
    let zone = input
        .availability_zone
        .unwrap_or_else(|| format!("{region}a"));
    validate::zone(region, &zone)?;
    let tags = input.tags.unwrap_or_default();
    validate::tags("tags", &tags)?;
    let spec = Spec {
        vpc_id: input.vpc_id,
        cidr_block: cidr.to_string(),
        availability_zone: zone,
        map_public_ip_on_launch: input.map_public_ip_on_launch.unwrap_or(false),
        tags,
    };
    Ok((spec, cidr))
}

fn to_value(spec: &Spec) -> Result<Value, ApiError> {
    serde_json::to_value(spec).map_err(|e| ApiError::internal("encoding spec", e))
}

fn region_of(old: &Value) -> String {
    // `<region><a|b|c>`: the stored zone always names the region.
    let zone = old
        .get("availabilityZone")
        .and_then(Value::as_str)
        .unwrap_or_default();
    zone[..zone.len().saturating_sub(1)].to_string()
}

impl ResourceKind for SubnetKind {
    const KIND: Kind = Kind::Subnet;
    const NOT_FOUND: &'static str = "InvalidSubnetID.NotFound";
    const ALREADY_EXISTS: &'static str = "InvalidSubnetID.Duplicate";
    const BUSY: &'static str = "IncorrectState";
    const FIELDS: &'static [&'static str] = &[
        "vpcId",
        "cidrBlock",
        "availabilityZone",
        "mapPublicIpOnLaunch",
        "tags",
    ];
    const IMMUTABLE: &'static [&'static str] = &["vpcId", "cidrBlock", "availabilityZone"];
    const STATES: States = States {
        creating: "pending",
        ready: "available",
        updating: None,
        deleting: None,
    };
    type Resource = Subnet;

    async fn prepare(
        conn: &mut SqliteConnection,
        loc: &Location,
        body: &[u8],
        ids: &Ids,
    ) -> Result<Prepared, ApiError> {
        let (spec, cidr) = normalize(&loc.region, validate::parse_body(body)?)?;
        let vpc_loc = Location {
            kind: Kind::Vpc,
            ..loc.clone()
        };
        let now = crate::clock::now_ms();
        let Some(vpc) = store::find(&mut *conn, &vpc_loc, &spec.vpc_id)
            .await?
            .and_then(|r| r.settled(now))
        else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "InvalidVpcID.NotFound",
                format!(
                    "vpcId: vpc {} does not exist in {}",
                    spec.vpc_id, loc.region
                ),
            )
            .with_field("vpcId"));
        };
        let vpc_block: Ipv4Net = vpc
            .spec
            .parse::<Value>()
            .ok()
            .and_then(|v| v.get("cidrBlock")?.as_str()?.parse().ok())
            .ok_or_else(|| ApiError::internal("decoding vpc block", &vpc.name))?;
        if !vpc_block.contains(&cidr) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "InvalidSubnet.Range",
                format!("cidrBlock: {cidr} is not inside the VPC's block {vpc_block}"),
            )
            .with_field("cidrBlock"));
        }
        for sibling in store::children(conn, &loc.account, Kind::Subnet, &vpc.name).await? {
            let Some(block) = serde_json::from_str::<Value>(&sibling.spec)
                .ok()
                .and_then(|v| v.get("cidrBlock")?.as_str()?.parse::<Ipv4Net>().ok())
            else {
                continue;
            };
            if block.contains(&cidr.network()) || cidr.contains(&block.network()) {
                return Err(ApiError::conflict(
                    "InvalidSubnet.Conflict",
                    format!(
                        "cidrBlock: {cidr} overlaps subnet {} ({block})",
                        sibling.name
                    ),
                )
                .with_field("cidrBlock"));
            }
        }
        Ok(Prepared {
            name: validate::new_id(conn, loc, ids, "subnet").await?,
            parent: vpc.name,
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
        let (new, _) = normalize(&region_of(old), validate::parse_value(merged)?)?;
        Ok(Revised {
            spec: to_value(&new)?,
            secret_hash: None,
            reprovision: false,
        })
    }

    async fn check_delete(conn: &mut SqliteConnection, row: &Row) -> Result<(), ApiError> {
        let users = store::subnet_users(conn, &row.account, &row.region, &row.name).await?;
        super::no_dependents("subnet", row, &users)
    }

    fn render(row: &Row) -> Result<Subnet, ApiError> {
        let spec: Spec = super::stored_spec(row)?;
        let prefix = spec
            .cidr_block
            .parse::<Ipv4Net>()
            .map(|n| n.prefix_len())
            .map_err(|e| ApiError::internal("decoding stored block", e))?;
        Ok(Subnet {
            id: row.name.clone(),
            region: row.region.clone(),
            vpc_id: spec.vpc_id,
            cidr_block: spec.cidr_block,
            availability_zone: spec.availability_zone,
            map_public_ip_on_launch: spec.map_public_ip_on_launch,
            tags: spec.tags,
            available_ip_address_count: (1u32 << (32 - u32::from(prefix))) - 5,
            state: super::state(row)?,
            created_at: super::timestamp(row.created_at),
            updated_at: super::timestamp(row.updated_at),
        })
    }
}

//! VPC: a CIDR block with DNS settings and tenancy.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::SqliteConnection;

use super::{Prepared, ResourceKind, Revised, States, validate};
use crate::error::ApiError;
use crate::ids::Ids;
use crate::model::{CreateVpc, InstanceTenancy, Kind, Tags, Vpc};
use crate::store::{self, Location, Row};

pub struct VpcKind;

/// The stored, normalized configuration.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    cidr_block: String,
    enable_dns_support: bool,
    enable_dns_hostnames: bool,
    instance_tenancy: InstanceTenancy,
    tags: Tags,
}

fn normalize(input: CreateVpc) -> Result<Spec, ApiError> {
    let cidr = validate::cidr("cidrBlock", &input.cidr_block)?;
    let tags = input.tags.unwrap_or_default();
    validate::tags("tags", &tags)?;
    let spec = Spec {
        cidr_block: cidr.to_string(),
        enable_dns_support: input.enable_dns_support.unwrap_or(true),
        enable_dns_hostnames: input.enable_dns_hostnames.unwrap_or(false),
        instance_tenancy: input.instance_tenancy.unwrap_or_default(),
        tags,
    };
    if spec.enable_dns_hostnames && !spec.enable_dns_support {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "InvalidParameterCombination",
            "enableDnsHostnames: DNS hostnames need enableDnsSupport",
        )
        .with_field("enableDnsHostnames"));
    }
    Ok(spec)
}

fn to_value(spec: &Spec) -> Result<Value, ApiError> {
    serde_json::to_value(spec).map_err(|e| ApiError::internal("encoding spec", e))
}

impl ResourceKind for VpcKind {
    const KIND: Kind = Kind::Vpc;
    const NOT_FOUND: &'static str = "InvalidVpcID.NotFound";
    const ALREADY_EXISTS: &'static str = "InvalidVpcID.Duplicate";
    const BUSY: &'static str = "IncorrectState";
    const FIELDS: &'static [&'static str] = &[
        "cidrBlock",
        "enableDnsSupport",
        "enableDnsHostnames",
        "instanceTenancy",
        "tags",
    ];
    const IMMUTABLE: &'static [&'static str] = &["cidrBlock"];
    const STATES: States = States {
        creating: "pending",
        ready: "available",
        updating: None,
        deleting: None,
    };
    type Resource = Vpc;

    async fn prepare(
        conn: &mut SqliteConnection,
        loc: &Location,
        body: &[u8],
        ids: &Ids,
    ) -> Result<Prepared, ApiError> {
        let spec = normalize(validate::parse_body(body)?)?;
        Ok(Prepared {
            name: validate::new_id(conn, loc, ids, "vpc").await?,
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
        let old_tenancy = old.get("instanceTenancy").and_then(Value::as_str);
        if new.instance_tenancy == InstanceTenancy::Dedicated && old_tenancy != Some("dedicated") {
            return Err(ApiError::invalid(
                "instanceTenancy",
                "tenancy can only be changed to \"default\"",
            ));
        }
        Ok(Revised {
            spec: to_value(&new)?,
            secret_hash: None,
            reprovision: false,
        })
    }

    async fn check_delete(conn: &mut SqliteConnection, row: &Row) -> Result<(), ApiError> {
        let subnets = store::children(conn, &row.account, Kind::Subnet, &row.name).await?;
        super::no_dependents("vpc", row, &subnets)
    }

    fn render(row: &Row) -> Result<Vpc, ApiError> {
        let spec: Spec = super::stored_spec(row)?;
        Ok(Vpc {
            id: row.name.clone(),
            region: row.region.clone(),
            cidr_block: spec.cidr_block,
            enable_dns_support: spec.enable_dns_support,
            enable_dns_hostnames: spec.enable_dns_hostnames,
            instance_tenancy: spec.instance_tenancy,
            tags: spec.tags,
            state: super::state(row)?,
            created_at: super::timestamp(row.created_at),
            updated_at: super::timestamp(row.updated_at),
        })
    }
}

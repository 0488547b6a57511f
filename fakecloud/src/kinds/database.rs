//! DatabaseInstance: a managed database with write-only master credentials.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::SqliteConnection;

use super::{Prepared, ResourceKind, Revised, States, validate};
use crate::error::ApiError;
use crate::field_rules::IDENTIFIER_MAX;
use crate::ids::Ids;
use crate::model::{CreateDatabaseInstance, DatabaseInstance, Endpoint, Engine, Kind, Tags};
use crate::store::{Location, Row};

pub struct DatabaseKind;

#[derive(Serialize, Deserialize, PartialEq, Clone)]
#[serde(rename_all = "camelCase")]
struct Spec {
    identifier: String,
    engine: Engine,
    engine_version: String,
    instance_class: String,
    allocated_storage: i64,
    master_username: String,
    subnet_ids: Vec<String>,
    publicly_accessible: bool,
    deletion_protection: bool,
    tags: Tags,
}

/// A stand-in that satisfies the password rule. The stored spec holds no
/// password (it is write-only), so re-validating a merged spec on PATCH uses
/// this when the patch does not set one; it is never stored.
const UNCHANGED_PASSWORD: &str = "unchanged-password";

fn identifier(value: &str) -> Result<(), ApiError> {
    let valid = (1..=IDENTIFIER_MAX).contains(&value.len())
        && value.starts_with(|c: char| c.is_ascii_lowercase())
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !value.ends_with('-')
        && !value.contains("--");
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "identifier",
            format!(
                "{value:?} must be 1-63 lowercase letters, digits or single hyphens, starting with a letter"
            ),
        ))
    }
}

fn password(value: &str) -> Result<(), ApiError> {
    let length = value.chars().count();
    if !(8..=128).contains(&length) {
        return Err(ApiError::invalid(
            "masterPassword",
            format!("must be 8-128 characters, got {length}"),
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| matches!(c, '/' | '"' | '@') || !(' '..='~').contains(c))
    {
        let shown = if matches!(c, '/' | '"' | '@') {
            format!("{c:?}")
        } else {
            "a non-printable or non-ASCII character".into()
        };
        return Err(ApiError::invalid(
            "masterPassword",
            format!("must not contain {shown}"),
        ));
    }
    Ok(())
}

fn username(value: &str) -> Result<(), ApiError> {
    let valid = (1..=16).contains(&value.len())
        && value.starts_with(|c: char| c.is_ascii_alphabetic())
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "masterUsername",
            "must be 1-16 letters, digits or '_', starting with a letter",
        ))
    }
}

fn normalize(input: CreateDatabaseInstance) -> Result<(Spec, String), ApiError> {
    identifier(&input.identifier)?;
    let engine_version = input.engine_version.unwrap_or_else(|| {
        match input.engine {
            Engine::Postgres => "16.4",
            Engine::Mysql => "8.0.39",
        }
        .to_string()
    });
    validate::version("engineVersion", &engine_version, 1)?;
    let instance_class = input
        .instance_class
        .unwrap_or_else(|| "db.t3.micro".to_string());
    let class_valid = instance_class
        .strip_prefix("db.")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(family, size)| {
            [family, size].iter().all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            })
        });
    if !class_valid {
        return Err(ApiError::invalid(
            "instanceClass",
            format!("{instance_class:?} is not a class like db.t3.micro"),
        ));
    }
    let allocated_storage = input.allocated_storage.unwrap_or(20);
    if !(20..=65536).contains(&allocated_storage) {
        return Err(ApiError::invalid(
            "allocatedStorage",
            format!("must be 20..=65536 GiB, got {allocated_storage}"),
        ));
    }
    username(&input.master_username)?;
    password(&input.master_password)?;
    let tags = input.tags.unwrap_or_default();
    validate::tags("tags", &tags)?;
    let spec = Spec {
        identifier: input.identifier,
        engine: input.engine,
        engine_version,
        instance_class,
        allocated_storage,
        master_username: input.master_username,
        subnet_ids: input.subnet_ids.unwrap_or_default(),
        publicly_accessible: input.publicly_accessible.unwrap_or(false),
        deletion_protection: input.deletion_protection.unwrap_or(false),
        tags,
    };
    Ok((spec, input.master_password))
}

/// `salt$sha256(salt || password)`, hex. A fake cloud needs no slow KDF; it
/// only must never store or echo the password itself.
fn hash_password(ids: &Ids, password: &str) -> String {
    let salt = ids.salt();
    format!("{salt}${}", digest(&salt, password))
}

fn digest(salt: &str, password: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt.as_bytes());
    hasher.update(password.as_bytes());
    hex::encode(hasher.finalize())
}

/// Whether `password` matches a stored `salt$hash`.
pub fn password_matches(stored: &str, password: &str) -> bool {
    stored
        .split_once('$')
        .is_some_and(|(salt, hash)| digest(salt, password) == hash)
}

fn to_value(spec: &Spec) -> Result<Value, ApiError> {
    serde_json::to_value(spec).map_err(|e| ApiError::internal("encoding spec", e))
}

impl ResourceKind for DatabaseKind {
    const KIND: Kind = Kind::DatabaseInstance;
    const NOT_FOUND: &'static str = "DBInstanceNotFound";
    const ALREADY_EXISTS: &'static str = "DBInstanceAlreadyExists";
    const BUSY: &'static str = "InvalidDBInstanceState";
    const FIELDS: &'static [&'static str] = &[
        "identifier",
        "engine",
        "engineVersion",
        "instanceClass",
        "allocatedStorage",
        "masterUsername",
        "masterPassword",
        "subnetIds",
        "publiclyAccessible",
        "deletionProtection",
        "tags",
    ];
    const IMMUTABLE: &'static [&'static str] =
        &["identifier", "engine", "masterUsername", "subnetIds"];
    const STATES: States = States {
        creating: "creating",
        ready: "available",
        updating: Some("modifying"),
        deleting: Some("deleting"),
    };
    type Resource = DatabaseInstance;

    async fn prepare(
        conn: &mut SqliteConnection,
        loc: &Location,
        body: &[u8],
        ids: &Ids,
    ) -> Result<Prepared, ApiError> {
        let (spec, password) = normalize(validate::parse_body(body)?)?;
        let now = crate::clock::now_ms();
        validate::subnets_in_one_vpc(conn, loc, &spec.subnet_ids, now).await?;
        Ok(Prepared {
            name: spec.identifier.clone(),
            parent: String::new(),
            spec: to_value(&spec)?,
            secret_hash: Some(hash_password(ids, &password)),
        })
    }

    fn revise(
        old: &Value,
        merged: Value,
        password: Option<Value>,
        ids: &Ids,
    ) -> Result<Revised, ApiError> {
        let new_password = match password {
            None => None,
            Some(Value::String(p)) => Some(p),
            Some(_) => {
                return Err(ApiError::invalid("masterPassword", "must be a string"));
            }
        };
        let mut merged = merged;
        if let Value::Object(map) = &mut merged {
            map.insert(
                "masterPassword".into(),
                Value::String(
                    new_password
                        .clone()
                        .unwrap_or_else(|| UNCHANGED_PASSWORD.into()),
                ),
            );
        }
        let (new, _) = normalize(validate::parse_value(merged)?)?;
        let old: Spec = serde_json::from_value(old.clone())
            .map_err(|e| ApiError::internal("decoding stored spec", e))?;
        if new.allocated_storage < old.allocated_storage {
            return Err(ApiError::invalid(
                "allocatedStorage",
                format!(
                    "storage can only grow: {} is less than {}",
                    new.allocated_storage, old.allocated_storage
                ),
            ));
        }
        let reprovision = new_password.is_some()
            || Spec {
                tags: old.tags.clone(),
                ..new.clone()
            } != old;
        Ok(Revised {
            spec: to_value(&new)?,
            secret_hash: new_password.as_deref().map(|p| hash_password(ids, p)),
            reprovision,
        })
    }

    async fn check_delete(_conn: &mut SqliteConnection, row: &Row) -> Result<(), ApiError> {
        let spec: Spec = super::stored_spec(row)?;
        if spec.deletion_protection {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "InvalidParameterCombination",
                format!(
                    "database instance {} has deletionProtection enabled; disable it first",
                    row.name
                ),
            ));
        }
        Ok(())
    }

    fn render(row: &Row) -> Result<DatabaseInstance, ApiError> {
        let spec: Spec = super::stored_spec(row)?;
        let account_tag = &hex::encode(Sha256::digest(row.account.as_bytes()))[..8];
        Ok(DatabaseInstance {
            endpoint: Endpoint {
                address: format!(
                    "{}.{account_tag}.{}.db.fakecloud.internal",
                    spec.identifier, row.region
                ),
                port: spec.engine.default_port(),
            },
            identifier: spec.identifier,
            region: row.region.clone(),
            engine: spec.engine,
            engine_version: spec.engine_version,
            instance_class: spec.instance_class,
            allocated_storage: spec.allocated_storage,
            master_username: spec.master_username,
            subnet_ids: spec.subnet_ids,
            publicly_accessible: spec.publicly_accessible,
            deletion_protection: spec.deletion_protection,
            tags: spec.tags,
            status: super::state(row)?,
            created_at: super::timestamp(row.created_at),
            updated_at: super::timestamp(row.updated_at),
        })
    }
}

//! Shared validation: body parsing that names the offending field, and the
//! rules several kinds share (tags, CIDR blocks, names, zones, subnets).

use std::str::FromStr;

use axum::http::StatusCode;
use ipnet::Ipv4Net;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::error::ApiError;
use crate::field_rules::{TAG_KEY_MAX, TAG_VALUE_MAX, TAGS_MAX};
use crate::ids::Ids;
use crate::model::{Kind, REGIONS, Tags};
use crate::store::{self, Location, Row};

/// Parses a JSON body into `T`, rejecting unknown fields and wrong types
/// with the field's path in the error.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| malformed(&e))?;
    parse_value(value)
}

/// Like `parse_body` for an already-parsed value (a merged patch).
pub fn parse_value<T: DeserializeOwned>(mut value: Value) -> Result<T, ApiError> {
    whole_numbers_as_integers(&mut value);
    serde_path_to_error::deserialize(value).map_err(path_error)
}

/// JSON Schema, and so the OpenAPI document, counts `2.0` as the integer
/// `2`, which serde's integer types refuse. Whole numbers become integers
/// before typed parsing, so every spelling the document allows is taken
/// (`f64` fields take integers as they are).
fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            let Some(float) = number
                .as_f64()
                .filter(|f| number.is_f64() && f.fract() == 0.0)
            else {
                return;
            };
            // `i64::MAX as f64` and `u64::MAX as f64` round up to 2^63 and
            // 2^64, the ranges' exclusive ends; casts inside them are exact.
            if (i64::MIN as f64..i64::MAX as f64).contains(&float) {
                *number = (float as i64).into();
            } else if (0.0..u64::MAX as f64).contains(&float) {
                *number = (float as u64).into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers_as_integers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// Parses a body that must be a JSON object (merge patches).
pub fn parse_object(bytes: &[u8]) -> Result<serde_json::Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "InvalidParameterValue",
            "the body must be a JSON object",
        )),
        Err(e) => Err(malformed(&e)),
    }
}

fn malformed(e: &serde_json::Error) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "MalformedJSON",
        format!("the body is not valid JSON: {e}"),
    )
}

fn path_error(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    if !inner.is_data() {
        return malformed(&inner);
    }
    // serde_json appends " at line L column C"; the field path says more.
    let message = inner.to_string();
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(&message)
        .to_string();
    let prefix = if path == "." {
        String::new()
    } else {
        format!("{path}.")
    };
    let named = message.split('`').nth(1).map(|f| format!("{prefix}{f}"));
    if let (true, Some(field)) = (message.starts_with("missing field"), named.clone()) {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "MissingParameter",
            format!("{field}: required"),
        )
        .with_field(field);
    }
    if message.starts_with("unknown field") {
        // Here the path already ends with the unknown field itself.
        let field = if path == "." {
            named.unwrap_or_else(|| "body".into())
        } else {
            path
        };
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "UnknownParameter",
            format!("{field}: unknown field"),
        )
        .with_field(field);
    }
    let field = if path == "." { "body".into() } else { path };
    ApiError::invalid(&field, message)
}

pub fn region(region: &str) -> Result<(), ApiError> {
    if REGIONS.contains(&region) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "InvalidRegion",
            format!(
                "region {region:?} does not exist; regions: {}",
                REGIONS.join(", ")
            ),
        ))
    }
}

pub fn zone(region: &str, zone: &str) -> Result<(), ApiError> {
    let valid = zone
        .strip_prefix(region)
        .is_some_and(|suffix| matches!(suffix, "a" | "b" | "c"));
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "availabilityZone",
            format!("{zone:?} is not a zone of {region} ({region}a, {region}b or {region}c)"),
        ))
    }
}

pub fn tags(field: &str, tags: &Tags) -> Result<(), ApiError> {
    if tags.len() > TAGS_MAX {
        return Err(ApiError::invalid(
            field,
            format!("at most {TAGS_MAX} entries"),
        ));
    }
    for (key, value) in tags {
        if key.is_empty() || key.chars().count() > TAG_KEY_MAX {
            return Err(ApiError::invalid(
                field,
                format!("key {key:?} must be 1-{TAG_KEY_MAX} characters"),
            ));
        }
        if value.chars().count() > TAG_VALUE_MAX {
            return Err(ApiError::invalid(
                field,
                format!("value of {key:?} must be at most {TAG_VALUE_MAX} characters"),
            ));
        }
    }
    Ok(())
}

/// An IPv4 block from /16 to /28, returned canonical (host bits cleared).
pub fn cidr(field: &str, text: &str) -> Result<Ipv4Net, ApiError> {
    let net = Ipv4Net::from_str(text)
        .map_err(|_| ApiError::invalid(field, format!("{text:?} is not an IPv4 CIDR block")))?;
    if !(16..=28).contains(&net.prefix_len()) {
        return Err(ApiError::invalid(
            field,
            format!(
                "prefix length must be /16 to /28, got /{}",
                net.prefix_len()
            ),
        ));
    }
    Ok(net.trunc())
}

/// A client-chosen name: 1-63 letters, digits, `-` or `_`, starting with a
/// letter or digit.
pub fn name(field: &str, name: &str) -> Result<(), ApiError> {
    let mut chars = name.chars();
    let valid = name.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            field,
            format!(
                "{name:?} must be 1-63 letters, digits, '-' or '_', starting with a letter or digit"
            ),
        ))
    }
}

pub fn non_empty(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.is_empty() || value.chars().count() > max {
        Err(ApiError::invalid(
            field,
            format!("must be 1-{max} characters"),
        ))
    } else {
        Ok(())
    }
}

/// `major.minor[.patch...]`, digits only: `min_parts` to 4 numbers of at
/// most 6 digits.
pub fn version(field: &str, value: &str, min_parts: usize) -> Result<(), ApiError> {
    let parts: Vec<&str> = value.split('.').collect();
    let valid = parts.len() >= min_parts
        && parts.len() <= 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 6 && p.chars().all(|c| c.is_ascii_digit()));
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            field,
            format!("{value:?} is not a version like 1.31"),
        ))
    }
}

/// Resolves subnet ids of the caller's account and region: each must exist
/// and all must share one VPC. Returns that VPC's id.
pub async fn subnets_in_one_vpc(
    conn: &mut SqliteConnection,
    loc: &Location,
    ids: &[String],
    now: i64,
) -> Result<Option<String>, ApiError> {
    let subnet_loc = Location {
        account: loc.account.clone(),
        kind: Kind::Subnet,
        region: loc.region.clone(),
        scope: String::new(),
    };
    let mut vpc: Option<String> = None;
    for (index, id) in ids.iter().enumerate() {
        if ids[..index].contains(id) {
            return Err(ApiError::invalid(
                "subnetIds",
                format!("{id} is listed twice"),
            ));
        }
        let row: Option<Row> = store::find(&mut *conn, &subnet_loc, id)
            .await?
            .and_then(|r| r.settled(now));
        let Some(row) = row else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "InvalidSubnetID.NotFound",
                format!("subnetIds: subnet {id} does not exist in {}", loc.region),
            )
            .with_field("subnetIds"));
        };
        match &vpc {
            Some(v) if *v != row.parent => {
                return Err(ApiError::invalid(
                    "subnetIds",
                    format!(
                        "subnets must share one VPC; {id} is in {}, not {v}",
                        row.parent
                    ),
                ));
            }
            _ => vpc = Some(row.parent),
        }
    }
    Ok(vpc)
}

/// A new cloud id, `<prefix>-<17 hex>`, that no resource at `loc` has.
/// Random ids never meet in practice; seeded ones do when a seed is set
/// again over the resources it made (a snapshot loaded, then the same seed
/// set), and then the next draw is taken, as reproducible as the first.
pub async fn new_id(
    conn: &mut SqliteConnection,
    loc: &Location,
    ids: &Ids,
    prefix: &str,
) -> Result<String, sqlx::Error> {
    loop {
        let id = ids.resource_id(prefix);
        if store::find(&mut *conn, loc, &id).await?.is_none() {
            return Ok(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Numbers {
        min_size: i64,
        delay_ms: u64,
        ratio: f64,
    }

    #[test]
    fn whole_numbers_written_as_floats_are_integers() {
        let numbers: Numbers =
            parse_body(br#"{"minSize": -2.0, "delayMs": 18000000000000000000.0, "ratio": 1}"#)
                .unwrap();
        assert_eq!(
            numbers,
            Numbers {
                min_size: -2,
                delay_ms: 18_000_000_000_000_000_000,
                ratio: 1.0
            }
        );
    }

    #[test]
    fn fractions_and_out_of_range_numbers_are_still_refused() {
        let err =
            parse_body::<Numbers>(br#"{"minSize": 1.5, "delayMs": 0, "ratio": 0.5}"#).unwrap_err();
        assert_eq!(
            (err.code.as_str(), err.field.as_deref()),
            ("InvalidParameterValue", Some("minSize"))
        );
        let err =
            parse_body::<Numbers>(br#"{"minSize": 1, "delayMs": 1e20, "ratio": 0.5}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("delayMs"));
    }
}

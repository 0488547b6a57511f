//! The four resource kinds: what each accepts, how it validates and renders.
//!
//! Everything kind-independent (storage, ETags, idempotency, transitions) is
//! in `service`; a kind only answers "is this configuration valid" and "what
//! does a stored row look like on the wire". The limits the kinds check,
//! and the patterns that tell the OpenAPI document what they accept, are in
//! `field_rules`: change a rule there and here together.

pub mod database;
pub mod nodegroup;
pub mod subnet;
pub mod validate;
pub mod vpc;

use serde::Serialize;
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::error::ApiError;
use crate::ids::Ids;
use crate::model::Kind;
use crate::store::{Location, Row};

/// State names of a kind's lifecycle. `None`: the kind has no such phase
/// (VPCs and subnets change and disappear at once, as in the real cloud).
pub struct States {
    pub creating: &'static str,
    pub ready: &'static str,
    pub updating: Option<&'static str>,
    pub deleting: Option<&'static str>,
}

/// A validated create: the row's name, parent and normalized spec.
pub struct Prepared {
    pub name: String,
    pub parent: String,
    pub spec: Value,
    pub secret_hash: Option<String>,
}

/// A validated change of a stored spec.
pub struct Revised {
    pub spec: Value,
    /// A new password hash when the patch set a password.
    pub secret_hash: Option<String>,
    /// The change needs the resource to pass through its updating state.
    pub reprovision: bool,
}

pub trait ResourceKind {
    const KIND: Kind;
    /// Code answered when the addressed resource does not exist.
    const NOT_FOUND: &'static str;
    /// Code answered when a client-chosen name is taken (VPCs and subnets
    /// get server ids, so they never collide).
    const ALREADY_EXISTS: &'static str;
    /// Code answered when a change meets a resource being deleted.
    const BUSY: &'static str;
    /// Fields a create body accepts; a patch may name only these.
    const FIELDS: &'static [&'static str];
    const IMMUTABLE: &'static [&'static str];
    const STATES: States;
    type Resource: Serialize;

    /// Validates a create body, resolving references inside the caller's
    /// transaction so they cannot vanish before the insert. Ids and salts
    /// come from `ids`, drawn in the transaction so that their order is the
    /// writes' (see `ids`).
    fn prepare(
        conn: &mut SqliteConnection,
        loc: &Location,
        body: &[u8],
        ids: &Ids,
    ) -> impl Future<Output = Result<Prepared, ApiError>> + Send;

    /// Validates `merged` (stored spec with a merge patch applied) against
    /// the stored `old` spec. `password` is the patch's `masterPassword`,
    /// salted from `ids`.
    fn revise(
        old: &Value,
        merged: Value,
        password: Option<Value>,
        ids: &Ids,
    ) -> Result<Revised, ApiError>;

    /// Refuses a delete the cloud would refuse.
    fn check_delete(
        conn: &mut SqliteConnection,
        row: &Row,
    ) -> impl Future<Output = Result<(), ApiError>> + Send;

    fn render(row: &Row) -> Result<Self::Resource, ApiError>;
}

/// Refuses a delete while `dependents` exist (`409 DependencyViolation`),
/// naming one of them so the caller knows what to delete first.
pub fn no_dependents(kind: &str, row: &Row, dependents: &[Row]) -> Result<(), ApiError> {
    match dependents.first() {
        None => Ok(()),
        Some(first) => Err(ApiError::conflict(
            "DependencyViolation",
            format!(
                "{kind} {} is used by {} resource(s) (e.g. {} {}); delete them first",
                row.name,
                dependents.len(),
                first.kind,
                first.name
            ),
        )),
    }
}

/// Reads a stored spec back; a failure means the database was edited by hand.
pub fn stored_spec<T: serde::de::DeserializeOwned>(row: &Row) -> Result<T, ApiError> {
    serde_json::from_str(&row.spec).map_err(|e| ApiError::internal("decoding stored spec", e))
}

pub fn timestamp(ms: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// Parses a stored state name into the kind's state enum.
pub fn state<T: serde::de::DeserializeOwned>(row: &Row) -> Result<T, ApiError> {
    serde_json::from_value(Value::String(row.state.clone()))
        .map_err(|e| ApiError::internal("decoding stored state", e))
}

//! What names a package object: its `kind` and `metadata.name`.
//!
//! On their own, below both modules that read them: `contents` (which
//! sorts the package's objects by them, then lints the result) and `lint`
//! (which names the objects it refuses), so neither needs the other for
//! them.

use serde_yaml::Value;

/// `metadata.name`, or "" when unset.
pub fn name_of(object: &Value) -> &str {
    object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `kind`, or "" when unset.
pub fn kind_of(object: &Value) -> &str {
    object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

//! What a managed resource says about itself, read from any typed kind
//! through its JSON: its conditions, external name, spec and
//! `status.atProvider`.
//!
//! On their own, below both their users: `scenarios` tell their stories
//! with them, and `world` (which re-exports them for the tests) plays the
//! scenarios on its stage, so `scenarios` must not use `world`.

use kube::Resource;
use serde::Serialize;
use serde_json::Value;

/// `status.conditions[type]` of a managed resource as (status, reason, message).
pub fn condition<K: Serialize>(object: &K, type_: &str) -> Option<(String, String, String)> {
    let json = serde_json::to_value(object).ok()?;
    let found = json
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?
        .clone();
    let text = |k: &str| found[k].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

/// Whether `Ready` is `True`.
pub fn is_ready<K: Serialize>(object: &K) -> bool {
    condition(object, "Ready").is_some_and(|(status, ..)| status == "True")
}

/// Whether `Synced` is `True`.
pub fn is_synced<K: Serialize>(object: &K) -> bool {
    condition(object, "Synced").is_some_and(|(status, ..)| status == "True")
}

/// The external-name annotation.
pub fn external_name<K: Resource>(object: &K) -> Option<String> {
    object
        .meta()
        .annotations
        .as_ref()?
        .get(crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION)
        .cloned()
}

/// The oldest `observedGeneration` of the object's conditions: every
/// condition reflects at least this generation of the spec.
pub fn observed_generation<K: Serialize>(object: &K) -> i64 {
    serde_json::to_value(object)
        .ok()
        .and_then(|v| {
            v.pointer("/status/conditions")?
                .as_array()?
                .iter()
                .map(|c| c["observedGeneration"].as_i64().unwrap_or_default())
                .min()
        })
        .unwrap_or_default()
}

/// `spec` as JSON.
pub fn spec_of<K: Serialize>(object: &K) -> Value {
    serde_json::to_value(object)
        .ok()
        .and_then(|v| v.get("spec").cloned())
        .unwrap_or(Value::Null)
}

/// `status.atProvider` as JSON.
pub fn at_provider<K: Serialize>(object: &K) -> Value {
    serde_json::to_value(object)
        .ok()
        .and_then(|v| v.pointer("/status/atProvider").cloned())
        .unwrap_or(Value::Null)
}

/// `status.drift` as JSON (`Null` before the first observation).
pub fn drift<K: Serialize>(object: &K) -> Value {
    serde_json::to_value(object)
        .ok()
        .and_then(|v| v.pointer("/status/drift").cloned())
        .unwrap_or(Value::Null)
}

/// `status.drift.count`, the `DRIFT` column; `None` before the first
/// observation.
pub fn drift_count<K: Serialize>(object: &K) -> Option<u64> {
    drift(object)["count"].as_u64()
}

/// The `status.drift` entry for `path`, if listed.
pub fn drifted_field<K: Serialize>(object: &K, path: &str) -> Option<Value> {
    drift(object)["fields"]
        .as_array()?
        .iter()
        .find(|f| f["path"] == path)
        .cloned()
}

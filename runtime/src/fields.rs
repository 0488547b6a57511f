//! The field rules of seed 003 over `forProvider`, `initProvider` and the
//! observed state, computed on JSON.
//!
//! Why JSON: the four kinds share one rule set (initProvider is merged under
//! forProvider for Create only; only fields set in forProvider are compared
//! with the cloud; late-init fills only unset fields). Working on
//! [`serde_json::Value`] keeps those rules in one tested place instead of four
//! hand-written copies. A field counts as *set* when its key is present and
//! not `null`: `false`, `0`, `""`, `[]` and `{}` are all set.

use serde_json::{Map, Value};

/// Deep-merges `init` under `for_provider` for the Create call.
///
/// Every field set in `for_provider` wins, whatever its value; objects merge
/// key by key so `forProvider.scalingConfig.maxSize` and
/// `initProvider.scalingConfig.desiredSize` both reach the cloud; arrays and
/// scalars are taken whole from one side, never spliced. An empty object in
/// `for_provider` (`tags: {}`) is an explicit value and wins whole, like
/// `false`, `0` and `[]`.
pub fn merge_init_under(for_provider: &Value, init: &Value) -> Value {
    match (for_provider, init) {
        (Value::Object(desired), Value::Object(init)) if !desired.is_empty() => {
            let mut merged = desired.clone();
            for (key, init_value) in init {
                let entry = merged.entry(key.clone()).or_insert(Value::Null);
                *entry = if entry.is_null() {
                    init_value.clone()
                } else {
                    merge_init_under(entry, init_value)
                };
            }
            Value::Object(merged)
        }
        (Value::Null, init) => init.clone(),
        (desired, _) => desired.clone(),
    }
}

/// What must change in the cloud for it to match `desired`: a JSON merge
/// patch holding only the set fields of `desired` whose value differs from
/// `observed`. An empty map means no drift.
///
/// Objects are compared key by key, so a key the cloud holds but `desired`
/// does not name (a tag added by another team, a `desiredSize` owned by an
/// autoscaler) is never drift. Arrays and scalars compare whole.
pub fn drift_patch(desired: &Value, observed: &Value) -> Map<String, Value> {
    let mut patch = Map::new();
    let Value::Object(desired) = desired else {
        return patch;
    };
    for (key, want) in desired {
        if want.is_null() {
            continue;
        }
        let have = observed.get(key).unwrap_or(&Value::Null);
        match (want, have) {
            (Value::Object(_), Value::Object(_)) => {
                let nested = drift_patch(want, have);
                if !nested.is_empty() {
                    patch.insert(key.clone(), Value::Object(nested));
                }
            }
            _ if want != have => {
                patch.insert(key.clone(), want.clone());
            }
            _ => {}
        }
    }
    patch
}

/// Late initialisation: `for_provider` with every unset field filled from
/// `observed`, recursing into objects. Set fields are never overwritten.
///
/// The result may hold keys that are not `forProvider` fields (ids, states);
/// the caller filters it through the kind's typed `forProvider`, which knows
/// its own fields.
pub fn late_initialize(for_provider: &Value, observed: &Value) -> Value {
    match (for_provider, observed) {
        (Value::Object(desired), Value::Object(observed)) => {
            let mut filled = desired.clone();
            for (key, seen) in observed {
                if seen.is_null() {
                    continue;
                }
                let entry = filled.entry(key.clone()).or_insert(Value::Null);
                *entry = late_initialize(entry, seen);
            }
            Value::Object(filled)
        }
        (Value::Null, observed) => observed.clone(),
        (desired, _) => desired.clone(),
    }
}

/// Removes the named top-level keys: the fields that steer the provider
/// (region, references, secret references) rather than describe the cloud
/// resource, so they are neither sent nor compared.
pub fn without_keys(value: &Value, keys: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_takes_init_fields_absent_from_for_provider() {
        let merged = merge_init_under(
            &json!({"nodeRole": "r", "scalingConfig": {"maxSize": 5}}),
            &json!({"scalingConfig": {"desiredSize": 1, "minSize": 1}, "version": "1.30"}),
        );
        assert_eq!(
            merged,
            json!({"nodeRole": "r", "version": "1.30",
                   "scalingConfig": {"maxSize": 5, "desiredSize": 1, "minSize": 1}})
        );
    }

    #[test]
    fn merge_lets_for_provider_win_even_with_zero_false_and_empty() {
        let merged = merge_init_under(
            &json!({"enableDnsSupport": false, "size": 0, "name": "", "ids": [], "tags": {}}),
            &json!({"enableDnsSupport": true, "size": 3, "name": "x", "ids": ["a"], "tags": {"k": "v"}}),
        );
        assert_eq!(
            merged,
            json!({"enableDnsSupport": false, "size": 0, "name": "", "ids": [], "tags": {}})
        );
    }

    #[test]
    fn merge_treats_null_as_unset_and_never_splices_arrays() {
        let merged = merge_init_under(
            &json!({"version": null, "subnetIds": ["a"]}),
            &json!({"version": "1.29", "subnetIds": ["b", "c"]}),
        );
        assert_eq!(merged, json!({"version": "1.29", "subnetIds": ["a"]}));
    }

    #[test]
    fn merge_with_empty_init_is_for_provider() {
        let desired = json!({"cidrBlock": "10.0.0.0/16"});
        assert_eq!(merge_init_under(&desired, &Value::Null), desired);
        assert_eq!(merge_init_under(&desired, &json!({})), desired);
        assert_eq!(merge_init_under(&Value::Null, &desired), desired);
    }

    #[test]
    fn no_drift_when_set_fields_match() {
        let observed = json!({"id": "vpc-1", "cidrBlock": "10.0.0.0/16", "tags": {"a": "1", "team": "x"},
                              "enableDnsSupport": true, "state": "available"});
        let desired =
            json!({"cidrBlock": "10.0.0.0/16", "tags": {"a": "1"}, "enableDnsSupport": true});
        assert!(drift_patch(&desired, &observed).is_empty());
    }

    #[test]
    fn drift_names_only_the_changed_fields() {
        let observed =
            json!({"tags": {"a": "1"}, "enableDnsHostnames": false, "cidrBlock": "10.0.0.0/16"});
        let desired = json!({"tags": {"a": "2", "b": "3"}, "enableDnsHostnames": false, "cidrBlock": "10.0.0.0/16"});
        assert_eq!(
            Value::Object(drift_patch(&desired, &observed)),
            json!({"tags": {"a": "2", "b": "3"}})
        );
    }

    #[test]
    fn false_and_zero_in_desired_are_drift_against_other_values() {
        let observed = json!({"publiclyAccessible": true, "scalingConfig": {"minSize": 1}});
        let desired = json!({"publiclyAccessible": false, "scalingConfig": {"minSize": 0}});
        assert_eq!(
            Value::Object(drift_patch(&desired, &observed)),
            json!({"publiclyAccessible": false, "scalingConfig": {"minSize": 0}})
        );
    }

    #[test]
    fn fields_only_in_init_provider_are_never_drift() {
        // The autoscaler story: desiredSize comes from initProvider at create,
        // then the cloud moves it. forProvider does not name it: no drift.
        let observed = json!({"scalingConfig": {"minSize": 1, "maxSize": 5, "desiredSize": 3}});
        let desired = json!({"scalingConfig": {"minSize": 1, "maxSize": 5}});
        assert!(drift_patch(&desired, &observed).is_empty());
        let desired = json!({"scalingConfig": {"minSize": 1, "maxSize": 6}});
        assert_eq!(
            Value::Object(drift_patch(&desired, &observed)),
            json!({"scalingConfig": {"maxSize": 6}})
        );
    }

    #[test]
    fn arrays_compare_whole_and_missing_observed_fields_are_drift() {
        let observed = json!({"instanceTypes": ["t3.small", "t3.large"]});
        let desired = json!({"instanceTypes": ["t3.small"], "version": "1.30"});
        assert_eq!(
            Value::Object(drift_patch(&desired, &observed)),
            json!({"instanceTypes": ["t3.small"], "version": "1.30"})
        );
    }

    #[test]
    fn late_init_fills_only_unset_fields() {
        let desired = json!({"cidrBlock": "10.0.0.0/16", "enableDnsHostnames": false,
                             "tags": {"a": "1"}, "instanceTenancy": null});
        let observed = json!({"cidrBlock": "10.1.0.0/16", "enableDnsHostnames": true,
                              "enableDnsSupport": true, "instanceTenancy": "default",
                              "tags": {"a": "9", "b": "2"}, "state": null});
        assert_eq!(
            late_initialize(&desired, &observed),
            json!({"cidrBlock": "10.0.0.0/16", "enableDnsHostnames": false, "enableDnsSupport": true,
                   "instanceTenancy": "default", "tags": {"a": "1", "b": "2"}})
        );
    }

    #[test]
    fn late_init_of_a_complete_spec_changes_nothing() {
        let desired = json!({"cidrBlock": "10.0.0.0/16", "enableDnsSupport": true});
        let observed = json!({"cidrBlock": "10.0.0.0/16", "enableDnsSupport": true});
        assert_eq!(late_initialize(&desired, &observed), desired);
    }

    #[test]
    fn without_keys_drops_steering_fields_only() {
        let value =
            json!({"region": "us-east-1", "vpcIdRef": {"name": "a"}, "cidrBlock": "10.0.0.0/24"});
        assert_eq!(
            without_keys(&value, &["region", "vpcIdRef"]),
            json!({"cidrBlock": "10.0.0.0/24"})
        );
    }
}

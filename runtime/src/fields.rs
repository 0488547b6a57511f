//! The field rules of seed 003 over `forProvider`, `initProvider` and the
//! observed state, computed on JSON.
//!
//! Why JSON: the four kinds share one rule set (initProvider is merged under
//! forProvider for Create only; only fields set in forProvider are compared
//! with the cloud; late-init fills only unset fields). Working on
//! [`serde_json::Value`] keeps those rules in one tested place instead of four
//! hand-written copies. A field counts as *set* when its key is present and
//! not `null`: `false`, `0`, `""`, `[]` and `{}` are all set.
//!
//! Lists compare whole and in order unless the kind's schema says
//! otherwise (a set, or a map list keyed by some of its items' fields:
//! [`crate::lists`]); [`drift_patch_with`] takes those semantics.

use serde_json::{Map, Value};

use crate::lists::{ListType, ListTypes, Node};

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
/// autoscaler) is never drift. Arrays and scalars compare whole, arrays in
/// order: every list is atomic. [`drift_patch_with`] knows the kind's list
/// semantics; this is it with none.
#[cfg(test)]
pub fn drift_patch(desired: &Value, observed: &Value) -> Map<String, Value> {
    drift_patch_with(desired, observed, &ListTypes::default())
}

/// `drift_patch` (above) with the kind's list semantics ([`ListTypes`], from
/// `x-kubernetes-list-type` in its CRD: [`crate::lists::for_kind`]).
///
/// - An atomic list (the default) compares whole and in order.
/// - A set compares as a set: the same elements, in any order, duplicates
///   ignored. An element the cloud holds beyond the declared ones is
///   drift: the declared list is the whole list.
/// - A map list matches each declared item with the observed item of the
///   same key, in any order, and compares the pair as objects are compared
///   here (recursively, with the lists inside by their own semantics): a
///   field the declared item leaves unset is not drift. A declared key the
///   cloud lacks, or an observed key not declared, is drift.
///
/// A list that drifts goes into the patch whole, as declared: a JSON merge
/// patch (RFC 7386) cannot address list elements and replaces a list whole,
/// so the update sends the declared list and the cloud ends up holding
/// exactly it.
pub fn drift_patch_with(
    desired: &Value,
    observed: &Value,
    lists: &ListTypes,
) -> Map<String, Value> {
    match desired {
        Value::Object(desired) => object_drift(desired, observed, lists.root()),
        _ => Map::new(),
    }
}

/// The drift of an object whose place in the schema is `at`.
fn object_drift(desired: &Map<String, Value>, observed: &Value, at: &Node) -> Map<String, Value> {
    let mut patch = Map::new();
    for (key, want) in desired {
        if want.is_null() {
            continue;
        }
        let have = observed.get(key).unwrap_or(&Value::Null);
        let field = at.field(key);
        match (want, have) {
            (Value::Object(want), Value::Object(_)) => {
                let nested = object_drift(want, have, field);
                if !nested.is_empty() {
                    patch.insert(key.clone(), Value::Object(nested));
                }
            }
            _ if !holds(want, have, field) => {
                patch.insert(key.clone(), want.clone());
            }
            _ => {}
        }
    }
    patch
}

/// Whether `have` holds what `want` declares, by the rules of
/// [`drift_patch_with`], `at` being their place in the schema.
fn holds(want: &Value, have: &Value, at: &Node) -> bool {
    match (want, have) {
        (Value::Object(want), Value::Object(_)) => object_drift(want, have, at).is_empty(),
        (Value::Array(want), Value::Array(have)) => match at.list() {
            Some(ListType::Set) => same_set(want, have),
            Some(ListType::Map { keys }) => same_map(want, have, keys, at.items()),
            Some(ListType::Atomic) | None => want == have,
        },
        _ => want == have,
    }
}

/// The same elements, whatever their order and repetitions. Quadratic, as
/// lists in a spec are short; elements compare whole (Kubernetes requires
/// a set's elements to be scalars or atomic).
fn same_set(want: &[Value], have: &[Value]) -> bool {
    want.iter().all(|w| have.contains(w)) && have.iter().all(|h| want.contains(h))
}

/// Every declared item matched by key with its own observed item, which
/// holds it, and no observed item left over. An item that is not an object
/// (which Kubernetes refuses in a map list) must be found as it is.
fn same_map(want: &[Value], have: &[Value], keys: &[String], items: &Node) -> bool {
    let key_of = |item: &Value| -> Option<Vec<Value>> {
        let item = item.as_object()?;
        Some(
            keys.iter()
                .map(|k| item.get(k).cloned().unwrap_or(Value::Null))
                .collect(),
        )
    };
    let mut unmatched: Vec<(&Value, Option<Vec<Value>>)> =
        have.iter().map(|h| (h, key_of(h))).collect();
    for item in want {
        let key = key_of(item);
        let found = unmatched.iter().position(|(other, other_key)| match &key {
            Some(key) => other_key.as_ref() == Some(key),
            None => *other == item,
        });
        let Some(found) = found else {
            return false;
        };
        let (observed, _) = unmatched.swap_remove(found);
        if !holds(item, observed, items) {
            return false;
        }
    }
    unmatched.is_empty()
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

    /// A kind's list semantics, as its CRD would state them.
    fn lists() -> ListTypes {
        let map = |keys: Value, items: Value| {
            json!({"type": "array", "x-kubernetes-list-type": "map",
                   "x-kubernetes-list-map-keys": keys, "items": items})
        };
        let set = json!({"type": "array", "x-kubernetes-list-type": "set",
                         "items": {"type": "string"}});
        let rule = json!({"type": "object", "properties": {
            "cidrs": set,
            "targets": map(json!(["name"]), json!({"type": "object"})),
        }});
        ListTypes::from_schema(&json!({"type": "object", "properties": {
            "cidrBlocks": set,
            "ports": map(json!(["port"]), json!({"type": "object"})),
            "rules": map(json!(["port", "protocol"]), rule),
            "network": {"type": "object", "properties": {
                "rules": map(json!(["port"]), json!({"type": "object"})),
            }},
            "dnsServers": {"type": "array", "items": {"type": "string"}},
        }}))
        .expect("a valid schema")
    }

    fn drift(desired: Value, observed: Value) -> Value {
        Value::Object(drift_patch_with(&desired, &observed, &lists()))
    }

    #[test]
    fn a_set_in_another_order_or_repeated_is_no_drift() {
        let desired = json!({"cidrBlocks": ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"]});
        let observed = json!({"cidrBlocks": ["172.16.0.0/12", "10.0.0.0/8", "192.168.0.0/16",
                                             "10.0.0.0/8"]});
        assert_eq!(drift(desired.clone(), observed.clone()), json!({}));
        // The same lists, atomic, drift: order counts.
        assert_eq!(Value::Object(drift_patch(&desired, &observed)), desired);
    }

    #[test]
    fn a_set_missing_or_adding_an_element_drifts_whole() {
        let desired = json!({"cidrBlocks": ["10.0.0.0/8", "192.168.0.0/16"]});
        assert_eq!(
            drift(desired.clone(), json!({"cidrBlocks": ["192.168.0.0/16"]})),
            desired,
            "missing"
        );
        assert_eq!(
            drift(
                desired.clone(),
                json!({"cidrBlocks": ["192.168.0.0/16", "0.0.0.0/0", "10.0.0.0/8"]})
            ),
            desired,
            "extra: the declared list is the whole list"
        );
        assert_eq!(drift(desired.clone(), json!({})), desired, "absent");
        assert_eq!(
            drift(
                json!({"cidrBlocks": []}),
                json!({"cidrBlocks": ["10.0.0.0/8"]})
            ),
            json!({"cidrBlocks": []}),
            "declared empty"
        );
    }

    #[test]
    fn a_map_list_matches_items_by_one_key_or_two_whatever_the_order() {
        let by_port =
            json!({"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]});
        let observed =
            json!({"ports": [{"port": 443, "name": "https"}, {"port": 80, "name": "http"}]});
        assert_eq!(drift(by_port, observed), json!({}));

        // Two keys: 53/tcp and 53/udp are two items, told apart by protocol.
        let desired = json!({"rules": [
            {"port": 53, "protocol": "udp", "cidrs": ["10.0.0.0/8"]},
            {"port": 53, "protocol": "tcp", "cidrs": ["10.1.0.0/16"]},
            {"port": 22, "protocol": "tcp", "cidrs": ["10.2.0.0/16"]},
        ]});
        let observed = json!({"rules": [
            {"port": 22, "protocol": "tcp", "cidrs": ["10.2.0.0/16"]},
            {"port": 53, "protocol": "tcp", "cidrs": ["10.1.0.0/16"]},
            {"port": 53, "protocol": "udp", "cidrs": ["10.0.0.0/8"]},
        ]});
        assert_eq!(drift(desired.clone(), observed), json!({}));
        // Swapping the cidrs of 53/tcp and 53/udp is drift: keys are both fields.
        let swapped = json!({"rules": [
            {"port": 22, "protocol": "tcp", "cidrs": ["10.2.0.0/16"]},
            {"port": 53, "protocol": "tcp", "cidrs": ["10.0.0.0/8"]},
            {"port": 53, "protocol": "udp", "cidrs": ["10.1.0.0/16"]},
        ]});
        assert_eq!(drift(desired.clone(), swapped), desired);
    }

    #[test]
    fn a_map_item_whose_other_field_differs_drifts_the_whole_list() {
        let desired =
            json!({"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]});
        let observed =
            json!({"ports": [{"port": 443, "name": "tls"}, {"port": 80, "name": "http"}]});
        assert_eq!(drift(desired.clone(), observed), desired);
        // An item the cloud lacks, or holds beyond the declared ones.
        let fewer = json!({"ports": [{"port": 80, "name": "http"}]});
        assert_eq!(drift(desired.clone(), fewer), desired);
        let more = json!({"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"},
                                    {"port": 8080, "name": "alt"}]});
        assert_eq!(drift(desired.clone(), more), desired);
        // Two observed items with one key: one is left over.
        let twice = json!({"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"},
                                     {"port": 80, "name": "http"}]});
        assert_eq!(drift(desired.clone(), twice), desired);
    }

    #[test]
    fn a_field_a_declared_map_item_leaves_unset_is_not_drift() {
        // The cloud fills a description and an id the user never declared.
        let desired = json!({"ports": [{"port": 443}, {"port": 80, "name": "http", "note": null}]});
        let observed = json!({"ports": [
            {"port": 80, "name": "http", "note": "web", "id": "r-1"},
            {"port": 443, "name": "https", "id": "r-2"},
        ]});
        assert_eq!(drift(desired, observed), json!({}));
    }

    #[test]
    fn lists_nested_in_map_items_and_objects_follow_their_own_semantics() {
        let desired = json!({
            "rules": [{"port": 22, "protocol": "tcp", "cidrs": ["10.0.0.0/8", "10.1.0.0/16"],
                       "targets": [{"name": "a", "weight": 1}, {"name": "b"}]}],
            "network": {"rules": [{"port": 1}, {"port": 2}]},
        });
        let observed = json!({
            "rules": [{"port": 22, "protocol": "tcp", "cidrs": ["10.1.0.0/16", "10.0.0.0/8"],
                       "targets": [{"name": "b", "weight": 5}, {"name": "a", "weight": 1}]}],
            "network": {"rules": [{"port": 2}, {"port": 1}], "id": "n-1"},
        });
        assert_eq!(drift(desired.clone(), observed.clone()), json!({}));
        // A nested set element differs: the outer list drifts whole.
        let mut moved = observed.clone();
        moved["rules"][0]["cidrs"] = json!(["10.1.0.0/16"]);
        assert_eq!(
            drift(desired.clone(), moved),
            json!({"rules": desired["rules"]})
        );
        // A nested map item's field differs: likewise.
        let mut moved = observed.clone();
        moved["rules"][0]["targets"][1]["weight"] = json!(2);
        assert_eq!(
            drift(desired.clone(), moved),
            json!({"rules": desired["rules"]})
        );
        // A map list inside an object: the patch keeps the object around it.
        let mut moved = observed;
        moved["network"]["rules"] = json!([{"port": 2}]);
        assert_eq!(
            drift(desired.clone(), moved),
            json!({"network": {"rules": [{"port": 1}, {"port": 2}]}})
        );
    }

    #[test]
    fn unmarked_lists_stay_atomic_beside_marked_ones() {
        let desired = json!({"dnsServers": ["1.1.1.1", "8.8.8.8"], "other": [{"a": 1}],
                             "cidrBlocks": ["10.0.0.0/8"]});
        let observed = json!({"dnsServers": ["8.8.8.8", "1.1.1.1"], "other": [{"a": 1, "b": 2}],
                              "cidrBlocks": ["10.0.0.0/8"]});
        assert_eq!(
            drift(desired, observed),
            json!({"dnsServers": ["1.1.1.1", "8.8.8.8"], "other": [{"a": 1}]}),
            "in order and whole, items included"
        );
        // Every earlier rule is unchanged by list semantics that do not apply.
        let desired = json!({"tags": {"a": "2", "b": "3"}, "enableDnsHostnames": false,
                             "instanceTypes": ["t3.small"], "version": "1.30"});
        let observed = json!({"tags": {"a": "1"}, "enableDnsHostnames": false,
                              "instanceTypes": ["t3.small", "t3.large"]});
        assert_eq!(
            drift(desired.clone(), observed.clone()),
            Value::Object(drift_patch(&desired, &observed))
        );
    }

    #[test]
    fn late_init_leaves_declared_lists_and_then_nothing_drifts() {
        let desired = json!({"ports": [{"port": 443}, {"port": 80}], "cidrBlocks": null});
        let observed = json!({"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}],
                              "cidrBlocks": ["10.1.0.0/16", "10.0.0.0/8"]});
        let filled = late_initialize(&desired, &observed);
        assert_eq!(
            filled,
            json!({"ports": [{"port": 443}, {"port": 80}],
                   "cidrBlocks": ["10.1.0.0/16", "10.0.0.0/8"]}),
            "a declared list is kept as declared, an unset one taken as observed"
        );
        assert_eq!(drift(filled, observed), json!({}));
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

//! Builders for the CEL rules (`x-kubernetes-validations`) of the CRDs.
//!
//! Each managed-resource spec uses these from its attributes, so every kind
//! states its rules the same way and the wording of the messages stays
//! consistent: object-level rules in `#[x_kube(validation = ...)]`,
//! field-level ones in `#[schemars(transform = ...)]`, which (unlike
//! `KubeSchema`) works on the parameter types that are generic over the
//! scope.
//!
//! Beside the rules, the list semantics of a field ([`list_set`],
//! [`list_map`], [`list_atomic`]): Kubernetes' own `x-kubernetes-list-type`
//! and `x-kubernetes-list-map-keys` extensions, declared once on the type.
//! The API server validates them (no duplicate set elements or map keys)
//! and server-side apply merges by them; the runtime reads them back from
//! the kind's CRD to compare such a list with the cloud's regardless of
//! order (`runtime::lists`).

use kube::core::Rule;
use schemars::Schema;
use serde_json::Value;

/// The CEL condition "the policies allow Create". `*` counts as Create.
const CREATES: &str = "('*' in self.managementPolicies || 'Create' in self.managementPolicies)";

/// A spec-level rule: `field` must be set in `forProvider` or `initProvider`
/// when the policies allow `Create` (seed 000, "Required Fields").
///
/// Observe-only resources may leave it out; the value is needed only to
/// create the external resource.
pub fn required_to_create(field: &str) -> Rule {
    required_to_create_or_referenced(field, &[])
}

/// Like [`required_to_create`], but a reference or selector in `forProvider`
/// (`alternatives`) also satisfies it, since the provider resolves it into
/// `field` before it creates.
pub fn required_to_create_or_referenced(field: &str, alternatives: &[&str]) -> Rule {
    let mut rule = format!(
        "!{CREATES} || has(self.forProvider.{field}) || (has(self.initProvider) && has(self.initProvider.{field}))"
    );
    for alternative in alternatives {
        rule.push_str(&format!(" || has(self.forProvider.{alternative})"));
    }
    let resolved_by = if alternatives.is_empty() {
        String::new()
    } else {
        let named: Vec<String> = alternatives
            .iter()
            .map(|a| format!("spec.forProvider.{a}"))
            .collect();
        format!(" (or resolved through {})", named.join(" or "))
    };
    Rule::new(rule).message(format!(
        "{field} must be set in spec.forProvider or spec.initProvider{resolved_by} when managementPolicies include Create or *"
    ).as_str())
}

/// A field-level transition rule: once set, the field cannot change (the
/// cloud rejects or ignores the change, or it identifies the resource).
///
/// Kubernetes evaluates a transition rule only when both the old and the new
/// object have the field, so setting it for the first time (late
/// initialisation, the import procedure) stays allowed.
pub fn immutable(field: &str) -> impl FnMut(&mut Schema) {
    with_rule(Rule::new("self == oldSelf").message(format!("{field} is immutable").as_str()))
}

/// An object-level rule: when both bounds are set, the lower one does not
/// exceed the upper one.
pub fn min_not_above_max(min: &str, max: &str) -> Rule {
    Rule::new(format!(
        "!has(self.{min}) || !has(self.{max}) || self.{min} <= self.{max}"
    ))
    .message(format!("{min} must not be greater than {max}").as_str())
}

/// A field-level transition rule: the value may grow but never shrink.
pub fn never_shrinks(field: &str) -> impl FnMut(&mut Schema) {
    with_rule(Rule::new("self >= oldSelf").message(format!("{field} can only grow").as_str()))
}

/// The schema extension naming a list's semantics: `atomic`, `set` or
/// `map` (Kubernetes' `x-kubernetes-list-type`).
pub const LIST_TYPE: &str = "x-kubernetes-list-type";

/// The schema extension naming the key fields of a `map` list (Kubernetes'
/// `x-kubernetes-list-map-keys`).
pub const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";

/// A list field whose order and duplicates mean nothing: a set of scalars
/// (CIDR blocks, security-group ids). `x-kubernetes-list-type: set`.
///
/// Use it where the cloud may return the elements in an order of its own:
/// the runtime then compares the declared and the observed list as sets,
/// so a reordering is no drift. Kubernetes requires the elements to be
/// scalars (or atomic lists and objects) and refuses duplicates.
///
/// ```ignore
/// #[schemars(transform = list_set)]
/// pub cidr_blocks: Option<Vec<String>>,
/// ```
pub fn list_set(schema: &mut Schema) {
    schema.insert(LIST_TYPE.into(), "set".into());
}

/// A list of objects identified by the fields `keys` (one or more), whose
/// order means nothing: ingress rules keyed by `port` and `protocol`.
/// `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys: keys`.
///
/// The runtime matches the declared items with the observed ones by key,
/// whatever their order, and compares each pair as it compares objects: a
/// field the declared item leaves unset is never drift. Kubernetes requires
/// the items to be objects whose key fields are scalars that are required
/// or defaulted, and refuses two items with the same key.
///
/// ```ignore
/// #[schemars(transform = list_map(&["port", "protocol"]))]
/// pub ingress: Option<Vec<IngressRule>>,
/// ```
///
/// # Panics
///
/// When `keys` is empty (the API server would refuse the CRD): at schema
/// generation, so the CRD generator's test catches it.
pub fn list_map(keys: &[&str]) -> impl FnMut(&mut Schema) + use<> {
    assert!(!keys.is_empty(), "a map list needs at least one key field");
    let keys: Vec<Value> = keys.iter().map(|&k| k.into()).collect();
    move |schema: &mut Schema| {
        schema.insert(LIST_TYPE.into(), "map".into());
        schema.insert(LIST_MAP_KEYS.into(), Value::Array(keys.clone()));
    }
}

/// A list compared and replaced whole, order included:
/// `x-kubernetes-list-type: atomic`. This is what an unmarked list means
/// already, to Kubernetes and to the runtime; say it where the order
/// matters (an ordered rule list) so that nobody marks it a set later.
pub fn list_atomic(schema: &mut Schema) {
    schema.insert(LIST_TYPE.into(), "atomic".into());
}

/// `rule` added to the schema it is attached to (a field, or a type that
/// `KubeSchema` cannot derive for because it is generic).
pub fn with_rule(rule: Rule) -> impl FnMut(&mut Schema) {
    move |schema: &mut Schema| {
        kube::core::validate(schema, rule.clone()).expect("a CEL rule serializes as JSON");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::{JsonSchema, schema_for};
    use serde_json::json;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Rule {
        port: u16,
        protocol: String,
    }

    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Firewall {
        #[schemars(transform = list_set)]
        cidr_blocks: Vec<String>,
        #[schemars(transform = list_map(&["port", "protocol"]))]
        rules: Option<Vec<Rule>>,
        #[schemars(transform = list_atomic)]
        ordered: Vec<String>,
        plain: Vec<String>,
    }

    /// The extensions of one property, and nothing else of it but its
    /// `type` and `items`, which the transforms must leave alone.
    fn property(name: &str) -> serde_json::Map<String, Value> {
        let schema = schema_for!(Firewall).to_value();
        schema["properties"][name]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("x-kubernetes-") || *k == "type")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    #[test]
    fn the_list_transforms_write_exactly_the_kubernetes_extensions() {
        assert_eq!(
            Value::Object(property("cidrBlocks")),
            json!({"type": "array", "x-kubernetes-list-type": "set"})
        );
        assert_eq!(
            Value::Object(property("rules")),
            json!({"type": ["array", "null"], "x-kubernetes-list-type": "map",
                   "x-kubernetes-list-map-keys": ["port", "protocol"]})
        );
        assert_eq!(
            Value::Object(property("ordered")),
            json!({"type": "array", "x-kubernetes-list-type": "atomic"})
        );
        assert_eq!(Value::Object(property("plain")), json!({"type": "array"}));
        // The items are untouched.
        let schema = schema_for!(Firewall).to_value();
        assert_eq!(
            schema["properties"]["cidrBlocks"]["items"],
            json!({"type": "string"})
        );
    }

    #[test]
    #[should_panic(expected = "at least one key")]
    fn a_map_list_without_keys_is_refused() {
        let _ = list_map(&[]);
    }
}

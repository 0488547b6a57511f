//! Builders for the CEL rules (`x-kubernetes-validations`) of the CRDs.
//!
//! Each managed-resource spec uses these from its attributes, so every kind
//! states its rules the same way and the wording of the messages stays
//! consistent: object-level rules in `#[x_kube(validation = ...)]`,
//! field-level ones in `#[schemars(transform = ...)]`, which (unlike
//! `KubeSchema`) works on the parameter types that are generic over the
//! scope.

use kube::core::Rule;
use schemars::Schema;

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

/// `rule` added to the schema it is attached to (a field, or a type that
/// `KubeSchema` cannot derive for because it is generic).
pub fn with_rule(rule: Rule) -> impl FnMut(&mut Schema) {
    move |schema: &mut Schema| {
        kube::core::validate(schema, rule.clone()).expect("a CEL rule serializes as JSON");
    }
}

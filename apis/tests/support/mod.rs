//! Test helpers that do what the API server does with a CRD's schema:
//! apply defaults, check structure, and evaluate the CEL rules
//! (`x-kubernetes-validations`) at the places they are declared, with the
//! `cel` interpreter. The e2e control plane (Kubernetes 1.20) predates CEL,
//! so this is where the rules are proven.

#![allow(dead_code)] // each test binary uses a different subset

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// The `openAPIV3Schema` of the CRD's only version, as JSON.
pub fn schema_of(crd: &CustomResourceDefinition) -> Value {
    let version = &crd.spec.versions[0];
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref());
    serde_json::to_value(schema.expect("CRD has a schema")).unwrap()
}

/// `value` with the schema's defaults filled in where fields are absent, as
/// the API server defaults an object before validating it.
pub fn with_defaults(schema: &Value, value: &Value) -> Value {
    let mut value = value.clone();
    default_into(schema, &mut value);
    value
}

fn default_into(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    if !map.contains_key(name)
                        && let Some(default) = property.get("default")
                    {
                        map.insert(name.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(name) {
                        default_into(property, child);
                    }
                }
            } else if let Some(additional) =
                schema.get("additionalProperties").filter(|a| a.is_object())
            {
                for child in map.values_mut() {
                    default_into(additional, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    default_into(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// Where `value` breaks the schema's structure: unknown fields (which the
/// API server would silently prune), wrong types, values outside an enum or
/// below a minimum, missing required fields.
pub fn structural_errors(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, "", value, true, &mut errors);
    errors
}

fn check(schema: &Value, path: &str, value: &Value, root: bool, errors: &mut Vec<String>) {
    if value.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            errors.push(format!("{path}: null is not allowed"));
        }
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        errors.push(format!("{path}: {value} is not one of {allowed:?}"));
    }
    let type_ok = match schema.get("type").and_then(Value::as_str) {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !type_ok {
        errors.push(format!(
            "{path}: {value} does not have type {}",
            schema["type"]
        ));
        return;
    }
    if let (Some(minimum), Some(number)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && number < minimum
    {
        errors.push(format!("{path}: {number} is below the minimum {minimum}"));
    }
    match value {
        Value::Object(map) => {
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = required.as_str().unwrap();
                if !map.contains_key(name) {
                    errors.push(format!("{path}.{name}: required but missing"));
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (name, child) in map {
                let child_path = format!("{path}.{name}");
                if let Some(property) = properties.and_then(|p| p.get(name)) {
                    check(property, &child_path, child, false, errors);
                } else if let Some(additional) = additional {
                    check(additional, &child_path, child, false, errors);
                } else if !(root && ["apiVersion", "kind", "metadata"].contains(&name.as_str())) {
                    errors.push(format!("{child_path}: unknown field"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, &format!("{path}[{i}]"), item, false, errors);
                }
            }
        }
        _ => {}
    }
}

/// A CEL rule as declared in a schema.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeclaredRule {
    /// Where it is declared, e.g. `.spec.forProvider.cidrBlock`.
    pub path: String,
    /// The CEL expression.
    pub rule: String,
    /// The message the API server returns when it fails.
    pub message: String,
}

/// Every rule in the schema.
pub fn declared_rules(schema: &Value) -> Vec<DeclaredRule> {
    let mut rules = Vec::new();
    collect_rules(schema, "", &mut rules);
    rules.sort();
    rules
}

fn collect_rules(schema: &Value, path: &str, out: &mut Vec<DeclaredRule>) {
    for rule in schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push(DeclaredRule {
            path: path.to_owned(),
            rule: rule["rule"].as_str().unwrap().to_owned(),
            message: rule
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            collect_rules(property, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_rules(items, &format!("{path}[]"), out);
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        collect_rules(additional, &format!("{path}{{}}"), out);
    }
}

/// One evaluation of one rule on one value.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// The rule.
    pub rule: DeclaredRule,
    /// Whether it returned `true`. An evaluation error counts as a failure,
    /// as it does in the API server.
    pub passed: bool,
    /// The error, if evaluation failed rather than returned a boolean.
    pub error: Option<String>,
}

/// Evaluates every rule that applies to `new` (and, for transition rules
/// using `oldSelf`, to `old`): a rule runs once per value present at its
/// location; a transition rule runs only when the old object has a value
/// there too. Lists are atomic, so their items have no old value.
pub fn evaluate(schema: &Value, new: &Value, old: Option<&Value>) -> Vec<Evaluation> {
    let mut out = Vec::new();
    walk(schema, "", new, old, &mut out);
    out
}

/// The failed evaluations of [`evaluate`].
pub fn failures(schema: &Value, new: &Value, old: Option<&Value>) -> Vec<Evaluation> {
    evaluate(schema, new, old)
        .into_iter()
        .filter(|e| !e.passed)
        .collect()
}

fn walk(schema: &Value, path: &str, new: &Value, old: Option<&Value>, out: &mut Vec<Evaluation>) {
    if new.is_null() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    for rule in schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let declared = DeclaredRule {
            path: path.to_owned(),
            rule: rule["rule"].as_str().unwrap().to_owned(),
            message: rule
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        let transition = declared.rule.contains("oldSelf");
        if transition && old.is_none() {
            continue;
        }
        let (passed, error) = match run(&declared.rule, new, old) {
            Ok(passed) => (passed, None),
            Err(error) => (false, Some(error)),
        };
        out.push(Evaluation {
            rule: declared,
            passed,
            error,
        });
    }
    match new {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    if let Some(child) = map.get(name) {
                        let old_child = old.and_then(|o| o.get(name));
                        walk(property, &format!("{path}.{name}"), child, old_child, out);
                    }
                }
            } else if let Some(additional) =
                schema.get("additionalProperties").filter(|a| a.is_object())
            {
                for (key, child) in map {
                    walk(
                        additional,
                        &format!("{path}{{}}"),
                        child,
                        old.and_then(|o| o.get(key)),
                        out,
                    );
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    walk(item_schema, &format!("{path}[]"), item, None, out);
                }
            }
        }
        _ => {}
    }
}

fn run(rule: &str, new: &Value, old: Option<&Value>) -> Result<bool, String> {
    let program = cel::Program::compile(rule).map_err(|e| format!("does not compile: {e}"))?;
    let mut context = cel::Context::default();
    context
        .add_variable("self", new)
        .map_err(|e| e.to_string())?;
    if let Some(old) = old {
        context
            .add_variable("oldSelf", old)
            .map_err(|e| e.to_string())?;
    }
    match program.execute(&context) {
        Ok(cel::Value::Bool(result)) => Ok(result),
        Ok(other) => Err(format!("returned {other:?}, not a boolean")),
        Err(e) => Err(format!("failed: {e}")),
    }
}

//! The conversions of the four namespaced kinds between `v1alpha1` and
//! `v1beta1`, over objects generated from each version's own CRD schema
//! (with nulls where the API server's field manager puts them):
//! every round trip is the identity, and a converted object holds no field
//! its version's schema lacks (the API server would prune it, and the
//! value would be lost).

use apis::kinds::{CONVERSIONS, database_instance, nodegroup, subnet, vpc};
use crossplane_types::conversion::KindVersions;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The `openAPIV3Schema` of a one-version CRD.
fn schema(crd: CustomResourceDefinition) -> Value {
    let version = crd.spec.versions.into_iter().next().expect("one version");
    serde_json::to_value(version.schema.expect("a schema").open_api_v3_schema).unwrap()
}

/// The schema of the property at `path` below `schema`.
fn below<'a>(schema: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(schema, |at, key| &at["properties"][*key])
}

/// Values valid under `schema` (the structural subset the CRDs use), with
/// each optional property present or not.
fn valid(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return prop::sample::select(values.clone()).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
        Some("integer") => (0..1000i64).prop_map(Value::from).boxed(),
        Some("number") => (0..1000i64).prop_map(Value::from).boxed(),
        Some("array") if depth > 0 => {
            prop::collection::vec(valid(&schema["items"], depth - 1), 0..3)
                .prop_map(Value::Array)
                .boxed()
        }
        Some("object") if depth > 0 => object(schema, depth - 1),
        Some("array") => Just(json!([])).boxed(),
        Some("object") => Just(json!({})).boxed(),
        _ => "[a-z0-9-]{0,6}".prop_map(Value::from).boxed(),
    }
}

fn object(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        return prop::collection::btree_map("[a-z]{1,4}", valid(values, depth), 0..3)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
            .boxed();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties: Vec<BoxedStrategy<Option<(String, Value)>>> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let name = name.clone();
            let value = valid(property, depth);
            if required.contains(&name.as_str()) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                // Absent, set, or null: the API server's field manager
                // converts partial objects whose emptied fields are null.
                let null = Just(Some((name.clone(), Value::Null)));
                prop_oneof![
                    2 => prop::option::of(value.prop_map(move |v| (name.clone(), v))),
                    1 => null,
                ]
                .boxed()
            }
        })
        .collect();
    properties
        .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
        .boxed()
}

/// Whole objects of a kind at `version`, from that version's CRD.
fn objects(
    versions: &'static KindVersions,
    version: &'static str,
    crd: CustomResourceDefinition,
) -> BoxedStrategy<Value> {
    let schema = schema(crd);
    let for_provider = valid(below(&schema, &["spec", "forProvider"]), 4);
    let init = prop::option::of(valid(below(&schema, &["spec", "initProvider"]), 4));
    let at = prop::option::of(valid(below(&schema, &["status", "atProvider"]), 4));
    (for_provider, init, at)
        .prop_map(move |(for_provider, init, at)| {
            let mut object = json!({
                "apiVersion": format!("{}/{version}", versions.group),
                "kind": versions.kind,
                "metadata": {"name": "x", "namespace": "team-a", "annotations": {"crossplane.io/external-name": "e"}},
                "spec": {"forProvider": for_provider, "managementPolicies": ["*"]},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]},
            });
            if let Some(init) = init {
                object["spec"]["initProvider"] = init;
            }
            if let Some(at) = at {
                object["status"]["atProvider"] = at;
            }
            object
        })
        .boxed()
}

/// The paths of `value` that `schema` does not declare.
fn undeclared(value: &Value, schema: &Value, at: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true)) {
                return;
            }
            let extra = schema.get("additionalProperties").filter(|v| v.is_object());
            for (key, child) in map {
                let path = format!("{at}/{key}");
                match (schema["properties"].get(key), extra) {
                    (Some(child_schema), _) | (None, Some(child_schema)) => {
                        undeclared(child, child_schema, &path, out);
                    }
                    (None, None) => out.push(path),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                undeclared(item, &schema["items"], &format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
}

/// Checks both round trips and the converted objects' fields for a kind.
fn check(
    versions: &'static KindVersions,
    alpha: CustomResourceDefinition,
    beta: CustomResourceDefinition,
) {
    let (alpha_schema, beta_schema) = (schema(alpha.clone()), schema(beta.clone()));
    for schema in [&alpha_schema, &beta_schema] {
        for section in [
            &["spec", "forProvider"][..],
            &["spec", "initProvider"],
            &["status", "atProvider"],
        ] {
            assert!(
                below(schema, section)["properties"]
                    .as_object()
                    .is_some_and(|p| p.len() > 1),
                "{} has no schema at {section:?}",
                versions.kind
            );
        }
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
    for (from, crd, to, to_schema) in [
        ("v1alpha1", alpha, "v1beta1", &beta_schema),
        ("v1beta1", beta, "v1alpha1", &alpha_schema),
    ] {
        runner
            .run(&objects(versions, from, crd), |object| {
                let there = versions.convert(object.clone(), to).unwrap();
                let mut extra = Vec::new();
                for section in [&["spec"][..], &["status"][..]] {
                    undeclared(
                        &there[section[0]],
                        below(to_schema, section),
                        section[0],
                        &mut extra,
                    );
                }
                prop_assert!(extra.is_empty(), "{to} cannot hold {extra:?} of {there}");
                let back = versions.convert(there, from).unwrap();
                prop_assert_eq!(back, object);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{} {from} -> {to}: {e}", versions.kind));
    }
}

#[test]
fn vpc_round_trips() {
    check(
        &vpc::v1beta1::VERSIONS,
        vpc::m::Vpc::crd(),
        vpc::v1beta1::Vpc::crd(),
    );
}

#[test]
fn subnet_round_trips() {
    check(
        &subnet::v1beta1::VERSIONS,
        subnet::m::Subnet::crd(),
        subnet::v1beta1::Subnet::crd(),
    );
}

#[test]
fn node_group_round_trips() {
    check(
        &nodegroup::v1beta1::VERSIONS,
        nodegroup::m::NodeGroup::crd(),
        nodegroup::v1beta1::NodeGroup::crd(),
    );
}

#[test]
fn database_instance_round_trips() {
    check(
        &database_instance::v1beta1::VERSIONS,
        database_instance::m::DatabaseInstance::crd(),
        database_instance::v1beta1::DatabaseInstance::crd(),
    );
}

#[test]
fn every_namespaced_kind_declares_its_versions_in_its_crds_group() {
    let crds = [
        vpc::v1beta1::Vpc::crd(),
        subnet::v1beta1::Subnet::crd(),
        nodegroup::v1beta1::NodeGroup::crd(),
        database_instance::v1beta1::DatabaseInstance::crd(),
    ];
    for (versions, crd) in CONVERSIONS.iter().zip(crds) {
        assert_eq!(versions.group, crd.spec.group);
        assert_eq!(versions.kind, crd.spec.names.kind);
        assert_eq!(versions.newest(), crd.spec.versions[0].name);
        assert_eq!(versions.versions(), ["v1alpha1", "v1beta1"]);
    }
}

#[test]
fn a_renamed_field_reads_in_the_other_version() {
    let alpha = json!({
        "apiVersion": "database.fakecloud.m.crossplane.io/v1alpha1",
        "kind": "DatabaseInstance",
        "metadata": {"name": "db", "namespace": "n"},
        "spec": {"forProvider": {"region": "eu-west-1", "masterUsername": "admin",
            "masterPasswordSecretRef": {"name": "s", "key": "password"}}},
    });
    let beta = database_instance::v1beta1::VERSIONS
        .convert(alpha, "v1beta1")
        .unwrap();
    assert_eq!(
        beta["spec"]["forProvider"],
        json!({"region": "eu-west-1", "adminUsername": "admin",
            "adminPasswordSecretRef": {"name": "s", "key": "password"}})
    );
    let typed: database_instance::v1beta1::DatabaseInstance = serde_json::from_value(beta).unwrap();
    assert_eq!(
        typed.spec.for_provider.admin_username.as_deref(),
        Some("admin")
    );
}

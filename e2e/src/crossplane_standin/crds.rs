//! The CRDs of Crossplane's `ManagedResourceDefinition` (MRD) and
//! `ManagedResourceActivationPolicy` (MRAP), `apiextensions.crossplane.io/v1alpha1`,
//! written here from Crossplane's published API: the same group, names,
//! scope, short names, printer columns, fields, defaults and status
//! subresource, so that the objects a Crossplane user writes are accepted
//! and kept as written.
//!
//! The schemas are plain structural schemas. Crossplane's own also carry
//! CEL rules (the immutability of `group`, `names` and `scope`, and
//! `state` never going back from `Active`); the one that matters to
//! activation, `state`, is kept here too, and [`super::install_definitions`]
//! strips it from servers older than 1.25, as it does every CEL rule. On
//! those servers nothing stops a user from writing `Inactive` over
//! `Active`; the stand-in itself never does.

use serde_json::{Value, json};

/// The API group of both kinds.
pub const GROUP: &str = "apiextensions.crossplane.io";
/// Their version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of their objects.
pub const API_VERSION: &str = "apiextensions.crossplane.io/v1alpha1";
/// Kind of an MRD.
pub const MRD_KIND: &str = "ManagedResourceDefinition";
/// Plural of an MRD, as its REST path and CRD name use it.
pub const MRD_PLURAL: &str = "managedresourcedefinitions";
/// Kind of an MRAP.
pub const MRAP_KIND: &str = "ManagedResourceActivationPolicy";
/// Plural of an MRAP.
pub const MRAP_PLURAL: &str = "managedresourceactivationpolicies";

/// The MRD's CRD name.
pub fn mrd_crd_name() -> String {
    format!("{MRD_PLURAL}.{GROUP}")
}

/// The MRAP's CRD name.
pub fn mrap_crd_name() -> String {
    format!("{MRAP_PLURAL}.{GROUP}")
}

/// Both CRDs, MRD first.
pub fn definitions() -> Vec<Value> {
    vec![mrd_crd(), mrap_crd()]
}

/// `status.conditions` as Crossplane writes them: a list keyed by `type`.
fn conditions_schema() -> Value {
    json!({
        "type": "array",
        "description": "What the controller last observed, one entry per condition type.",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type", "status", "reason", "lastTransitionTime"],
            "properties": {
                "type": {"type": "string"},
                "status": {"type": "string"},
                "reason": {"type": "string"},
                "message": {"type": "string"},
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "observedGeneration": {"type": "integer", "format": "int64"},
            },
        },
    })
}

/// A list of strings that is replaced as a whole on apply.
fn atomic_strings() -> Value {
    json!({"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}})
}

/// A CRD of `kind` in [`GROUP`], cluster-scoped, category `crossplane`,
/// with a status subresource.
fn crd(kind: &str, plural: &str, short_names: &[&str], columns: Value, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_lowercase(),
                "shortNames": short_names,
                "categories": ["crossplane"],
            },
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    })
}

/// The CRD of `ManagedResourceDefinition`: a CRD's spec plus
/// `connectionDetails` and `state` (seed 002).
pub fn mrd_crd() -> Value {
    let version = json!({
        "type": "object",
        "required": ["name", "served", "storage"],
        "properties": {
            "name": {"type": "string"},
            "served": {"type": "boolean"},
            "storage": {"type": "boolean"},
            "deprecated": {"type": "boolean"},
            "deprecationWarning": {"type": "string"},
            "schema": {
                "type": "object",
                "properties": {
                    // The kind's own schema: kept as written, checked by the
                    // API server only when it becomes a CRD.
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                },
            },
            "subresources": {
                "type": "object",
                "properties": {
                    "status": {"type": "object"},
                    "scale": {
                        "type": "object",
                        "required": ["specReplicasPath", "statusReplicasPath"],
                        "properties": {
                            "specReplicasPath": {"type": "string"},
                            "statusReplicasPath": {"type": "string"},
                            "labelSelectorPath": {"type": "string"},
                        },
                    },
                },
            },
            "additionalPrinterColumns": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["name", "type", "jsonPath"],
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"type": "string"},
                        "jsonPath": {"type": "string"},
                        "description": {"type": "string"},
                        "format": {"type": "string"},
                        "priority": {"type": "integer", "format": "int32"},
                    },
                },
            },
            "selectableFields": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["jsonPath"],
                    "properties": {"jsonPath": {"type": "string"}},
                },
            },
        },
    });
    let webhook = json!({
        "type": "object",
        "required": ["conversionReviewVersions"],
        "properties": {
            "conversionReviewVersions": atomic_strings(),
            "clientConfig": {
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "caBundle": {"type": "string", "format": "byte"},
                    "service": {
                        "type": "object",
                        "required": ["namespace", "name"],
                        "properties": {
                            "namespace": {"type": "string"},
                            "name": {"type": "string"},
                            "path": {"type": "string"},
                            "port": {"type": "integer", "format": "int32"},
                        },
                    },
                },
            },
        },
    });
    let spec = json!({
        "type": "object",
        "description": "The CRD to create once the MRD is Active, plus the connection details its kind writes.",
        "required": ["group", "names", "scope", "versions"],
        "properties": {
            "group": {"type": "string"},
            "names": {
                "type": "object",
                "required": ["kind", "plural"],
                "properties": {
                    "kind": {"type": "string"},
                    "listKind": {"type": "string"},
                    "plural": {"type": "string"},
                    "singular": {"type": "string"},
                    "shortNames": atomic_strings(),
                    "categories": atomic_strings(),
                },
            },
            "scope": {"type": "string", "enum": ["Namespaced", "Cluster"], "default": "Namespaced"},
            "versions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": version},
            "conversion": {
                "type": "object",
                "required": ["strategy"],
                "properties": {"strategy": {"type": "string"}, "webhook": webhook},
            },
            "preserveUnknownFields": {"type": "boolean"},
            "connectionDetails": {
                "type": "array",
                "description": "The keys the managed resource writes to its connection Secret.",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                    },
                },
            },
            "state": {
                "type": "string",
                "description": "Active: the CRD exists. Inactive (the default): no CRD until an activation policy names this MRD. Never goes back from Active.",
                "enum": ["Active", "Inactive"],
                "default": "Inactive",
                "x-kubernetes-validations": [{
                    "rule": "self == oldSelf || oldSelf != 'Active'",
                    "message": "state cannot go back once it is Active",
                }],
            },
        },
    });
    crd(
        MRD_KIND,
        MRD_PLURAL,
        &["mrd", "mrds"],
        json!([
            {"name": "STATE", "type": "string", "jsonPath": ".spec.state"},
            {"name": "ESTABLISHED", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Established')].status"},
            {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]),
        json!({
            "type": "object",
            "description": "A managed resource's CRD, created only once the MRD is Active.",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": spec,
                "status": {"type": "object", "properties": {"conditions": conditions_schema()}},
            },
        }),
    )
}

/// The CRD of `ManagedResourceActivationPolicy`: MRD names to activate,
/// exact or with `*` wildcards.
pub fn mrap_crd() -> Value {
    crd(
        MRAP_KIND,
        MRAP_PLURAL,
        &["mrap"],
        json!([{"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]),
        json!({
            "type": "object",
            "description": "Which ManagedResourceDefinitions to activate.",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["activate"],
                    "properties": {
                        "activate": {
                            "type": "array",
                            "description": "MRD names, such as vpcs.network.fakecloud.m.crossplane.io, or patterns such as *.network.fakecloud.m.crossplane.io.",
                            "minItems": 1,
                            "items": {"type": "string"},
                        },
                    },
                },
                "status": {
                    "type": "object",
                    "properties": {
                        "activated": {
                            "type": "array",
                            "description": "The MRDs this policy matches, sorted.",
                            "items": {"type": "string"},
                        },
                        "conditions": conditions_schema(),
                    },
                },
            },
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_crds_are_cluster_scoped_v1alpha1_with_a_status_subresource() {
        for (crd, name, short) in [
            (mrd_crd(), mrd_crd_name(), vec!["mrd", "mrds"]),
            (mrap_crd(), mrap_crd_name(), vec!["mrap"]),
        ] {
            assert_eq!(crd["metadata"]["name"], name.as_str());
            assert_eq!(crd["spec"]["scope"], "Cluster");
            assert_eq!(crd["spec"]["names"]["shortNames"], json!(short));
            let version = &crd["spec"]["versions"][0];
            assert_eq!(version["name"], VERSION);
            assert_eq!(version["subresources"]["status"], json!({}));
        }
    }

    #[test]
    fn the_mrd_state_defaults_to_inactive_and_may_only_leave_inactive() {
        let state = &mrd_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["state"];
        assert_eq!(state["default"], "Inactive");
        assert_eq!(state["enum"], json!(["Active", "Inactive"]));
        assert_eq!(
            state["x-kubernetes-validations"][0]["rule"],
            "self == oldSelf || oldSelf != 'Active'"
        );
    }
}

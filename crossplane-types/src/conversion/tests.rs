use serde_json::{Value, json};

use super::*;

/// A VPC-like kind: two booleans regrouped, one field renamed.
const STEP: VersionStep = VersionStep {
    older: "v1alpha1",
    newer: "v1beta1",
    moves: &[
        FieldMove {
            older: "/enableDnsSupport",
            newer: "/dns/resolution",
        },
        FieldMove {
            older: "/enableDnsHostnames",
            newer: "/dns/hostnames",
        },
        FieldMove {
            older: "/instanceTenancy",
            newer: "/tenancy",
        },
    ],
};

const KIND: KindVersions = KindVersions {
    group: "network.example.io",
    kind: "VPC",
    oldest: "v1alpha1",
    steps: &[STEP],
};

const KEPT_ALPHA: &str = "network.example.io/v1alpha1-fields";
const KEPT_BETA: &str = "network.example.io/v1beta1-fields";

fn alpha(for_provider: Value) -> Value {
    json!({
        "apiVersion": "network.example.io/v1alpha1",
        "kind": "VPC",
        "metadata": {"name": "a", "namespace": "n", "labels": {"team": "x"}},
        "spec": {"forProvider": for_provider, "managementPolicies": ["*"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    })
}

#[test]
fn a_step_moves_renamed_and_regrouped_fields_both_ways() {
    let older = json!({"region": "r", "enableDnsSupport": true, "enableDnsHostnames": false, "instanceTenancy": "default"});
    let newer = STEP.up(older.clone());
    assert_eq!(
        newer,
        json!({"region": "r", "dns": {"resolution": true, "hostnames": false}, "tenancy": "default"})
    );
    assert_eq!(STEP.down(newer), older);
}

#[test]
fn a_patch_touching_one_regrouped_field_moves_alone() {
    assert_eq!(
        STEP.down(json!({"dns": {"hostnames": true}})),
        json!({"enableDnsHostnames": true})
    );
    assert_eq!(
        STEP.down(json!({"tags": {"a": null}})),
        json!({"tags": {"a": null}})
    );
}

#[test]
fn an_object_converts_every_section_and_its_api_version() {
    let mut object = alpha(json!({"region": "r", "instanceTenancy": "dedicated"}));
    object["spec"]["initProvider"] = json!({"enableDnsSupport": true});
    object["status"]["atProvider"] = json!({"id": "vpc-1", "enableDnsHostnames": true});
    let beta = KIND.convert(object.clone(), "v1beta1").unwrap();
    assert_eq!(beta["apiVersion"], "network.example.io/v1beta1");
    assert_eq!(
        beta["spec"]["forProvider"],
        json!({"region": "r", "tenancy": "dedicated"})
    );
    assert_eq!(
        beta["spec"]["initProvider"],
        json!({"dns": {"resolution": true}})
    );
    assert_eq!(
        beta["status"]["atProvider"],
        json!({"id": "vpc-1", "dns": {"hostnames": true}})
    );
    assert_eq!(beta["spec"]["managementPolicies"], json!(["*"]));
    assert_eq!(beta["status"]["conditions"], object["status"]["conditions"]);
    assert!(
        beta["metadata"].get("annotations").is_none(),
        "nothing to keep: {beta}"
    );
    assert_eq!(KIND.convert(beta, "v1alpha1").unwrap(), object);
}

#[test]
fn what_the_older_version_cannot_hold_travels_in_an_annotation_and_comes_back() {
    let mut beta = KIND
        .convert(alpha(json!({"region": "r"})), "v1beta1")
        .unwrap();
    // `dns: {}` has no place in v1alpha1.
    beta["spec"]["forProvider"]["dns"] = json!({});
    let down = KIND.convert(beta.clone(), "v1alpha1").unwrap();
    assert_eq!(down["spec"]["forProvider"], json!({"region": "r"}));
    let kept: Value =
        serde_json::from_str(down["metadata"]["annotations"][KEPT_BETA].as_str().unwrap()).unwrap();
    assert_eq!(
        kept,
        json!({"/spec/forProvider": {"region": "r", "dns": {}}})
    );
    assert_eq!(KIND.convert(down, "v1beta1").unwrap(), beta);
}

#[test]
fn an_edit_made_in_the_other_version_wins_over_the_kept_copy() {
    let mut beta = KIND
        .convert(alpha(json!({"region": "r"})), "v1beta1")
        .unwrap();
    beta["spec"]["forProvider"]["dns"] = json!({});
    let mut down = KIND.convert(beta, "v1alpha1").unwrap();
    down["spec"]["forProvider"]["enableDnsSupport"] = json!(false);
    let up = KIND.convert(down, "v1beta1").unwrap();
    assert_eq!(
        up["spec"]["forProvider"],
        json!({"region": "r", "dns": {"resolution": false}})
    );
    assert!(
        up["metadata"].get("annotations").is_none(),
        "stale copy dropped: {up}"
    );
}

#[test]
fn the_older_versions_leftovers_are_kept_going_up_too() {
    // Both the old and the new place set: v1beta1 holds one of them.
    let object = alpha(json!({"region": "r", "tenancy": "x", "instanceTenancy": "default"}));
    let beta = KIND.convert(object.clone(), "v1beta1").unwrap();
    assert!(
        beta["metadata"]["annotations"][KEPT_ALPHA].is_string(),
        "{beta}"
    );
    assert_eq!(KIND.convert(beta, "v1alpha1").unwrap(), object);
}

#[test]
fn a_null_group_of_moved_fields_goes_as_an_empty_one_does() {
    // The API server's field manager converts partial objects whose emptied
    // objects are null; the older version has no `dns` at all.
    assert_eq!(
        STEP.down(json!({"region": "r", "dns": null, "tags": null})),
        json!({"region": "r", "tags": null})
    );
    assert_eq!(
        STEP.down(json!({"dns": {"resolution": null}})),
        json!({"enableDnsSupport": null})
    );
    let mut beta = KIND
        .convert(alpha(json!({"region": "r"})), "v1beta1")
        .unwrap();
    beta["status"]["atProvider"] = json!({"dns": null, "id": "vpc-1"});
    let down = KIND.convert(beta.clone(), "v1alpha1").unwrap();
    assert_eq!(down["status"]["atProvider"], json!({"id": "vpc-1"}));
    assert_eq!(KIND.convert(down, "v1beta1").unwrap(), beta);
}

#[test]
fn a_field_moves_into_a_group_that_is_null() {
    let mut target = json!({"dns": null});
    put(&mut target, "/dns/resolution", json!(true));
    assert_eq!(target, json!({"dns": {"resolution": true}}));
}

#[test]
fn a_conversion_to_its_own_version_changes_nothing() {
    let object = alpha(json!({"region": "r", "enableDnsSupport": true}));
    assert_eq!(KIND.convert(object.clone(), "v1alpha1").unwrap(), object);
}

#[test]
fn other_annotations_stay() {
    let mut object = alpha(json!({"region": "r", "instanceTenancy": "default"}));
    object["metadata"]["annotations"] = json!({"crossplane.io/external-name": "vpc-1"});
    let beta = KIND.convert(object.clone(), "v1beta1").unwrap();
    assert_eq!(
        beta["metadata"]["annotations"],
        object["metadata"]["annotations"]
    );
    assert_eq!(KIND.convert(beta, "v1alpha1").unwrap(), object);
}

#[test]
fn bad_input_is_an_error_that_names_it() {
    let mut object = alpha(json!({}));
    assert!(matches!(
        KIND.convert(object.clone(), "v2"),
        Err(ConversionError::UnknownVersion { version, known, .. }) if version == "v2" && known == "v1alpha1, v1beta1"
    ));
    object["apiVersion"] = json!("compute.example.io/v1alpha1");
    assert!(matches!(
        KIND.convert(object.clone(), "v1beta1"),
        Err(ConversionError::OtherGroup { .. })
    ));
    object.as_object_mut().unwrap().remove("apiVersion");
    assert_eq!(
        KIND.convert(object, "v1beta1"),
        Err(ConversionError::NoApiVersion)
    );
    let mut kept = alpha(json!({}));
    kept["metadata"]["annotations"] = json!({KEPT_BETA: "{not json"});
    let error = KIND.convert(kept.clone(), "v1beta1").unwrap_err();
    assert!(error.to_string().contains(KEPT_BETA), "{error}");
    kept["metadata"]["annotations"] = json!({KEPT_BETA: "{\"/metadata\": {}}"});
    assert!(matches!(
        KIND.convert(kept, "v1beta1"),
        Err(ConversionError::BadKeptFields { reason, .. }) if reason.contains("/metadata")
    ));
}

#[test]
fn pointers_with_escaped_characters_move() {
    const ODD: VersionStep = VersionStep {
        older: "a",
        newer: "b",
        moves: &[FieldMove {
            older: "/x~1y",
            newer: "/nested/z~0w",
        }],
    };
    let moved = ODD.up(json!({"x/y": 1}));
    assert_eq!(moved, json!({"nested": {"z~w": 1}}));
    assert_eq!(ODD.down(moved), json!({"x/y": 1}));
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::{KIND, alpha};

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::from),
        ]
    }

    /// A parameters object of either version's shape, or a mix of both,
    /// with empty objects where the regrouped fields go.
    fn params() -> impl Strategy<Value = Value> {
        let keys = prop::sample::select(vec![
            "region",
            "enableDnsSupport",
            "enableDnsHostnames",
            "instanceTenancy",
            "tenancy",
            "tags",
        ]);
        let dns = prop::option::of(prop::option::of(prop::collection::btree_map(
            prop::sample::select(vec!["resolution", "hostnames", "other"]),
            scalar(),
            0..3,
        )));
        (prop::collection::btree_map(keys, scalar(), 0..6), dns).prop_map(|(fields, dns)| {
            let mut map: Map<String, Value> =
                fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            match dns {
                Some(Some(dns)) => {
                    map.insert(
                        "dns".to_owned(),
                        Value::Object(dns.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
                    );
                }
                // A null group, as the API server's field manager sends.
                Some(None) => {
                    map.insert("dns".to_owned(), Value::Null);
                }
                None => {}
            }
            Value::Object(map)
        })
    }

    fn object(version: &'static str) -> impl Strategy<Value = Value> {
        (
            params(),
            prop::option::of(params()),
            prop::option::of(params()),
        )
            .prop_map(move |(for_provider, init, at)| {
                let mut object = alpha(for_provider);
                object["apiVersion"] = json!(format!("network.example.io/{version}"));
                if let Some(init) = init {
                    object["spec"]["initProvider"] = init;
                }
                if let Some(at) = at {
                    object["status"]["atProvider"] = at;
                }
                object
            })
    }

    proptest! {
        #[test]
        fn up_then_down_is_the_identity(object in object("v1alpha1")) {
            let there = KIND.convert(object.clone(), "v1beta1").unwrap();
            prop_assert_eq!(KIND.convert(there, "v1alpha1").unwrap(), object);
        }

        #[test]
        fn down_then_up_is_the_identity(object in object("v1beta1")) {
            let there = KIND.convert(object.clone(), "v1alpha1").unwrap();
            prop_assert_eq!(KIND.convert(there, "v1beta1").unwrap(), object);
        }

        #[test]
        fn there_and_back_twice_is_still_the_identity(object in object("v1beta1")) {
            let mut at = object.clone();
            for _ in 0..2 {
                at = KIND.convert(at, "v1alpha1").unwrap();
                at = KIND.convert(at, "v1beta1").unwrap();
            }
            prop_assert_eq!(at, object);
        }
    }
}

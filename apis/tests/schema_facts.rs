//! The facts of the generated CRDs that users and the provider rely on.

mod support;

use apis::kinds::{DatabaseInstance, NodeGroup, ProviderConfig, ProviderConfigUsage, Subnet, Vpc};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};
use support::schema_of;

/// The legacy cluster-scoped managed kinds.
fn managed_crds() -> Vec<CustomResourceDefinition> {
    vec![
        Vpc::crd(),
        Subnet::crd(),
        NodeGroup::crd(),
        DatabaseInstance::crd(),
    ]
}

/// The namespaced (Crossplane v2) managed kinds, in the same order.
fn namespaced_crds() -> Vec<CustomResourceDefinition> {
    vec![
        apis::kinds::vpc::m::Vpc::crd(),
        apis::kinds::subnet::m::Subnet::crd(),
        apis::kinds::nodegroup::m::NodeGroup::crd(),
        apis::kinds::database_instance::m::DatabaseInstance::crd(),
    ]
}

/// The schema at a dotted path of property names.
fn at<'a>(schema: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(schema, |s, name| {
        s.get("properties")
            .and_then(|p| p.get(name))
            .unwrap_or_else(|| panic!("no {path}"))
    })
}

fn required(schema: &Value, path: &str) -> Vec<String> {
    let node = if path.is_empty() {
        schema
    } else {
        at(schema, path)
    };
    let mut names: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn names_groups_scope_and_categories() {
    let expected = [
        ("vpcs.network.fakecloud.crossplane.io", "VPC"),
        ("subnets.network.fakecloud.crossplane.io", "Subnet"),
        ("nodegroups.compute.fakecloud.crossplane.io", "NodeGroup"),
        (
            "databaseinstances.database.fakecloud.crossplane.io",
            "DatabaseInstance",
        ),
    ];
    for (crd, (name, kind)) in managed_crds().iter().zip(expected) {
        assert_eq!(crd.metadata.name.as_deref(), Some(name));
        assert_eq!(crd.spec.names.kind, kind);
        assert_eq!(crd.spec.scope, "Cluster", "{name}");
        assert_eq!(crd.spec.versions.len(), 1);
        assert_eq!(crd.spec.versions[0].name, "v1alpha1");
        assert_eq!(
            crd.spec.names.categories.as_deref(),
            Some(
                &[
                    "crossplane".to_owned(),
                    "managed".to_owned(),
                    "fakecloud".to_owned()
                ][..]
            ),
            "{name}"
        );
        assert!(
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{name} has the status subresource"
        );
    }
    assert_eq!(
        ProviderConfig::crd().metadata.name.as_deref(),
        Some("providerconfigs.fakecloud.crossplane.io")
    );
    assert_eq!(
        ProviderConfigUsage::crd().metadata.name.as_deref(),
        Some("providerconfigusages.fakecloud.crossplane.io")
    );
    assert_eq!(ProviderConfig::crd().spec.scope, "Cluster");
}

#[test]
fn printer_columns_are_ready_synced_drift_external_name_age() {
    for crd in managed_crds() {
        let columns = crd.spec.versions[0]
            .additional_printer_columns
            .clone()
            .unwrap();
        let shown: Vec<(&str, &str, &str)> = columns
            .iter()
            .map(|c| (c.name.as_str(), c.type_.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "READY",
                    "string",
                    ".status.conditions[?(@.type=='Ready')].status"
                ),
                (
                    "SYNCED",
                    "string",
                    ".status.conditions[?(@.type=='Synced')].status"
                ),
                ("DRIFT", "integer", ".status.drift.count"),
                (
                    "EXTERNAL-NAME",
                    "string",
                    ".metadata.annotations.crossplane\\.io/external-name"
                ),
                ("AGE", "date", ".metadata.creationTimestamp"),
            ],
            "{}",
            crd.spec.names.kind
        );
    }
}

#[test]
fn identifiers_are_the_only_required_parameters() {
    let expected = [
        (Vpc::crd(), vec!["region"]),
        (Subnet::crd(), vec!["region"]),
        (NodeGroup::crd(), vec!["clusterName", "region"]),
        (DatabaseInstance::crd(), vec!["region"]),
    ];
    for (crd, identifiers) in expected {
        let schema = schema_of(&crd);
        assert_eq!(required(&schema, ""), ["spec"]);
        assert_eq!(
            required(&schema, "spec"),
            ["forProvider"],
            "{}",
            crd.spec.names.kind
        );
        assert_eq!(
            required(&schema, "spec.forProvider"),
            identifiers,
            "{}",
            crd.spec.names.kind
        );
        assert!(required(&schema, "spec.initProvider").is_empty());
        for identifier in identifiers {
            assert!(
                at(&schema, "spec.initProvider")
                    .get("properties")
                    .unwrap()
                    .get(identifier)
                    .is_none(),
                "initProvider of {} must not hold the identifier {identifier}",
                crd.spec.names.kind
            );
        }
    }
}

#[test]
fn namespaced_kinds_mirror_the_legacy_ones_in_m_groups() {
    for (legacy, namespaced) in managed_crds().iter().zip(namespaced_crds()) {
        let name = namespaced.metadata.name.clone().unwrap();
        assert_eq!(namespaced.spec.scope, "Namespaced", "{name}");
        assert_eq!(
            namespaced.spec.group,
            legacy.spec.group.replace(".fakecloud.", ".fakecloud.m."),
            "{name}"
        );
        assert_eq!(namespaced.spec.names, legacy.spec.names, "{name}");
        // forProvider differs only where a Secret key or a reference is.
        let (ns, cs) = (schema_of(&namespaced), schema_of(legacy));
        let fields = |s: &Value| -> Vec<String> {
            at(s, "spec.forProvider")["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(fields(&ns), fields(&cs), "{name}");
        assert_eq!(at(&ns, "status"), at(&cs, "status"), "{name}");
    }
    for (crd, scope) in [
        (
            apis::kinds::provider_config::m::ProviderConfig::crd(),
            "Namespaced",
        ),
        (
            apis::kinds::provider_config::m::ClusterProviderConfig::crd(),
            "Cluster",
        ),
        (
            apis::kinds::provider_config::m::ProviderConfigUsage::crd(),
            "Namespaced",
        ),
        (
            apis::kinds::provider_config::m::ClusterProviderConfigUsage::crd(),
            "Cluster",
        ),
    ] {
        assert_eq!(crd.spec.group, "fakecloud.m.crossplane.io");
        assert_eq!(crd.spec.scope, scope, "{}", crd.spec.names.kind);
    }
}

#[test]
fn namespaced_spec_fields_stay_in_the_namespace() {
    for crd in namespaced_crds() {
        let name = crd.metadata.name.clone().unwrap();
        let schema = schema_of(&crd);
        let spec = at(&schema, "spec");
        assert!(spec["properties"].get("deletionPolicy").is_none(), "{name}");
        assert_eq!(
            at(&schema, "spec.managementPolicies")["default"],
            json!(["*"])
        );
        let config = at(&schema, "spec.providerConfigRef");
        assert_eq!(
            config["default"],
            json!({"kind": "ClusterProviderConfig", "name": "default"})
        );
        assert_eq!(
            at(config, "kind")["enum"],
            json!(["ProviderConfig", "ClusterProviderConfig"])
        );
        let secret = at(&schema, "spec.writeConnectionSecretToRef");
        assert_eq!(
            required(&schema, "spec.writeConnectionSecretToRef"),
            ["name"]
        );
        assert!(secret["properties"].get("namespace").is_none(), "{name}");
    }
    let db = schema_of(&apis::kinds::database_instance::m::DatabaseInstance::crd());
    let password = at(&db, "spec.forProvider.masterPasswordSecretRef");
    assert!(password["properties"].get("namespace").is_none());
    assert_eq!(
        required(&db, "spec.forProvider.masterPasswordSecretRef"),
        ["key", "name"]
    );
    // References and selectors may name another namespace; unset, their own.
    let subnet = schema_of(&apis::kinds::subnet::m::Subnet::crd());
    for path in [
        "spec.forProvider.vpcIdRef",
        "spec.forProvider.vpcIdSelector",
    ] {
        assert_eq!(
            at(&subnet, path)["properties"]["namespace"]["type"],
            "string"
        );
    }
    assert_eq!(required(&subnet, "spec.forProvider.vpcIdRef"), ["name"]);
    let team = schema_of(&apis::kinds::provider_config::m::ProviderConfig::crd());
    assert!(
        at(&team, "spec.credentials.secretRef")["properties"]
            .get("namespace")
            .is_none()
    );
}

#[test]
fn crossplane_spec_fields_have_their_defaults_and_enums() {
    for crd in managed_crds() {
        let schema = schema_of(&crd);
        let policies = at(&schema, "spec.managementPolicies");
        assert_eq!(policies["default"], json!(["*"]));
        assert_eq!(
            policies["items"]["enum"],
            json!([
                "Observe",
                "Create",
                "Update",
                "Delete",
                "LateInitialize",
                "*"
            ])
        );
        let deletion = at(&schema, "spec.deletionPolicy");
        assert_eq!(deletion["default"], json!("Delete"));
        assert_eq!(deletion["enum"], json!(["Delete", "Orphan"]));
        assert_eq!(
            at(&schema, "spec.providerConfigRef")["default"],
            json!({"name": "default"})
        );
        assert_eq!(
            required(&schema, "spec.writeConnectionSecretToRef"),
            ["name", "namespace"]
        );
    }
}

#[test]
fn conditions_have_the_crossplane_shape_and_merge_by_type() {
    for crd in managed_crds() {
        let schema = schema_of(&crd);
        let conditions = at(&schema, "status.conditions");
        assert_eq!(conditions["x-kubernetes-list-type"], json!("map"));
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
        let item = &conditions["items"];
        let mut fields: Vec<&String> = item["properties"].as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "lastTransitionTime",
                "message",
                "observedGeneration",
                "reason",
                "status",
                "type"
            ]
        );
        assert_eq!(
            item["properties"]["status"]["enum"],
            json!(["True", "False", "Unknown"])
        );
        assert_eq!(
            item["properties"]["lastTransitionTime"]["format"],
            json!("date-time")
        );
    }
}

#[test]
fn references_and_selectors_sit_beside_the_fields_they_fill() {
    let subnet = schema_of(&Subnet::crd());
    assert_eq!(required(&subnet, "spec.forProvider.vpcIdRef"), ["name"]);
    let policy = at(&subnet, "spec.forProvider.vpcIdRef.policy");
    assert_eq!(
        at(policy, "resolve")["enum"],
        json!(["Always", "IfNotPresent"])
    );
    assert_eq!(
        at(policy, "resolution")["enum"],
        json!(["Required", "Optional"])
    );
    assert_eq!(at(policy, "resolution")["default"], json!("Required"));
    let selector = at(&subnet, "spec.forProvider.vpcIdSelector");
    for field in ["matchLabels", "matchControllerRef", "policy"] {
        assert!(
            selector["properties"].get(field).is_some(),
            "vpcIdSelector.{field}"
        );
    }
    for crd in [NodeGroup::crd(), DatabaseInstance::crd()] {
        let schema = schema_of(&crd);
        assert_eq!(
            at(&schema, "spec.forProvider.subnetIds")["type"],
            json!("array")
        );
        let refs = at(&schema, "spec.forProvider.subnetIdRefs");
        assert_eq!(refs["type"], json!("array"));
        assert_eq!(refs["items"]["required"], json!(["name"]));
        assert!(
            at(&schema, "spec.forProvider.subnetIdSelector")["properties"]
                .get("matchLabels")
                .is_some()
        );
    }
    let database = schema_of(&DatabaseInstance::crd());
    assert_eq!(
        required(&database, "spec.forProvider.masterPasswordSecretRef"),
        ["key", "name", "namespace"]
    );
}

#[test]
fn enums_of_the_cloud_parameters() {
    assert_eq!(
        at(&schema_of(&Vpc::crd()), "spec.forProvider.instanceTenancy")["enum"],
        json!(["default", "dedicated"])
    );
    assert_eq!(
        at(
            &schema_of(&DatabaseInstance::crd()),
            "spec.forProvider.engine"
        )["enum"],
        json!(["postgres", "mysql"])
    );
    let provider_config = schema_of(&ProviderConfig::crd());
    assert_eq!(
        at(&provider_config, "spec.credentials.source")["enum"],
        json!(["Secret", "None"])
    );
    assert_eq!(
        required(&provider_config, "spec"),
        ["credentials", "endpoint"]
    );
    assert!(at(&provider_config, "status.users").is_object());
}

/// `atProvider` is a superset of `forProvider` minus references and secret
/// refs, under the same names: the provider compares them field by field.
#[test]
fn at_provider_reports_every_for_provider_field_under_the_same_name() {
    for crd in managed_crds() {
        let schema = schema_of(&crd);
        let observed = at(&schema, "status.atProvider")["properties"]
            .as_object()
            .unwrap();
        for name in at(&schema, "spec.forProvider")["properties"]
            .as_object()
            .unwrap()
            .keys()
        {
            if name.ends_with("Ref") || name.ends_with("Refs") || name.ends_with("Selector") {
                continue;
            }
            assert!(
                observed.contains_key(name),
                "{} atProvider lacks {name}",
                crd.spec.names.kind
            );
        }
    }
}

/// The e2e control plane is Kubernetes 1.20: once CEL rules are stripped,
/// nothing newer than 1.20 may remain.
#[test]
fn schemas_use_nothing_newer_than_kubernetes_1_20_besides_cel_rules() {
    fn extensions(schema: &Value, found: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map {
                    if key.starts_with("x-kubernetes-") {
                        found.push(key.clone());
                    }
                    extensions(value, found);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| extensions(i, found)),
            _ => {}
        }
    }
    let allowed = [
        "x-kubernetes-validations",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
    ];
    for crd in apis::generate::crds() {
        let mut found = Vec::new();
        extensions(&schema_of(&crd), &mut found);
        for key in found {
            assert!(
                allowed.contains(&key.as_str()),
                "{}: {key}",
                crd.spec.names.kind
            );
        }
        let version = &crd.spec.versions[0];
        assert!(
            version.selectable_fields.is_none(),
            "selectableFields needs Kubernetes 1.30"
        );
    }
}

fn assert_references_match_schema<M: crossplane_types::Managed>() {
    let crd = M::crd();
    let schema = schema_of(&crd);
    let for_provider = at(&schema, "spec.forProvider");
    for reference in M::REFERENCES {
        let kind = &crd.spec.names.kind;
        let field = at(for_provider, reference.field);
        let by_name = at(for_provider, reference.reference_field);
        assert!(
            for_provider["properties"]
                .get(reference.selector_field)
                .is_some(),
            "{kind}"
        );
        let list = json!("array");
        assert_eq!(
            field["type"] == list,
            reference.many,
            "{kind}.{}",
            reference.field
        );
        assert_eq!(
            by_name["type"] == list,
            reference.many,
            "{kind}.{}",
            reference.reference_field
        );
        let target = apis::generate::crds()
            .into_iter()
            .find(|c| {
                c.spec.names.kind == reference.target_kind && c.spec.group == reference.target_group
            })
            .unwrap_or_else(|| panic!("{kind} references unknown kind {}", reference.target_kind));
        assert_eq!(
            target.spec.scope, crd.spec.scope,
            "{kind} references a kind of the other scope"
        );
        assert_eq!(target.spec.names.plural, reference.target_plural);
        assert_eq!(target.spec.versions[0].name, reference.target_version);
        let pointer = reference
            .target_value_pointer
            .trim_start_matches('/')
            .replace('/', ".");
        assert_eq!(at(&schema_of(&target), &pointer)["type"], json!("string"));
    }
}

#[test]
fn declared_references_name_real_fields_and_kinds() {
    assert_references_match_schema::<Vpc>();
    assert_references_match_schema::<Subnet>();
    assert_references_match_schema::<NodeGroup>();
    assert_references_match_schema::<DatabaseInstance>();
    assert_references_match_schema::<apis::kinds::vpc::m::Vpc>();
    assert_references_match_schema::<apis::kinds::subnet::m::Subnet>();
    assert_references_match_schema::<apis::kinds::nodegroup::m::NodeGroup>();
    assert_references_match_schema::<apis::kinds::database_instance::m::DatabaseInstance>();
    assert_eq!(<Subnet as crossplane_types::Managed>::REFERENCES.len(), 1);
    assert_eq!(
        <NodeGroup as crossplane_types::Managed>::REFERENCES.len(),
        1
    );
    assert_eq!(
        <DatabaseInstance as crossplane_types::Managed>::REFERENCES.len(),
        1
    );
}

#[test]
fn managed_accessors_reach_the_spec_and_create_status_on_demand() {
    use crossplane_types::Managed;
    let mut vpc: Vpc = serde_json::from_value(json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": {"name": "v"},
        "spec": {"managementPolicies": ["Observe"], "forProvider": {"region": "eu-west-1"},
            "initProvider": {"cidrBlock": "10.0.0.0/16"}}
    }))
    .unwrap();
    assert_eq!(
        vpc.resource_spec().management_policies,
        [crossplane_types::ManagementAction::Observe]
    );
    assert_eq!(vpc.for_provider().region, "eu-west-1");
    assert_eq!(
        vpc.init_provider().unwrap().cidr_block.as_deref(),
        Some("10.0.0.0/16")
    );
    assert!(vpc.managed_status().is_none());
    vpc.managed_status_mut()
        .set_condition(crossplane_types::Condition::available());
    vpc.for_provider_mut().cidr_block = Some("10.0.0.0/16".into());
    let json = serde_json::to_value(&vpc).unwrap();
    assert_eq!(json["status"]["conditions"][0]["reason"], "Available");
    assert_eq!(
        json["spec"]["forProvider"],
        json!({"region": "eu-west-1", "cidrBlock": "10.0.0.0/16"})
    );
    assert_eq!(
        Vpc::EXTERNAL_NAME_ORIGIN,
        crossplane_types::ExternalNameOrigin::AssignedByCloud
    );
    assert_eq!(
        DatabaseInstance::EXTERNAL_NAME_ORIGIN,
        crossplane_types::ExternalNameOrigin::MetadataName
    );
}

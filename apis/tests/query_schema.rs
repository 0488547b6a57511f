//! The facts of the query kinds' CRDs that users and the query controller
//! rely on: names and scope, what the schema requires and refuses (which
//! every API server enforces, 1.20 included), the printer columns, and the
//! managed kind each query's matches become. Their CEL rules are proven in
//! `cel_rules.rs`.

mod support;

use apis::kinds::{DatabaseInstanceQuery, NodeGroupQuery, SubnetQuery, VpcQuery};
use crossplane_types::Query;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};
use support::{schema_of, structural_errors, with_defaults};

/// The four query kinds, each with the CRD name of the managed kind its
/// matches become.
fn query_crds() -> [(CustomResourceDefinition, CustomResourceDefinition); 4] {
    fn pair<Q: Query>() -> (CustomResourceDefinition, CustomResourceDefinition) {
        (Q::crd(), <Q::Managed as CustomResourceExt>::crd())
    }
    [
        pair::<VpcQuery>(),
        pair::<SubnetQuery>(),
        pair::<NodeGroupQuery>(),
        pair::<DatabaseInstanceQuery>(),
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
    let mut names: Vec<String> = at(schema, path)
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn four_namespaced_kinds_in_one_query_group_each_owning_a_namespaced_managed_kind() {
    let expected = [
        (
            "vpcqueries",
            "VPCQuery",
            "vpcs.network.fakecloud.m.crossplane.io",
        ),
        (
            "subnetqueries",
            "SubnetQuery",
            "subnets.network.fakecloud.m.crossplane.io",
        ),
        (
            "nodegroupqueries",
            "NodeGroupQuery",
            "nodegroups.compute.fakecloud.m.crossplane.io",
        ),
        (
            "databaseinstancequeries",
            "DatabaseInstanceQuery",
            "databaseinstances.database.fakecloud.m.crossplane.io",
        ),
    ];
    for ((crd, managed), (plural, kind, managed_name)) in query_crds().into_iter().zip(expected) {
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some(format!("{plural}.query.fakecloud.m.crossplane.io").as_str())
        );
        assert_eq!(crd.spec.group, apis::kinds::query::GROUP);
        assert_eq!(crd.spec.names.kind, kind);
        assert_eq!(crd.spec.scope, "Namespaced", "{kind}");
        assert_eq!(crd.spec.versions.len(), 1);
        assert_eq!(crd.spec.versions[0].name, "v1alpha1");
        assert_eq!(
            crd.spec.names.categories.as_deref(),
            Some(
                &[
                    "crossplane".to_owned(),
                    "query".to_owned(),
                    "fakecloud".to_owned()
                ][..]
            ),
            "not `managed`: a query is not a managed resource"
        );
        assert!(
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{kind} has the status subresource"
        );
        assert_eq!(managed.metadata.name.as_deref(), Some(managed_name));
        assert_eq!(managed.spec.scope, "Namespaced");
    }
}

#[test]
fn no_query_kind_has_an_mrd() {
    let mrds: Vec<String> = apis::generate::mrds()
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .collect();
    for (crd, _) in query_crds() {
        let name = crd.metadata.name.unwrap();
        assert!(!mrds.contains(&name), "{name}");
        assert!(
            apis::generate::crds()
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(name.as_str())),
            "the package carries {name}"
        );
    }
}

#[test]
fn printer_columns_are_matches_ready_synced_age() {
    for (crd, _) in query_crds() {
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
                ("MATCHES", "integer", ".status.matchCount"),
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
                ("AGE", "date", ".metadata.creationTimestamp"),
            ],
            "{}",
            crd.spec.names.kind
        );
    }
}

#[test]
fn the_filter_and_its_region_are_required_and_a_node_group_query_names_its_cluster() {
    let expected = [
        vec!["region"],
        vec!["region"],
        vec!["clusterName", "region"],
        vec!["region"],
    ];
    for ((crd, _), filter_required) in query_crds().into_iter().zip(expected) {
        let schema = schema_of(&crd);
        assert_eq!(
            required(&schema, "spec"),
            ["filter"],
            "{}",
            crd.spec.names.kind
        );
        assert_eq!(
            required(&schema, "spec.filter"),
            filter_required,
            "{}",
            crd.spec.names.kind
        );
    }
}

#[test]
fn the_schema_says_what_a_region_tag_cidr_and_vpc_id_look_like() {
    for (crd, _) in query_crds() {
        let schema = schema_of(&crd);
        assert_eq!(
            at(&schema, "spec.filter.region")["pattern"],
            json!("^[a-z]{2}-[a-z]+-[0-9]+$")
        );
        let tags = at(&schema, "spec.filter.tags");
        assert_eq!(tags["items"]["pattern"], json!("^[^=]{1,128}(=.{0,256})?$"));
        assert_eq!(tags["maxItems"], json!(50));
        assert_eq!(tags["x-kubernetes-list-type"], json!("set"));
        let limit = at(&schema, "spec.limit");
        assert_eq!(
            (limit["minimum"].as_f64(), limit["maximum"].as_f64()),
            (Some(1.0), Some(10000.0))
        );
        assert_eq!(
            at(&schema, "spec.providerConfigRef")["default"],
            json!({"kind": "ClusterProviderConfig", "name": "default"})
        );
        assert_eq!(at(&schema, "status.matches")["maxItems"], json!(100));
        let conditions = at(&schema, "status.conditions");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    }
    let vpc = schema_of(&VpcQuery::crd());
    assert!(at(&vpc, "spec.filter.cidrBlock")["pattern"].is_string());
    let subnet = schema_of(&SubnetQuery::crd());
    assert_eq!(
        at(&subnet, "spec.filter.vpcId")["pattern"],
        json!("^vpc-[0-9a-f]{17}$")
    );
    assert!(at(&subnet, "spec.filter.availabilityZone")["pattern"].is_string());
}

#[test]
fn each_kind_filters_on_its_states_and_a_database_on_its_engine() {
    let states =
        |crd: CustomResourceDefinition| at(&schema_of(&crd), "spec.filter.state")["enum"].clone();
    assert_eq!(states(VpcQuery::crd()), json!(["pending", "available"]));
    assert_eq!(states(SubnetQuery::crd()), json!(["pending", "available"]));
    assert_eq!(
        states(NodeGroupQuery::crd()),
        json!(["CREATING", "ACTIVE", "UPDATING", "DELETING"])
    );
    assert_eq!(
        states(DatabaseInstanceQuery::crd()),
        json!(["creating", "available", "modifying", "deleting"])
    );
    assert_eq!(
        at(
            &schema_of(&DatabaseInstanceQuery::crd()),
            "spec.filter.engine"
        )["enum"],
        json!(["postgres", "mysql"])
    );
}

#[test]
fn the_schema_refuses_what_it_can_say() {
    let schema = schema_of(&VpcQuery::crd());
    let query = |spec: Value| {
        with_defaults(
            &schema,
            &json!({"apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPCQuery",
                "metadata": {"name": "q"}, "spec": spec}),
        )
    };
    let good =
        query(json!({"filter": {"region": "us-east-1", "tags": ["team=b"], "state": "available"}}));
    assert_eq!(structural_errors(&schema, &good), Vec::<String>::new());
    for (spec, error) in [
        (json!({}), ".spec.filter: required but missing"),
        (
            json!({"filter": {"tags": ["a"]}}),
            ".spec.filter.region: required but missing",
        ),
        (
            json!({"filter": {"region": "us-east-1", "state": "gone"}}),
            ".spec.filter.state: \"gone\" is not one of",
        ),
        (
            json!({"filter": {"region": "us-east-1"}, "limit": 0}),
            ".spec.limit: 0 is below the minimum 1",
        ),
        (
            json!({"filter": {"region": "us-east-1", "colour": "red"}}),
            ".spec.filter.colour: unknown field",
        ),
    ] {
        let errors = structural_errors(&schema, &query(spec.clone()));
        assert!(
            errors.iter().any(|e| e.starts_with(error)),
            "{spec}: expected {error:?}, got {errors:?}"
        );
    }
}

#[test]
fn a_query_parses_into_its_type_with_the_default_provider_config() {
    let query: VpcQuery = serde_json::from_value(json!({
        "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPCQuery",
        "metadata": {"name": "team-b", "namespace": "app"},
        "spec": {"filter": {"region": "us-east-1", "tags": ["team=b"]}, "limit": 3},
    }))
    .unwrap();
    assert_eq!(query.query_spec().provider_config_ref.name, "default");
    assert_eq!(
        query.query_spec().selection(),
        crossplane_types::Selection::First(3)
    );
    assert_eq!(
        query.spec.filter.base.tags.as_deref(),
        Some(&["team=b".to_owned()][..])
    );
    assert!(query.query_status().is_none());
    assert_eq!(
        crossplane_types::query::name_label::<VpcQuery>(),
        "query.fakecloud.m.crossplane.io/name"
    );
}

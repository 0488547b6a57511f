//! The committed package: generated files are current, MRDs document the
//! connection details the provider publishes, and every example is valid.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use apis::generate::{ManagedResourceDefinition, MrdState, default_package_root, stale_files};
use apis::kinds::{
    DatabaseInstance, DatabaseInstanceQuery, NodeGroup, NodeGroupQuery, ProviderConfig, Subnet,
    SubnetQuery, Vpc, VpcQuery, database_instance, nodegroup, provider_config, subnet, vpc,
};
use crossplane_types::Managed;
use k8s_openapi::api::core::v1::Secret;
use kube::CustomResourceExt;
use serde::Deserialize;
use serde_json::Value;
use support::{failures, schema_of, structural_errors, with_defaults};

#[test]
fn committed_crds_and_mrds_match_the_rust_types() {
    let stale = stale_files(&default_package_root()).unwrap();
    assert!(
        stale.is_empty(),
        "stale generated files {stale:?}: run `{}` and commit the result",
        apis::generate::REGENERATE_COMMAND
    );
}

#[test]
fn a_changed_or_extra_file_is_reported_stale() {
    let dir = tempfile::tempdir().unwrap();
    apis::generate::write(dir.path()).unwrap();
    assert!(stale_files(dir.path()).unwrap().is_empty());
    let vpc = dir
        .path()
        .join("crds/network.fakecloud.crossplane.io_vpcs.yaml");
    fs::write(
        &vpc,
        fs::read_to_string(&vpc)
            .unwrap()
            .replace("cidrBlock", "cidr"),
    )
    .unwrap();
    fs::write(dir.path().join("mrds/old.yaml"), "kind: Leftover\n").unwrap();
    fs::remove_file(
        dir.path()
            .join("mrds/database.fakecloud.crossplane.io_databaseinstances.yaml"),
    )
    .unwrap();
    let mut stale = stale_files(dir.path()).unwrap();
    stale.sort();
    assert_eq!(
        stale,
        [
            PathBuf::from("crds/network.fakecloud.crossplane.io_vpcs.yaml"),
            PathBuf::from("mrds/database.fakecloud.crossplane.io_databaseinstances.yaml"),
            PathBuf::from("mrds/old.yaml"),
        ]
    );
    apis::generate::write(dir.path()).unwrap();
    assert!(
        stale_files(dir.path()).unwrap().is_empty(),
        "regenerating repairs and removes leftovers"
    );
}

#[test]
fn generated_files_say_how_to_regenerate_them() {
    for file in apis::generate::generated_files().unwrap() {
        assert!(
            file.contents.starts_with(
                "# Generated from the Rust types in apis/src by `cargo run -p apis --bin generate`."
            ),
            "{}",
            file.path.display()
        );
    }
}

fn read_mrd(plural_group: &str) -> ManagedResourceDefinition {
    let path = default_package_root()
        .join("mrds")
        .join(format!("{plural_group}.yaml"));
    serde_yaml::from_str(&fs::read_to_string(&path).unwrap()).unwrap()
}

fn assert_mrd_documents<M: Managed>(file: &str) {
    let mrd = read_mrd(file);
    let documented: Vec<&str> = mrd
        .spec
        .connection_details
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let published: Vec<&str> = M::CONNECTION_DETAILS.iter().map(|d| d.name).collect();
    assert_eq!(documented, published, "{file}");
    assert_eq!(mrd.spec.state, MrdState::Inactive);
    assert_eq!(mrd.metadata.name, M::crd().metadata.name);
    assert_eq!(
        mrd.spec.crd,
        M::crd().spec,
        "the MRD carries the CRD spec unchanged"
    );
}

#[test]
fn mrds_document_exactly_the_connection_details_each_kind_publishes() {
    assert_mrd_documents::<Vpc>("network.fakecloud.crossplane.io_vpcs");
    assert_mrd_documents::<Subnet>("network.fakecloud.crossplane.io_subnets");
    assert_mrd_documents::<NodeGroup>("compute.fakecloud.crossplane.io_nodegroups");
    assert_mrd_documents::<DatabaseInstance>("database.fakecloud.crossplane.io_databaseinstances");
    let names: Vec<&str> = DatabaseInstance::CONNECTION_DETAILS
        .iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["endpoint", "port", "username", "password"]);
}

fn examples_dir() -> PathBuf {
    default_package_root().join("examples")
}

/// Every YAML document of every example, with the file it came from.
fn example_documents() -> Vec<(String, Value)> {
    let mut documents = Vec::new();
    let mut paths: Vec<PathBuf> = fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths {
        let text = fs::read_to_string(&path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = Value::deserialize(document).unwrap_or_else(|e| panic!("{file}: {e}"));
            documents.push((file.clone(), value));
        }
    }
    documents
}

fn check_against_crd(
    file: &str,
    crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    document: &Value,
) {
    let schema = schema_of(&crd);
    let errors = structural_errors(&schema, document);
    assert!(errors.is_empty(), "{file}: {errors:?}");
    let failed = failures(&schema, &with_defaults(&schema, document), None);
    assert!(failed.is_empty(), "{file}: CEL rules fail: {failed:?}");
}

fn parse<T: serde::de::DeserializeOwned>(file: &str, document: &Value) -> T {
    serde_json::from_value(document.clone()).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Parses `document` into `T` and checks it against `T`'s CRD.
fn check_resource<T: CustomResourceExt + serde::de::DeserializeOwned>(
    file: &str,
    document: &Value,
) {
    parse::<T>(file, document);
    check_against_crd(file, T::crd(), document);
}

#[test]
fn every_example_parses_into_the_rust_types_and_passes_the_schema_and_rules() {
    let mut kinds = Vec::new();
    for (file, document) in example_documents() {
        let api_version = document["apiVersion"]
            .as_str()
            .unwrap_or_else(|| panic!("{file}: no apiVersion"))
            .to_owned();
        let kind = document["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("{file}: no kind"))
            .to_owned();
        let group = api_version.split_once('/').map_or("", |(group, _)| group);
        // Named as metrics name kinds: `.m` for the namespaced groups.
        let label = if group.contains(".m.") {
            format!("{kind}.m")
        } else {
            kind.clone()
        };
        match (api_version.as_str(), kind.as_str()) {
            ("network.fakecloud.crossplane.io/v1alpha1", "VPC") => {
                check_resource::<Vpc>(&file, &document)
            }
            ("network.fakecloud.m.crossplane.io/v1beta1", "VPC") => {
                check_resource::<vpc::v1beta1::Vpc>(&file, &document)
            }
            ("network.fakecloud.crossplane.io/v1alpha1", "Subnet") => {
                check_resource::<Subnet>(&file, &document)
            }
            ("network.fakecloud.m.crossplane.io/v1beta1", "Subnet") => {
                check_resource::<subnet::v1beta1::Subnet>(&file, &document)
            }
            ("compute.fakecloud.crossplane.io/v1alpha1", "NodeGroup") => {
                check_resource::<NodeGroup>(&file, &document)
            }
            ("compute.fakecloud.m.crossplane.io/v1beta1", "NodeGroup") => {
                check_resource::<nodegroup::v1beta1::NodeGroup>(&file, &document)
            }
            ("database.fakecloud.crossplane.io/v1alpha1", "DatabaseInstance") => {
                check_resource::<DatabaseInstance>(&file, &document)
            }
            ("database.fakecloud.m.crossplane.io/v1beta1", "DatabaseInstance") => {
                check_resource::<database_instance::v1beta1::DatabaseInstance>(&file, &document)
            }
            ("fakecloud.crossplane.io/v1alpha1", "ProviderConfig") => {
                check_resource::<ProviderConfig>(&file, &document)
            }
            ("fakecloud.m.crossplane.io/v1alpha1", "ProviderConfig") => {
                check_resource::<provider_config::m::ProviderConfig>(&file, &document)
            }
            ("fakecloud.m.crossplane.io/v1alpha1", "ClusterProviderConfig") => {
                check_resource::<provider_config::m::ClusterProviderConfig>(&file, &document)
            }
            ("query.fakecloud.m.crossplane.io/v1alpha1", "VPCQuery") => {
                check_resource::<VpcQuery>(&file, &document)
            }
            ("query.fakecloud.m.crossplane.io/v1alpha1", "SubnetQuery") => {
                check_resource::<SubnetQuery>(&file, &document)
            }
            ("query.fakecloud.m.crossplane.io/v1alpha1", "NodeGroupQuery") => {
                check_resource::<NodeGroupQuery>(&file, &document)
            }
            ("query.fakecloud.m.crossplane.io/v1alpha1", "DatabaseInstanceQuery") => {
                check_resource::<DatabaseInstanceQuery>(&file, &document)
            }
            ("v1", "Secret") => {
                parse::<Secret>(&file, &document);
            }
            ("apiextensions.crossplane.io/v1alpha1", "ManagedResourceActivationPolicy") => {
                parse::<ActivationPolicy>(&file, &document);
            }
            // Crossplane's own kinds, which this crate has no types for:
            // the runtime config's provider container and the Provider
            // that names it (the e2e package test dry-runs both).
            ("pkg.crossplane.io/v1beta1", "DeploymentRuntimeConfig") => {
                let containers = document
                    .pointer("/spec/deploymentTemplate/spec/template/spec/containers")
                    .and_then(Value::as_array)
                    .unwrap_or_else(|| {
                        panic!("{file}: a DeploymentRuntimeConfig without containers")
                    });
                assert!(
                    containers.iter().any(|c| c["name"] == "package-runtime"),
                    "{file}: Crossplane merges only the container named package-runtime into the provider's"
                );
            }
            ("pkg.crossplane.io/v1", "Provider") => {
                assert!(
                    document
                        .pointer("/spec/package")
                        .and_then(Value::as_str)
                        .is_some_and(|p| !p.is_empty()),
                    "{file}: a Provider names its package"
                );
            }
            (other_version, other) => panic!("{file}: unexpected kind {other_version} {other}"),
        }
        kinds.push(label);
    }
    for expected in [
        "VPC",
        "Subnet",
        "NodeGroup",
        "DatabaseInstance",
        "ProviderConfig",
        "VPC.m",
        "Subnet.m",
        "NodeGroup.m",
        "DatabaseInstance.m",
        "ProviderConfig.m",
        "ClusterProviderConfig.m",
        "VPCQuery.m",
        "Secret",
        "ManagedResourceActivationPolicy",
    ] {
        assert!(
            kinds.iter().any(|k| k == expected),
            "no example of {expected}"
        );
    }
}

/// The part of Crossplane's `ManagedResourceActivationPolicy` the examples use.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActivationPolicy {
    #[serde(rename = "apiVersion")]
    _api_version: String,
    #[serde(rename = "kind")]
    _kind: String,
    #[serde(rename = "metadata")]
    _metadata: Value,
    spec: ActivationPolicySpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActivationPolicySpec {
    activate: Vec<String>,
}

/// Crossplane's MRAP matching: an exact name, or `*` followed by a suffix.
fn activates(pattern: &str, mrd_name: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some(suffix) => mrd_name.ends_with(suffix),
        None => pattern == mrd_name,
    }
}

fn activated_by(example: &str) -> Vec<String> {
    let text = fs::read_to_string(examples_dir().join(example)).unwrap();
    let policy: ActivationPolicy = serde_yaml::from_str(&text).unwrap();
    let mut names: Vec<String> = apis::generate::mrds()
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .filter(|name| policy.spec.activate.iter().any(|p| activates(p, name)))
        .collect();
    names.sort();
    names
}

#[test]
fn activation_policies_activate_all_kinds_only_the_network_kinds_or_only_the_namespaced_ones() {
    assert_eq!(activated_by("mrap-activate-all.yaml").len(), 8);
    assert_eq!(
        activated_by("mrap-activate-network.yaml"),
        [
            "subnets.network.fakecloud.crossplane.io",
            "subnets.network.fakecloud.m.crossplane.io",
            "vpcs.network.fakecloud.crossplane.io",
            "vpcs.network.fakecloud.m.crossplane.io",
        ]
    );
    assert_eq!(
        activated_by("mrap-activate-namespaced.yaml"),
        [
            "databaseinstances.database.fakecloud.m.crossplane.io",
            "nodegroups.compute.fakecloud.m.crossplane.io",
            "subnets.network.fakecloud.m.crossplane.io",
            "vpcs.network.fakecloud.m.crossplane.io",
        ]
    );
}

#[test]
fn the_provider_config_example_points_at_its_credentials_secret() {
    let documents = example_documents();
    let in_file = |kind: &str| {
        documents
            .iter()
            .find(|(file, d)| file == "providerconfig.yaml" && d["kind"] == kind)
            .map(|(_, d)| d.clone())
            .unwrap()
    };
    let config: ProviderConfig = serde_json::from_value(in_file("ProviderConfig")).unwrap();
    let secret: Secret = serde_json::from_value(in_file("Secret")).unwrap();
    let reference = config.spec.credentials.secret_ref.unwrap();
    assert_eq!(Some(reference.name), secret.metadata.name);
    assert_eq!(Some(reference.namespace), secret.metadata.namespace);
    assert!(secret.string_data.unwrap().contains_key(&reference.key));
}

#[test]
fn package_metadata_declares_late_activation_and_a_crossplane_version() {
    let text =
        fs::read_to_string(Path::new(&default_package_root()).join("crossplane.yaml")).unwrap();
    let meta: Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(meta["apiVersion"], "meta.pkg.crossplane.io/v1");
    assert_eq!(meta["kind"], "Provider");
    let capabilities: Vec<&str> = meta["spec"]["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(capabilities, ["safe-start", "late-mr-activation"]);
    assert!(
        meta["spec"]["crossplane"]["version"]
            .as_str()
            .unwrap()
            .starts_with(">=v2")
    );
}

/// The CRD spec of a generated file under `package/<dir>/`, as YAML reads it
/// (an MRD's spec holds the CRD spec's fields).
fn generated_spec(dir: &str, file: &str) -> Value {
    let path = default_package_root().join(dir).join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let document: Value = serde_yaml::from_str(&text).unwrap();
    document["spec"].clone()
}

#[test]
fn the_namespaced_kinds_serve_two_versions_converted_by_the_providers_webhook() {
    for (group, plural) in [
        ("network.fakecloud.m.crossplane.io", "vpcs"),
        ("network.fakecloud.m.crossplane.io", "subnets"),
        ("compute.fakecloud.m.crossplane.io", "nodegroups"),
        ("database.fakecloud.m.crossplane.io", "databaseinstances"),
    ] {
        for dir in ["crds", "mrds"] {
            let file = format!("{group}_{plural}.yaml");
            let spec = generated_spec(dir, &file);
            let at = format!("{dir}/{file}");
            let versions = spec["versions"].as_array().unwrap();
            let names: Vec<&str> = versions
                .iter()
                .map(|v| v["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["v1alpha1", "v1beta1"], "{at}");
            let (alpha, beta) = (&versions[0], &versions[1]);
            assert_eq!(
                (&alpha["served"], &alpha["storage"]),
                (&Value::Bool(true), &Value::Bool(false)),
                "{at}"
            );
            assert_eq!(
                (&beta["served"], &beta["storage"]),
                (&Value::Bool(true), &Value::Bool(true)),
                "{at}"
            );
            assert_eq!(alpha["deprecated"], true, "{at}");
            let warning = alpha["deprecationWarning"].as_str().unwrap_or_default();
            assert!(
                warning.contains(&format!("{group}/v1beta1")),
                "{at}: {warning}"
            );
            assert!(beta.get("deprecated").is_none(), "{at}");
            let conversion = &spec["conversion"];
            assert_eq!(conversion["strategy"], "Webhook", "{at}");
            assert_eq!(
                conversion["webhook"]["conversionReviewVersions"],
                serde_json::json!(["v1"]),
                "{at}"
            );
            let service = &conversion["webhook"]["clientConfig"]["service"];
            // Crossplane fills in name, namespace, port and caBundle; the
            // path is the package's.
            assert_eq!(service["path"], "/convert", "{at}");
            assert_eq!(service["port"], 9443, "{at}");
            assert!(
                conversion["webhook"]["clientConfig"]
                    .get("caBundle")
                    .is_none(),
                "{at}"
            );
        }
    }
}

#[test]
fn every_other_kind_has_one_version_and_no_conversion() {
    let mut seen = 0;
    for dir in ["crds", "mrds"] {
        for entry in fs::read_dir(default_package_root().join(dir)).unwrap() {
            let file = entry.unwrap().file_name().to_string_lossy().into_owned();
            let namespaced_managed = [
                "network.fakecloud.m.crossplane.io_vpcs.yaml",
                "network.fakecloud.m.crossplane.io_subnets.yaml",
                "compute.fakecloud.m.crossplane.io_nodegroups.yaml",
                "database.fakecloud.m.crossplane.io_databaseinstances.yaml",
            ];
            if namespaced_managed.contains(&file.as_str()) {
                continue;
            }
            let spec = generated_spec(dir, &file);
            assert_eq!(
                spec["versions"].as_array().unwrap().len(),
                1,
                "{dir}/{file}"
            );
            assert!(spec.get("conversion").is_none(), "{dir}/{file}");
            seen += 1;
        }
    }
    assert!(
        seen >= 14,
        "the legacy, ProviderConfig and query kinds: {seen}"
    );
}

//! The Crossplane package against a real API server: its CRDs install and
//! become Established, its MRDs describe CRDs the server accepts, every
//! example is accepted, and owned Secrets are garbage-collected.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use e2e::TestCluster;
use e2e::crds::{
    FIELD_MANAGER, load_manifests, package_crds_dir, package_dir, package_examples_dir,
    strip_cel_rules, yaml_files,
};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::{ApiCapabilities, ApiResource, Scope, pinned_kind};
use kube::{Client, ResourceExt};
use serde_json::Value;

/// A cluster with the package's CRDs and the Crossplane fixtures, where
/// examples and deploy/ manifests are dry-run.
async fn cluster_with_crossplane_fixtures() -> Result<TestCluster> {
    Ok(TestCluster::options()
        .with_crd_files(crossplane_fixture_crds()?)
        .start()
        .await?)
}

/// CRDs of Crossplane's own kinds that the package's examples use.
/// Crossplane is not installed on the test cluster; these fixtures carry
/// the fields of Crossplane's API so the examples are still checked.
fn crossplane_fixture_crds() -> Result<Vec<PathBuf>> {
    Ok(yaml_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crossplane"),
    )?)
}

fn crd_names_in(files: &[PathBuf]) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for file in files {
        for doc in load_manifests(file)? {
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .with_context(|| format!("{file:?}: CRD without a name"))?;
            names.insert(name.to_owned());
        }
    }
    Ok(names)
}

fn count_cel_rules(value: &Value) -> usize {
    strip_cel_rules(&mut value.clone())
}

#[tokio::test]
async fn every_package_crd_installs_and_becomes_established() -> Result<()> {
    e2e::init_tracing();
    let files = yaml_files(&package_crds_dir())?;
    ensure!(!files.is_empty(), "package/crds holds no CRD");
    let expected = crd_names_in(&files)?;

    let cluster = TestCluster::start().await?;
    let installed: BTreeSet<String> = cluster.installed_crds().iter().cloned().collect();
    assert_eq!(installed, expected);

    let api: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let mut rules_in_files = 0;
    for file in &files {
        for doc in load_manifests(file)? {
            rules_in_files += count_cel_rules(&doc);
            let name = doc["metadata"]["name"].as_str().unwrap_or_default();
            let served = api.get(name).await?;
            let conditions = served
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            for wanted in ["Established", "NamesAccepted"] {
                assert!(
                    conditions
                        .iter()
                        .any(|c| c.type_ == wanted && c.status == "True"),
                    "{name}: {wanted} is not True: {conditions:?}"
                );
            }
            // CEL rules are kept where the server enforces them and stripped
            // (not rejected) where it predates them.
            let served_rules = count_cel_rules(&serde_json::to_value(&served.spec)?);
            if cluster.supports_cel_rules() {
                assert_eq!(served_rules, count_cel_rules(&doc), "{name}");
            } else {
                assert_eq!(served_rules, 0, "{name} still carries CEL rules");
            }
        }
    }
    ensure!(
        rules_in_files > 0,
        "the package's CRDs carry no CEL rule; the stripping path went untested"
    );
    Ok(())
}

/// Crossplane turns each MRD into a CRD: MRD spec minus `connectionDetails`
/// and `state`. The server must accept every one of those CRDs.
#[tokio::test]
async fn every_mrd_describes_a_crd_the_server_accepts() -> Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    let files = yaml_files(&package_dir().join("mrds"))?;
    ensure!(!files.is_empty(), "package/mrds holds no MRD");
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let mut checked = 0;
    for file in &files {
        for mrd in load_manifests(file)? {
            ensure!(
                mrd["kind"] == "ManagedResourceDefinition",
                "{file:?}: not an MRD"
            );
            let name = mrd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut spec = mrd["spec"].clone();
            let fields = spec.as_object_mut().context("MRD spec is an object")?;
            ensure!(
                fields.remove("connectionDetails").is_some(),
                "{name}: MRD without connectionDetails"
            );
            fields.remove("state");
            let mut crd = serde_json::json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": spec,
            });
            if !cluster.supports_cel_rules() {
                strip_cel_rules(&mut crd);
            }
            api.patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).dry_run(),
                &Patch::Apply(&crd),
            )
            .await
            .with_context(|| format!("{file:?}: the CRD of MRD {name} was rejected"))?;
            checked += 1;
        }
    }
    assert_eq!(checked, 8, "one MRD per managed-resource kind and scope");
    Ok(())
}

#[tokio::test]
async fn every_example_is_accepted_by_a_server_side_dry_run() -> Result<()> {
    e2e::init_tracing();
    let cluster = cluster_with_crossplane_fixtures().await?;
    let client = cluster.client();
    let files = yaml_files(&package_examples_dir())?;
    ensure!(!files.is_empty(), "package/examples holds no example");

    let mut accepted: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for file in &files {
        for doc in load_manifests(file)? {
            let label = format!(
                "{}: {} {}",
                file.file_name().unwrap_or_default().to_string_lossy(),
                doc["kind"].as_str().unwrap_or_default(),
                doc["metadata"]["name"].as_str().unwrap_or_default()
            );
            match dry_run_apply(&client, &doc).await {
                Ok(_) => {
                    *accepted
                        .entry(doc["kind"].as_str().unwrap().to_owned())
                        .or_default() += 1
                }
                Err(e) => failures.push(format!("{label}: {e:#}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "rejected examples:\n{}",
        failures.join("\n")
    );
    let kinds: BTreeSet<&str> = accepted.keys().map(String::as_str).collect();
    for kind in [
        "VPC",
        "Subnet",
        "NodeGroup",
        "DatabaseInstance",
        "ProviderConfig",
        "Secret",
        "ManagedResourceActivationPolicy",
    ] {
        assert!(kinds.contains(kind), "no example of kind {kind}: {kinds:?}");
    }

    // The dry run really validates: a VPC without its required region fails.
    let mut broken =
        load_manifests(&package_examples_dir().join("vpc-full-control.yaml"))?.remove(0);
    broken["spec"]["forProvider"]
        .as_object_mut()
        .context("forProvider is an object")?
        .remove("region");
    let err = dry_run_apply(&client, &broken)
        .await
        .expect_err("a VPC without forProvider.region must be rejected");
    assert!(format!("{err:#}").contains("region"), "{err:#}");
    Ok(())
}

/// Server-side apply of `doc` with `dryRun=All`, in its own namespace when
/// the kind is namespaced (created for real when missing: a dry run into a
/// namespace that does not exist is refused).
async fn dry_run_apply(client: &Client, doc: &Value) -> Result<DynamicObject> {
    let object: DynamicObject = serde_json::from_value(doc.clone())?;
    let types = object
        .types
        .as_ref()
        .context("document without apiVersion/kind")?;
    let gvk = GroupVersionKind::try_from(types)?;
    let (resource, capabilities): (ApiResource, ApiCapabilities) =
        pinned_kind(client, &gvk).await.with_context(|| {
            format!(
                "kind {} {} is not served by this cluster",
                types.api_version, types.kind
            )
        })?;
    let name = object.name_any();
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => {
            let namespace = object.namespace().unwrap_or_else(|| "default".to_owned());
            ensure_namespace(client, &namespace).await?;
            Api::namespaced_with(client.clone(), &namespace, &resource)
        }
    };
    let existed = api.get_opt(&name).await?.is_some();
    let answered = api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).dry_run(),
            &Patch::Apply(doc),
        )
        .await?;
    // A dry run must leave nothing behind.
    if !existed && api.get_opt(&name).await?.is_some() {
        bail!("{} {name} exists after a dry run", types.kind);
    }
    Ok(answered)
}

/// Whether `actual` holds everything `wanted` sets (the server may add
/// defaults): objects key by key, arrays element by element.
fn holds(actual: &Value, wanted: &Value) -> bool {
    match (actual, wanted) {
        (Value::Object(actual), Value::Object(wanted)) => wanted
            .iter()
            .all(|(k, w)| actual.get(k).is_some_and(|a| holds(a, w))),
        (Value::Array(actual), Value::Array(wanted)) => {
            actual.len() == wanted.len() && actual.iter().zip(wanted).all(|(a, w)| holds(a, w))
        }
        _ => actual == wanted,
    }
}

/// The documents of every YAML file in `deploy/`, with their file's name.
fn deploy_manifests() -> Result<Vec<(String, Value)>> {
    let dir = package_dir()
        .parent()
        .context("package/ sits in the repository")?
        .join("deploy");
    let mut out = Vec::new();
    for file in yaml_files(&dir)? {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for doc in load_manifests(&file)? {
            out.push((name.clone(), doc));
        }
    }
    Ok(out)
}

/// `deploy/` is what scripts/kind-install applies besides the package's
/// examples: fakecloud (Secret, volume, Deployment, Service) and the
/// Crossplane Provider object. The API server accepts each (Crossplane's
/// Provider kind from a fixture), keeps every field it sets (a misspelt
/// field would be pruned), and fakecloud is where the example
/// ProviderConfig points, accepting the example's API key.
#[tokio::test]
async fn the_kind_install_manifests_are_accepted_and_agree_with_the_examples() -> Result<()> {
    e2e::init_tracing();
    let cluster = cluster_with_crossplane_fixtures().await?;
    let client = cluster.client();
    let manifests = deploy_manifests()?;
    let mut kinds = BTreeSet::new();
    for (file, doc) in &manifests {
        let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
        let answered = dry_run_apply(&client, doc)
            .await
            .with_context(|| format!("{file}: {kind} rejected"))?;
        let answered = serde_json::to_value(answered)?;
        // A Secret's stringData is write-only: the server turns it into data.
        if let Some(spec) = doc.get("spec") {
            ensure!(
                holds(&answered["spec"], spec),
                "{file}: {kind}'s spec lost fields:\nsent {spec}\nkept {}",
                answered["spec"]
            );
        }
        kinds.insert(kind);
    }
    for kind in [
        "Secret",
        "PersistentVolumeClaim",
        "Deployment",
        "Service",
        "Provider",
    ] {
        ensure!(kinds.contains(kind), "deploy/ has no {kind}: {kinds:?}");
    }

    // The example ProviderConfig reaches fakecloud's Service with a key
    // fakecloud accepts.
    let examples = load_manifests(&package_examples_dir().join("providerconfig.yaml"))?;
    let config = examples
        .iter()
        .find(|d| d["kind"] == "ProviderConfig")
        .context("the example has a ProviderConfig")?;
    let endpoint = url::Url::parse(config["spec"]["endpoint"].as_str().unwrap_or_default())?;
    let host = endpoint.host_str().unwrap_or_default();
    let (service, namespace) = host
        .strip_suffix(".svc")
        .and_then(|h| h.split_once('.'))
        .with_context(|| format!("endpoint host {host} is <service>.<namespace>.svc"))?;
    let found = manifests.iter().any(|(_, d)| {
        d["kind"] == "Service"
            && d["metadata"]["name"] == service
            && d["metadata"]["namespace"] == namespace
            && d["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["port"].as_u64().map(|p| p as u16) == endpoint.port())
    });
    ensure!(found, "no Service in deploy/ answers {endpoint}");
    let example_key = examples
        .iter()
        .find(|d| d["kind"] == "Secret")
        .and_then(|d| d["stringData"]["apiKey"].as_str())
        .context("the example Secret holds apiKey")?;
    let keys = manifests
        .iter()
        .find_map(|(_, d)| d["stringData"]["FAKECLOUD_API_KEYS"].as_str())
        .context("deploy/ gives fakecloud its API keys")?;
    ensure!(
        keys.split(',')
            .any(|k| k.split('=').next() == Some(example_key)),
        "fakecloud's keys {keys:?} do not include the example's API key"
    );
    Ok(())
}

async fn ensure_namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(name.to_owned());
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[tokio::test]
async fn a_secret_owned_by_a_custom_resource_is_collected_after_the_resource_is_deleted()
-> Result<()> {
    e2e::init_tracing();
    let mut cluster = TestCluster::start().await?;
    ensure!(
        cluster.has_garbage_collector(),
        "this test needs kube-controller-manager (garbage collector)"
    );
    let client = cluster.client();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "database.fakecloud.crossplane.io",
            "v1alpha1",
            "DatabaseInstance",
        ),
        "databaseinstances",
    );
    let databases: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let namespace = cluster.create_namespace("gc").await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);

    let example =
        load_manifests(&package_examples_dir().join("database-instance-connection-secret.yaml"))?
            .remove(0);
    let mut owned = Vec::new();
    for _ in 0..2 {
        let mut db: DynamicObject = serde_json::from_value(example.clone())?;
        db.metadata.name = Some(e2e::unique_name("db"));
        let db = databases.create(&PostParams::default(), &db).await?;
        let mut secret = Secret::default();
        secret.metadata.name = Some(format!("{}-connection", db.name_any()));
        secret.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "database.fakecloud.crossplane.io/v1alpha1".to_owned(),
            kind: "DatabaseInstance".to_owned(),
            name: db.name_any(),
            uid: db.uid().context("created object has a uid")?,
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        secret.string_data = Some([("endpoint".to_owned(), "db.example".to_owned())].into());
        secrets.create(&PostParams::default(), &secret).await?;
        owned.push((db.name_any(), secret.metadata.name.unwrap()));
    }
    let (deleted_db, collected_secret) = &owned[0];
    let (kept_db, kept_secret) = &owned[1];

    databases
        .delete(deleted_db, &DeleteParams::default())
        .await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while secrets.get_opt(collected_secret).await?.is_some() {
        if Instant::now() > deadline {
            bail!(
                "Secret {collected_secret} still exists 60 s after its owner was deleted; \
                 dead control-plane components: {:?}",
                cluster.dead_components()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Only the deleted owner's Secret goes: the other one stays.
    assert!(databases.get_opt(kept_db).await?.is_some());
    assert!(secrets.get_opt(kept_secret).await?.is_some());
    Ok(())
}

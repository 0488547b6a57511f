//! What namespaces mean to namespaced managed resources: a namespace's
//! resources use only its ProviderConfig (or a ClusterProviderConfig) and
//! its Secrets, and deleting the namespace deletes their cloud resources,
//! and no one else's. Every test counts what fakecloud holds.

use std::time::Duration;

use apis::kinds::database_instance::m::DatabaseInstance;
use apis::kinds::provider_config::m::ProviderConfig;
use apis::kinds::subnet::m::Subnet;
use apis::kinds::vpc::m::Vpc;
use e2e::scope::APP;
use e2e::world::{World, condition, external_name, is_ready, is_synced};
use fakecloud::model::Kind;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

/// `Synced` is `False`.
fn synced_false<K: serde::Serialize>(object: &K) -> bool {
    condition(object, "Synced").is_some_and(|c| c.0 == "False")
}

/// Ready and Synced.
fn ready<K: serde::Serialize>(object: &K) -> bool {
    is_ready(object) && is_synced(object)
}

/// How many resources of `kind` fakecloud holds.
async fn in_cloud(world: &World, kind: Kind) -> anyhow::Result<usize> {
    Ok(world.admin.resources(Some(kind), None).await?.len())
}

fn vpc(name: &str, cidr: &str) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name },
        "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": cidr } },
    })
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_cloud_resources_and_no_others() -> anyhow::Result<()> {
    e2e::init_tracing();
    let mut world = World::start().await?;
    let doomed = "team-gone";
    world.create_namespace(doomed).await?;
    let gone = world.objects.in_namespace(doomed);
    let stays = world.objects.in_namespace(APP);

    gone.apply::<Vpc>(vpc("net", "10.20.0.0/16")).await?;
    gone.apply::<Subnet>(json!({
        "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "Subnet",
        "metadata": { "name": "web" },
        "spec": { "forProvider": { "region": "us-east-1", "vpcIdRef": { "name": "net" },
                                   "cidrBlock": "10.20.1.0/24", "availabilityZone": "us-east-1a" } },
    }))
    .await?;
    gone.apply::<DatabaseInstance>(json!({
        "apiVersion": "database.fakecloud.m.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
        "metadata": { "name": "orders" },
        "spec": {
            "forProvider": { "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
                             "allocatedStorage": 20, "masterUsername": "app", "deletionProtection": false },
            "writeConnectionSecretToRef": { "name": "orders-conn" },
        },
    }))
    .await?;
    stays.apply::<Vpc>(vpc("net", "10.30.0.0/16")).await?;

    gone.wait_for::<Vpc>("net", "Ready", WAIT, ready).await?;
    gone.wait_for::<Subnet>("web", "Ready", WAIT, ready).await?;
    gone.wait_for::<DatabaseInstance>("orders", "Ready", WAIT, ready)
        .await?;
    let kept = stays.wait_for::<Vpc>("net", "Ready", WAIT, ready).await?;
    let kept_id = external_name(&kept).expect("the kept VPC's id");
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, 2);
    assert_eq!(in_cloud(&world, Kind::Subnet).await?, 1);
    assert_eq!(in_cloud(&world, Kind::DatabaseInstance).await?, 1);

    // The namespace controller empties the namespace; the provider deletes
    // each cloud resource before it lets its managed resource go. The
    // provider is down when the deletion starts, so it comes back knowing
    // nothing of the usages the namespace controller has already removed,
    // and to a namespace that refuses new objects.
    world.stop_provider().await;
    let namespaces = Api::<Namespace>::all(world.kube());
    namespaces.delete(doomed, &DeleteParams::default()).await?;
    let usages = Api::<apis::kinds::provider_config::m::ProviderConfigUsage>::namespaced(
        world.kube(),
        doomed,
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    while !usages.list(&Default::default()).await?.items.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "usages not removed");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, 2, "nothing deleted yet");
    world.start_provider()?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while namespaces.get_opt(doomed).await?.is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "namespace {doomed} was not emptied: {:?}",
            gone.get::<Vpc>("net").await?
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(in_cloud(&world, Kind::Subnet).await?, 0);
    assert_eq!(in_cloud(&world, Kind::DatabaseInstance).await?, 0);
    let vpcs = world.admin.resources(Some(Kind::Vpc), None).await?;
    assert_eq!(vpcs.len(), 1, "{vpcs:?}");
    assert!(world.cloud.get_vpc("us-east-1", &kept_id).await.is_ok());
    let kept = stays.get::<Vpc>("net").await?.expect("app's VPC stays");
    assert!(is_ready(&kept) && kept.metadata.deletion_timestamp.is_none());
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_namespace_cannot_use_another_namespaces_config_or_secrets() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let other = "team-other";
    world.create_namespace(other).await?;
    let theirs = world.objects.in_namespace(other);
    let mine = world.objects.in_namespace(APP);
    // Another team's ProviderConfig, API key and database password.
    for (name, key, value) in [
        ("key", "apiKey", world.api_key()),
        ("pw", "password", "theirs-123456"),
    ] {
        theirs
            .apply_namespaced::<Secret>(
                other,
                json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": name },
                        "stringData": { key: value } }),
            )
            .await?;
    }
    theirs
        .apply::<ProviderConfig>(json!({
            "apiVersion": "fakecloud.m.crossplane.io/v1alpha1", "kind": "ProviderConfig",
            "metadata": { "name": "team" },
            "spec": { "endpoint": world.cloud_url(),
                      "credentials": { "source": "Secret", "secretRef": { "name": "key", "key": "apiKey" } } },
        }))
        .await?;

    // Naming their ProviderConfig finds none in this namespace.
    let mut borrowed = vpc("borrowed", "10.40.0.0/16");
    borrowed["spec"]["providerConfigRef"] = json!({ "kind": "ProviderConfig", "name": "team" });
    mine.apply::<Vpc>(borrowed).await?;
    let refused = mine
        .wait_for::<Vpc>("borrowed", "Synced=False", WAIT, synced_false)
        .await?;
    let message = condition(&refused, "Synced").unwrap().2;
    assert!(
        message.contains(&format!(
            r#"ProviderConfig "team" in namespace "{APP}" does not exist"#
        )),
        "{message}"
    );

    // A password Secret is looked for in the resource's own namespace; a
    // namespace field is not part of the schema (the API server drops it).
    mine.apply::<DatabaseInstance>(json!({
        "apiVersion": "database.fakecloud.m.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
        "metadata": { "name": "orders" },
        "spec": { "forProvider": {
            "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
            "allocatedStorage": 20, "masterUsername": "app",
            "masterPasswordSecretRef": { "name": "pw", "key": "password" },
        } },
    }))
    .await?;
    let refused = mine
        .wait_for::<DatabaseInstance>("orders", "Synced=False", WAIT, synced_false)
        .await?;
    let message = condition(&refused, "Synced").unwrap().2;
    assert!(
        message.contains(&format!("Secret {APP}/pw does not exist")),
        "{message}"
    );
    // Nothing was made, and no Secret was written outside either namespace.
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, 0);
    assert_eq!(in_cloud(&world, Kind::DatabaseInstance).await?, 0);
    let written: Vec<_> = Api::<Secret>::namespaced(world.kube(), APP)
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|s| {
            s.type_.as_deref() == Some(crossplane_types::well_known::CONNECTION_SECRET_TYPE)
        })
        .collect();
    assert!(written.is_empty(), "{written:?}");

    // With their Secret copied into this namespace, the same spec works.
    mine.apply_namespaced::<Secret>(
        APP,
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "pw" },
                "stringData": { "password": "mine-1234567" } }),
    )
    .await?;
    mine.wait_for::<DatabaseInstance>("orders", "Ready", WAIT, |d| is_ready(d) && is_synced(d))
        .await?;
    assert_eq!(in_cloud(&world, Kind::DatabaseInstance).await?, 1);
    world.shutdown().await;
    Ok(())
}

/// Names are unique per namespace, the cloud's are not: the same
/// `metadata.name` in two namespaces is two VPCs (the cloud assigns their
/// ids), while a second DatabaseInstance named like the first (its cloud
/// name is its `metadata.name`) is refused instead of taking the first one
/// over, and its deletion leaves the first one's database alone.
#[tokio::test]
async fn one_name_in_two_namespaces_never_shares_a_cloud_resource() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let other = "team-other";
    world.create_namespace(other).await?;
    let first = world.objects.in_namespace(APP);
    let second = world.objects.in_namespace(other);
    let database = json!({
        "apiVersion": "database.fakecloud.m.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
        "metadata": { "name": "orders" },
        "spec": { "forProvider": {
            "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
            "allocatedStorage": 20, "masterUsername": "app", "deletionProtection": false,
        }, "writeConnectionSecretToRef": { "name": "orders-conn" } },
    });
    for objects in [&first, &second] {
        objects.apply::<Vpc>(vpc("net", "10.50.0.0/16")).await?;
    }
    first.apply::<DatabaseInstance>(database.clone()).await?;
    first
        .wait_for::<DatabaseInstance>("orders", "Ready", WAIT, ready)
        .await?;
    second.apply::<DatabaseInstance>(database).await?;
    let refused = second
        .wait_for::<DatabaseInstance>("orders", "Synced=False", WAIT, synced_false)
        .await?;
    let message = condition(&refused, "Synced").unwrap().2;
    assert!(
        message.contains(r#"already has a DatabaseInstance named "orders""#),
        "{message}"
    );
    for objects in [&first, &second] {
        objects.wait_for::<Vpc>("net", "Ready", WAIT, ready).await?;
    }
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, 2);
    assert_eq!(in_cloud(&world, Kind::DatabaseInstance).await?, 1);
    // No connection Secret for the refused one; the first one's stays.
    let secrets = |namespace| Api::<Secret>::namespaced(world.kube(), namespace);
    assert!(secrets(other).get_opt("orders-conn").await?.is_none());
    assert!(secrets(APP).get_opt("orders-conn").await?.is_some());

    second.delete::<DatabaseInstance>("orders").await?;
    second.wait_gone::<DatabaseInstance>("orders", WAIT).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(in_cloud(&world, Kind::DatabaseInstance).await?, 1);
    let kept = first
        .get::<DatabaseInstance>("orders")
        .await?
        .expect("the first stays");
    assert!(ready(&kept));
    world.shutdown().await;
    Ok(())
}

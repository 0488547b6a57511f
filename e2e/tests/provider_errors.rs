//! Bad input: the cause lands in `Synced=False`, nothing is lost, and
//! retries back off instead of storming.

use std::time::Duration;

use apis::kinds::{DatabaseInstance, Subnet, Vpc};
use e2e::scope::{Legacy, Namespaced, Scope};
use e2e::world::{World, condition, external_name, is_ready};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn synced_false<K: serde::Serialize>(object: &K) -> bool {
    condition(object, "Synced").is_some_and(|(status, ..)| status == "False")
}

fn synced_message<K: serde::Serialize>(object: &K) -> String {
    condition(object, "Synced").map(|c| c.2).unwrap_or_default()
}

fn vpc_manifest(name: &str, cidr: &str) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name },
        "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": cidr } },
    })
}

/// A Subnet in the VPC MR `vpc`, found through `vpcIdRef`.
fn subnet_manifest(name: &str, vpc: &str, cidr: &str) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
        "metadata": { "name": name },
        "spec": { "forProvider": {
            "region": "us-east-1", "vpcIdRef": { "name": vpc },
            "cidrBlock": cidr, "availabilityZone": "us-east-1a",
        } },
    })
}

#[tokio::test]
async fn a_subnet_outside_its_vpc_is_reported_and_retried_with_backoff() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let vpc = e2e::unique_name("net");
    world
        .apply::<Vpc>(vpc_manifest(&vpc, "10.5.0.0/16"))
        .await?;
    world.wait_for::<Vpc>(&vpc, "Ready", WAIT, is_ready).await?;
    let mark = world.audit_mark().await?;
    let subnet = e2e::unique_name("outside");
    world
        .apply::<Subnet>(subnet_manifest(&subnet, &vpc, "10.99.0.0/24"))
        .await?;
    let failed = world
        .wait_for::<Subnet>(&subnet, "Synced=False", WAIT, synced_false)
        .await?;
    let message = synced_message(&failed);
    assert!(message.contains("InvalidSubnet.Range"), "{message}");
    assert!(external_name(&failed).is_none());

    // Over 10 s, backoff (1 s, 2 s, 4 s, 8 s...) allows a handful of tries,
    // where a 250 ms requeue would make about forty.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let creates = world
        .mutating_calls("/v1/regions/us-east-1/subnets", mark)
        .await?;
    assert!(
        (2..=6).contains(&creates.len()),
        "expected a few backed-off create attempts, got {}: {creates:?}",
        creates.len()
    );
    assert!(creates.iter().all(|c| c.status == 400), "{creates:?}");
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_missing_credentials_secret_is_reported_without_calling_the_cloud() -> anyhow::Result<()>
{
    e2e::init_tracing();
    let world = World::start().await?;
    world
        .apply::<apis::kinds::provider_config::ProviderConfig>(json!({
            "apiVersion": "fakecloud.crossplane.io/v1alpha1", "kind": "ProviderConfig",
            "metadata": { "name": "broken" },
            "spec": { "endpoint": world.cloud_url(), "credentials": { "source": "Secret",
                "secretRef": { "namespace": e2e::world::NAMESPACE, "name": "no-such-secret", "key": "apiKey" } } },
        }))
        .await?;
    let mark = world.audit_mark().await?;
    let name = e2e::unique_name("nocreds");
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name },
            "spec": { "providerConfigRef": { "name": "broken" },
                      "forProvider": { "region": "us-east-1", "cidrBlock": "10.6.0.0/16" } },
        }))
        .await?;
    let failed = world
        .wait_for::<Vpc>(&name, "Synced=False", WAIT, synced_false)
        .await?;
    let message = synced_message(&failed);
    assert!(message.contains("no-such-secret"), "{message}");
    assert!(message.contains("broken"), "{message}");
    assert!(
        world.calls("/v1/", mark).await?.is_empty(),
        "called the cloud without credentials"
    );
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_unsupported_policy_set_is_reported_once_and_nothing_is_called() -> anyhow::Result<()> {
    unsupported_policy_set::<Legacy>().await
}

#[tokio::test]
async fn a_namespaced_unsupported_policy_set_is_reported_and_nothing_is_called()
-> anyhow::Result<()> {
    unsupported_policy_set::<Namespaced>().await
}

async fn unsupported_policy_set<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);
    let mark = world.audit_mark().await?;
    let name = e2e::unique_name("createonly");
    objects
        .apply::<S::Vpc>(S::manifest(
            "network",
            "VPC",
            json!({ "name": name }),
            json!({ "managementPolicies": ["Create", "Delete"],
                    "forProvider": { "region": "us-east-1", "cidrBlock": "10.7.0.0/16" } }),
        ))
        .await?;
    let failed = objects
        .wait_for::<S::Vpc>(&name, "Synced=False", WAIT, synced_false)
        .await?;
    let message = synced_message(&failed);
    assert!(
        message.contains("unsupported managementPolicies"),
        "{message}"
    );
    assert!(
        message.contains("[Observe, Create, Update, Delete]"),
        "{message}"
    );
    // The watch echoes our own status write once; let that settle first.
    // Only the VPCs' reconciles count: the ProviderConfig controllers
    // recount their users on their own schedule.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let kind = runtime::kind_label::<S::Vpc>();
    let vpc_reconciles = || {
        world
            .metrics
            .total_with("provider_reconciles_total", &[("kind", &kind)])
    };
    let reconciles_before = vpc_reconciles();
    assert!(reconciles_before >= 1.0, "the VPC was reconciled as {kind}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        vpc_reconciles(),
        reconciles_before,
        "a user error that no retry can fix is not retried"
    );
    assert!(world.calls("/v1/", mark).await?.is_empty());
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_subnet_in_use_is_deleted_once_its_database_is_gone() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let (vpc, subnet, db) = (
        e2e::unique_name("net"),
        e2e::unique_name("data"),
        e2e::unique_name("orders"),
    );
    world
        .apply::<Vpc>(vpc_manifest(&vpc, "10.6.0.0/16"))
        .await?;
    world
        .apply::<Subnet>(subnet_manifest(&subnet, &vpc, "10.6.1.0/24"))
        .await?;
    world
        .apply::<DatabaseInstance>(json!({
            "apiVersion": "database.fakecloud.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
            "metadata": { "name": db },
            "spec": {
                "forProvider": {
                    "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
                    "allocatedStorage": 20, "masterUsername": "app",
                    "subnetIdRefs": [{ "name": subnet }],
                },
                "writeConnectionSecretToRef": { "namespace": "default", "name": format!("{db}-conn") },
            },
        }))
        .await?;
    world
        .wait_for::<DatabaseInstance>(&db, "Ready", WAIT, is_ready)
        .await?;
    let subnet_id = external_name(&world.get::<Subnet>(&subnet).await?.expect("subnet"))
        .expect("subnet external name");

    // The cloud refuses: the database still uses the subnet. The MR keeps
    // its finalizer and says why.
    world.delete::<Subnet>(&subnet).await?;
    let refused = world
        .wait_for::<Subnet>(&subnet, "Synced=False", WAIT, synced_false)
        .await?;
    let message = synced_message(&refused);
    assert!(message.contains("DependencyViolation"), "{message}");
    assert!(message.contains(&subnet_id), "{message}");
    let path = format!("/v1/regions/us-east-1/subnets/{subnet_id}");
    let mark = world.audit_mark().await?;

    // Once the database is gone, a retry deletes the subnet.
    world.delete::<DatabaseInstance>(&db).await?;
    world.wait_gone::<DatabaseInstance>(&db, WAIT).await?;
    world.wait_gone::<Subnet>(&subnet, WAIT).await?;
    let deletes: Vec<_> = world
        .mutating_calls(&path, mark)
        .await?
        .into_iter()
        .filter(|c| c.method == "DELETE")
        .collect();
    assert_eq!(
        deletes.last().map(|c| c.status),
        Some(204),
        "the last delete succeeded: {deletes:?}"
    );
    assert!(
        deletes.len() <= 6,
        "retries backed off instead of storming: {deletes:?}"
    );
    world.shutdown().await;
    Ok(())
}

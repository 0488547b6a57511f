//! ProviderConfig usage: every managed resource records a usage, the
//! ProviderConfig counts its users, and it cannot be deleted while in use.

use std::time::Duration;

use apis::kinds::Vpc;
use apis::kinds::provider_config::{ProviderConfig, ProviderConfigUsage};
use e2e::world::{NAMESPACE, World, is_ready};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// Applies a VPC with the default ProviderConfig and waits until it is Ready.
async fn ready_vpc(world: &World, name: &str) -> anyhow::Result<Vpc> {
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name },
            "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
        }))
        .await?;
    Ok(world.wait_for::<Vpc>(name, "Ready", WAIT, is_ready).await?)
}

#[tokio::test]
async fn a_provider_config_in_use_is_kept_until_its_last_user_is_gone() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let name = e2e::unique_name("user");
    let vpc = ready_vpc(&world, &name).await?;

    let usages = Api::<ProviderConfigUsage>::all(world.kube())
        .list(&ListParams::default())
        .await?;
    let usage = usages
        .items
        .iter()
        .find(|u| u.spec.resource_ref.name == name)
        .expect("the VPC recorded its usage");
    assert_eq!(usage.spec.provider_config_ref.name, "default");
    assert_eq!(usage.spec.resource_ref.uid, vpc.metadata.uid);
    let owner = &usage
        .metadata
        .owner_references
        .as_ref()
        .expect("owned by the MR")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("VPC", name.as_str())
    );
    world
        .wait_for::<ProviderConfig>("default", "users = 1", WAIT, |pc| {
            pc.status.as_ref().and_then(|s| s.users) == Some(1)
        })
        .await?;

    // Deleting the ProviderConfig while the VPC uses it only marks it.
    world.delete::<ProviderConfig>("default").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = world
        .get::<ProviderConfig>("default")
        .await?
        .expect("still there while in use");
    assert!(held.metadata.deletion_timestamp.is_some());

    // The VPC can still be deleted through it; then the ProviderConfig goes.
    world.delete::<Vpc>(&name).await?;
    world.wait_gone::<Vpc>(&name, WAIT).await?;
    world
        .wait_gone::<ProviderConfig>("default", Duration::from_secs(60))
        .await?;
    world.shutdown().await;
    Ok(())
}

/// ProviderConfigs and their credentials come from watch caches: a rotated
/// API key, and a ProviderConfig moved to another endpoint, take effect on
/// the next reconcile all the same.
#[tokio::test]
async fn a_rotated_api_key_and_a_moved_endpoint_take_effect_on_the_next_reconcile()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let name = e2e::unique_name("rotated");
    ready_vpc(&world, &name).await?;

    let secrets = Api::<Secret>::namespaced(world.kube(), NAMESPACE);
    let set_key = |key: String| {
        let secrets = secrets.clone();
        async move {
            secrets
                .patch(
                    "default-credentials",
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "stringData": { "apiKey": key } })),
                )
                .await
        }
    };
    let synced_message = |vpc: &Vpc| {
        e2e::world::condition(vpc, "Synced").map(|(status, _, message)| (status, message))
    };

    // A key fakecloud does not know: the next poll is refused.
    set_key("fcdev_00000000000000000000000000000000".to_owned()).await?;
    let refused = world
        .wait_for::<Vpc>(&name, "Synced=False with 401", WAIT, |v| {
            synced_message(v).is_some_and(|(s, m)| s == "False" && m.contains(" 401 "))
        })
        .await?;
    let (_, message) = synced_message(&refused).unwrap_or_default();
    assert!(
        !message.contains("fcdev_0000"),
        "the key is never shown: {message}"
    );

    // The right key again: Synced again, with the same one VPC.
    set_key(world.api_key().to_owned()).await?;
    world
        .wait_for::<Vpc>(&name, "Synced=True", WAIT, |v| {
            synced_message(v).is_some_and(|(s, _)| s == "True")
        })
        .await?;

    // A ProviderConfig moved to an endpoint nothing serves: refused next.
    world
        .apply::<ProviderConfig>(json!({
            "apiVersion": "fakecloud.crossplane.io/v1alpha1", "kind": "ProviderConfig",
            "metadata": { "name": "default" },
            "spec": {
                "endpoint": "http://127.0.0.1:9",
                "credentials": { "source": "Secret",
                    "secretRef": { "namespace": NAMESPACE, "name": "default-credentials", "key": "apiKey" } },
            },
        }))
        .await?;
    world
        .wait_for::<Vpc>(&name, "Synced=False naming the new endpoint", WAIT, |v| {
            synced_message(v).is_some_and(|(s, m)| s == "False" && m.contains("127.0.0.1:9"))
        })
        .await?;
    assert_eq!(
        world
            .admin
            .resources(Some(fakecloud::model::Kind::Vpc), None)
            .await?
            .len(),
        1
    );
    world.shutdown().await;
    Ok(())
}

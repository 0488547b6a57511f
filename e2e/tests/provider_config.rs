//! ProviderConfig usage: every managed resource records a usage, the
//! ProviderConfig counts its users, and it cannot be deleted while in use.

use std::time::Duration;

use apis::kinds::Vpc;
use apis::kinds::provider_config::{ProviderConfig, ProviderConfigUsage};
use e2e::world::{World, is_ready};
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_provider_config_in_use_is_kept_until_its_last_user_is_gone() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let name = e2e::unique_name("user");
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name },
            "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
        }))
        .await?;
    let vpc = world
        .wait_for::<Vpc>(&name, "Ready", WAIT, is_ready)
        .await?;

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

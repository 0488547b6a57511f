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

/// The namespaced form: a ClusterProviderConfig used from two namespaces and
/// a namespace's own ProviderConfig each count their users from the
/// namespaced usages beside the resources, and neither goes while in use.
#[tokio::test]
async fn namespaced_configs_in_use_are_kept_until_their_last_user_is_gone() -> anyhow::Result<()> {
    use apis::kinds::provider_config::m;
    use apis::kinds::vpc::m::Vpc as NsVpc;
    use crossplane_types::well_known::{PROVIDER_CONFIG_KIND_LABEL, PROVIDER_CONFIG_NAME_LABEL};
    use e2e::scope::{APP, NET};
    e2e::init_tracing();
    let world = World::start().await?;
    let app = world.objects.in_namespace(APP);
    let net = world.objects.in_namespace(NET);
    app.apply_namespaced::<Secret>(
        APP,
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "key" },
                "stringData": { "apiKey": world.api_key() } }),
    )
    .await?;
    app.apply::<m::ProviderConfig>(json!({
        "apiVersion": "fakecloud.m.crossplane.io/v1alpha1", "kind": "ProviderConfig",
        "metadata": { "name": "team" },
        "spec": { "endpoint": world.cloud_url(),
                  "credentials": { "source": "Secret", "secretRef": { "name": "key", "key": "apiKey" } } },
    }))
    .await?;
    let vpc = |config: serde_json::Value| {
        json!({
            "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": "net" },
            "spec": { "providerConfigRef": config,
                      "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
        })
    };
    let cluster_config = json!({ "kind": "ClusterProviderConfig", "name": "default" });
    app.apply::<NsVpc>(vpc(cluster_config.clone())).await?;
    net.apply::<NsVpc>(vpc(cluster_config)).await?;
    app.apply::<NsVpc>({
        let mut own = vpc(json!({ "kind": "ProviderConfig", "name": "team" }));
        own["metadata"]["name"] = json!("own");
        own
    })
    .await?;
    for (objects, name) in [(&app, "net"), (&net, "net"), (&app, "own")] {
        objects
            .wait_for::<NsVpc>(name, "Ready", WAIT, is_ready)
            .await?;
    }
    let users =
        |s: &Option<crossplane_types::ProviderConfigStatus>| s.as_ref().and_then(|s| s.users);
    world
        .wait_for::<m::ClusterProviderConfig>("default", "users = 2", WAIT, |c| {
            users(&c.status) == Some(2)
        })
        .await?;
    app.wait_for::<m::ProviderConfig>("team", "users = 1", WAIT, |c| users(&c.status) == Some(1))
        .await?;
    let usages = Api::<m::ProviderConfigUsage>::namespaced(world.kube(), APP)
        .list(&ListParams::default().labels(&format!(
            "{PROVIDER_CONFIG_NAME_LABEL}=team,{PROVIDER_CONFIG_KIND_LABEL}=ProviderConfig"
        )))
        .await?;
    assert_eq!(usages.items.len(), 1);
    assert_eq!(usages.items[0].spec.resource_ref.name, "own");

    // Both configs are only marked while in use.
    world.delete::<m::ClusterProviderConfig>("default").await?;
    app.delete::<m::ProviderConfig>("team").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = world
        .get::<m::ClusterProviderConfig>("default")
        .await?
        .expect("in use");
    assert!(held.metadata.deletion_timestamp.is_some());
    let held = app.get::<m::ProviderConfig>("team").await?.expect("in use");
    assert!(held.metadata.deletion_timestamp.is_some());

    // The team's config goes with its last user, the cluster's with its
    // last one in any namespace.
    app.delete::<NsVpc>("own").await?;
    app.wait_gone::<m::ProviderConfig>("team", Duration::from_secs(60))
        .await?;
    app.delete::<NsVpc>("net").await?;
    app.wait_gone::<NsVpc>("net", WAIT).await?;
    assert!(
        world
            .get::<m::ClusterProviderConfig>("default")
            .await?
            .is_some()
    );
    net.delete::<NsVpc>("net").await?;
    world
        .wait_gone::<m::ClusterProviderConfig>("default", Duration::from_secs(60))
        .await?;
    let vpcs = world
        .cloud
        .list_vpcs("us-east-1", &Default::default())
        .await?;
    assert!(vpcs.items.is_empty(), "{:?}", vpcs.items);
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

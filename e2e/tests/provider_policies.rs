//! managementPolicies, initProvider and deletionPolicy (seed 003); each
//! story in both scopes where it applies (a namespaced resource has no
//! deletionPolicy).

use std::time::Duration;

use apis::kinds::Vpc;
use crossplane_types::well_known::PAUSED_ANNOTATION;
use e2e::scenarios::{Verdict, node_group};
use e2e::scope::{Legacy, Namespaced, Scope};
use e2e::world::{World, WorldOptions, condition, external_name, is_ready};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn vpc(name: &str, policies: serde_json::Value, deletion: &str) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name },
        "spec": {
            "managementPolicies": policies, "deletionPolicy": deletion,
            "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" },
        },
    })
}

/// A VPC of scope `S` with `policies` and otherwise the defaults.
fn vpc_with<S: Scope>(name: &str, policies: serde_json::Value) -> serde_json::Value {
    S::manifest(
        "network",
        "VPC",
        json!({ "name": name }),
        json!({
            "managementPolicies": policies,
            "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" },
        }),
    )
}

#[tokio::test]
async fn init_provider_sets_desired_size_once_and_leaves_it_to_the_autoscaler() -> anyhow::Result<()>
{
    autoscaled::<Legacy>().await
}

#[tokio::test]
async fn a_namespaced_node_group_leaves_desired_size_to_the_autoscaler() -> anyhow::Result<()> {
    autoscaled::<Namespaced>().await
}

async fn autoscaled<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);
    // fakecloud wants real subnets: make one VPC + subnet straight in the cloud.
    let vpc_id = world
        .cloud
        .create_vpc(
            "us-east-1",
            &serde_json::from_value(json!({ "cidrBlock": "10.4.0.0/16" }))?,
            None,
        )
        .await?
        .resource
        .id;
    let subnet_id = world
        .cloud
        .create_subnet(
            "us-east-1",
            &serde_json::from_value(json!({ "vpcId": vpc_id, "cidrBlock": "10.4.1.0/24", "availabilityZone": "us-east-1a" }))?,
            None,
        )
        .await?
        .resource
        .id;
    let mut verdict = Verdict::default();
    node_group::autoscaled::<S>(
        &world.stage().with(&objects),
        &e2e::unique_name("workers"),
        &subnet_id,
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn deletion_orphans_unless_both_policies_allow_delete() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let cases = [
        ("orphan-star", json!(["*"]), "Orphan", false),
        (
            "no-delete",
            json!(["Observe", "Create", "Update", "LateInitialize"]),
            "Delete",
            false,
        ),
        (
            "orphan-explicit",
            json!(["Observe", "Create", "Update", "Delete"]),
            "Orphan",
            false,
        ),
        ("delete-star", json!(["*"]), "Delete", true),
    ];
    let mut ids = Vec::new();
    for (prefix, policies, deletion, _) in &cases {
        let name = e2e::unique_name(prefix);
        world
            .apply::<Vpc>(vpc(&name, policies.clone(), deletion))
            .await?;
        let ready = world
            .wait_for::<Vpc>(&name, "Ready", WAIT, is_ready)
            .await?;
        ids.push((name, external_name(&ready).expect("id")));
    }
    for ((name, id), (prefix, _, _, deletes)) in ids.iter().zip(&cases) {
        world.delete::<Vpc>(name).await?;
        world.wait_gone::<Vpc>(name, WAIT).await?;
        let in_cloud = world.cloud.get_vpc("us-east-1", id).await;
        assert_eq!(in_cloud.is_err(), *deletes, "{prefix}: {in_cloud:?}");
    }
    world.shutdown().await;
    Ok(())
}

/// The namespaced form: no deletionPolicy, so only the policies decide.
#[tokio::test]
async fn a_namespaced_resource_orphans_unless_its_policies_allow_delete() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = Namespaced::objects(&world.objects);
    type NsVpc = <Namespaced as Scope>::Vpc;
    let cases = [
        (
            "no-delete",
            json!(["Observe", "Create", "Update", "LateInitialize"]),
            false,
        ),
        (
            "with-delete",
            json!(["Observe", "Create", "Update", "Delete"]),
            true,
        ),
        ("star", json!(["*"]), true),
    ];
    let mut ids = Vec::new();
    for (prefix, policies, _) in &cases {
        let name = e2e::unique_name(prefix);
        objects
            .apply::<NsVpc>(vpc_with::<Namespaced>(&name, policies.clone()))
            .await?;
        let ready = objects
            .wait_for::<NsVpc>(&name, "Ready", WAIT, is_ready)
            .await?;
        ids.push((name, external_name(&ready).expect("id")));
    }
    for ((name, id), (prefix, _, deletes)) in ids.iter().zip(&cases) {
        objects.delete::<NsVpc>(name).await?;
        objects.wait_gone::<NsVpc>(name, WAIT).await?;
        let in_cloud = world.cloud.get_vpc("us-east-1", id).await;
        assert_eq!(in_cloud.is_err(), *deletes, "{prefix}: {in_cloud:?}");
    }
    let vpcs = world
        .cloud
        .list_vpcs("us-east-1", &Default::default())
        .await?;
    assert_eq!(
        vpcs.items.len(),
        1,
        "only the orphan is left: {:?}",
        vpcs.items
    );
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn pause_makes_no_calls_and_unpausing_resumes() -> anyhow::Result<()> {
    pause::<Legacy>().await
}

#[tokio::test]
async fn a_namespaced_pause_makes_no_calls_and_unpausing_resumes() -> anyhow::Result<()> {
    pause::<Namespaced>().await
}

async fn pause<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);

    // Paused from the start by `[]`: no call at all, Synced=False ReconcilePaused.
    let empty = e2e::unique_name("paused-empty");
    let annotated = e2e::unique_name("paused-annotation");
    let mark = world.audit_mark().await?;
    objects
        .apply::<S::Vpc>(vpc_with::<S>(&empty, json!([])))
        .await?;
    let mut paused = vpc_with::<S>(&annotated, json!(["*"]));
    paused["metadata"]["annotations"] = json!({ PAUSED_ANNOTATION: "true" });
    objects.apply::<S::Vpc>(paused.clone()).await?;
    for name in [&empty, &annotated] {
        let seen = objects
            .wait_for::<S::Vpc>(name, "paused", WAIT, |v| {
                condition(v, "Synced").is_some_and(|c| c.1 == "ReconcilePaused")
            })
            .await?;
        assert!(external_name(&seen).is_none());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        world.calls("/v1/", mark).await?.is_empty(),
        "a paused resource called the cloud"
    );

    // Unpausing resumes: both get created, once each.
    objects
        .apply::<S::Vpc>(vpc_with::<S>(&empty, json!(["*"])))
        .await?;
    paused["metadata"]["annotations"] = json!({ PAUSED_ANNOTATION: "false" });
    objects.apply::<S::Vpc>(paused).await?;
    for name in [&empty, &annotated] {
        objects
            .wait_for::<S::Vpc>(name, "Ready after unpause", WAIT, is_ready)
            .await?;
    }
    let vpcs = world
        .cloud
        .list_vpcs("us-east-1", &Default::default())
        .await?;
    assert_eq!(vpcs.items.len(), 2, "{:?}", vpcs.items);
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn with_the_feature_off_policies_are_ignored_and_deletion_policy_decides()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(WorldOptions {
        provider_args: vec![
            "--enable-management-policies=false".into(),
            "--poll-interval=1s".into(),
            "--pending-poll-interval=250ms".into(),
        ],
        ..WorldOptions::default()
    })
    .await?;
    // ["Observe"] would forbid creating; with the feature off it is ignored.
    let kept = e2e::unique_name("gate-off");
    world
        .apply::<Vpc>(vpc(&kept, json!(["Observe"]), "Orphan"))
        .await?;
    let ready = world
        .wait_for::<Vpc>(&kept, "created despite Observe", WAIT, is_ready)
        .await?;
    let kept_id = external_name(&ready).expect("id");
    let gone = e2e::unique_name("gate-off-delete");
    world
        .apply::<Vpc>(vpc(&gone, json!(["Observe"]), "Delete"))
        .await?;
    let ready = world
        .wait_for::<Vpc>(&gone, "created", WAIT, is_ready)
        .await?;
    let gone_id = external_name(&ready).expect("id");

    for name in [&kept, &gone] {
        world.delete::<Vpc>(name).await?;
        world.wait_gone::<Vpc>(name, WAIT).await?;
    }
    assert!(
        world.cloud.get_vpc("us-east-1", &kept_id).await.is_ok(),
        "Orphan kept it"
    );
    assert!(
        world.cloud.get_vpc("us-east-1", &gone_id).await.is_err(),
        "Delete removed it"
    );
    world.shutdown().await;
    Ok(())
}

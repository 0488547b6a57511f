//! Observe-only resources (seed 000): import, missing resources, references
//! to observed resources, and the import procedure.

use std::time::Duration;

use apis::kinds::{Subnet, Vpc};
use apis::well_known::EXTERNAL_NAME_ANNOTATION;
use e2e::world::{World, at_provider, condition, external_name, is_ready, is_synced};
use observe_import::{observed_vpc, team_vpc};
use serde_json::json;

#[path = "shared/observe_import.rs"]
mod observe_import;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn observe_only_import_fills_at_provider_and_never_mutates() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    observe_import::import_never_mutates(&world).await?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_missing_resource_is_reported_and_never_created_without_create() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let mark = world.audit_mark().await?;
    for policies in [json!(["Observe"]), json!(["Observe", "Update"])] {
        let name = e2e::unique_name("missing");
        world
            .apply::<Vpc>(json!({
                "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": { "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: "vpc-00000000000000000" } },
                "spec": { "managementPolicies": policies, "forProvider": { "region": "us-east-1", "cidrBlock": "10.9.0.0/16" } },
            }))
            .await?;
        let reported = world
            .wait_for::<Vpc>(&name, "Synced=False", WAIT, |v| {
                condition(v, "Synced").is_some_and(|(status, ..)| status == "False")
            })
            .await?;
        let (_, reason, message) = condition(&reported, "Synced").expect("Synced set");
        assert_eq!(reason, "ReconcileError", "{policies}");
        assert!(
            message.contains("external resource does not exist"),
            "{policies}: {message}"
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mutations = world.mutating_calls("/v1/", mark).await?;
    assert!(
        mutations.is_empty(),
        "a policy set without Create mutated: {mutations:?}"
    );
    let vpcs = world
        .cloud
        .list_vpcs("us-east-1", &Default::default())
        .await?;
    assert!(
        vpcs.items.is_empty(),
        "nothing was created: {:?}",
        vpcs.items
    );
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_managed_subnet_is_created_inside_an_observed_vpc_by_reference() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let id = team_vpc(&world, "10.2.0.0/16").await?;
    let vpc_name = e2e::unique_name("shared");
    world.apply::<Vpc>(observed_vpc(&vpc_name, &id)).await?;

    let subnet_name = e2e::unique_name("app");
    world
        .apply::<Subnet>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
            "metadata": { "name": subnet_name },
            "spec": { "forProvider": {
                "region": "us-east-1", "vpcIdRef": { "name": vpc_name },
                "cidrBlock": "10.2.1.0/24", "availabilityZone": "us-east-1a",
            } },
        }))
        .await?;
    let subnet = world
        .wait_for::<Subnet>(&subnet_name, "Ready", WAIT, is_ready)
        .await?;
    assert_eq!(
        subnet.spec.for_provider.vpc_id.as_deref(),
        Some(id.as_str()),
        "vpcId resolved from the ref"
    );
    let subnet_id = external_name(&subnet).expect("subnet has an id");
    let cloud = world
        .cloud
        .get_subnet("us-east-1", &subnet_id)
        .await?
        .resource;
    assert_eq!(cloud.vpc_id, id);
    assert_eq!(at_provider(&subnet)["availableIpAddressCount"], 251);
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_import_procedure_takes_over_without_an_update_then_applies_changes()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let id = team_vpc(&world, "10.3.0.0/16").await?;
    let name = e2e::unique_name("takeover");
    world.apply::<Vpc>(observed_vpc(&name, &id)).await?;
    let observed = world
        .wait_for::<Vpc>(&name, "observed", WAIT, is_ready)
        .await?;

    // Take over: full control, with the create-only field copied from atProvider.
    let mark = world.audit_mark().await?;
    let cidr = at_provider(&observed)["cidrBlock"].clone();
    let tags = at_provider(&observed)["tags"].clone();
    let full = |tags: serde_json::Value| {
        json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: id } },
            "spec": { "managementPolicies": ["*"], "forProvider": { "region": "us-east-1", "cidrBlock": cidr, "tags": tags } },
        })
    };
    let taken = world.apply::<Vpc>(full(tags.clone())).await?;
    let generation = taken.metadata.generation.unwrap_or_default();
    world
        .wait_for::<Vpc>(&name, "reconciled under full control", WAIT, |v| {
            is_ready(v)
                && is_synced(v)
                && v.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .all(|c| c.observed_generation.unwrap_or_default() >= generation)
                })
        })
        .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mutations = world.mutating_calls("/v1/", mark).await?;
    assert!(
        mutations.is_empty(),
        "taking over must not update: {mutations:?}"
    );

    // From now on changes are applied.
    let mut new_tags = tags.clone();
    new_tags["env"] = json!("prod");
    world.apply::<Vpc>(full(new_tags)).await?;
    world
        .wait_for::<Vpc>(&name, "env tag applied", WAIT, |v| {
            at_provider(v)["tags"]["env"] == "prod"
        })
        .await?;
    let patches = world
        .mutating_calls(&format!("/v1/regions/us-east-1/vpcs/{id}"), mark)
        .await?;
    assert_eq!(patches.len(), 1, "{patches:?}");
    world.shutdown().await;
    Ok(())
}

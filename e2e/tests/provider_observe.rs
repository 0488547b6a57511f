//! Observe-only resources (seed 000): import, missing resources, references
//! to observed resources, and the import procedure, each in both scopes.
//! The stories the demo shows too are its scenarios
//! ([`e2e::scenarios::observe`]).

use std::time::Duration;

use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use e2e::scenarios::{Verdict, observe};
use e2e::scope::{Legacy, NET, Namespaced, Scope};
use e2e::world::{World, condition};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

async fn import_and_release<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);
    observe::import_and_release::<S>(&world.stage().with(&objects), &e2e::unique_name("imported"))
        .await?
        .require()?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn observe_only_import_fills_at_provider_and_never_mutates() -> anyhow::Result<()> {
    import_and_release::<Legacy>().await
}

#[tokio::test]
async fn a_namespaced_observe_only_import_never_mutates() -> anyhow::Result<()> {
    import_and_release::<Namespaced>().await
}

async fn missing_without_create<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);
    let mark = world.audit_mark().await?;
    for policies in [json!(["Observe"]), json!(["Observe", "Update"])] {
        let name = e2e::unique_name("missing");
        objects
            .apply::<S::Vpc>(S::manifest(
                "network",
                "VPC",
                json!({ "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: "vpc-00000000000000000" } }),
                json!({ "managementPolicies": policies, "forProvider": { "region": "us-east-1", "cidrBlock": "10.9.0.0/16" } }),
            ))
            .await?;
        let reported = objects
            .wait_for::<S::Vpc>(&name, "Synced=False", WAIT, |v| {
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
async fn a_missing_resource_is_reported_and_never_created_without_create() -> anyhow::Result<()> {
    missing_without_create::<Legacy>().await
}

#[tokio::test]
async fn a_missing_namespaced_resource_is_never_created_without_create() -> anyhow::Result<()> {
    missing_without_create::<Namespaced>().await
}

/// The VPC is imported in [`NET`] (another team's namespace, when
/// namespaced) and the Subnet made in the scope's own namespace.
async fn subnet_in_observed_vpc<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let net = S::objects(&world.objects).in_namespace(NET);
    let app = S::objects(&world.objects);
    let stage = world.stage();
    let mut verdict = Verdict::default();
    let vpc = observe::import::<S>(
        &stage.with(&net),
        &e2e::unique_name("shared"),
        "10.2.0.0/16",
        &mut verdict,
    )
    .await?;
    observe::subnet_by_reference::<S>(
        &stage.with(&app),
        &vpc,
        &e2e::unique_name("app"),
        "10.2.1.0/24",
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_managed_subnet_is_created_inside_an_observed_vpc_by_reference() -> anyhow::Result<()> {
    subnet_in_observed_vpc::<Legacy>().await
}

#[tokio::test]
async fn a_subnet_in_app_is_created_inside_a_vpc_observed_in_net() -> anyhow::Result<()> {
    subnet_in_observed_vpc::<Namespaced>().await
}

async fn take_over<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);
    let stage = world.stage();
    let stage = stage.with(&objects);
    let mut verdict = Verdict::default();
    let vpc = observe::import::<S>(
        &stage,
        &e2e::unique_name("takeover"),
        "10.3.0.0/16",
        &mut verdict,
    )
    .await?;
    observe::take_over::<S>(&stage, &vpc, &mut verdict).await?;
    verdict.require()?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_import_procedure_takes_over_without_an_update_then_applies_changes()
-> anyhow::Result<()> {
    take_over::<Legacy>().await
}

#[tokio::test]
async fn a_namespaced_import_takes_over_without_an_update() -> anyhow::Result<()> {
    take_over::<Namespaced>().await
}

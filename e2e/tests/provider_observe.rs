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

/// An observe-only resource whose cloud resource is missing is looked at
/// again on its poll interval (here its `crossplane.io/poll-interval`
/// annotation), not on the error backoff, and its Warning Event is written
/// once, not once a poll (crossplane-runtime v2.4's behaviour).
#[tokio::test]
async fn a_missing_observed_resource_is_polled_on_its_interval_not_the_backoff()
-> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Event;
    use kube::Api;

    const POLL: Duration = Duration::from_secs(3);
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = Namespaced::objects(&world.objects);
    let name = e2e::unique_name("gone");
    let id = "vpc-0000000000000000f";
    let errors_before = world
        .metrics
        .total("controller_runtime_reconcile_errors_total");
    objects
        .apply::<<Namespaced as Scope>::Vpc>(Namespaced::manifest(
            "network",
            "VPC",
            json!({ "name": name, "annotations": {
                EXTERNAL_NAME_ANNOTATION: id,
                "crossplane.io/poll-interval": "3s",
            } }),
            json!({ "managementPolicies": ["Observe"], "forProvider": { "region": "us-east-1" } }),
        ))
        .await?;
    objects
        .wait_for::<<Namespaced as Scope>::Vpc>(&name, "Synced=False", WAIT, |v| {
            condition(v, "Synced").is_some_and(|(status, ..)| status == "False")
        })
        .await?;
    let mark = world.audit_mark().await?;
    tokio::time::sleep(Duration::from_secs(14)).await;

    let path = format!("/v1/regions/us-east-1/vpcs/{id}");
    let calls = world.calls(&path, mark).await?;
    let times: Vec<i64> = calls
        .iter()
        .filter(|c| c.path == path && c.method == "GET")
        .map(|c| c.time.as_millisecond())
        .collect();
    // 14 s at 3 s (jittered by 5 %): four or five looks. The backoff would
    // have looked at 1, 2, 4 and 8 s gaps, then every 60 s.
    assert!(
        (3..=6).contains(&times.len()),
        "looked at {} times in 14 s: {times:?}",
        times.len()
    );
    let low = POLL.mul_f64(0.95).as_millis() as i64 - 250;
    let high = POLL.mul_f64(1.05).as_millis() as i64 + 1_500;
    for gap in times.windows(2).map(|w| w[1] - w[0]) {
        assert!(
            (low..=high).contains(&gap),
            "a look {gap} ms after the last, outside {low}..={high}: {times:?}"
        );
    }
    let mutations = world.mutating_calls("/v1/", mark).await?;
    assert!(mutations.is_empty(), "observe-only mutated: {mutations:?}");

    // One Warning Event, raised once: the state did not change.
    let events = Api::<Event>::namespaced(world.kube(), e2e::scope::APP)
        .list(&kube::api::ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await?
        .items;
    let warnings: Vec<(String, i32)> = events
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| (e.reason.clone().unwrap_or_default(), e.count.unwrap_or(1)))
        .collect();
    assert_eq!(warnings, vec![("ReconcileError".to_owned(), 1)]);
    // Not an error in the metrics people alert on.
    assert_eq!(
        world
            .metrics
            .total("controller_runtime_reconcile_errors_total"),
        errors_before,
        "a missing observed resource counted as a reconcile error"
    );
    world.shutdown().await;
    Ok(())
}

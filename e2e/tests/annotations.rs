//! crossplane-runtime v2's reconcile annotations on a real API server:
//! `crossplane.io/poll-interval` (a resource's own poll period) and
//! `crossplane.io/reconcile-requested-at` (reconcile now, recorded in
//! `status.lastHandledReconcileAt`). The provider polls every hour here,
//! so only the annotation can make it notice an outside change in seconds.

use std::time::{Duration, Instant};

use apis::kinds::Vpc;
use crossplane_types::well_known::{POLL_INTERVAL_ANNOTATION, RECONCILE_REQUESTED_AT_ANNOTATION};
use e2e::world::{World, WorldOptions, condition, external_name, is_ready, is_synced};
use fakecloud::client::Address;
use fakecloud::model::Kind;
use serde_json::{Value, json};

const REGION: &str = "us-east-1";
const WAIT: Duration = Duration::from_secs(30);
/// How soon a change must show: a few of the annotation's 2 s polls, far
/// below the provider's own hour.
const SOON: Duration = Duration::from_secs(8);

fn last_handled(vpc: &Vpc) -> Option<String> {
    serde_json::to_value(vpc).ok()?["status"]["lastHandledReconcileAt"]
        .as_str()
        .map(str::to_owned)
}

async fn annotate(world: &World, name: &str, annotations: Value) -> anyhow::Result<()> {
    world
        .patch::<Vpc>(name, json!({ "metadata": { "annotations": annotations } }))
        .await?;
    Ok(())
}

/// The team tag fakecloud holds for the VPC `id`.
async fn cloud_team(world: &World, id: &str) -> anyhow::Result<Option<String>> {
    let vpc = world.cloud.get_vpc(REGION, id).await?.resource;
    Ok(vpc.tags.get("team").cloned())
}

#[tokio::test]
async fn the_poll_interval_and_reconcile_request_annotations_drive_reconciles() -> anyhow::Result<()>
{
    e2e::init_tracing();
    let world = World::start_with(WorldOptions {
        provider_args: vec![
            "--poll-interval=1h".into(),
            "--pending-poll-interval=250ms".into(),
        ],
        ..WorldOptions::default()
    })
    .await?;
    let name = e2e::unique_name("polled");
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name },
            "spec": { "forProvider": {
                "region": REGION, "cidrBlock": "10.0.0.0/16", "tags": { "team": "a" },
            } },
        }))
        .await?;
    let ready = world
        .wait_for::<Vpc>(&name, "Ready and Synced", WAIT, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    let id = external_name(&ready).expect("the VPC's id is recorded");
    assert_eq!(last_handled(&ready), None, "no request yet");

    // (b) A reconcile request is handled and recorded. Set with the poll
    // interval, so that once it is recorded the reconcile that read the
    // interval has run, and the outside change below is found by a poll.
    annotate(
        &world,
        &name,
        json!({ POLL_INTERVAL_ANNOTATION: "2s", RECONCILE_REQUESTED_AT_ANNOTATION: "first" }),
    )
    .await?;
    world
        .wait_for::<Vpc>(&name, "first request handled", SOON, |v| {
            last_handled(v).as_deref() == Some("first")
        })
        .await?;

    // (a) An outside actor changes the tags; the 2 s poll finds the drift
    // and the provider puts the tags back, long before its hourly poll.
    let mark = world.audit_mark().await?;
    let address = Address {
        region: Some(REGION.to_owned()),
        ..Address::default()
    };
    world
        .admin
        .patch_resource(
            Kind::Vpc,
            &id,
            &address,
            &json!({ "tags": { "team": "b" } }),
        )
        .await?;
    let changed = Instant::now();
    assert_eq!(cloud_team(&world, &id).await?.as_deref(), Some("b"));
    while cloud_team(&world, &id).await?.as_deref() != Some("a") {
        assert!(
            changed.elapsed() < SOON,
            "the drift was not corrected within {SOON:?}: the annotation did not drive the poll"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let corrections = world
        .mutating_calls(&format!("/v1/regions/{REGION}/vpcs/{id}"), mark)
        .await?;
    assert!(
        !corrections.is_empty(),
        "the provider itself put the tags back"
    );

    // (b) again: a new token is handled too.
    annotate(
        &world,
        &name,
        json!({ RECONCILE_REQUESTED_AT_ANNOTATION: "2026-01-01T00:00:00Z" }),
    )
    .await?;
    world
        .wait_for::<Vpc>(&name, "second request handled", SOON, |v| {
            last_handled(v).as_deref() == Some("2026-01-01T00:00:00Z")
        })
        .await?;

    // (c) An invalid interval is reported in Synced, and the resource is
    // not reconciled again (no cloud call) until it changes.
    annotate(&world, &name, json!({ POLL_INTERVAL_ANNOTATION: "5mins" })).await?;
    let refused = world
        .wait_for::<Vpc>(&name, "Synced=False", SOON, |v| !is_synced(v))
        .await?;
    let (status, reason, message) = condition(&refused, "Synced").expect("Synced is set");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ReconcileError")
    );
    assert!(
        message.contains("crossplane.io/poll-interval")
            && message.contains("\"5mins\"")
            && message.contains("\"30s\""),
        "{message}"
    );
    let mark = world.audit_mark().await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let calls = world
        .calls(&format!("/v1/regions/{REGION}/vpcs/{id}"), mark)
        .await?;
    assert!(
        calls.is_empty(),
        "polled despite the invalid interval: {calls:?}"
    );

    // Fixed, it is reconciled again at once.
    annotate(&world, &name, json!({ POLL_INTERVAL_ANNOTATION: "2s" })).await?;
    world
        .wait_for::<Vpc>(&name, "Synced again", SOON, is_synced)
        .await?;
    world.shutdown().await;
    Ok(())
}

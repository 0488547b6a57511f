//! A VPC's full lifecycle, shared by the tests that play it on each backend
//! (`provider_vpc.rs` locally, `containers.rs` on the compose images):
//! created once, updated with exactly one call, deleted from the cloud.

use std::time::Duration;

use apis::kinds::Vpc;
use e2e::world::{World, at_provider, external_name, is_ready, is_synced};
use serde_json::json;

const READY: Duration = Duration::from_secs(30);

fn vpc(name: &str, tags: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name },
        "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16", "tags": tags } },
    })
}

/// Create (one POST), a tag change (one PATCH), delete (gone in fakecloud).
pub async fn create_update_delete(world: &World) -> anyhow::Result<()> {
    let name = e2e::unique_name("vpc");
    let mark = world.audit_mark().await?;

    world
        .apply::<Vpc>(vpc(&name, json!({ "team": "a" })))
        .await?;
    let ready = world
        .wait_for::<Vpc>(&name, "Ready and Synced", READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    let id = external_name(&ready).expect("external name set after create");
    assert!(id.starts_with("vpc-"), "{id}");
    assert_eq!(at_provider(&ready)["state"], "available");
    assert_eq!(at_provider(&ready)["cidrBlock"], "10.0.0.0/16");
    let path = "/v1/regions/us-east-1/vpcs";
    let creates: Vec<_> = world
        .mutating_calls(path, mark)
        .await?
        .into_iter()
        .filter(|c| c.method == "POST")
        .collect();
    assert_eq!(creates.len(), 1, "exactly one create: {creates:?}");

    // A tag change is exactly one update call.
    let mark = world.audit_mark().await?;
    world
        .apply::<Vpc>(vpc(&name, json!({ "team": "b" })))
        .await?;
    world
        .wait_for::<Vpc>(&name, "tag b observed", READY, |v| {
            at_provider(v)["tags"]["team"] == "b" && is_ready(v)
        })
        .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let updates = world.mutating_calls(&format!("{path}/{id}"), mark).await?;
    assert_eq!(
        updates
            .iter()
            .map(|c| c.method.as_str())
            .collect::<Vec<_>>(),
        ["PATCH"],
        "{updates:?}"
    );

    // Delete: the cloud resource goes, then the MR.
    world.delete::<Vpc>(&name).await?;
    world.wait_gone::<Vpc>(&name, READY).await?;
    let err = world
        .cloud
        .get_vpc("us-east-1", &id)
        .await
        .expect_err("VPC deleted from fakecloud");
    assert!(err.is_not_found(), "{err}");
    Ok(())
}

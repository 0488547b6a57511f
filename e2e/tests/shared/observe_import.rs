//! Observe-only import (seed 000), shared by the tests that play it on
//! each backend (`provider_observe.rs` locally, `containers.rs` on the
//! compose images): an existing VPC imported read-only fills
//! `status.atProvider`, and nothing mutates it.

use std::time::Duration;

use apis::kinds::Vpc;
use apis::well_known::EXTERNAL_NAME_ANNOTATION;
use e2e::world::{World, at_provider, is_ready, is_synced};
use fakecloud::model::CreateVpc;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// Another team's VPC, created straight in fakecloud; returns its id.
pub async fn team_vpc(world: &World, cidr: &str) -> anyhow::Result<String> {
    let body: CreateVpc =
        serde_json::from_value(json!({ "cidrBlock": cidr, "tags": { "owner": "team-b" } }))?;
    Ok(world
        .cloud
        .create_vpc("us-east-1", &body, None)
        .await?
        .resource
        .id)
}

pub fn observed_vpc(name: &str, id: &str) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: id } },
        "spec": { "managementPolicies": ["Observe"], "forProvider": { "region": "us-east-1" } },
    })
}

/// Imports another team's VPC read-only and deletes the managed resource:
/// `atProvider` holds the full state, the spec is never late-initialised,
/// the VPC stays, and no call mutated anything.
pub async fn import_never_mutates(world: &World) -> anyhow::Result<()> {
    let id = team_vpc(world, "10.1.0.0/16").await?;
    let name = e2e::unique_name("imported");
    let mark = world.audit_mark().await?;

    let applied = world.apply::<Vpc>(observed_vpc(&name, &id)).await?;
    let seen = world
        .wait_for::<Vpc>(&name, "observed and available", WAIT, |v| {
            is_ready(v) && is_synced(v) && at_provider(v)["id"] == id.as_str()
        })
        .await?;
    let at = at_provider(&seen);
    assert_eq!(at["cidrBlock"], "10.1.0.0/16");
    assert_eq!(at["tags"]["owner"], "team-b");
    assert_eq!(
        at["enableDnsSupport"], true,
        "atProvider is a superset of forProvider"
    );
    assert_eq!(
        seen.spec, applied.spec,
        "observe-only never late-initialises the spec"
    );

    world.delete::<Vpc>(&name).await?;
    world.wait_gone::<Vpc>(&name, WAIT).await?;
    assert!(
        world.cloud.get_vpc("us-east-1", &id).await.is_ok(),
        "deleting the MR leaves the VPC"
    );
    let mutations = world.mutating_calls("/v1/", mark).await?;
    assert!(
        mutations.is_empty(),
        "observe-only made mutating calls: {mutations:?}"
    );
    Ok(())
}

//! What a steady state costs: a reconcile of an unchanged, Ready resource
//! writes nothing to the API server and calls nothing that mutates.

use std::time::Duration;

use apis::kinds::Vpc;
use e2e::world::{World, is_ready};
use serde_json::json;

#[tokio::test]
async fn steady_state_reconciles_write_nothing() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let names: Vec<String> = (0..3).map(|_| e2e::unique_name("steady")).collect();
    for (i, name) in names.iter().enumerate() {
        world
            .apply::<Vpc>(json!({
                "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": { "name": name },
                "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": format!("10.{i}.0.0/16"),
                                           "tags": { "env": "test" } } },
            }))
            .await?;
    }
    for name in &names {
        world
            .wait_for::<Vpc>(name, "Ready", Duration::from_secs(30), is_ready)
            .await?;
    }
    // Let the last pending requeues land.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mark = world.audit_mark().await?;
    let writes = world.metrics.total("provider_kube_writes_total");
    let reconciles = world.metrics.total("provider_reconciles_total");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let steady_reconciles = world.metrics.total("provider_reconciles_total") - reconciles;
    assert!(
        steady_reconciles >= 9.0,
        "polling at 1 s, 3 VPCs: only {steady_reconciles} reconciles"
    );
    assert_eq!(
        world.metrics.total("provider_kube_writes_total"),
        writes,
        "steady-state reconciles wrote"
    );
    assert!(world.mutating_calls("/v1/", mark).await?.is_empty());
    world.shutdown().await;
    Ok(())
}

//! A pacing mechanism that defers work never loses it: with two replicas
//! racing (no leader election), a reconcile-rate cap far below what the
//! burst asks for (so most reconciles are deferred and woken later), and
//! their writes echoing and conflicting, every pending resource still gets
//! its next look within the time the cap allows, never only at the next
//! full poll.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use apis::kinds::Vpc;
use e2e::world::{World, WorldOptions, is_ready, is_synced};
use fakecloud::model::Kind;
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::json;

/// The reconcile-rate cap of each replica.
const RATE: u32 = 5;
/// How many VPCs the burst creates.
const COUNT: u32 = 30;
/// Reconciles a VPC takes to become Ready in the worst case, on each
/// replica: the create, the looks while the cloud provisions it, the one
/// that late-initialises and sets Ready, and one per write of the other
/// replica that its watch delivers.
const RECONCILES_EACH: u32 = 8;
/// The full poll: far beyond the test, so that a look lost on the way
/// shows as a resource that never becomes Ready.
const POLL: &str = "--poll-interval=10m";
/// A label marking this test's objects.
const BATCH_LABEL: &str = "e2e.fakecloud.dev/batch";

#[tokio::test]
async fn two_replicas_at_a_low_rate_cap_lose_no_pending_look() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(WorldOptions {
        provisioning_delay: Duration::from_secs(1),
        provider_args: vec![
            POLL.into(),
            "--pending-poll-interval=250ms".into(),
            format!("--max-reconcile-rate={RATE}"),
        ],
        ..WorldOptions::default()
    })
    .await?;
    let second = world.start_replica().await?;
    let batch = e2e::unique_name("pacing");
    let started = Instant::now();
    stream::iter(0..COUNT)
        .map(|i| {
            world.apply::<Vpc>(json!({
                "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": { "name": format!("{batch}-{i}"), "labels": { BATCH_LABEL: &batch } },
                "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
            }))
        })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await?;

    // Every VPC's looks, on either replica, fit in this budget at the cap;
    // plus slack for a busy machine. Far below the 10 m full poll.
    let budget = Duration::from_secs(u64::from(COUNT * RECONCILES_EACH / RATE) + 10);
    let api: Api<Vpc> = Api::all(world.kube());
    let params = ListParams::default().labels(&format!("{BATCH_LABEL}={batch}"));
    let mut ready_at: BTreeMap<String, Duration> = BTreeMap::new();
    loop {
        for vpc in api.list(&params).await?.items {
            if is_ready(&vpc) && is_synced(&vpc) {
                ready_at
                    .entry(vpc.name_any())
                    .or_insert_with(|| started.elapsed());
            }
        }
        if ready_at.len() == COUNT as usize {
            break;
        }
        if started.elapsed() > budget {
            let waiting: Vec<String> = api
                .list(&params)
                .await?
                .items
                .iter()
                .filter(|o| !ready_at.contains_key(&o.name_any()))
                .map(|o| {
                    format!(
                        "{} (rv {:?}): Synced {:?}, Ready {:?}",
                        o.name_any(),
                        o.resource_version(),
                        e2e::world::condition(o, "Synced"),
                        e2e::world::condition(o, "Ready"),
                    )
                })
                .collect();
            anyhow::bail!(
                "{} of {COUNT} VPCs Ready after {budget:?} at {RATE}/s; a look was lost: {waiting:#?}",
                ready_at.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let last = ready_at.values().max().copied().unwrap_or_default();
    println!("two replicas at {RATE}/s: {COUNT} VPCs Ready in {last:?} (budget {budget:?})");

    // And nothing was created twice: fakecloud holds exactly the VPCs the
    // managed resources name, one each.
    let named: BTreeSet<String> = api
        .list(&params)
        .await?
        .items
        .iter()
        .filter_map(e2e::world::external_name)
        .collect();
    let in_cloud: BTreeSet<String> = world
        .admin
        .resources(Some(Kind::Vpc), None)
        .await?
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(named.len(), COUNT as usize, "every VPC names its cloud VPC");
    assert_eq!(in_cloud, named, "exactly one cloud VPC per managed VPC");
    second.stop().await;
    world.shutdown().await;
    Ok(())
}

//! Each cloud resource is created once: with two or three provider replicas
//! racing (no leader election, as during a rolling update), with one of them
//! killed mid-burst, with a single provider reconciling from cached copies
//! that lag behind its own writes, and when the cloud accepts a create but
//! its answer is lost. Every test counts the resources in fakecloud.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use apis::kinds::{DatabaseInstance, Subnet, Vpc};
use e2e::objects::Kind as ObjectKind;
use e2e::world::{NAMESPACE, World, WorldOptions, external_name, is_ready, is_synced};
use fakecloud::model::{Actor, AuditQuery, FaultRuleSpec, Kind};
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// How many clients apply at once, as in the measurements.
const CLIENTS: usize = 16;
/// The label that marks one test's batch of objects.
const BATCH_LABEL: &str = "e2e.fakecloud.dev/batch";

fn vpc(batch: &str, name: &str) -> Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name, "labels": { BATCH_LABEL: batch } },
        "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
    })
}

fn subnet(batch: &str, name: &str, vpc: &str) -> Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
        "metadata": { "name": name, "labels": { BATCH_LABEL: batch } },
        "spec": { "forProvider": {
            "region": "us-east-1", "vpcIdRef": { "name": vpc },
            "cidrBlock": "10.0.1.0/24", "availabilityZone": "us-east-1a",
        } },
    })
}

fn database(batch: &str, name: &str) -> Value {
    json!({
        "apiVersion": "database.fakecloud.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
        "metadata": { "name": name, "labels": { BATCH_LABEL: batch } },
        "spec": {
            "forProvider": {
                "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
                "allocatedStorage": 20, "masterUsername": "app",
            },
            "writeConnectionSecretToRef": { "namespace": NAMESPACE, "name": format!("{name}-conn") },
        },
    })
}

/// Applies every manifest, `CLIENTS` at a time, as the test's user.
async fn apply_all<K>(world: &World, manifests: Vec<Value>) -> anyhow::Result<()>
where
    K: ObjectKind,
{
    stream::iter(manifests)
        .map(|m| async move { world.apply::<K>(m).await.map(drop) })
        .buffer_unordered(CLIENTS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Waits until `expected` objects of the batch are Ready and Synced, each
/// with its own external name; returns those names.
async fn wait_batch_ready<K>(
    world: &World,
    batch: &str,
    expected: usize,
    timeout: Duration,
) -> anyhow::Result<BTreeSet<String>>
where
    K: ObjectKind,
{
    let api: Api<K> = Api::all(world.kube());
    let params = ListParams::default().labels(&format!("{BATCH_LABEL}={batch}"));
    let deadline = Instant::now() + timeout;
    loop {
        let items = api.list(&params).await?.items;
        let ready: Vec<&K> = items
            .iter()
            .filter(|o| is_ready(*o) && is_synced(*o))
            .collect();
        if ready.len() == expected {
            let names: BTreeSet<String> = ready.iter().filter_map(|o| external_name(*o)).collect();
            assert_eq!(
                names.len(),
                expected,
                "every {} has its own external name",
                K::kind(&())
            );
            return Ok(names);
        }
        if Instant::now() > deadline {
            let waiting: Vec<String> = items
                .iter()
                .filter(|o| !(is_ready(*o) && is_synced(*o)))
                .take(5)
                .map(|o| format!("{}: {:?}", o.name_any(), e2e::world::condition(o, "Synced")))
                .collect();
            anyhow::bail!(
                "{} of {expected} {} Ready after {timeout:?}; not yet, e.g.: {waiting:?}",
                ready.len(),
                K::kind(&())
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The ids of the `kind` resources fakecloud holds, in any state.
async fn cloud_ids(world: &World, kind: Kind) -> anyhow::Result<BTreeSet<String>> {
    Ok(world
        .admin
        .resources(Some(kind), None)
        .await?
        .into_iter()
        .map(|r| r.id)
        .collect())
}

/// Waits a moment for creates that might still be in flight, then checks
/// that fakecloud holds exactly the resources the managed resources name.
async fn assert_cloud_holds_exactly(
    world: &World,
    kind: Kind,
    named: &BTreeSet<String>,
) -> anyhow::Result<()> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ids = cloud_ids(world, kind).await?;
    assert_eq!(
        ids.len(),
        named.len(),
        "fakecloud holds {} {kind:?} resources for {} managed resources; unmanaged: {:?}",
        ids.len(),
        named.len(),
        ids.difference(named).take(10).collect::<Vec<_>>()
    );
    assert_eq!(
        &ids, named,
        "the managed resources name exactly the cloud's"
    );
    Ok(())
}

fn fast_world() -> WorldOptions {
    WorldOptions {
        provisioning_delay: Duration::ZERO,
        ..WorldOptions::default()
    }
}

#[tokio::test]
async fn two_replicas_create_each_of_50_vpcs_once() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(fast_world()).await?;
    let second = world.start_replica().await?;
    let batch = e2e::unique_name("two");
    let manifests = (0..50)
        .map(|i| vpc(&batch, &format!("{batch}-{i}")))
        .collect();

    let started = Instant::now();
    apply_all::<Vpc>(&world, manifests).await?;
    let names = wait_batch_ready::<Vpc>(&world, &batch, 50, Duration::from_secs(60)).await?;
    println!("two replicas: 50 VPCs Ready in {:?}", started.elapsed());
    assert_cloud_holds_exactly(&world, Kind::Vpc, &names).await?;
    second.stop().await;
    Ok(())
}

#[tokio::test]
async fn three_replicas_one_killed_and_restarted_during_a_mixed_burst_create_each_once()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(fast_world()).await?;
    let second = world.start_replica().await?;
    let third = world.start_replica().await?;
    let batch = e2e::unique_name("three");
    // 100 resources: 40 VPCs, a Subnet in each, 20 databases.
    let vpcs: Vec<String> = (0..40).map(|i| format!("{batch}-vpc-{i}")).collect();
    let started = Instant::now();

    let first_half: Vec<Value> = vpcs[..20].iter().map(|n| vpc(&batch, n)).collect();
    let second_half: Vec<Value> = vpcs[20..].iter().map(|n| vpc(&batch, n)).collect();
    let subnets: Vec<Value> = vpcs
        .iter()
        .map(|v| subnet(&batch, &format!("{v}-subnet"), v))
        .collect();
    let databases: Vec<Value> = (0..20)
        .map(|i| database(&batch, &format!("{batch}-db-{i}")))
        .collect();

    apply_all::<Vpc>(&world, first_half).await?;
    apply_all::<DatabaseInstance>(&world, databases[..10].to_vec()).await?;
    // Mid-burst: one replica dies as SIGKILL would end it, creates in flight.
    third.kill();
    apply_all::<Subnet>(&world, subnets).await?;
    apply_all::<Vpc>(&world, second_half).await?;
    // It comes back (a restarted pod) while the burst goes on.
    let restarted = world.start_replica().await?;
    apply_all::<DatabaseInstance>(&world, databases[10..].to_vec()).await?;

    let timeout = Duration::from_secs(120);
    let vpc_ids = wait_batch_ready::<Vpc>(&world, &batch, 40, timeout).await?;
    let subnet_ids = wait_batch_ready::<Subnet>(&world, &batch, 40, timeout).await?;
    let db_ids = wait_batch_ready::<DatabaseInstance>(&world, &batch, 20, timeout).await?;
    println!(
        "three replicas, one killed and restarted: 100 resources Ready in {:?}",
        started.elapsed()
    );
    assert_cloud_holds_exactly(&world, Kind::Vpc, &vpc_ids).await?;
    assert_cloud_holds_exactly(&world, Kind::Subnet, &subnet_ids).await?;
    assert_cloud_holds_exactly(&world, Kind::DatabaseInstance, &db_ids).await?;
    second.stop().await;
    restarted.stop().await;
    Ok(())
}

#[tokio::test]
async fn one_provider_creates_each_of_1000_vpcs_applied_while_it_runs_once() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(WorldOptions {
        provider_args: vec![
            "--poll-interval=1m".into(),
            "--pending-poll-interval=1s".into(),
        ],
        ..fast_world()
    })
    .await?;
    let batch = e2e::unique_name("thousand");
    let manifests = (0..1000)
        .map(|i| vpc(&batch, &format!("{batch}-{i}")))
        .collect();

    let started = Instant::now();
    apply_all::<Vpc>(&world, manifests).await?;
    let applied = started.elapsed();
    let names = wait_batch_ready::<Vpc>(&world, &batch, 1000, Duration::from_secs(300)).await?;
    println!(
        "one provider: 1000 VPCs applied in {applied:?}, all Ready in {:?}",
        started.elapsed()
    );
    assert_cloud_holds_exactly(&world, Kind::Vpc, &names).await?;
    Ok(())
}

#[tokio::test]
async fn a_create_whose_answer_is_lost_leaves_one_resource_and_becomes_ready() -> anyhow::Result<()>
{
    e2e::init_tracing();
    let world = World::start_with(fast_world()).await?;
    let path = "/v1/regions/us-east-1/vpcs";
    // The cloud creates the VPC, but the answer to this and the client's
    // four retries (same key, so replays) is lost: the provider's first
    // reconcile sees only 502s and must not create a second VPC later.
    world
        .admin
        .add_fault(&FaultRuleSpec {
            method: Some("POST".into()),
            path_prefix: path.into(),
            status: Some(502),
            times: Some(5),
            after_call: true,
            ..Default::default()
        })
        .await?;
    let batch = e2e::unique_name("lost");
    let name = format!("{batch}-vpc");
    world.apply::<Vpc>(vpc(&batch, &name)).await?;

    let ids = wait_batch_ready::<Vpc>(&world, &batch, 1, Duration::from_secs(60)).await?;
    assert_cloud_holds_exactly(&world, Kind::Vpc, &ids).await?;
    let posts = world
        .admin
        .audit(&AuditQuery {
            method: Some("POST".into()),
            actor: Some(Actor::Api),
            path_prefix: Some(path.into()),
            ..AuditQuery::default()
        })
        .await?;
    let statuses: Vec<u16> = posts.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 502).count(),
        5,
        "{statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&201), "{statuses:?}");
    Ok(())
}

#[tokio::test]
async fn a_vpc_deleted_behind_the_providers_back_is_created_again_once() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(fast_world()).await?;
    let batch = e2e::unique_name("gone");
    let name = format!("{batch}-vpc");
    world.apply::<Vpc>(vpc(&batch, &name)).await?;
    let first = wait_batch_ready::<Vpc>(&world, &batch, 1, Duration::from_secs(30)).await?;
    let first = first.into_iter().next().expect("one name");

    // Another team deletes it in the cloud. The next create must make a new
    // VPC, not be answered with the deleted one by the idempotency key.
    world.cloud.delete_vpc("us-east-1", &first).await?;
    let recreated = world
        .wait_for::<Vpc>(&name, "a new external name", Duration::from_secs(30), |v| {
            external_name(v).is_some_and(|n| n != first) && is_ready(v)
        })
        .await?;
    let second = external_name(&recreated).expect("external name");
    let expected = BTreeSet::from([second]);
    assert_cloud_holds_exactly(&world, Kind::Vpc, &expected).await?;
    Ok(())
}

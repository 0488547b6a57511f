//! Query benchmark: a `VPCQuery` matching N cloud VPCs, from the query's
//! apply to N Ready observe-only VPCs, against the same N observe-only
//! VPCs applied by hand, on one control plane and one provider in one run.
//!
//! `cargo run --release -p e2e --bin bench_query [-- --count 1000 --clients 16]`
//!
//! 1. N VPCs are made in fakecloud directly, tagged `bench=query` (outside
//!    Kubernetes, as another team's would be).
//! 2. **The query**: one `VPCQuery` for `bench=query` in namespace
//!    `bench-query`; timed from its apply until its N observe-only VPCs
//!    are Ready, once the query controller runs (a query matching nothing
//!    is `Synced` first: the controller starts with its CRD, moments
//!    before, and a user's has long been running). The query is then deleted, and Kubernetes deletes its
//!    VPCs, before the next step.
//! 3. **By hand**: the same N observe-only VPCs (external name, region,
//!    `managementPolicies: ["Observe"]`) applied by `--clients` concurrent
//!    clients in namespace `bench-hand`, as a user's script would; timed
//!    from the first apply until all are Ready. This step runs second, on
//!    the warmer server, so the ratio errs against the query.
//!
//! It prints both times and their ratio, the query's list calls to
//! fakecloud (each listing is paged, at most 500 VPCs a call) and every
//! mutating call either way, and fails unless each step made exactly one
//! observe-only VPC per cloud VPC, nothing mutated the cloud, and the
//! query took at most 3x the time by hand.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apis::kinds::VpcQuery;
use apis::kinds::vpc::m::Vpc;
use clap::Parser;
use crossplane_types::query::name_label;
use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use e2e::world::{World, WorldOptions, is_ready, is_synced};
use fakecloud::model::{AuditQuery, CreateVpc, Kind};
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use provider::queries::PAGE_SIZE;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// How many cloud VPCs the query matches.
    #[arg(long, default_value_t = 1000)]
    count: usize,
    /// Clients applying at once, by hand (and making the cloud VPCs).
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Extra provider flags (repeatable), e.g. `--provider-arg=--kube-qps=500`.
    #[arg(long = "provider-arg", allow_hyphen_values = true)]
    provider_args: Vec<String>,
}

/// The region every VPC is in.
const REGION: &str = "us-east-1";
/// The namespaces of the two steps.
const QUERY_NAMESPACE: &str = "bench-query";
const HAND_NAMESPACE: &str = "bench-hand";
/// The label of the VPCs applied by hand.
const HAND_LABEL: &str = "bench";
/// The most the query may take, as a multiple of the time by hand.
const TARGET_RATIO: f64 = 3.0;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut provider_args = vec!["--poll-interval=1m".to_owned()];
    provider_args.extend(args.provider_args.iter().cloned());
    let world = World::start_with(WorldOptions {
        provisioning_delay: Duration::ZERO,
        provider_args,
        ..WorldOptions::default()
    })
    .await?;
    world.admin.set_timing(Kind::Vpc, Duration::ZERO).await?;
    for namespace in [QUERY_NAMESPACE, HAND_NAMESPACE] {
        world.create_namespace(namespace).await?;
    }

    let ids = cloud_vpcs(&world, args.count, args.clients).await?;
    warm_up(&world).await?;
    let mark = world.audit_mark().await?;
    let writes_before = world
        .metrics
        .total_with("provider_kube_writes_total", &[("kind", "VPCQuery.m")]);
    let n = ids.len();

    // The query.
    let label = format!("{}=bench", name_label::<VpcQuery>());
    let watching = tokio::spawn(count_ready(world.kube(), QUERY_NAMESPACE, label, n));
    let queries = Api::<VpcQuery>::namespaced(world.kube(), QUERY_NAMESPACE);
    let query_start = Instant::now();
    apply_query(&queries, "bench", "bench=query").await?;
    let query_seen = within_an_hour(watching).await?;
    let by_query = query_start.elapsed();
    let lists = list_calls(&world, mark).await?;
    let query_writes = world
        .metrics
        .total_with("provider_kube_writes_total", &[("kind", "VPCQuery.m")])
        - writes_before;
    let made = Api::<Vpc>::namespaced(world.kube(), QUERY_NAMESPACE)
        .list(&ListParams::default())
        .await?
        .items;
    let one_each = made.len() == n && distinct_external_names(&made) == n;
    queries.delete("bench", &Default::default()).await?;
    gone(&world, QUERY_NAMESPACE).await?;

    // By hand.
    let watching = tokio::spawn(count_ready(
        world.kube(),
        HAND_NAMESPACE,
        format!("{HAND_LABEL}=hand"),
        n,
    ));
    let hand_start = Instant::now();
    apply_by_hand(&world, &ids, args.clients).await?;
    let hand_seen = within_an_hour(watching).await?;
    let by_hand = hand_start.elapsed();
    let made = Api::<Vpc>::namespaced(world.kube(), HAND_NAMESPACE)
        .list(&ListParams::default())
        .await?
        .items;
    let one_each_by_hand = made.len() == n && distinct_external_names(&made) == n;

    let mutations = world.mutating_calls("/v1/", mark).await?.len();
    let in_cloud = world.admin.resources(Some(Kind::Vpc), None).await?.len();
    let ratio = by_query.as_secs_f64() / by_hand.as_secs_f64();
    println!("cloud VPCs matched:            {n}");
    println!(
        "query -> {n} Ready VPCs:      {by_query:.2?} ({:.1}/s)",
        n as f64 / by_query.as_secs_f64()
    );
    println!(
        "by hand -> {n} Ready VPCs:    {by_hand:.2?} ({:.1}/s, {} clients)",
        n as f64 / by_hand.as_secs_f64(),
        args.clients
    );
    println!("query / by hand:               {ratio:.2}x (target: at most {TARGET_RATIO}x)");
    let since = |seen: Seen, start: Instant| {
        format!(
            "first VPC {:.2?}, all {n} {:.2?}",
            seen.first.duration_since(start),
            seen.all.duration_since(start)
        )
    };
    println!(
        "query's VPCs appeared:         {}",
        since(query_seen, query_start)
    );
    println!(
        "by hand, VPCs appeared:        {}",
        since(hand_seen, hand_start)
    );
    let pages = n.div_ceil(PAGE_SIZE as usize).max(1);
    println!(
        "query's list calls:            {lists} ({:.0} listing(s) x {pages} pages of at most {PAGE_SIZE} VPCs)",
        lists as f64 / pages as f64
    );
    println!("query's API writes:            {query_writes} (the VPCs, the status, an Event)");
    println!("mutating calls to fakecloud:   {mutations}");
    println!("cloud VPCs at the end:         {in_cloud}");

    anyhow::ensure!(
        one_each,
        "the query did not make one observe-only VPC per match"
    );
    anyhow::ensure!(
        one_each_by_hand,
        "by hand did not make one observe-only VPC per VPC"
    );
    anyhow::ensure!(mutations == 0, "{mutations} mutating calls");
    anyhow::ensure!(
        lists > 0 && lists % pages == 0,
        "{lists} list calls are not whole listings of {pages} pages"
    );
    anyhow::ensure!(in_cloud == n, "fakecloud holds {in_cloud} VPCs, not {n}");
    anyhow::ensure!(
        ratio <= TARGET_RATIO,
        "the query took {ratio:.2}x the time by hand"
    );
    world.shutdown().await;
    Ok(())
}

/// Waits until the query controller runs with its caches listed: it starts
/// when its CRD is established, moments before the benchmark, and its
/// first reconcile waits for its watch of managed resources to list. A
/// user's provider has long been running; so has the VPC controller that
/// the step by hand uses. A query matching nothing, once `Synced`, shows
/// it; it is deleted before the clock starts.
async fn warm_up(world: &World) -> anyhow::Result<()> {
    let queries = Api::<VpcQuery>::namespaced(world.kube(), QUERY_NAMESPACE);
    apply_query(&queries, "warm-up", "bench=nothing").await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !is_synced(&queries.get("warm-up").await?) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the query controller did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    queries.delete("warm-up", &Default::default()).await?;
    Ok(())
}

/// Applies the VPCQuery `name` for the VPCs of `REGION` tagged `tag`.
async fn apply_query(queries: &Api<VpcQuery>, name: &str, tag: &str) -> anyhow::Result<()> {
    queries
        .patch(
            name,
            &PatchParams::apply("bench").force(),
            &Patch::Apply(json!({
                "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPCQuery",
                "metadata": { "name": name },
                "spec": { "filter": { "region": REGION, "tags": [tag] } },
            })),
        )
        .await?;
    Ok(())
}

/// Makes `count` VPCs in fakecloud, `clients` at a time; returns their ids.
async fn cloud_vpcs(world: &World, count: usize, clients: usize) -> anyhow::Result<Vec<String>> {
    stream::iter(0..count)
        .map(|i| async move {
            let body: CreateVpc = serde_json::from_value(json!({
                "cidrBlock": format!("10.{}.{}.0/24", i / 256 % 256, i % 256),
                "tags": { "bench": "query" },
            }))?;
            Ok::<_, anyhow::Error>(
                world
                    .cloud
                    .create_vpc(REGION, &body, None)
                    .await?
                    .resource
                    .id,
            )
        })
        .buffer_unordered(clients)
        .try_collect()
        .await
}

/// The GETs of the VPC collection after `mark`: the query's list calls
/// (the audit records a path without its query string).
async fn list_calls(world: &World, mark: i64) -> anyhow::Result<usize> {
    let collection = format!("/v1/regions/{REGION}/vpcs");
    Ok(world
        .admin
        .audit(&AuditQuery {
            actor: Some(fakecloud::model::Actor::Api),
            method: Some("GET".into()),
            path_prefix: Some(collection.clone()),
            after_seq: Some(mark),
            ..AuditQuery::default()
        })
        .await?
        .into_iter()
        .filter(|c| c.path == collection)
        .count())
}

fn distinct_external_names(vpcs: &[Vpc]) -> usize {
    vpcs.iter()
        .filter_map(|v| v.annotations().get(EXTERNAL_NAME_ANNOTATION))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// Applies one observe-only VPC per id, `clients` at a time.
async fn apply_by_hand(world: &World, ids: &[String], clients: usize) -> anyhow::Result<()> {
    let api = Api::<Vpc>::namespaced(world.kube(), HAND_NAMESPACE);
    stream::iter(ids)
        .map(|id| {
            let api = api.clone();
            async move {
                let name = format!("hand-{id}");
                api.patch(
                    &name,
                    &PatchParams::apply("bench").force(),
                    &Patch::Apply(json!({
                        "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPC",
                        "metadata": { "name": name, "labels": { HAND_LABEL: "hand" },
                                      "annotations": { EXTERNAL_NAME_ANNOTATION: id } },
                        "spec": { "managementPolicies": ["Observe"], "forProvider": { "region": REGION } },
                    })),
                )
                .await
                .map(drop)
            }
        })
        .buffer_unordered(clients)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// When the first of the VPCs appeared and when the last did, as the
/// watch saw them: where the time before Ready goes.
#[derive(Clone, Copy)]
struct Seen {
    first: Instant,
    all: Instant,
}

/// Returns once `total` VPCs matching `labels` in `namespace` are Ready,
/// watching rather than polling the API server.
async fn count_ready(
    kube: kube::Client,
    namespace: &'static str,
    labels: String,
    total: usize,
) -> anyhow::Result<Seen> {
    let ready = Arc::new(Mutex::new(BTreeMap::<String, bool>::new()));
    let (mut first, mut all) = (None, None);
    let events = watcher(
        Api::<Vpc>::namespaced(kube, namespace),
        watcher::Config::default().labels(&labels),
    )
    .default_backoff()
    .applied_objects();
    tokio::pin!(events);
    while let Some(event) = events.next().await {
        // A watch error is passed through; the watcher relists by itself.
        let Ok(vpc) = event else { continue };
        let mut ready = ready.lock().expect("ready lock");
        ready.insert(vpc.name_any(), is_ready(&vpc));
        let now = Instant::now();
        first.get_or_insert(now);
        if ready.len() == total {
            all.get_or_insert(now);
        }
        if ready.values().filter(|r| **r).count() == total {
            return Ok(Seen {
                first: first.unwrap_or(now),
                all: all.unwrap_or(now),
            });
        }
    }
    anyhow::bail!("the watch ended")
}

async fn within_an_hour(
    watching: tokio::task::JoinHandle<anyhow::Result<Seen>>,
) -> anyhow::Result<Seen> {
    tokio::time::timeout(Duration::from_secs(3600), watching)
        .await
        .map_err(|_| anyhow::anyhow!("not all Ready within an hour"))??
}

/// Waits until `namespace` holds no VPC (deleted with their query).
async fn gone(world: &World, namespace: &str) -> anyhow::Result<()> {
    let api = Api::<Vpc>::namespaced(world.kube(), namespace);
    let deadline = Instant::now() + Duration::from_secs(600);
    while !api.list(&ListParams::default()).await?.items.is_empty() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the query's VPCs were not deleted with it"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

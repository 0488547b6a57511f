//! Query resources (seed 000, Future Work, Option A) on a real API server:
//! a `VPCQuery` follows the cloud (matches made, appearing, disappearing),
//! a managed Subnet selects a matched VPC by the query's label, deleting
//! the query leaves the cloud untouched, a provider killed mid-creation
//! creates no duplicate, bad filters are refused by the schema or reported
//! on `Synced`, every query kind finds its own, and each query controller
//! starts when its CRD appears. The story the demo
//! shows is [`e2e::scenarios::query`]. Every test counts what fakecloud
//! holds at its end, and checks fakecloud's audit for mutating calls.

use std::collections::BTreeSet;
use std::time::Duration;

use apis::kinds::nodegroup::m::NodeGroup;
use apis::kinds::subnet::m::Subnet;
use apis::kinds::vpc::m::Vpc;
use apis::kinds::{DatabaseInstanceQuery, NodeGroupQuery, SubnetQuery, VpcQuery};
use crossplane_types::query::{MOST_RECENT_OR_LIMIT, name_label};
use e2e::scenarios::query::{self, listed_matches, match_count, wait_for_matches};
use e2e::scenarios::{READY, REGION, Verdict};
use e2e::scope::APP;
use e2e::world::{World, condition, external_name, is_ready, is_synced};
use fakecloud::model::{
    CreateDatabaseInstance, CreateNodeGroup, CreateSubnet, CreateVpc, Engine, Kind,
};
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

/// Writes the query controllers make, of every query kind.
fn query_writes(world: &World) -> f64 {
    [
        "VPCQuery.m",
        "SubnetQuery.m",
        "NodeGroupQuery.m",
        "DatabaseInstanceQuery.m",
    ]
    .iter()
    .map(|kind| {
        world
            .metrics
            .total_with("provider_kube_writes_total", &[("kind", kind)])
    })
    .sum()
}

/// How many resources of `kind` fakecloud holds.
async fn in_cloud(world: &World, kind: Kind) -> anyhow::Result<usize> {
    Ok(world.admin.resources(Some(kind), None).await?.len())
}

/// Three VPCs of team B, one of team C: the query for team B gets three
/// observe-only VPCs; a Subnet selects one of them by label; a fourth VPC of
/// team B gets its own on the next poll; one deleted in the cloud loses
/// its; a steady query writes nothing; deleting the query deletes its VPCs
/// and no cloud resource.
#[tokio::test]
async fn a_query_follows_the_cloud_and_deleting_it_leaves_the_cloud_untouched() -> anyhow::Result<()>
{
    e2e::init_tracing();
    let world = World::start().await?;
    let app = world.objects.in_namespace(APP);
    let stage = world.stage();
    let stage = stage.with(&app);
    let mut verdict = Verdict::default();
    let mut ids = query::make_team_vpcs(
        &stage,
        "b",
        &["10.20.0.0/16", "10.21.0.0/16", "10.22.0.0/16"],
    )
    .await?;
    query::make_team_vpcs(&stage, "c", &["10.30.0.0/16"]).await?;
    query::apply_query(&stage, "team-b", "b", &ids, &mut verdict).await?;

    // Steady: polls list the cloud, and write nothing to the API server.
    let writes = query_writes(&world);
    let lists = world
        .metrics
        .total_with("provider_cloud_calls_total", &[("kind", "VPCQuery.m")]);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        query_writes(&world),
        writes,
        "a steady query writes nothing"
    );
    assert!(
        world
            .metrics
            .total_with("provider_cloud_calls_total", &[("kind", "VPCQuery.m")])
            >= lists + 1.0,
        "it lists again on its poll"
    );

    let chosen =
        query::subnet_by_selector(&stage, "team-b", "app-subnet", &ids, &mut verdict).await?;
    query::match_appears(
        &stage,
        "team-b",
        "b",
        "10.23.0.0/16",
        &mut ids,
        &mut verdict,
    )
    .await?;
    let gone = ids
        .iter()
        .find(|id| **id != chosen)
        .cloned()
        .expect("a VPC without the Subnet");
    query::match_disappears(&stage, "team-b", &gone, &mut ids, &mut verdict).await?;
    query::delete_query(&stage, "team-b", &ids, &mut verdict).await?;
    verdict.require()?;

    // The Subnet still resolves to its VPC, which no query owns any more.
    let subnet = app
        .wait_for::<Subnet>("app-subnet", "still Ready", READY, is_ready)
        .await?;
    assert!(is_synced(&subnet));
    // Team B's three left, team C's one; the one Subnet the provider made.
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, 4);
    assert_eq!(in_cloud(&world, Kind::Subnet).await?, 1);
    world.shutdown().await;
    Ok(())
}

/// How many VPCs in [`APP`] carry the label of the VPCQuery `query`.
/// Read at `v1beta1`, the stored version, so that the API server answers
/// without calling the conversion webhook (served by this test process):
/// through the webhook, on a busy machine, a list of 120 VPCs came back
/// after the provider had made them all, and the kill below missed the
/// middle of the creation it is meant to land in.
async fn owned_count(world: &World, query: &str) -> anyhow::Result<usize> {
    let api = Api::<apis::kinds::vpc::v1beta1::Vpc>::namespaced(world.kube(), APP);
    let selector = format!("{}={query}", name_label::<VpcQuery>());
    Ok(api
        .list_metadata(&ListParams::default().labels(&selector))
        .await?
        .items
        .len())
}

/// A provider killed while its query is creating observe-only VPCs: the
/// next one converges on the same names, so there is exactly one VPC per
/// match, and the cloud saw no mutating call.
#[tokio::test]
async fn a_provider_killed_mid_creation_leaves_no_duplicate() -> anyhow::Result<()> {
    const MATCHES: usize = 120;
    e2e::init_tracing();
    // A slow API-server pace, so creating the VPCs takes seconds and the
    // kill surely lands in the middle.
    let mut world = World::start_with(e2e::world::WorldOptions {
        provider_args: vec![
            "--poll-interval=1s".into(),
            "--pending-poll-interval=250ms".into(),
            "--kube-qps=40".into(),
        ],
        ..Default::default()
    })
    .await?;
    world.stop_provider().await;
    let app = world.objects.in_namespace(APP);
    let cidrs: Vec<String> = (0..MATCHES).map(|i| format!("10.{i}.0.0/16")).collect();
    let cidrs: Vec<&str> = cidrs.iter().map(String::as_str).collect();
    let ids = query::make_team_vpcs(&world.stage().with(&app), "bulk", &cidrs).await?;
    let mark = world.audit_mark().await?;

    let replica = world.start_replica().await?;
    app.apply::<VpcQuery>(query::query_manifest("bulk", "bulk"))
        .await?;
    let deadline = tokio::time::Instant::now() + READY;
    let mut made = 0;
    while made == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        made = owned_count(&world, "bulk").await?;
    }
    replica.kill();
    let at_kill = owned_count(&world, "bulk").await?;
    tracing::info!("killed the provider with {at_kill} of {MATCHES} observe-only VPCs made");
    assert!(
        at_kill > 0 && at_kill < MATCHES,
        "the kill came mid-creation ({at_kill} of {MATCHES})"
    );

    world.start_provider()?;
    let stage = world.stage();
    let stage = stage.with(&app);
    let expected: BTreeSet<String> = ids.iter().cloned().collect();
    let (reported, vpcs) = wait_for_matches(&stage, "bulk", &expected, READY * 2).await?;
    assert_eq!(match_count(&reported), Some(MATCHES as i64));
    assert_eq!(vpcs.len(), MATCHES, "one observe-only VPC per match");
    let names: BTreeSet<String> = vpcs.iter().map(ResourceExt::name_any).collect();
    let external: BTreeSet<String> = vpcs.iter().filter_map(external_name).collect();
    assert_eq!((names.len(), external.len()), (MATCHES, MATCHES));
    for vpc in &vpcs {
        let id = external_name(vpc).unwrap_or_default();
        assert_eq!(vpc.name_any(), format!("bulk-{id}"), "deterministic name");
    }
    // Every VPC of the namespace is the query's: none was made twice under
    // another name.
    let all = Api::<Vpc>::namespaced(world.kube(), APP)
        .list(&ListParams::default())
        .await?;
    assert_eq!(all.items.len(), MATCHES);
    let mutations = world.mutating_calls("/v1/", mark).await?;
    assert!(mutations.is_empty(), "the query mutated: {mutations:?}");
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, MATCHES);
    world.shutdown().await;
    Ok(())
}

/// A VPCQuery manifest with the given spec.
fn vpc_query(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPCQuery",
        "metadata": { "name": name }, "spec": spec,
    })
}

/// `Synced=False` with `text` in its message, `Ready=False`, and no
/// managed resource for the query `name`.
async fn reported(world: &World, name: &str, text: &str) -> anyhow::Result<()> {
    let app = world.objects.in_namespace(APP);
    let query = app
        .wait_for::<VpcQuery>(name, &format!("Synced=False saying {text:?}"), READY, |q| {
            condition(q, "Synced")
                .is_some_and(|(status, _, message)| status == "False" && message.contains(text))
        })
        .await?;
    let (_, reason, message) = condition(&query, "Synced").expect("Synced");
    tracing::info!("VPCQuery/{name}: Synced=False {reason}: {message}");
    assert_eq!(reason, "ReconcileError");
    let (ready, ready_reason, _) = condition(&query, "Ready").expect("Ready");
    assert_eq!(
        (ready.as_str(), ready_reason.as_str()),
        ("False", "Unavailable")
    );
    // No managed resource at all yet in the namespace (a 64-character
    // name cannot even be selected by label).
    let vpcs = Api::<Vpc>::namespaced(world.kube(), APP)
        .list(&ListParams::default())
        .await?;
    assert!(vpcs.items.is_empty(), "{name} made {:?}", vpcs.items);
    Ok(())
}

/// What the schema can say it says at apply time, on every API server;
/// what it cannot, the controller reports on `Synced` (and, from Kubernetes
/// 1.25, the CEL rules refuse at apply time too). A filter that matches
/// nothing is Ready with zero matches; a refused query that is fixed goes
/// on at once.
#[tokio::test]
async fn a_bad_filter_is_refused_at_apply_time_or_reported_on_synced() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let app = world.objects.in_namespace(APP);
    let mark = world.audit_mark().await?;
    query::make_team_vpcs(&world.stage().with(&app), "b", &["10.20.0.0/16"]).await?;
    let mark_after_setup = world.audit_mark().await?;

    let base = |filter: Value| json!({ "filter": filter });
    for (spec, field) in [
        (base(json!({ "region": "Mars" })), "spec.filter.region"),
        (
            base(json!({ "region": "us-east-1", "tags": ["=b"] })),
            "spec.filter.tags",
        ),
        (
            base(json!({ "region": "us-east-1", "state": "gone" })),
            "spec.filter.state",
        ),
        (
            base(json!({ "region": "us-east-1", "cidrBlock": "10.0/16" })),
            "spec.filter.cidrBlock",
        ),
        (
            json!({ "filter": { "region": "us-east-1" }, "limit": 0 }),
            "spec.limit",
        ),
        (json!({ "limit": 3 }), "spec.filter"),
    ] {
        let refused = app
            .apply::<VpcQuery>(vpc_query("refused", spec.clone()))
            .await;
        match refused {
            Err(e2e::objects::ObjectsError::Kube(kube::Error::Api(status))) => {
                tracing::info!("refused at apply time: {}", status.message);
                assert_eq!(status.code, 422, "{spec}");
                assert!(status.message.contains(field), "{spec}: {}", status.message);
            }
            other => panic!("{spec} was not refused: {other:?}"),
        }
    }
    let no_cluster = app
        .apply::<NodeGroupQuery>(json!({
            "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "NodeGroupQuery",
            "metadata": { "name": "refused" }, "spec": { "filter": { "region": "us-east-1" } },
        }))
        .await;
    assert!(
        matches!(&no_cluster, Err(e2e::objects::ObjectsError::Kube(kube::Error::Api(s)))
            if s.code == 422 && s.message.contains("spec.filter.clusterName")),
        "{no_cluster:?}"
    );

    // What the schema cannot say: the controller reports it, and lists
    // nothing.
    let cel = world.cluster.supports_cel_rules();
    let mut cases = vec![
        (
            "two-teams",
            base(json!({ "region": "us-east-1", "tags": ["team=a", "team=b"] })),
            "requires tag \"team\" to be \"a\" and \"b\" at once",
        ),
        (
            "host-bits",
            base(json!({ "region": "us-east-1", "cidrBlock": "10.20.0.1/16" })),
            "has host bits set, and the cloud records ranges without them: use 10.20.0.0/16",
        ),
        (
            "far-away",
            base(json!({ "region": "ap-south-1" })),
            "404 InvalidRegion: region \"ap-south-1\" does not exist",
        ),
    ];
    let long_name = "q".repeat(64);
    if !cel {
        cases.push((
            "both",
            json!({ "filter": { "region": "us-east-1" }, "mostRecent": true, "limit": 2 }),
            MOST_RECENT_OR_LIMIT,
        ));
        cases.push((
            long_name.as_str(),
            base(json!({ "region": "us-east-1" })),
            "the query's name is 64 characters long",
        ));
    }
    for (name, spec, _) in &cases {
        app.apply::<VpcQuery>(vpc_query(name, spec.clone())).await?;
    }
    for (name, _, text) in &cases {
        reported(&world, name, text).await?;
    }

    // A filter that matches nothing is Ready, with zero matches, and says so.
    app.apply::<VpcQuery>(vpc_query(
        "nobody",
        base(json!({ "region": "us-west-2", "tags": ["team=b"] })),
    ))
    .await?;
    let nobody = app
        .wait_for::<VpcQuery>("nobody", "Ready with zero matches", READY, |q| {
            is_ready(q) && is_synced(q) && match_count(q) == Some(0)
        })
        .await?;
    let (_, _, message) = condition(&nobody, "Ready").expect("Ready");
    assert_eq!(
        message,
        "no VPC matches the filter: there is nothing to observe"
    );

    // Fixed, the refused query goes on at once: the edit cuts its backoff
    // short.
    app.apply::<VpcQuery>(vpc_query(
        "two-teams",
        base(json!({ "region": "us-east-1", "tags": ["team=b"] })),
    ))
    .await?;
    let fixed = app
        .wait_for::<VpcQuery>("two-teams", "one match", Duration::from_secs(10), |q| {
            is_ready(q) && is_synced(q) && match_count(q) == Some(1)
        })
        .await?;
    assert_eq!(listed_matches(&fixed).len(), 1);

    let mutations = world.mutating_calls("/v1/", mark_after_setup).await?;
    assert!(mutations.is_empty(), "queries mutated: {mutations:?}");
    assert_eq!(
        world.mutating_calls("/v1/", mark).await?.len(),
        1,
        "team B's create only"
    );
    assert_eq!(in_cloud(&world, Kind::Vpc).await?, 1);
    world.shutdown().await;
    Ok(())
}

/// Waits until the query `Q` named `name` reports `n` matches, Ready and
/// Synced.
async fn settled<Q: e2e::objects::Kind + serde::Serialize>(
    world: &World,
    name: &str,
    n: i64,
) -> anyhow::Result<Q> {
    let app = world.objects.in_namespace(APP);
    Ok(app
        .wait_for::<Q>(name, &format!("{n} matches"), READY, |q| {
            let status = serde_json::to_value(q).unwrap_or_default();
            is_ready(q) && is_synced(q) && status["status"]["matchCount"] == n
        })
        .await?)
}

/// The managed resources of kind `K` carrying the query `Q`'s label for
/// `query`, each Ready, once there are `n`: their external names.
async fn observed<Q, K>(world: &World, query: &str, n: usize) -> anyhow::Result<BTreeSet<String>>
where
    Q: Resource<DynamicType = ()>,
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(world.kube(), APP);
    let selector = format!("{}={query}", name_label::<Q>());
    let deadline = tokio::time::Instant::now() + READY;
    loop {
        let items = api
            .list(&ListParams::default().labels(&selector))
            .await?
            .items;
        if items.len() == n && items.iter().all(|i| is_ready(i) && is_synced(i)) {
            return Ok(items.iter().filter_map(external_name).collect());
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{query}: {} of {n} Ready",
            items.iter().filter(|i| is_ready(*i)).count()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A SubnetQuery by VPC, a NodeGroupQuery by cluster, a
/// DatabaseInstanceQuery by engine each find exactly theirs, whose
/// observe-only resources become Ready; `mostRecent` keeps the newest VPC
/// and `limit` the oldest two.
#[tokio::test]
async fn every_query_kind_finds_its_own_and_most_recent_and_limit_select() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let app = world.objects.in_namespace(APP);
    let cloud = &world.cloud;
    let vpc = |cidr: &str| CreateVpc {
        cidr_block: cidr.into(),
        tags: Some([("gen".to_owned(), "x".to_owned())].into()),
        ..Default::default()
    };
    let mut vpcs = Vec::new();
    for cidr in ["10.40.0.0/16", "10.41.0.0/16", "10.42.0.0/16"] {
        vpcs.push(
            cloud
                .create_vpc(REGION, &vpc(cidr), None)
                .await?
                .resource
                .id,
        );
        // Creation times a clock tick apart, for mostRecent and limit.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let subnet = |cidr: &str| CreateSubnet {
        vpc_id: vpcs[0].clone(),
        cidr_block: cidr.into(),
        ..Default::default()
    };
    let mut subnets = BTreeSet::new();
    for cidr in ["10.40.1.0/24", "10.40.2.0/24"] {
        subnets.insert(
            cloud
                .create_subnet(REGION, &subnet(cidr), None)
                .await?
                .resource
                .id,
        );
    }
    let other_vpc_subnet = CreateSubnet {
        vpc_id: vpcs[1].clone(),
        cidr_block: "10.41.1.0/24".into(),
        ..Default::default()
    };
    cloud.create_subnet(REGION, &other_vpc_subnet, None).await?;
    let first_subnet = subnets.iter().next().cloned().unwrap_or_default();
    cloud
        .create_node_group(
            REGION,
            "prod",
            &CreateNodeGroup {
                name: "workers".into(),
                subnet_ids: vec![first_subnet],
                node_role: "arn:fake:iam::b:role/nodes".into(),
                ..Default::default()
            },
            None,
        )
        .await?;
    for (identifier, engine) in [("orders", Engine::Postgres), ("legacy", Engine::Mysql)] {
        cloud
            .create_database_instance(
                REGION,
                &CreateDatabaseInstance {
                    identifier: identifier.into(),
                    engine,
                    master_username: "app".into(),
                    master_password: "not-a-real-secret-1".into(),
                    ..Default::default()
                },
                None,
            )
            .await?;
    }
    let mark = world.audit_mark().await?;

    let manifest = |kind: &str, name: &str, spec: Value| {
        json!({ "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": kind,
                "metadata": { "name": name }, "spec": spec })
    };
    app.apply::<SubnetQuery>(manifest(
        "SubnetQuery",
        "in-first-vpc",
        json!({ "filter": { "region": REGION, "vpcId": vpcs[0] } }),
    ))
    .await?;
    app.apply::<NodeGroupQuery>(manifest(
        "NodeGroupQuery",
        "prod-groups",
        json!({ "filter": { "region": REGION, "clusterName": "prod" } }),
    ))
    .await?;
    app.apply::<DatabaseInstanceQuery>(manifest(
        "DatabaseInstanceQuery",
        "postgres",
        json!({ "filter": { "region": REGION, "engine": "postgres" } }),
    ))
    .await?;
    app.apply::<VpcQuery>(vpc_query(
        "newest",
        json!({ "filter": { "region": REGION, "tags": ["gen=x"] }, "mostRecent": true }),
    ))
    .await?;
    app.apply::<VpcQuery>(vpc_query(
        "oldest-two",
        json!({ "filter": { "region": REGION, "tags": ["gen"] }, "limit": 2 }),
    ))
    .await?;

    settled::<SubnetQuery>(&world, "in-first-vpc", 2).await?;
    assert_eq!(
        observed::<SubnetQuery, Subnet>(&world, "in-first-vpc", 2).await?,
        subnets
    );
    settled::<NodeGroupQuery>(&world, "prod-groups", 1).await?;
    assert_eq!(
        observed::<NodeGroupQuery, NodeGroup>(&world, "prod-groups", 1).await?,
        BTreeSet::from(["workers".to_owned()])
    );
    let group = app
        .get::<NodeGroup>("prod-groups-workers")
        .await?
        .expect("named after query and match");
    assert_eq!(group.spec.for_provider.cluster_name, "prod");
    settled::<DatabaseInstanceQuery>(&world, "postgres", 1).await?;
    assert_eq!(
        observed::<DatabaseInstanceQuery, apis::kinds::database_instance::m::DatabaseInstance>(
            &world, "postgres", 1
        )
        .await?,
        BTreeSet::from(["orders".to_owned()])
    );
    let newest = settled::<VpcQuery>(&world, "newest", 1).await?;
    assert_eq!(listed_matches(&newest), BTreeSet::from([vpcs[2].clone()]));
    let (_, _, message) = condition(&newest, "Ready").expect("Ready");
    assert!(message.contains("mostRecent keeps the newest"), "{message}");
    let oldest = settled::<VpcQuery>(&world, "oldest-two", 2).await?;
    assert_eq!(
        listed_matches(&oldest),
        BTreeSet::from([vpcs[0].clone(), vpcs[1].clone()])
    );
    assert_eq!(
        observed::<VpcQuery, Vpc>(&world, "oldest-two", 2).await?,
        listed_matches(&oldest)
    );

    let mutations = world.mutating_calls("/v1/", mark).await?;
    assert!(mutations.is_empty(), "queries mutated: {mutations:?}");
    assert_eq!(
        [
            in_cloud(&world, Kind::Vpc).await?,
            in_cloud(&world, Kind::Subnet).await?,
            in_cloud(&world, Kind::NodeGroup).await?,
            in_cloud(&world, Kind::DatabaseInstance).await?,
        ],
        [3, 3, 1, 2]
    );
    world.shutdown().await;
    Ok(())
}

/// Late activation, as for the managed kinds: with no CRD installed no
/// query controller runs; each starts when its CRD is Established.
#[tokio::test]
async fn each_query_controller_starts_when_its_crd_appears() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start_with(e2e::world::WorldOptions {
        install_crds: false,
        ..Default::default()
    })
    .await?;
    let running = |kind: &str| {
        world
            .metrics
            .total_with("provider_active_controllers", &[("kind", kind)])
            == 1.0
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!running("VPCQuery.m") && !running("SubnetQuery.m"));
    let crd = e2e::crds::package_crds_dir().join("query.fakecloud.m.crossplane.io_vpcqueries.yaml");
    world.cluster.install_crd_files(&[crd]).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !running("VPCQuery.m") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the VPCQuery controller did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !running("SubnetQuery.m"),
        "only the kind whose CRD appeared"
    );
    world.shutdown().await;
    Ok(())
}

/// CI's small instance of the query benchmark (`e2e/src/bin/bench_query.rs`):
/// 100 cloud VPCs through a query and by hand. The binary exits non-zero
/// unless each way made one observe-only VPC per cloud VPC, nothing
/// mutated the cloud, the listing was paged and the query took at most 3x
/// the time by hand; the report names both times.
#[test]
fn the_query_benchmark_holds_at_a_hundred_vpcs() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_bench_query"))
        .args(["--count", "100"])
        .output()
        .expect("the benchmark binary runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "benchmark failed ({}):\n{report}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    for line in [
        "query -> 100 Ready VPCs:",
        "by hand -> 100 Ready VPCs:",
        "mutating calls to fakecloud:   0",
    ] {
        assert!(report.contains(line), "no {line:?} in:\n{report}");
    }
}

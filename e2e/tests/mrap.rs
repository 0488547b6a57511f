//! Seed 002's activation flow with real ManagedResourceDefinitions (MRDs)
//! and ManagedResourceActivationPolicies (MRAPs), against a real API
//! server: the package's MRDs, installed Inactive as for a provider with
//! `safe-start`, activated by policies through the stand-in for
//! Crossplane's controllers (`e2e::crossplane_standin`); the provider,
//! running from before any of it, starts exactly the controllers whose
//! CRDs the activated MRDs give.
//!
//! The first test is the stand-in's own (no provider); the others play the
//! seed's user story. Each prints the time from an MRAP's creation to the
//! controllers it activates running.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use e2e::TestCluster;
use e2e::crossplane_standin::{
    self as standin, DefinitionStatus, Package, PolicyStatus, StandIn, activation_policy,
};
use e2e::scenarios::{Verdict, connection};
use e2e::scope::{APP, Namespaced, Scope};
use e2e::world::{World, WorldOptions, external_name, is_ready, is_synced};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use runtime::metrics::Metrics;
use serde_json::{Value, json};

/// How long activation may take: MRAP to MRD to CRD to controller.
const ACTIVATION: Duration = Duration::from_secs(15);
const READY: Duration = Duration::from_secs(40);
/// The field manager of the test's own writes, as a user's kubectl.
const USER: &str = "e2e-user";

/// The managed-resource controllers, by their metrics label: the ones
/// activation decides.
const MANAGED_KINDS: [&str; 8] = [
    "DatabaseInstance",
    "DatabaseInstance.m",
    "NodeGroup",
    "NodeGroup.m",
    "Subnet",
    "Subnet.m",
    "VPC",
    "VPC.m",
];
/// What runs once the package is installed, before any MRAP: the
/// ProviderConfig kinds, which the package delivers as plain CRDs.
const PROVIDER_CONFIGS: [&str; 3] = [
    "ClusterProviderConfig.m",
    "ProviderConfig",
    "ProviderConfig.m",
];

const VPC_M: &str = "vpcs.network.fakecloud.m.crossplane.io";
const SUBNET_M: &str = "subnets.network.fakecloud.m.crossplane.io";
const DB_M: &str = "databaseinstances.database.fakecloud.m.crossplane.io";
const DB: &str = "databaseinstances.database.fakecloud.crossplane.io";
const NODEGROUP: &str = "nodegroups.compute.fakecloud.crossplane.io";

/// Kinds whose controller runs (`provider_active_controllers` at 1), every
/// kind the provider has, sorted.
fn running(metrics: &Metrics) -> Vec<String> {
    let mut kinds: Vec<String> = metrics
        .encode()
        .lines()
        .filter_map(|line| line.strip_prefix("provider_active_controllers{kind=\""))
        .filter_map(|rest| rest.split_once("\"} "))
        .filter(|(_, value)| value.trim() == "1")
        .map(|(kind, _)| kind.to_owned())
        .collect();
    kinds.sort();
    kinds
}

/// The managed-resource controllers that run.
fn running_managed(metrics: &Metrics) -> Vec<String> {
    running(metrics)
        .into_iter()
        .filter(|kind| MANAGED_KINDS.contains(&kind.as_str()))
        .collect()
}

/// `kinds`, sorted as [`running`] is.
fn expected(kinds: &[&str]) -> Vec<String> {
    let all: BTreeSet<&str> = kinds.iter().copied().collect();
    all.into_iter().map(str::to_owned).collect()
}

/// Polls until the managed-resource controllers that run are exactly
/// `want` (and the ProviderConfig ones run); returns how long that took
/// from `since`.
async fn wait_running(metrics: &Metrics, want: &[String], since: Instant) -> Duration {
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    loop {
        let all = running(metrics);
        if running_managed(metrics) == want
            && PROVIDER_CONFIGS.iter().all(|k| all.iter().any(|r| r == k))
        {
            return since.elapsed();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "expected managed-resource controllers {want:?} beside {PROVIDER_CONFIGS:?}, running {all:?} after {ACTIVATION:?}",
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls the MRDs until `done` holds for them.
async fn wait_definitions(
    kube: &kube::Client,
    what: &str,
    done: impl Fn(&[DefinitionStatus]) -> bool,
) -> anyhow::Result<Vec<DefinitionStatus>> {
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    loop {
        let mrds = standin::definitions(kube).await?;
        if done(&mrds) {
            return Ok(mrds);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "MRDs never became {what}: {mrds:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls the MRAP until its status lists `activated` and it is Healthy.
async fn wait_policy(
    kube: &kube::Client,
    name: &str,
    activated: &[&str],
) -> anyhow::Result<PolicyStatus> {
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    loop {
        let status = standin::policy_status(kube, name).await?;
        if let Some(status) = &status
            && status.activated == activated
            && status.healthy.as_ref().is_some_and(|c| c.is_true())
        {
            return Ok(status.clone());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "MRAP {name} never listed {activated:?} and Healthy: {status:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The names of the active MRDs.
fn active(mrds: &[DefinitionStatus]) -> Vec<&str> {
    mrds.iter()
        .filter(|m| m.is_active())
        .map(|m| m.name.as_str())
        .collect()
}

/// Active MRDs are exactly `names` and each is Established; the others are
/// Inactive with the condition that says so.
fn exactly_established(mrds: &[DefinitionStatus], names: &[&str]) -> bool {
    let mut want: Vec<&str> = names.to_vec();
    want.sort_unstable();
    active(mrds) == want
        && mrds.iter().all(|m| {
            if m.is_active() {
                m.is_established()
            } else {
                m.established
                    .as_ref()
                    .is_some_and(|c| c.reason == standin::policy::REASON_INACTIVE)
            }
        })
}

/// The CRDs made from MRDs (owned by one), by name.
async fn managed_crds(kube: &kube::Client) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = Api::<CustomResourceDefinition>::all(kube.clone())
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|crd| {
            crd.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "ManagedResourceDefinition")
        })
        .filter_map(|crd| crd.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

/// Applies the MRAP `name` now; returns when it was created.
async fn apply_policy(
    kube: &kube::Client,
    name: &str,
    activate: &[&str],
) -> anyhow::Result<Instant> {
    let created = Instant::now();
    standin::apply_policy(kube, &activation_policy(name, activate), USER).await?;
    Ok(created)
}

/// The system of seed 002 before any policy: the provider running since
/// before anything of its package existed, the stand-in, and the package
/// installed as Crossplane installs a `safe-start` provider's package.
struct Flow {
    world: World,
    _standin: StandIn,
}

async fn start_flow() -> anyhow::Result<Flow> {
    let world = World::start_with(WorldOptions {
        install_crds: false,
        provider_args: vec![
            "--poll-interval=60s".into(),
            "--pending-poll-interval=250ms".into(),
        ],
        ..WorldOptions::default()
    })
    .await?;
    anyhow::ensure!(
        running(&world.metrics).is_empty(),
        "no controller before the package"
    );
    let standin =
        StandIn::start(world.kube(), Some(world.cluster.conversion_target().await?)).await?;
    let installed = Package::of_this_provider()?.install(&world.kube()).await?;
    assert_eq!(
        installed.state, "Inactive",
        "the provider declares safe-start"
    );
    assert_eq!(installed.mrds.len(), 8);
    world.create_cluster_provider_config("default").await?;
    Ok(Flow {
        world,
        _standin: standin,
    })
}

/// A namespaced VPC in [`APP`], Ready through the default
/// ClusterProviderConfig; returns its cloud id.
async fn ready_vpc(world: &World, name: &str) -> anyhow::Result<String> {
    let app = Namespaced::objects(&world.objects);
    app.apply::<apis::kinds::vpc::m::Vpc>(Namespaced::manifest(
        "network",
        "VPC",
        json!({ "name": name }),
        json!({ "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } }),
    ))
    .await?;
    let vpc = app
        .wait_for::<apis::kinds::vpc::m::Vpc>(name, "Ready", READY, |v| is_ready(v) && is_synced(v))
        .await?;
    Ok(external_name(&vpc).expect("a Ready VPC has its external name"))
}

/// The first place where `a` and `b` differ, as a path; numbers compare by
/// value (the API server writes the YAML's `0.0` back as `0`).
fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_f64() != y.as_f64()).then(|| format!("{path}: {x} != {y}"))
        }
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(x), Some(y)) => difference(x, y, &format!("{path}.{k}")),
                _ => Some(format!("{path}.{k}: present on one side only")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (x, y))| difference(x, y, &format!("{path}[{i}]"))),
        _ => (a != b).then(|| format!("{path}: {a} != {b}")),
    }
}

/// The stand-in on its own, without a provider: the package's MRDs are
/// kept exactly as written and stay Inactive; the API server rejects
/// policies without names; an MRD applied after the policy that names it
/// is activated then; a deleted CRD of an active MRD comes back; a pattern
/// the stand-in cannot match says so.
#[tokio::test]
async fn the_stand_in_keeps_mrds_as_written_and_activates_what_policies_name() -> anyhow::Result<()>
{
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    let kube = cluster.client();
    let _standin = StandIn::start(kube.clone(), Some(cluster.conversion_target().await?)).await?;
    let package = Package::of_this_provider()?;
    package.install(&kube).await?;

    // Read back, every MRD is the package's, field for field: the CRD of
    // MRDs prunes nothing a package MRD holds.
    let api = Api::<kube::api::DynamicObject>::all_with(kube.clone(), &standin::mrd_resource());
    for mrd in &package.mrds {
        let name = mrd["metadata"]["name"].as_str().unwrap_or_default();
        let stored = serde_json::to_value(api.get(name).await?)?;
        assert_eq!(
            difference(&stored["spec"], &mrd["spec"], "spec"),
            None,
            "MRD {name} as stored differs from the package's"
        );
    }
    let mrds = wait_definitions(&kube, "all Inactive", |m| exactly_established(m, &[])).await?;
    assert_eq!(mrds.len(), 8);
    assert_eq!(managed_crds(&kube).await?, Vec::<String>::new());

    // The API server itself enforces the MRAP's schema and the MRD's default.
    for bad in [json!({}), json!({ "activate": [] })] {
        let mut policy = activation_policy("bad", &[]);
        policy["spec"] = bad.clone();
        let err = standin::apply_policy(&kube, &policy, USER)
            .await
            .expect_err("an MRAP must name something to activate");
        assert!(err.to_string().contains("activate"), "{bad}: {err}");
    }
    let mrd = |plural: &str, kind: &str| {
        json!({
            "apiVersion": "apiextensions.crossplane.io/v1alpha1", "kind": "ManagedResourceDefinition",
            "metadata": { "name": format!("{plural}.example.org") },
            "spec": {
                "group": "example.org", "scope": "Cluster",
                "names": { "kind": kind, "plural": plural },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object",
                        "properties": { "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } } } }],
                "connectionDetails": [{ "name": "token", "description": "a token" }],
            },
        })
    };

    // A policy for an MRD that does not exist yet activates nothing, until
    // the MRD arrives. MRDs that leave their state out are Inactive (the
    // schema's default), and stay so unless a policy names them.
    apply_policy(&kube, "widgets", &["widgets.*"]).await?;
    let status = wait_policy(&kube, "widgets", &[]).await?;
    assert_eq!(status.activate, ["widgets.*"]);
    let applied = Instant::now();
    for (plural, kind) in [("gadgets", "Gadget"), ("widgets", "Widget")] {
        api.patch(
            &format!("{plural}.example.org"),
            &PatchParams::apply(USER),
            &Patch::Apply(&mrd(plural, kind)),
        )
        .await?;
    }
    let mrds = wait_definitions(&kube, "widgets Established", |m| {
        exactly_established(m, &["widgets.example.org"])
    })
    .await?;
    println!(
        "MRD widgets.example.org applied after the MRAP naming it -> Established {:.2}s later",
        applied.elapsed().as_secs_f64()
    );
    let widget = mrds
        .iter()
        .find(|m| m.name == "widgets.example.org")
        .unwrap();
    assert_eq!(widget.connection_details, ["token"]);
    let gadget = mrds
        .iter()
        .find(|m| m.name == "gadgets.example.org")
        .unwrap();
    assert_eq!(gadget.state, "Inactive", "the default state");
    wait_policy(&kube, "widgets", &["widgets.example.org"]).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(kube.clone());
    let crd = crds.get("widgets.example.org").await?;
    let owner = &crd.metadata.owner_references.unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("ManagedResourceDefinition", "widgets.example.org", None)
    );

    // A CRD deleted under an active MRD is made again.
    let uid = crd.metadata.uid.unwrap_or_default();
    crds.delete("widgets.example.org", &DeleteParams::default())
        .await?;
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    loop {
        if let Some(again) = crds.get_opt("widgets.example.org").await?
            && again.metadata.uid.as_deref() != Some(uid.as_str())
        {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the CRD of an active MRD was not made again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A pattern the stand-in cannot match matches nothing and says so.
    apply_policy(&kube, "classes", &["[v]pcs.*"]).await?;
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    let unhealthy = loop {
        let status = standin::policy_status(&kube, "classes").await?;
        if let Some(condition) = status.and_then(|s| s.healthy)
            && !condition.is_true()
        {
            break condition;
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no Healthy=Unknown");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(unhealthy.reason, standin::policy::REASON_ENCOUNTERED_ERRORS);
    assert!(
        unhealthy.message.unwrap_or_default().contains("[v]pcs.*"),
        "the message names the pattern"
    );
    assert_eq!(
        active(&standin::definitions(&kube).await?),
        ["widgets.example.org"]
    );
    Ok(())
}

/// Seed 002's story: a wildcard policy activates the namespaced network
/// kinds and exactly their controllers start; an exact name in a second
/// policy adds one more, and the first policy's stay (the union counts).
#[tokio::test]
async fn wildcard_and_exact_policies_start_exactly_the_controllers_of_their_union()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let flow = start_flow().await?;
    let (world, kube) = (&flow.world, flow.world.kube());
    let now = Instant::now();
    wait_running(&world.metrics, &expected(&[]), now).await;
    assert_eq!(managed_crds(&kube).await?, Vec::<String>::new());

    let created = apply_policy(&kube, "network", &["*.network.fakecloud.m.crossplane.io"]).await?;
    let took = wait_running(&world.metrics, &expected(&["Subnet.m", "VPC.m"]), created).await;
    println!(
        "MRAP network (*.network.fakecloud.m.crossplane.io) created -> VPC.m, Subnet.m controllers active {:.2}s later",
        took.as_secs_f64()
    );
    wait_definitions(&kube, "the network kinds Established", |m| {
        exactly_established(m, &[SUBNET_M, VPC_M])
    })
    .await?;
    wait_policy(&kube, "network", &[SUBNET_M, VPC_M]).await?;
    assert_eq!(managed_crds(&kube).await?, [SUBNET_M, VPC_M]);
    // The CRDs from the MRDs serve: a VPC becomes Ready in the cloud.
    let id = ready_vpc(world, "net").await?;
    let vpcs = world
        .admin
        .resources(Some(fakecloud::model::Kind::Vpc), None)
        .await?;
    assert_eq!(vpcs.len(), 1, "one VPC in fakecloud: {vpcs:?}");
    assert!(id.starts_with("vpc-"), "{id}");

    let created = apply_policy(&kube, "nodegroups", &[NODEGROUP]).await?;
    let want = expected(&["NodeGroup", "Subnet.m", "VPC.m"]);
    let took = wait_running(&world.metrics, &want, created).await;
    println!(
        "MRAP nodegroups ({NODEGROUP}) created -> NodeGroup controller active {:.2}s later",
        took.as_secs_f64()
    );
    wait_definitions(&kube, "the union Established", |m| {
        exactly_established(m, &[NODEGROUP, SUBNET_M, VPC_M])
    })
    .await?;
    wait_policy(&kube, "nodegroups", &[NODEGROUP]).await?;
    wait_policy(&kube, "network", &[SUBNET_M, VPC_M]).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        running_managed(&world.metrics),
        want,
        "nothing else started"
    );
    flow.world.shutdown().await;
    Ok(())
}

/// Deleting a policy deactivates nothing (seed 002): its MRDs stay
/// Active, their CRDs stay, their controllers keep running.
#[tokio::test]
async fn a_deleted_policy_leaves_its_mrds_active_and_their_controllers_running()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let flow = start_flow().await?;
    let (world, kube) = (&flow.world, flow.world.kube());
    let created = apply_policy(&kube, "databases", &["databaseinstances.*"]).await?;
    let want = expected(&["DatabaseInstance", "DatabaseInstance.m"]);
    let took = wait_running(&world.metrics, &want, created).await;
    println!(
        "MRAP databases (databaseinstances.*) created -> DatabaseInstance, DatabaseInstance.m controllers active {:.2}s later",
        took.as_secs_f64()
    );
    wait_policy(&kube, "databases", &[DB, DB_M]).await?;

    standin::delete_policy(&kube, "databases").await?;
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    while standin::policy_status(&kube, "databases").await?.is_some() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "MRAP not deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Give the stand-in and the provider time to (wrongly) react.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mrds = standin::definitions(&kube).await?;
    assert!(exactly_established(&mrds, &[DB, DB_M]), "{mrds:#?}");
    assert_eq!(managed_crds(&kube).await?, [DB, DB_M]);
    assert_eq!(running_managed(&world.metrics), want);
    flow.world.shutdown().await;
    Ok(())
}

/// An MRD activated while the provider is down: the provider finds its CRD
/// at start and runs its controller from the start.
#[tokio::test]
async fn an_mrd_activated_before_the_provider_starts_has_its_controller_from_the_start()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let mut flow = start_flow().await?;
    flow.world.stop_provider().await;
    let kube = flow.world.kube();
    apply_policy(&kube, "network", &[VPC_M]).await?;
    wait_definitions(&kube, "VPC.m Established", |m| {
        exactly_established(m, &[VPC_M])
    })
    .await?;

    let started = Instant::now();
    flow.world.start_provider()?;
    let took = wait_running(&flow.world.metrics, &expected(&["VPC.m"]), started).await;
    println!(
        "provider started with the VPC.m CRD present -> VPC.m controller active {:.2}s later",
        took.as_secs_f64()
    );
    ready_vpc(&flow.world, "early").await?;
    let vpcs = flow
        .world
        .admin
        .resources(Some(fakecloud::model::Kind::Vpc), None)
        .await?;
    assert_eq!(vpcs.len(), 1, "one VPC in fakecloud: {vpcs:?}");
    flow.world.shutdown().await;
    Ok(())
}

/// The connection-detail keys the MRD in the cluster documents are the
/// keys the provider writes to a DatabaseInstance's connection Secret.
#[tokio::test]
async fn the_connection_details_an_mrd_documents_are_the_keys_the_provider_writes()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let flow = start_flow().await?;
    let (world, kube) = (&flow.world, flow.world.kube());
    let created = apply_policy(&kube, "database", &[DB_M]).await?;
    let took = wait_running(&world.metrics, &expected(&["DatabaseInstance.m"]), created).await;
    println!(
        "MRAP database ({DB_M}) created -> DatabaseInstance.m controller active {:.2}s later",
        took.as_secs_f64()
    );
    let documented: BTreeSet<String> = standin::definitions(&kube)
        .await?
        .into_iter()
        .find(|m| m.name == DB_M)
        .expect("the MRD exists")
        .connection_details
        .into_iter()
        .collect();
    assert_eq!(
        documented,
        BTreeSet::from(["endpoint", "port", "username", "password"].map(str::to_owned))
    );

    let app = Namespaced::objects(&world.objects);
    let mut verdict = Verdict::default();
    let secret = connection::publish_and_authenticate::<Namespaced>(
        &world.stage().with(&app),
        "orders-db",
        APP,
        "orders-db-conn",
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    let written: BTreeSet<String> = secret.data.unwrap_or_default().into_keys().collect();
    assert_eq!(written, documented, "keys written = keys the MRD documents");
    let databases = world
        .admin
        .resources(Some(fakecloud::model::Kind::DatabaseInstance), None)
        .await?;
    assert_eq!(
        databases.len(),
        1,
        "one database in fakecloud: {databases:?}"
    );
    flow.world.shutdown().await;
    Ok(())
}

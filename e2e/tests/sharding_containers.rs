//! A replica cut off from the API server but not from the cloud
//! (`--sharding`): three replicas of the provider's image run as pods
//! would, on the API server's Docker network and on a second network that
//! only they and fakecloud share. Disconnecting one of them from the API
//! network leaves it polling fakecloud with a cache that still says the
//! objects are its own, and an outside change to each of those objects in
//! the cloud gives it a reason to act: only its fence (no renewal of its
//! membership Lease within the renew deadline) stops it. From fakecloud's
//! audit the test proves that it made no cloud mutation later than the
//! renew deadline after the cut, though it still read the cloud after
//! then; that its objects moved to the other replicas (the leader revoked
//! its Lease); that each drift was corrected once, by one replica; and
//! that the cloud still holds one VPC per object.
//!
//! The cut replica sees the drift at its next poll, but its reconciles
//! then wait on the API server (the drift's Event) until its HTTP/2
//! connection's ping gives up, 30 s + 15 s later; only then do they reach
//! the update, long after the fence closed. The test waits for the first
//! mutation its fence refuses (its log says so) before reading the audit,
//! so that the fence is what the audit shows at work.
//!
//! Containers, because the cut cannot be made on processes: a process on
//! the host reaches the API server and fakecloud the same way (loopback),
//! so one cannot be taken from it without the other, and freezing it
//! (SIGSTOP, tests/sharding.rs) stops its cloud calls too.
//!
//! The VPCs are namespaced (v2) ones and use their default
//! `{kind: ClusterProviderConfig, name: default}`, which points at
//! fakecloud's name on the cloud network. The replicas run under the
//! ClusterRole Crossplane grants a safe-start package: besides every verb
//! on Leases (membership, revocation, the leader Lease) it has the patch,
//! list and watch on the managed kinds that labelling and label-selected
//! watches need, so the package's own role is not bound.
//!
//! Needs a Docker engine and the project's images; without them it fails,
//! never skips.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use apis::kinds::vpc::v1beta1::Vpc;
use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use e2e::containers::{FakecloudContainer, ProviderPod};
use e2e::world::is_ready;
use e2e::{Backend, ClusterOptions};
use fakecloud::client::{Address, AdminClient, Client as CloudClient, ListOptions};
use fakecloud::model::{Actor, AuditEntry, AuditQuery, Kind};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const REPLICAS: [&str; 3] = ["replica-0", "replica-1", "replica-2"];
const SERVICE_ACCOUNT: &str = "provider-fakecloud";
const LABEL: &str = "fakecloud.crossplane.io/shard";
/// The leader Lease; each replica's membership Lease is `<it>.<identity>`.
const LEADER_LEASE: &str = "provider-fakecloud-leader";
const COUNT: usize = 60;
const REGION: &str = "us-east-1";
const VPCS_PATH: &str = "/v1/regions/us-east-1/vpcs";
/// The provider's default renew deadline (`--renew-deadline`).
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Between the fence's check in the replica and fakecloud's recording of
/// the call: one request in flight. Not clock skew: the containers and the
/// test read the same kernel clock.
const SLACK: Duration = Duration::from_secs(1);
/// For the replicas to join and the VPCs to become Ready.
const START_WAIT: Duration = Duration::from_secs(180);
/// For the cut replica's objects to move and their drift to be corrected.
const MOVE_WAIT: Duration = Duration::from_secs(90);
/// For the cut replica to try a mutation and be refused: its calls to the
/// API server hang until its HTTP/2 ping times out (30 s + 15 s).
const FENCE_WAIT: Duration = Duration::from_secs(120);

/// A Docker network of the test's own, removed when dropped (declared
/// before the containers joined to it, so dropped after them).
struct DockerNetwork(String);

impl DockerNetwork {
    async fn create(prefix: &str) -> anyhow::Result<Self> {
        let name = e2e::unique_name(prefix);
        docker(&["network", "create", &name]).await?;
        Ok(Self(name))
    }
}

impl Drop for DockerNetwork {
    fn drop(&mut self) {
        let removed = std::process::Command::new("docker")
            .args(["network", "rm", &self.0])
            .output();
        match removed {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!(
                "cannot remove Docker network {}: {}",
                self.0,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => eprintln!("cannot remove Docker network {}: {error}", self.0),
        }
    }
}

async fn docker(args: &[&str]) -> anyhow::Result<()> {
    let output = tokio::process::Command::new("docker")
        .args(args)
        .output()
        .await
        .context("running docker (is the Docker CLI installed?)")?;
    ensure!(
        output.status.success(),
        "docker {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

/// The end of every replica's log, for a failure's message.
async fn logs(pods: &BTreeMap<&str, ProviderPod>) -> String {
    let mut all = String::new();
    for (identity, pod) in pods {
        let log = pod.logs().await;
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        all.push_str(&format!("--- {identity} ---\n{}\n", tail.join("\n")));
    }
    all
}

async fn holder(leases: &Api<Lease>, name: &str) -> anyhow::Result<Option<String>> {
    Ok(leases
        .get_opt(name)
        .await?
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity))
}

fn owner_of(vpc: &Vpc) -> String {
    vpc.labels().get(LABEL).cloned().unwrap_or_default()
}

/// Objects by owner label (`""` for none).
fn owners(vpcs: &[Vpc]) -> BTreeMap<String, usize> {
    let mut owners = BTreeMap::new();
    for vpc in vpcs {
        *owners.entry(owner_of(vpc)).or_insert(0) += 1;
    }
    owners
}

/// The provider's calls on the region's VPCs after the audit's `mark`.
async fn vpc_calls(admin: &AdminClient, mark: i64) -> anyhow::Result<Vec<AuditEntry>> {
    Ok(admin
        .audit(&AuditQuery {
            actor: Some(Actor::Api),
            path_prefix: Some(VPCS_PATH.into()),
            after_seq: Some(mark),
            ..AuditQuery::default()
        })
        .await?)
}

/// The cloud mutations the replica's fence refused, as its log counts them.
async fn refusals(pod: &ProviderPod) -> usize {
    pod.logs()
        .await
        .lines()
        .filter(|line| line.contains("cloud mutation refused"))
        .count()
}

/// The replica a call came from: the user agent ends `(<identity>)`.
fn identity_in(entry: &AuditEntry) -> Option<&str> {
    let agent = entry.user_agent.as_deref()?;
    agent.rsplit_once('(')?.1.strip_suffix(')')
}

/// The cloud's VPCs by id, every page.
async fn cloud_vpcs(cloud: &CloudClient) -> anyhow::Result<HashMap<String, fakecloud::model::Vpc>> {
    let mut options = ListOptions {
        page_size: Some(1_000),
        ..ListOptions::default()
    };
    let mut vpcs = HashMap::new();
    loop {
        let page = cloud.list_vpcs(REGION, &options).await?;
        vpcs.extend(page.items.into_iter().map(|vpc| (vpc.id.clone(), vpc)));
        match page.next_page_token {
            Some(token) => options.page_token = Some(token),
            None => return Ok(vpcs),
        }
    }
}

async fn apply_vpcs(api: &Api<Vpc>, namespace: &str) -> anyhow::Result<()> {
    futures::stream::iter(0..COUNT)
        .map(|i| async move {
            let name = format!("vpc-{i}");
            let vpc = json!({
                "apiVersion": "network.fakecloud.m.crossplane.io/v1beta1", "kind": "VPC",
                "metadata": { "name": name, "namespace": namespace },
                "spec": { "forProvider": { "region": REGION, "cidrBlock": "10.0.0.0/16",
                          "tags": { "step": "created" } } },
            });
            api.patch(
                &name,
                &PatchParams::apply("e2e").force(),
                &Patch::Apply(&vpc),
            )
            .await
            .map(|_| ())
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_replica_cut_off_from_the_api_server_stops_mutating_and_its_objects_move()
-> anyhow::Result<()> {
    e2e::init_tracing();
    tokio::task::spawn_blocking(e2e::containers::build_images).await??;
    let cluster = ClusterOptions::default()
        .backend(Backend::Containers)
        .start()
        .await?;
    let api_network = cluster
        .in_network()
        .expect("the container backend has a network");
    let cloud_network = DockerNetwork::create("e2e-cloud").await?;
    let cloud =
        FakecloudContainer::start_on(Duration::from_millis(300), Some(&cloud_network.0)).await?;
    let cloud_client = CloudClient::new(cloud.base_url(), cloud.api_key());
    let cloud_admin = AdminClient::new(cloud.base_url(), cloud.admin_token());
    let kube = cluster.client();

    let pod_namespace = cluster.create_namespace("crossplane-system").await?;
    let role = e2e::grants::crossplane_safe_start_role()?;
    let token =
        e2e::grants::bind_service_account(&kube, &pod_namespace, SERVICE_ACCOUNT, &role).await?;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "fakecloud-credentials", "namespace": pod_namespace },
        "stringData": { "apiKey": cloud.api_key() },
    });
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(kube.clone(), &pod_namespace)
        .patch(
            "fakecloud-credentials",
            &PatchParams::apply("e2e"),
            &Patch::Apply(&secret),
        )
        .await?;
    let config = json!({
        "apiVersion": "fakecloud.m.crossplane.io/v1alpha1", "kind": "ClusterProviderConfig",
        "metadata": { "name": "default" },
        "spec": {
            "endpoint": cloud.in_network_url().expect("fakecloud joined the cloud network"),
            "credentials": { "source": "Secret", "secretRef": {
                "namespace": pod_namespace, "name": "fakecloud-credentials", "key": "apiKey" } },
        },
    });
    Api::<apis::kinds::provider_config::m::ClusterProviderConfig>::all(kube.clone())
        .patch(
            "default",
            &PatchParams::apply("e2e"),
            &Patch::Apply(&config),
        )
        .await?;

    // Three replicas, each on the API network (where they start) and the
    // cloud network (joined right after).
    let mut pods = BTreeMap::new();
    for identity in REPLICAS {
        let pod = ProviderPod::start(
            &api_network,
            &pod_namespace,
            identity,
            &token,
            &[
                "--sharding",
                "--poll-interval=2s",
                "--pending-poll-interval=500ms",
            ],
        )
        .await?;
        docker(&["network", "connect", &cloud_network.0, pod.container_id()]).await?;
        pods.insert(identity, pod);
    }
    let leases = Api::<Lease>::namespaced(kube.clone(), &pod_namespace);
    let deadline = Instant::now() + START_WAIT;
    loop {
        let mut joined = Vec::new();
        for identity in REPLICAS {
            let lease = format!("{LEADER_LEASE}.{identity}");
            if holder(&leases, &lease).await?.as_deref() == Some(identity) {
                joined.push(identity);
            }
        }
        let leader = holder(&leases, LEADER_LEASE).await?;
        if joined.len() == REPLICAS.len() && leader.is_some() {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "after {START_WAIT:?} only {joined:?} hold their membership Lease, leader {leader:?}\n{}",
            logs(&pods).await
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let namespace = cluster.create_namespace("shard").await?;
    let api = Api::<Vpc>::namespaced(kube.clone(), &namespace);
    apply_vpcs(&api, &namespace).await?;
    let all = loop {
        let all = api.list(&ListParams::default()).await?.items;
        let settled = |vpc: &Vpc| is_ready(vpc) && !owner_of(vpc).is_empty();
        if all.len() == COUNT && all.iter().all(settled) {
            break all;
        }
        ensure!(
            Instant::now() < deadline,
            "{} of {} VPCs not Ready and labelled after {START_WAIT:?}; owners {:?}\n{}",
            all.iter().filter(|vpc| !settled(vpc)).count(),
            all.len(),
            owners(&all),
            logs(&pods).await
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let in_cloud = cloud_vpcs(&cloud_client).await?.len();
    ensure!(
        in_cloud == COUNT,
        "exactly {COUNT} cloud VPCs, not {in_cloud}"
    );
    eprintln!("owners of {COUNT} VPCs: {:?}", owners(&all));

    // The cut: a replica that does not lead and owns VPCs.
    let leader = holder(&leases, LEADER_LEASE)
        .await?
        .context("the leader Lease has no holder")?;
    let spread = owners(&all);
    let victim = REPLICAS
        .into_iter()
        .filter(|identity| *identity != leader)
        .max_by_key(|identity| spread.get(*identity).copied().unwrap_or(0))
        .context("a replica that does not lead")?;
    let theirs: Vec<&Vpc> = all.iter().filter(|vpc| owner_of(vpc) == victim).collect();
    ensure!(!theirs.is_empty(), "{victim} owns no VPC: {spread:?}");
    let uids: BTreeSet<String> = theirs.iter().filter_map(|vpc| vpc.uid()).collect();
    let ids: Vec<String> = theirs
        .iter()
        .map(|vpc| {
            vpc.annotations()
                .get(EXTERNAL_NAME_ANNOTATION)
                .cloned()
                .with_context(|| format!("{} has no external name", vpc.name_any()))
        })
        .collect::<anyhow::Result<_>>()?;
    let mark = cloud_admin
        .audit(&AuditQuery::default())
        .await?
        .iter()
        .map(|entry| entry.seq)
        .max()
        .unwrap_or(0);
    let cutting = Instant::now();
    docker(&[
        "network",
        "disconnect",
        &api_network.network,
        pods[victim].container_id(),
    ])
    .await?;
    // Taken once the disconnect is done: a renewal sent before then may
    // still have succeeded, and the fence runs from the last one.
    let cut = jiff::Timestamp::now();
    let cut_at = Instant::now();
    eprintln!(
        "{victim} (leader {leader}) cut off from the API server with {} VPCs; the disconnect took {:?}",
        theirs.len(),
        cut_at - cutting
    );

    // Drift behind the provider's back: a replica that still acts puts the
    // tags back.
    let address = Address {
        region: Some(REGION.into()),
        ..Address::default()
    };
    for id in &ids {
        cloud_admin
            .patch_resource(
                Kind::Vpc,
                id,
                &address,
                &json!({ "tags": { "step": "outside" } }),
            )
            .await?;
    }

    // Its objects move to the others, and the drift is corrected.
    let mut moved = None;
    let mut corrected = None;
    let (final_vpcs, moved, corrected) = loop {
        let now = api.list(&ListParams::default()).await?.items;
        let stuck = now
            .iter()
            .filter(|vpc| vpc.uid().is_some_and(|uid| uids.contains(&uid)))
            .filter(|vpc| owner_of(vpc) == victim || owner_of(vpc).is_empty())
            .count();
        if stuck == 0 && moved.is_none() {
            moved = Some(cut_at.elapsed());
        }
        let cloud_now = cloud_vpcs(&cloud_client).await?;
        let drifted = ids
            .iter()
            .filter(|id| {
                cloud_now
                    .get(*id)
                    .and_then(|vpc| vpc.tags.get("step"))
                    .map(String::as_str)
                    != Some("created")
            })
            .count();
        if drifted == 0 && corrected.is_none() {
            corrected = Some(cut_at.elapsed());
        }
        if let (Some(moved), Some(corrected)) = (moved, corrected) {
            break (now, moved, corrected);
        }
        ensure!(
            cut_at.elapsed() < MOVE_WAIT,
            "{MOVE_WAIT:?} after the cut, {stuck} of {} VPCs still labelled for {victim} \
             and {drifted} still drifted; owners {:?}\n{}",
            ids.len(),
            owners(&now),
            logs(&pods).await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // The cut replica's reconciles are held up by their calls to the API
    // server (an Event about the drift) until its connection's ping times
    // out; then they meet the fence, and poll fakecloud again. Wait for
    // both, so that what the audit shows is the fence's doing, then for a
    // few more polls, long enough for any second correction to show.
    let fence_closed = cut + RENEW_DEADLINE;
    let read_after_fence = |entry: &AuditEntry| {
        matches!(entry.method.as_str(), "GET" | "HEAD")
            && identity_in(entry) == Some(victim)
            && entry.time > fence_closed + SLACK
    };
    let mut refused = None;
    let first_refusal = loop {
        if refused.is_none() && refusals(&pods[victim]).await > 0 {
            refused = Some(cut_at.elapsed());
        }
        let read = vpc_calls(&cloud_admin, mark)
            .await?
            .iter()
            .any(read_after_fence);
        if let (Some(at), true) = (refused, read) {
            break at;
        }
        ensure!(
            cut_at.elapsed() < FENCE_WAIT,
            "{FENCE_WAIT:?} after the cut, {victim} refused a cloud mutation: {}, \
             read the cloud after its fence closed: {read}\n{}",
            refused.is_some(),
            logs(&pods).await
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    tokio::time::sleep(Duration::from_secs(5)).await;

    let calls = vpc_calls(&cloud_admin, mark).await?;
    let (mutations, reads): (Vec<&AuditEntry>, Vec<&AuditEntry>) = calls
        .iter()
        .partition(|entry| !matches!(entry.method.as_str(), "GET" | "HEAD"));
    let by_victim: Vec<&&AuditEntry> = mutations
        .iter()
        .filter(|entry| identity_in(entry) == Some(victim))
        .collect();
    let late: Vec<&&AuditEntry> = by_victim
        .iter()
        .copied()
        .filter(|entry| entry.time > fence_closed + SLACK)
        .collect();
    ensure!(
        late.is_empty(),
        "{victim} made {} cloud mutations later than the renew deadline after the cut ({cut}), \
         the first {:?}\n{}",
        late.len(),
        late.first(),
        logs(&pods).await
    );
    let mut writes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for entry in mutations.iter().filter(|entry| entry.status < 300) {
        writes
            .entry(entry.path.as_str())
            .or_default()
            .push(identity_in(entry).unwrap_or("?"));
    }
    let expected: BTreeSet<String> = ids.iter().map(|id| format!("{VPCS_PATH}/{id}")).collect();
    let written: BTreeSet<String> = writes.keys().map(|path| (*path).to_owned()).collect();
    ensure!(
        written == expected,
        "mutated after the cut: {written:?}; drifted: {expected:?}"
    );
    for (path, writers) in &writes {
        ensure!(
            writers.len() == 1,
            "{path} mutated {} times after the outside change, by {writers:?}",
            writers.len()
        );
    }
    let in_cloud = cloud_vpcs(&cloud_client).await?.len();
    ensure!(
        in_cloud == COUNT,
        "exactly {COUNT} cloud VPCs, not {in_cloud}"
    );

    // The figures.
    let mut corrected_by: BTreeMap<&str, usize> = BTreeMap::new();
    for writers in writes.values() {
        *corrected_by.entry(writers[0]).or_insert(0) += 1;
    }
    let last_mutation = by_victim
        .iter()
        .map(|entry| entry.time.duration_since(cut))
        .max();
    let refused_count = refusals(&pods[victim]).await;
    let reads_after_fence = reads.iter().filter(|entry| read_after_fence(entry)).count();
    eprintln!(
        "{victim}'s {} VPCs all relabelled {moved:?} after the cut, drift all corrected {corrected:?} after; owners now {:?}",
        ids.len(),
        owners(&final_vpcs)
    );
    eprintln!(
        "{victim} made {} cloud mutations after the cut (the last {last_mutation:?} after it), \
         {reads_after_fence} cloud reads after its fence closed, and logged {refused_count} refused \
         mutations, the first {first_refusal:?} after the cut",
        by_victim.len()
    );
    eprintln!("drift corrections by replica: {corrected_by:?}");
    Ok(())
}

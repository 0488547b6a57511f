//! The provider installed as Crossplane installs a provider package, and run
//! as pods on a real node (issue 47): the node backend's kubelet runs the
//! package image on this machine's Docker engine, a real Deployment and
//! ReplicaSet keep its pods, kube-proxy routes the `kubernetes` Service (the
//! pods' in-cluster client) and the provider's webhook Service (the API
//! server's conversions of the namespaced kinds). What stands in for
//! Crossplane is its package manager
//! ([`e2e::crossplane_standin::runtime`]), which makes from the `.xpkg`
//! what Crossplane makes for a provider revision.
//!
//! One test, since one node runs on a machine at a time, in steps:
//!
//! 1. The node is Ready (its start-up time is printed).
//! 2. The package's pod is Ready by the readiness probe its
//!    `DeploymentRuntimeConfig` gives it.
//! 3. A namespaced VPC, written at v1alpha1 and stored at v1beta1 through
//!    the provider's own webhook behind its Service, lives its whole life.
//! 4. The pod is killed the moment the cloud has seen a VPC's create; the
//!    Deployment replaces it and the new pod finishes the VPC: one VPC in
//!    the cloud.
//! 5. Two replicas elect one leader with a Lease; the leader's pod is
//!    killed, another pod takes the Lease and reconciles.
//! 6. Three replicas share the work (`--sharding`): nine VPCs, each
//!    created once, the creates made by more than one pod.
//! 7. Teardown leaves no pod container, mount, `KUBE-*` iptables chain or
//!    changed sysctl behind.
//!
//! Needs root, a Docker engine with cgroup v1 and the `cgroupfs` driver,
//! the project's images and the node's binaries
//! (`e2e/control-plane/install.sh`); without them it fails, never skips.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use e2e::crossplane_standin::runtime::{
    ProviderPackage, ProviderRuntime, REVISION_LABEL, is_pod_ready,
};
use e2e::objects::Objects;
use e2e::scenarios::{Narration, REGION, Stage, network};
use e2e::scope::{APP, Namespaced};
use e2e::{Backend, ClusterOptions};
use fakecloud::client::{AdminClient, Client as CloudClient, ListOptions};
use fakecloud::model::AuditQuery;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Pod, Secret};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

/// Where Crossplane runs providers.
const NAMESPACE: &str = "crossplane-system";
/// The provider's polls, short so the steps are quick.
const POLL: Duration = Duration::from_secs(2);
/// How long a pod may take from scheduling to Ready.
const POD_READY: Duration = Duration::from_secs(120);
const LEASE: &str = "provider-fakecloud-leader";
const LEADER_ELECTION: &str = "--leader-election=true";
/// VPCs the three sharding replicas share.
const SHARED_VPCS: usize = 9;

/// A `DeploymentRuntimeConfig`'s spec: `replicas` pods of the runtime
/// container with the provider's flags (`how` the replicas divide the
/// work: `--leader-election=true` or `--sharding=true`) and a readiness
/// probe on `/readyz` (the image serves it on 8081 on every interface).
fn runtime_config(replicas: i32, how: &str) -> Value {
    json!({ "deploymentTemplate": { "spec": {
        "replicas": replicas,
        "selector": {},
        "template": { "spec": { "containers": [{
            "name": "package-runtime",
            "args": [
                how,
                format!("--poll-interval={}s", POLL.as_secs()),
                "--pending-poll-interval=250ms",
            ],
            "readinessProbe": {
                "httpGet": { "path": "/readyz", "port": 8081 },
                "periodSeconds": 1,
            },
        }] } },
    } } })
}

async fn pods(client: &Client, revision: &str) -> anyhow::Result<Vec<Pod>> {
    let list = Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(&format!("{REVISION_LABEL}={revision}")))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// The logs of the provider's containers, dead ones included, for failures.
fn provider_logs() -> String {
    let ids = std::process::Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            "label=io.kubernetes.container.name=package-runtime",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut text = String::new();
    for id in ids.split_whitespace() {
        let out = std::process::Command::new("docker")
            .args(["logs", "--tail", "60", id])
            .output();
        if let Ok(out) = out {
            text.push_str(&format!(
                "--- container {id}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    text
}

fn condition_true(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

/// Applies the namespaced VPC `name` (the network scenario's manifest).
async fn apply_vpc(app: &Objects, name: &str) -> anyhow::Result<()> {
    app.apply::<apis::kinds::vpc::m::Vpc>(network::manifest::<Namespaced>(
        name,
        &json!({ "team": "node" }),
        false,
    ))
    .await?;
    Ok(())
}

/// Waits until the VPC `name` is Ready and the cloud holds exactly one VPC
/// carrying its tags; a timeout carries the provider's logs.
async fn ready_once(
    app: &Objects,
    cloud: &CloudClient,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let ready = app
        .wait_for::<apis::kinds::vpc::m::Vpc>(name, "Ready", timeout, |v| {
            condition_true(&serde_json::to_value(v).unwrap_or_default(), "Ready")
        })
        .await;
    if let Err(e) = ready {
        anyhow::bail!("{e}\nprovider logs:\n{}", provider_logs());
    }
    let carrying = vpcs_of(cloud, name).await?;
    anyhow::ensure!(
        carrying.len() == 1,
        "one cloud VPC for {name}, not {carrying:?}"
    );
    Ok(())
}

async fn kill(client: &Client, pod: &str) -> anyhow::Result<()> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .delete(pod, &DeleteParams::default().grace_period(0))
        .await?;
    Ok(())
}

/// Waits until the API server's conversions reach the provider's webhook
/// through its Service, and only its live pods: the Service's Endpoints
/// list exactly the revision's ready pods, and then ten dry-run creates of
/// a v1alpha1 VPC in a row (which the server converts to the stored
/// v1beta1) succeed. After a pod's start or death the Endpoints controller
/// and kube-proxy catch up within a second or two; meanwhile the API server
/// answers "connection refused" for the namespaced kinds' conversions, as
/// on any cluster whose webhook has one replica or a stale endpoint.
async fn wait_for_conversions(
    client: &Client,
    revision: &str,
    service: &str,
    timeout: Duration,
) -> anyhow::Result<Duration> {
    let resource = ApiResource {
        group: "network.fakecloud.m.crossplane.io".into(),
        version: "v1alpha1".into(),
        api_version: "network.fakecloud.m.crossplane.io/v1alpha1".into(),
        kind: "VPC".into(),
        plural: "vpcs".into(),
    };
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), APP, &resource);
    let endpoints = Api::<Endpoints>::namespaced(client.clone(), NAMESPACE);
    let probe: DynamicObject = serde_json::from_value(network::manifest::<Namespaced>(
        "conversion-probe",
        &json!({}),
        false,
    ))?;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let began = Instant::now();
    let mut in_a_row = 0;
    let mut last = String::new();
    while began.elapsed() < timeout {
        let mut live: Vec<String> = pods(client, revision)
            .await?
            .iter()
            .filter(|p| is_pod_ready(p))
            .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
            .collect();
        live.sort();
        let mut routed: Vec<String> = endpoints
            .get_opt(service)
            .await?
            .and_then(|e| e.subsets)
            .unwrap_or_default()
            .into_iter()
            .flat_map(|s| s.addresses.unwrap_or_default())
            .map(|a| a.ip)
            .collect();
        routed.sort();
        if live.is_empty() || routed != live {
            in_a_row = 0;
            last = format!("the Service routes to {routed:?}, the ready pods are {live:?}");
        } else {
            match api.create(&params, &probe).await {
                Ok(_) => in_a_row += 1,
                Err(e) => {
                    in_a_row = 0;
                    last = e.to_string();
                }
            }
            if in_a_row == 10 {
                return Ok(began.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!(
        "conversions never reached the webhook's live pods only: {last}\n{}",
        provider_logs()
    )
}

/// Cloud VPCs carrying the managed resource `name`'s tags.
async fn vpcs_of(cloud: &CloudClient, name: &str) -> anyhow::Result<Vec<String>> {
    let tagged = ListOptions {
        tags: vec![("crossplane-name".to_owned(), Some(name.to_owned()))],
        ..ListOptions::default()
    };
    Ok(cloud
        .list_vpcs(REGION, &tagged)
        .await?
        .items
        .into_iter()
        .map(|v| v.id)
        .collect())
}

#[tokio::test]
async fn the_package_runs_as_crossplane_runs_a_provider_on_a_real_node() -> anyhow::Result<()> {
    e2e::init_tracing();
    tokio::task::spawn_blocking(e2e::containers::build_images).await??;
    let route_localnet = e2e::node::route_localnet();
    let cluster = ClusterOptions::default()
        .backend(Backend::Node)
        .start()
        .await?;
    let (node_startup, node_dir) = cluster.node().expect("the node backend has a node");
    println!("node Ready and schedulable {node_startup:.1?} after the API server was");
    let admin = cluster.client();

    // fakecloud where the pods reach it: on the Docker bridge's address.
    let host = e2e::node::bridge_address()?;
    let cloud_dir = tempfile::tempdir()?;
    let mut config =
        fakecloud::Config::new(cloud_dir.path().join("fakecloud.db").display().to_string());
    config.listen = SocketAddr::new(host.into(), 0);
    config.default_delay = Duration::from_millis(300);
    let cloud_server = fakecloud::spawn(config).await?;
    let cloud = CloudClient::new(cloud_server.base_url(), cloud_server.api_key());
    let cloud_admin = AdminClient::new(cloud_server.base_url(), cloud_server.admin_token());

    // The package, built from the provider's image and read back.
    let out_dir = tempfile::tempdir()?;
    let out = out_dir.path().to_path_buf();
    let package = tokio::task::spawn_blocking(move || ProviderPackage::build(&out)).await??;

    for namespace in [NAMESPACE, APP] {
        let ns = serde_json::from_value::<Namespace>(json!({ "metadata": { "name": namespace } }))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &ns)
            .await?;
    }
    let objects = Objects::new(admin.clone(), "e2e-user");
    objects
        .apply_namespaced::<Secret>(
            NAMESPACE,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": { "name": "fakecloud-credentials", "namespace": NAMESPACE },
                "stringData": { "apiKey": cloud_server.api_key() },
            }),
        )
        .await?;
    objects
        .apply::<apis::kinds::provider_config::m::ClusterProviderConfig>(json!({
            "apiVersion": "fakecloud.m.crossplane.io/v1alpha1", "kind": "ClusterProviderConfig",
            "metadata": { "name": "default" },
            "spec": {
                "endpoint": cloud_server.base_url(),
                "credentials": { "source": "Secret", "secretRef": {
                    "namespace": NAMESPACE, "name": "fakecloud-credentials", "key": "apiKey" } },
            },
        }))
        .await?;

    // 2. Installed as Crossplane installs it; Ready by its probe.
    let runtime = ProviderRuntime::install(
        &admin,
        &package,
        NAMESPACE,
        &runtime_config(1, LEADER_ELECTION),
    )
    .await?;
    let ready_in = match runtime.wait_ready(&admin, 1, POD_READY).await {
        Ok(took) => took,
        Err(e) => anyhow::bail!("{e}\nprovider logs:\n{}", provider_logs()),
    };
    println!("provider pod Ready {ready_in:.1?} after the install");
    let first = pods(&admin, &package.revision).await?;
    assert_eq!(first.len(), 1, "one replica");
    let pod = &first[0];
    let spec = pod.spec.as_ref().expect("a pod has a spec");
    assert_eq!(
        spec.service_account_name.as_deref(),
        Some(package.revision.as_str())
    );
    let container = &spec.containers[0];
    assert_eq!(container.name, "package-runtime");
    assert_eq!(container.image.as_deref(), Some(package.image.as_str()));
    assert!(container.readiness_probe.is_some() && is_pod_ready(pod));
    assert!(
        !runtime.converting_crds.is_empty(),
        "the namespaced kinds convert through the provider's Service"
    );
    let through = wait_for_conversions(
        &admin,
        &package.revision,
        &runtime.service,
        Duration::from_secs(30),
    )
    .await?;
    println!("conversions through the webhook's Service {through:.1?} later");

    // 3. A namespaced VPC's whole life, through the webhook's Service.
    let stage = Stage {
        objects: &objects,
        cloud: &cloud,
        admin: &cloud_admin,
        settle: POLL + Duration::from_secs(1),
        narration: Narration::Log,
    };
    match network::lifecycle::<Namespaced>(&stage, &e2e::unique_name("vpc")).await {
        Ok(verdict) if verdict.held() => {}
        Ok(verdict) => anyhow::bail!(
            "{:?}\nprovider logs:\n{}",
            verdict.failed(),
            provider_logs()
        ),
        Err(e) => anyhow::bail!("{e}\nprovider logs:\n{}", provider_logs()),
    }

    // 4. Killed the moment the cloud saw the create; replaced; one VPC.
    let app = objects.in_namespace(APP);
    let survivor = e2e::unique_name("survivor");
    let mark = stage.audit_mark().await?;
    apply_vpc(&app, &survivor).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let calls = cloud_admin
            .audit(&AuditQuery {
                after_seq: Some(mark),
                ..AuditQuery::default()
            })
            .await?;
        if calls
            .iter()
            .any(|e| e.method == "POST" && e.path.ends_with("/vpcs"))
        {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the provider never created {survivor}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = pod.name_any();
    kill(&admin, &killed).await?;
    let replaced_in = runtime.wait_ready(&admin, 1, POD_READY).await;
    let after = pods(&admin, &package.revision).await?;
    anyhow::ensure!(
        replaced_in.is_ok() && after.iter().all(|p| p.name_any() != killed),
        "the Deployment did not replace pod {killed}: {replaced_in:?}\n{}",
        provider_logs()
    );
    // One replica: its webhook was away while the pod was replaced, and
    // reads of the namespaced kinds failed meanwhile.
    wait_for_conversions(
        &admin,
        &package.revision,
        &runtime.service,
        Duration::from_secs(30),
    )
    .await?;
    ready_once(&app, &cloud, &survivor, Duration::from_secs(90)).await?;

    // 5. Two replicas, one leader; the leader killed, another leads.
    let runtime = ProviderRuntime::install(
        &admin,
        &package,
        NAMESPACE,
        &runtime_config(2, LEADER_ELECTION),
    )
    .await?;
    runtime.wait_ready(&admin, 2, POD_READY).await?;
    let leases = Api::<Lease>::namespaced(admin.clone(), NAMESPACE);
    let holder = |lease: &Lease| {
        lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default()
    };
    let names: Vec<String> = pods(&admin, &package.revision)
        .await?
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let leader = loop {
        let now = holder(&leases.get(LEASE).await?);
        if names.contains(&now) {
            break now;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the Lease is held by {now:?}, not one of {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    kill(&admin, &leader).await?;
    let deadline = Instant::now() + Duration::from_secs(90);
    let successor = loop {
        let now = holder(&leases.get(LEASE).await?);
        if !now.is_empty() && now != leader {
            break now;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no pod took the Lease from the killed {leader}\n{}",
            provider_logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    println!("leader {leader} killed; {successor} leads");
    wait_for_conversions(
        &admin,
        &package.revision,
        &runtime.service,
        Duration::from_secs(30),
    )
    .await?;
    let last = e2e::unique_name("after-failover");
    apply_vpc(&app, &last).await?;
    ready_once(&app, &cloud, &last, Duration::from_secs(90)).await?;

    // 6. Three replicas sharing the work (`--sharding`), as this Deployment.
    let runtime = ProviderRuntime::install(
        &admin,
        &package,
        NAMESPACE,
        &runtime_config(3, "--sharding=true"),
    )
    .await?;
    runtime.wait_ready(&admin, 3, POD_READY).await?;
    let sharders: Vec<String> = pods(&admin, &package.revision)
        .await?
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    wait_for_conversions(
        &admin,
        &package.revision,
        &runtime.service,
        Duration::from_secs(30),
    )
    .await?;
    let mark = stage.audit_mark().await?;
    let shared: Vec<String> = (0..SHARED_VPCS)
        .map(|i| e2e::unique_name(&format!("shared-{i}")))
        .collect();
    for name in &shared {
        apply_vpc(&app, name).await?;
    }
    for name in &shared {
        ready_once(&app, &cloud, name, Duration::from_secs(120)).await?;
    }
    let creators: std::collections::BTreeSet<String> = cloud_admin
        .audit(&AuditQuery {
            after_seq: Some(mark),
            ..AuditQuery::default()
        })
        .await?
        .into_iter()
        .filter(|e| e.method == "POST" && e.path.ends_with("/vpcs"))
        .filter_map(|e| {
            let agent = e.user_agent?;
            Some(agent.rsplit_once('(')?.1.strip_suffix(')')?.to_owned())
        })
        .collect();
    println!("{SHARED_VPCS} VPCs created by {creators:?} of {sharders:?}");
    assert!(
        creators.len() >= 2 && creators.iter().all(|c| sharders.contains(c)),
        "the replicas did not share the creates: {creators:?} of {sharders:?}\n{}",
        provider_logs()
    );

    // 7. Nothing left behind.
    runtime.uninstall(&admin).await?;
    drop(cluster);
    let leftovers = e2e::node::leftovers(Some(&node_dir), route_localnet.as_deref());
    assert!(leftovers.is_empty(), "the node left {leftovers:?}");
    Ok(())
}

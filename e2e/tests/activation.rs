//! Late managed-resource activation (seed 002, issue 6): the provider starts
//! with none of its CRDs, starts a kind's controller only once that kind's
//! CRD is Established, stops it when the CRD is deleted and starts it again
//! when the CRD returns, with exactly one controller per kind throughout.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apis::kinds::{Subnet, Vpc};
use e2e::world::{World, WorldOptions, at_provider, external_name, is_ready, is_synced};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use runtime::metrics::Metrics;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{EnvFilter, Layer};

const READY: Duration = Duration::from_secs(30);
/// How long the gate may take to react to a CRD event.
const GATE: Duration = Duration::from_secs(10);

const PROVIDER_CONFIG_CRD: &str = "fakecloud.crossplane.io_providerconfigs.yaml";
const USAGE_CRD: &str = "fakecloud.crossplane.io_providerconfigusages.yaml";
const VPC_CRD: &str = "network.fakecloud.crossplane.io_vpcs.yaml";
const SUBNET_CRD: &str = "network.fakecloud.crossplane.io_subnets.yaml";
const SUBNET_CRD_NAME: &str = "subnets.network.fakecloud.crossplane.io";

fn crd_file(file: &str) -> PathBuf {
    e2e::crds::package_crds_dir().join(file)
}

fn vpc(name: &str, tags: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": name },
        "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16", "tags": tags } },
    })
}

fn subnet(name: &str, vpc: &str, cidr: &str) -> serde_json::Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
        "metadata": { "name": name },
        "spec": { "forProvider": {
            "region": "us-east-1", "vpcIdRef": { "name": vpc },
            "cidrBlock": cidr, "availabilityZone": "us-east-1a",
        } },
    })
}

/// `provider_active_controllers` by kind, as the provider exposes it.
fn active_controllers(metrics: &Metrics) -> BTreeMap<String, i64> {
    samples(metrics, "provider_active_controllers{")
        .into_iter()
        .map(|(labels, value)| (label(&labels, "kind"), value as i64))
        .collect()
}

/// Kinds whose controller runs (gauge at 1).
fn running(metrics: &Metrics) -> Vec<String> {
    active_controllers(metrics)
        .into_iter()
        .filter(|(_, v)| *v == 1)
        .map(|(k, _)| k)
        .collect()
}

/// Every sample line starting with `prefix`, as (labels, value).
fn samples(metrics: &Metrics, prefix: &str) -> Vec<(String, f64)> {
    metrics
        .encode()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

fn label(series: &str, name: &str) -> String {
    let key = format!("{name}=\"");
    series
        .split_once(&key)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(value, _)| value.to_owned())
        .unwrap_or_default()
}

/// `provider_reconciles_total` for one kind and result.
fn reconciles(metrics: &Metrics, kind: &str, result: &str) -> f64 {
    samples(metrics, "provider_reconciles_total{")
        .into_iter()
        .filter(|(s, _)| label(s, "kind") == kind && label(s, "result") == result)
        .map(|(_, v)| v)
        .sum()
}

/// Failed reconciles of every kind.
fn failed_reconciles(metrics: &Metrics) -> f64 {
    samples(metrics, "provider_reconciles_total{")
        .into_iter()
        .filter(|(s, _)| label(s, "result") == "error")
        .map(|(_, v)| v)
        .sum()
}

/// Polls the provider's metrics until exactly `kinds` run.
async fn wait_running(metrics: &Metrics, kinds: &[&str]) {
    let deadline = tokio::time::Instant::now() + GATE;
    loop {
        let now = running(metrics);
        if now == kinds {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "expected running controllers {kinds:?}, got {:?} after {GATE:?}",
            active_controllers(metrics)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Proves one controller (not two) watches `name`: a label change is one
/// watch event, so it makes exactly one reconcile per running controller.
/// The object must be settled (Ready, no write pending).
async fn assert_single_controller<K>(world: &World, kind: &str, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    // Let the reconcile caused by the last status write finish.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = reconciles(&world.metrics, kind, "success");
    world
        .patch::<K>(
            name,
            json!({ "metadata": { "labels": { "poke": e2e::unique_name("p") } } }),
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = reconciles(&world.metrics, kind, "success");
    assert_eq!(
        after - before,
        1.0,
        "one label change must cause exactly one {kind} reconcile (more means more than one controller)"
    );
    Ok(())
}

/// The provider's log events at INFO and above, as text: to find the
/// health endpoint it bound and to prove stopping a controller does not
/// flood the log with warnings.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<(Level, String)>>>);

impl Logs {
    fn mark(&self) -> usize {
        self.0.lock().expect("logs lock").len()
    }

    /// WARN and ERROR events logged after `mark`.
    fn warnings_since(&self, mark: usize) -> Vec<String> {
        self.0.lock().expect("logs lock")[mark..]
            .iter()
            .filter(|(level, _)| *level <= Level::WARN)
            .map(|(_, text)| text.clone())
            .collect()
    }

    fn find(&self, needle: &str) -> Option<String> {
        self.0
            .lock()
            .expect("logs lock")
            .iter()
            .find(|(_, text)| text.contains(needle))
            .map(|(_, text)| text.clone())
    }
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: Subscriber> Layer<S> for Logs {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() <= Level::INFO && meta.target().starts_with("provider") {
            let mut text = Text(format!("{} {}:", meta.level(), meta.target()));
            event.record(&mut text);
            self.0
                .lock()
                .expect("logs lock")
                .push((*meta.level(), text.0));
        }
    }
}

/// Routes logs to the test output and into the returned [`Logs`]. The
/// tests run on tokio's current-thread runtime, so a thread-default
/// subscriber sees every task.
fn capture_logs() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(e2e::DEFAULT_LOG_FILTER));
    let subscriber = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(filter),
        )
        .with(logs.clone());
    (logs, tracing::subscriber::set_default(subscriber))
}

/// The port of the provider's `/healthz` + `/readyz`, from its log line
/// (the world binds it to port 0).
async fn health_port(logs: &Logs) -> u16 {
    let deadline = tokio::time::Instant::now() + GATE;
    loop {
        if let Some(line) = logs.find("serving /healthz and /readyz") {
            let port = line
                .split("addr=127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|port| port.parse().ok());
            return port.unwrap_or_else(|| panic!("no port in {line:?}"));
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the provider never logged its health address"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The HTTP status line of `GET path` on the loopback port.
async fn http_status(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response.lines().next().unwrap_or_default().to_owned())
}

async fn wait_http_ok(port: u16, path: &str) {
    let deadline = tokio::time::Instant::now() + GATE;
    loop {
        let status = http_status(port, path).await;
        if matches!(&status, Ok(line) if line.contains(" 200 ")) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} not ok after {GATE:?}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A world with none of the provider's CRDs. Ready resources are polled
/// only every minute, so within a test every reconcile of a settled
/// resource has a cause the test made.
async fn start_world() -> anyhow::Result<World> {
    Ok(World::start_with(WorldOptions {
        install_crds: false,
        provider_args: vec![
            "--poll-interval=60s".into(),
            "--pending-poll-interval=250ms".into(),
        ],
        ..WorldOptions::default()
    })
    .await?)
}

/// ProviderConfig, its usages and the VPC CRD, then the `default`
/// ProviderConfig: what the network story needs before any Subnet.
async fn activate_vpc(world: &World) -> anyhow::Result<()> {
    world
        .cluster
        .install_crd_files(&[
            crd_file(PROVIDER_CONFIG_CRD),
            crd_file(USAGE_CRD),
            crd_file(VPC_CRD),
        ])
        .await?;
    world.create_provider_config("default").await?;
    Ok(())
}

#[tokio::test]
async fn controllers_follow_their_crds() -> anyhow::Result<()> {
    let (logs, _guard) = capture_logs();
    let world = start_world().await?;
    let health_port = health_port(&logs).await;

    // Zero CRDs: healthy and ready once the gate listed them, no controller,
    // nothing reconciled, nothing logged as a failure.
    wait_http_ok(health_port, "/healthz").await;
    wait_http_ok(health_port, "/readyz").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(running(&world.metrics), Vec::<String>::new());
    assert_eq!(world.metrics.total("provider_reconciles_total"), 0.0);
    assert_eq!(logs.warnings_since(0), Vec::<String>::new());

    // Only the VPC CRD (with ProviderConfig and its usages): only the VPC
    // controller, and a VPC becomes Ready.
    activate_vpc(&world).await?;
    wait_running(&world.metrics, &["ProviderConfig", "VPC"]).await;
    let vpc_name = e2e::unique_name("vpc");
    world
        .apply::<Vpc>(vpc(&vpc_name, json!({ "team": "a" })))
        .await?;
    world
        .wait_for::<Vpc>(&vpc_name, "Ready and Synced", READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    assert_eq!(running(&world.metrics), ["ProviderConfig", "VPC"]);

    // The Subnet CRD later: its controller starts and a Subnet works.
    world
        .cluster
        .install_crd_files(&[crd_file(SUBNET_CRD)])
        .await?;
    wait_running(&world.metrics, &["ProviderConfig", "Subnet", "VPC"]).await;
    let first_subnet = e2e::unique_name("subnet");
    world
        .apply::<Subnet>(subnet(&first_subnet, &vpc_name, "10.0.1.0/24"))
        .await?;
    let ready = world
        .wait_for::<Subnet>(&first_subnet, "Ready and Synced", READY, |s| {
            is_ready(s) && is_synced(s)
        })
        .await?;
    let subnet_id = external_name(&ready).expect("external name after create");
    assert_single_controller::<Subnet>(&world, "Subnet", &first_subnet).await?;

    // Deleting the Subnet CRD: the API server deletes the Subnet first, and
    // the controller (kept while the CRD terminates) deletes it in the cloud;
    // then the controller stops, quietly, and the VPC controller goes on.
    let log_mark = logs.mark();
    let failed_before = failed_reconciles(&world.metrics);
    world.cluster.delete_crd(SUBNET_CRD_NAME).await?;
    wait_running(&world.metrics, &["ProviderConfig", "VPC"]).await;
    assert_eq!(active_controllers(&world.metrics)["Subnet"], 0);
    let err = world
        .cloud
        .get_subnet("us-east-1", &subnet_id)
        .await
        .expect_err("the Subnet was deleted in the cloud before its CRD went");
    assert!(err.is_not_found(), "{err}");

    world
        .apply::<Vpc>(vpc(&vpc_name, json!({ "team": "b" })))
        .await?;
    world
        .wait_for::<Vpc>(&vpc_name, "tag b applied", READY, |v| {
            at_provider(v)["tags"]["team"] == "b" && is_ready(v) && is_synced(v)
        })
        .await?;
    assert_single_controller::<Vpc>(&world, "VPC", &vpc_name).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        failed_reconciles(&world.metrics),
        failed_before,
        "no reconcile failed while the Subnet controller stopped"
    );
    assert_eq!(
        logs.warnings_since(log_mark),
        Vec::<String>::new(),
        "stopping a controller logs no warning or error"
    );

    // Re-applying the CRD starts the controller again.
    world
        .cluster
        .install_crd_files(&[crd_file(SUBNET_CRD)])
        .await?;
    wait_running(&world.metrics, &["ProviderConfig", "Subnet", "VPC"]).await;
    let second_subnet = e2e::unique_name("subnet");
    world
        .apply::<Subnet>(subnet(&second_subnet, &vpc_name, "10.0.2.0/24"))
        .await?;
    world
        .wait_for::<Subnet>(&second_subnet, "Ready and Synced", READY, |s| {
            is_ready(s) && is_synced(s)
        })
        .await?;
    assert_single_controller::<Subnet>(&world, "Subnet", &second_subnet).await?;
    // Two activations of Subnet were measured, one of VPC.
    let activations = samples(&world.metrics, "provider_activation_latency_seconds_count{");
    let count = |kind: &str| {
        activations
            .iter()
            .filter(|(s, _)| label(s, "kind") == kind)
            .map(|(_, v)| *v)
            .sum::<f64>()
    };
    assert_eq!(count("VPC"), 1.0);
    assert_eq!(count("Subnet"), 2.0);
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_flapping_crd_leaves_exactly_one_controller() -> anyhow::Result<()> {
    let (logs, _guard) = capture_logs();
    let world = start_world().await?;
    activate_vpc(&world).await?;
    let vpc_name = e2e::unique_name("vpc");
    world
        .apply::<Vpc>(vpc(&vpc_name, json!({ "team": "a" })))
        .await?;
    world
        .wait_for::<Vpc>(&vpc_name, "Ready", READY, is_ready)
        .await?;

    // Apply and delete the Subnet CRD over and over, never waiting for the
    // gate: some rounds it starts the controller, some it never sees the
    // CRD Established.
    let crds: Api<CustomResourceDefinition> = Api::all(world.kube());
    let mut manifest = e2e::crds::load_manifests(&crd_file(SUBNET_CRD))?.remove(0);
    if !world.cluster.supports_cel_rules() {
        e2e::crds::strip_cel_rules(&mut manifest);
    }
    for _ in 0..6 {
        crds.patch(
            SUBNET_CRD_NAME,
            &PatchParams::apply("e2e-flap").force(),
            &Patch::Apply(&manifest),
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(150)).await;
        crds.delete(SUBNET_CRD_NAME, &DeleteParams::default())
            .await?;
        while crds.get_opt(SUBNET_CRD_NAME).await?.is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    world
        .cluster
        .install_crd_files(&[crd_file(SUBNET_CRD)])
        .await?;
    wait_running(&world.metrics, &["ProviderConfig", "Subnet", "VPC"]).await;

    let name = e2e::unique_name("subnet");
    let mark = world.audit_mark().await?;
    world
        .apply::<Subnet>(subnet(&name, &vpc_name, "10.0.3.0/24"))
        .await?;
    world
        .wait_for::<Subnet>(&name, "Ready and Synced", READY, |s| {
            is_ready(s) && is_synced(s)
        })
        .await?;
    let creates: Vec<_> = world
        .mutating_calls("/v1/regions/us-east-1/subnets", mark)
        .await?
        .into_iter()
        .filter(|c| c.method == "POST")
        .collect();
    assert_eq!(creates.len(), 1, "exactly one create: {creates:?}");
    assert_single_controller::<Subnet>(&world, "Subnet", &name).await?;
    assert_eq!(running(&world.metrics), ["ProviderConfig", "Subnet", "VPC"]);
    let gate_warnings: Vec<_> = logs
        .warnings_since(0)
        .into_iter()
        .filter(|w| w.contains("runtime::gate"))
        .collect();
    assert_eq!(gate_warnings, Vec::<String>::new());
    world.shutdown().await;
    Ok(())
}

/// A Crossplane v2 platform that activates only the namespaced kinds
/// (`mrap-activate-namespaced.yaml`): with no legacy CRD at all, the
/// namespaced controllers and the two ProviderConfig kinds of their group
/// start, one each, and a namespaced VPC with a Subnet referencing it
/// becomes Ready through the default ClusterProviderConfig.
#[tokio::test]
async fn a_provider_with_only_the_namespaced_crds_runs_them() -> anyhow::Result<()> {
    use apis::kinds::subnet::m::Subnet as NsSubnet;
    use apis::kinds::vpc::m::Vpc as NsVpc;
    use e2e::scope::{APP, Namespaced, Scope};
    let (_logs, _guard) = capture_logs();
    let world = start_world().await?;
    let namespaced: Vec<PathBuf> = std::fs::read_dir(e2e::crds::package_crds_dir())?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|path| path.to_string_lossy().contains(".m.crossplane.io_"))
        // The query kinds are namespaced too, but not managed resources.
        .filter(|path| !path.to_string_lossy().contains("query.fakecloud"))
        .collect();
    assert_eq!(namespaced.len(), 8, "{namespaced:?}");
    world.cluster.install_crd_files(&namespaced).await?;
    let expected = [
        "ClusterProviderConfig.m",
        "DatabaseInstance.m",
        "NodeGroup.m",
        "ProviderConfig.m",
        "Subnet.m",
        "VPC.m",
    ];
    wait_running(&world.metrics, &expected).await;
    world.create_cluster_provider_config("default").await?;

    let app = Namespaced::objects(&world.objects);
    let spec = |v: serde_json::Value| v["spec"].clone();
    app.apply::<NsVpc>(Namespaced::manifest(
        "network",
        "VPC",
        json!({ "name": "net" }),
        spec(vpc("net", json!({ "team": "a" }))),
    ))
    .await?;
    let mut subnet_spec = spec(subnet("web", "net", "10.0.1.0/24"));
    subnet_spec["forProvider"]["vpcIdRef"]["namespace"] = json!(APP);
    app.apply::<NsSubnet>(Namespaced::manifest(
        "network",
        "Subnet",
        json!({ "name": "web" }),
        subnet_spec,
    ))
    .await?;
    for ready in [
        app.wait_for::<NsVpc>("net", "Ready", READY, |v| is_ready(v) && is_synced(v))
            .await
            .map(|v| external_name(&v)),
        app.wait_for::<NsSubnet>("web", "Ready", READY, |s| is_ready(s) && is_synced(s))
            .await
            .map(|s| external_name(&s)),
    ] {
        assert!(ready?.is_some());
    }
    assert_eq!(running(&world.metrics), expected);
    let vpcs = world
        .admin
        .resources(Some(fakecloud::model::Kind::Vpc), None)
        .await?;
    let subnets = world
        .admin
        .resources(Some(fakecloud::model::Kind::Subnet), None)
        .await?;
    assert_eq!((vpcs.len(), subnets.len()), (1, 1));
    world.shutdown().await;
    Ok(())
}

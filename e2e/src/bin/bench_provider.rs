//! Provider benchmark: N managed resources from apply to all Ready, against
//! the floor that the same control plane sets for the writes a managed
//! create needs, with what each resource cost on the way.
//!
//! `cargo run --release -p e2e --bin bench_provider [-- --count 1000 --start before --mix]`
//!
//! One run measures, on one control plane:
//! 1. **The floor**: a minimal kube-runtime controller that, for objects
//!    applied by `--clients` concurrent clients, makes the writes a managed
//!    create needs (finalizer, create-pending, external name +
//!    create-succeeded, a Ready status) and nothing else: no cloud, no
//!    ProviderConfig. Its objects are removed before the provider runs.
//! 2. **The provider**: N resources applied by the same clients, either
//!    before the provider starts (`--start before`) or while it runs
//!    (`--start while`), until all are Ready. `--mix` makes each unit a VPC,
//!    a Subnet referencing it and a DatabaseInstance (3N resources).
//!    `--replicas` runs more instances without leader election.
//!
//! It prints the time to all Ready and its ratio to the floor, then per
//! resource: API writes and reads and 409 answers (the API server's own
//! `apiserver_request_total`, less the benchmark's own applies and its one
//! watch), reconciles and cloud calls (the provider's metrics, first
//! instance), then the steady state. It fails unless fakecloud holds exactly
//! one cloud resource per managed resource and a steady reconcile writes
//! nothing.
//!
//! Runs the real control plane and fakecloud, and the provider in-process
//! (so its metrics can be read). fakecloud provisions instantly here, so the
//! figures are the provider's and the API server's own cost.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apis::kinds::{DatabaseInstance, Subnet, Vpc};
use clap::{Parser, ValueEnum};
use e2e::objects::ClusterKind;
use e2e::world::{NAMESPACE, World, WorldOptions, is_ready};
use fakecloud::model::Kind;
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Start {
    /// Everything applied, then the provider started.
    Before,
    /// Applied while the provider runs.
    While,
}

#[derive(Parser)]
struct Args {
    /// How many units to create (a VPC, or with --mix a VPC, a Subnet and a
    /// DatabaseInstance).
    #[arg(long, default_value_t = 100)]
    count: usize,
    /// When the resources are applied.
    #[arg(long, value_enum, default_value_t = Start::While)]
    start: Start,
    /// VPCs, Subnets referencing them and DatabaseInstances.
    #[arg(long)]
    mix: bool,
    /// Provider instances running at once, without leader election.
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Clients applying at once (the floor uses as many).
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Skip the floor measurement.
    #[arg(long)]
    no_floor: bool,
    /// How long to watch the steady state.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    steady: Duration,
    /// Extra provider flags (repeatable), e.g. `--provider-arg=--max-reconcile-rate=200`.
    #[arg(long = "provider-arg", allow_hyphen_values = true)]
    provider_args: Vec<String>,
}

const LABEL: &str = "bench";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut provider_args = vec!["--poll-interval=1m".to_owned()];
    provider_args.extend(args.provider_args.iter().cloned());
    let mut world = World::start_with(WorldOptions {
        provisioning_delay: Duration::ZERO,
        provider_args,
        ..WorldOptions::default()
    })
    .await?;
    for kind in Kind::ALL {
        world.admin.set_timing(kind, Duration::ZERO).await?;
    }
    world.stop_provider().await;

    let floor = if args.no_floor {
        None
    } else {
        Some(floor(&world, args.count, args.clients).await?)
    };

    let manifests = units(args.count, args.mix);
    let total = manifests.len();
    let mut replicas = Vec::new();
    let before_api = apiserver_requests(&world).await?;
    let watching = tokio::spawn(count_ready(world.kube(), args.mix, total));
    let start;
    if args.start == Start::Before {
        apply_all(&world, manifests, args.clients).await?;
        start = Instant::now();
        world.start_provider()?;
        for _ in 1..args.replicas {
            replicas.push(world.start_replica().await?);
        }
    } else {
        world.start_provider()?;
        for _ in 1..args.replicas {
            replicas.push(world.start_replica().await?);
        }
        start = Instant::now();
        apply_all(&world, manifests, args.clients).await?;
    }
    tokio::time::timeout(Duration::from_secs(3600), watching)
        .await
        .map_err(|_| anyhow::anyhow!("not all Ready within an hour"))???;
    let all_ready = start.elapsed();
    let after_api = apiserver_requests(&world).await?;

    let mut in_cloud = Vec::new();
    for kind in kinds(args.mix) {
        in_cloud.push((kind, world.admin.resources(Some(kind), None).await?.len()));
    }

    // Let pending requeues drain, then watch the steady state.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let reconciles = world.metrics.total("provider_reconciles_total");
    let conflicts = world
        .metrics
        .total_with("provider_reconciles_total", &[("result", "conflict")]);
    let cloud_calls = world.metrics.total("provider_cloud_calls_total");
    let writes = world.metrics.total("provider_kube_writes_total");
    tokio::time::sleep(args.steady).await;
    let steady_writes = world.metrics.total("provider_kube_writes_total") - writes;
    let steady_reconciles = world.metrics.total("provider_reconciles_total") - reconciles;

    let n = total as f64;
    let delta = |f: &dyn Fn(&Request) -> bool| -> f64 {
        let sum = |m: &BTreeMap<Request, f64>| {
            m.iter().filter(|(r, _)| f(r)).map(|(_, v)| v).sum::<f64>()
        };
        sum(&after_api) - sum(&before_api)
    };
    // The benchmark's own requests: one apply per resource and its watch.
    let api_writes = delta(&|r| is_write(&r.verb)) - n;
    let api_reads = delta(&|r| matches!(r.verb.as_str(), "GET" | "LIST"));
    let api_conflicts = delta(&|r| r.code == "409");

    println!(
        "resources:                     {total} ({}, {} replica(s), {} clients, applied {})",
        if args.mix {
            "VPC + Subnet + DatabaseInstance units"
        } else {
            "VPCs"
        },
        args.replicas,
        args.clients,
        match args.start {
            Start::Before => "before the provider started",
            Start::While => "while the provider ran",
        }
    );
    if let Some(floor) = floor {
        println!(
            "floor (minimal controller):    {floor:.2?} for {} objects",
            args.count
        );
        println!(
            "provider -> all Ready:         {all_ready:.2?} ({:.1}/s, {:.2}x the floor)",
            n / all_ready.as_secs_f64(),
            all_ready.as_secs_f64() / floor.as_secs_f64() * args.count as f64 / n
        );
    } else {
        println!(
            "provider -> all Ready:         {all_ready:.2?} ({:.1}/s)",
            n / all_ready.as_secs_f64()
        );
    }
    println!("per resource, up to all Ready:");
    println!("  API writes:                  {:.2}", api_writes / n);
    println!("  API reads (GET, LIST):       {:.2}", api_reads / n);
    println!("  API answers 409:             {:.2}", api_conflicts / n);
    println!("  reconciles (first instance): {:.2}", reconciles / n);
    println!("  of which conflicts:          {:.2}", conflicts / n);
    println!("  cloud calls:                 {:.2}", cloud_calls / n);
    println!(
        "steady state:                  {steady_reconciles} reconciles, {steady_writes} API writes in {:?}",
        args.steady
    );
    for (kind, count) in &in_cloud {
        println!("{:<31}{count}", format!("{} in fakecloud:", kind.as_str()));
    }
    for replica in replicas {
        replica.stop().await;
    }
    world.shutdown().await;
    for (kind, count) in in_cloud {
        anyhow::ensure!(
            count == args.count,
            "fakecloud holds {count} {} for {} managed resources",
            kind.as_str(),
            args.count
        );
    }
    anyhow::ensure!(
        steady_writes == 0.0,
        "{steady_writes} API writes in the steady state"
    );
    Ok(())
}

fn kinds(mix: bool) -> Vec<Kind> {
    if mix {
        vec![Kind::Vpc, Kind::Subnet, Kind::DatabaseInstance]
    } else {
        vec![Kind::Vpc]
    }
}

/// The manifests of `count` units, each labelled `bench=provider`.
fn units(count: usize, mix: bool) -> Vec<(Kind, Value)> {
    let metadata = |name: String| json!({ "name": name, "labels": { LABEL: "provider" } });
    let mut out = Vec::new();
    for i in 0..count {
        let vpc = format!("bench-{i:05}");
        out.push((
            Kind::Vpc,
            json!({
                "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": metadata(vpc.clone()),
                "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
            }),
        ));
        if mix {
            out.push((
                Kind::Subnet,
                json!({
                    "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
                    "metadata": metadata(format!("{vpc}-subnet")),
                    "spec": { "forProvider": {
                        "region": "us-east-1", "vpcIdRef": { "name": vpc },
                        "cidrBlock": "10.0.1.0/24", "availabilityZone": "us-east-1a",
                    } },
                }),
            ));
            out.push((
                Kind::DatabaseInstance,
                json!({
                    "apiVersion": "database.fakecloud.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
                    "metadata": metadata(format!("{vpc}-db")),
                    "spec": {
                        "forProvider": {
                            "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
                            "allocatedStorage": 20, "masterUsername": "app",
                        },
                        "writeConnectionSecretToRef": { "namespace": NAMESPACE, "name": format!("{vpc}-db") },
                    },
                }),
            ));
        }
    }
    out
}

/// Applies every manifest, `clients` at a time.
async fn apply_all(
    world: &World,
    manifests: Vec<(Kind, Value)>,
    clients: usize,
) -> anyhow::Result<()> {
    stream::iter(manifests)
        .map(|(kind, manifest)| async move {
            match kind {
                Kind::Vpc => world.apply::<Vpc>(manifest).await.map(drop),
                Kind::Subnet => world.apply::<Subnet>(manifest).await.map(drop),
                Kind::DatabaseInstance => world.apply::<DatabaseInstance>(manifest).await.map(drop),
                Kind::NodeGroup => unreachable!("no node groups in the benchmark"),
            }
        })
        .buffer_unordered(clients)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Returns once `total` benchmark resources are Ready, watching (one list,
/// then a watch per kind) rather than polling the API server.
async fn count_ready(kube: kube::Client, mix: bool, total: usize) -> anyhow::Result<()> {
    let ready = Arc::new(std::sync::Mutex::new(BTreeMap::<String, bool>::new()));
    let config = watcher::Config::default().labels(&format!("{LABEL}=provider"));
    let mut streams = vec![ready_stream::<Vpc>(&kube, &config)];
    if mix {
        streams.push(ready_stream::<Subnet>(&kube, &config));
        streams.push(ready_stream::<DatabaseInstance>(&kube, &config));
    }
    let mut all = stream::select_all(streams);
    // A watch error (an expired resourceVersion on a young server) is
    // passed through; the watcher relists after its backoff by itself.
    while let Some(event) = all.next().await {
        let Ok((key, is)) = event else { continue };
        let mut ready = ready.lock().expect("ready lock");
        ready.insert(key, is);
        if ready.values().filter(|r| **r).count() == total {
            return Ok(());
        }
    }
    anyhow::bail!("the watch ended")
}

type ReadyStream = futures::stream::BoxStream<'static, Result<(String, bool), watcher::Error>>;

fn ready_stream<K: ClusterKind + Send + Sync + 'static>(
    kube: &kube::Client,
    config: &watcher::Config,
) -> ReadyStream {
    let kind = K::kind(&()).into_owned();
    watcher(Api::<K>::all(kube.clone()), config.clone())
        .default_backoff()
        .applied_objects()
        .map_ok(move |o| (format!("{kind}/{}", o.name_any()), is_ready(&o)))
        .boxed()
}

/// One `apiserver_request_total` series, by the labels the benchmark uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Request {
    verb: String,
    code: String,
    resource: String,
}

fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "POST" | "PUT" | "PATCH" | "DELETE" | "APPLY" | "CREATE" | "UPDATE"
    )
}

/// The API server's request counters, summed by verb, code and resource.
async fn apiserver_requests(world: &World) -> anyhow::Result<BTreeMap<Request, f64>> {
    let text = world
        .kube()
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?;
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(&format!("{name}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_default()
                .to_owned()
        };
        let key = Request {
            verb: label("verb"),
            code: label("code"),
            resource: label("resource"),
        };
        *out.entry(key).or_default() += value.parse::<f64>().unwrap_or(0.0);
    }
    Ok(out)
}

/// The floor: `count` VPC objects (label `bench=floor`, never seen by the
/// provider, which is stopped) applied by `clients` clients, and a minimal
/// controller making a managed create's writes on each. Returns the time
/// from the first apply to the last Ready, then removes the objects.
async fn floor(world: &World, count: usize, clients: usize) -> anyhow::Result<Duration> {
    let api: Api<Vpc> = Api::all(world.kube());
    let config = watcher::Config::default().labels(&format!("{LABEL}=floor"));
    let controller = Controller::new(api.clone(), config)
        .run(
            |vpc: Arc<Vpc>, api: Arc<Api<Vpc>>| async move { floor_reconcile(&vpc, &api).await },
            |_, _, _| Action::requeue(Duration::from_millis(100)),
            Arc::new(api.clone()),
        )
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);
    let start = Instant::now();
    let watching = tokio::spawn({
        let kube = world.kube();
        async move {
            let mut ready = std::collections::BTreeSet::new();
            let mut stream = watcher(
                Api::<Vpc>::all(kube),
                watcher::Config::default().labels(&format!("{LABEL}=floor")),
            )
            .default_backoff()
            .applied_objects()
            .boxed();
            while let Some(event) = stream.next().await {
                let Ok(vpc) = event else { continue };
                if is_ready(&vpc) {
                    ready.insert(vpc.name_any());
                    if ready.len() == count {
                        return Ok::<_, anyhow::Error>(());
                    }
                }
            }
            anyhow::bail!("the floor's watch ended")
        }
    });
    let manifests = (0..count)
        .map(|i| {
            (
                Kind::Vpc,
                json!({
                    "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                    "metadata": { "name": format!("floor-{i:05}"), "labels": { LABEL: "floor" } },
                    "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
                }),
            )
        })
        .collect();
    apply_all(world, manifests, clients).await?;
    watching.await??;
    let elapsed = start.elapsed();
    controller.abort();

    // Remove them: drop the finalizer, then delete the lot.
    let list = api
        .list(&ListParams::default().labels(&format!("{LABEL}=floor")))
        .await?;
    stream::iter(list.items)
        .map(|vpc| {
            let api = api.clone();
            async move {
                api.patch(
                    &vpc.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
                )
                .await
            }
        })
        .buffer_unordered(clients)
        .try_collect::<Vec<_>>()
        .await?;
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels(&format!("{LABEL}=floor")),
    )
    .await?;
    Ok(elapsed)
}

/// A managed create's writes and nothing else: finalizer, create-pending,
/// external name + create-succeeded, then a Ready status.
async fn floor_reconcile(vpc: &Vpc, api: &Api<Vpc>) -> Result<Action, kube::Error> {
    if is_ready(vpc) {
        return Ok(Action::await_change());
    }
    let name = vpc.name_any();
    let merge = |patch: Value| {
        let name = name.clone();
        async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
        }
    };
    merge(json!({ "metadata": { "finalizers": ["finalizer.managedresource.crossplane.io"] } }))
        .await?;
    let now = jiff::Timestamp::now().to_string();
    merge(json!({ "metadata": { "annotations": {
        "crossplane.io/external-create-pending": now } } }))
    .await?;
    merge(json!({ "metadata": { "annotations": {
        "crossplane.io/external-name": format!("vpc-{name}"),
        "crossplane.io/external-create-succeeded": now } } }))
    .await?;
    let status = json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "status": { "conditions": [
            { "type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": now },
            { "type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": now },
        ] },
    });
    api.patch_status(
        &name,
        &PatchParams::apply("bench-floor").force(),
        &Patch::Apply(status),
    )
    .await?;
    Ok(Action::await_change())
}

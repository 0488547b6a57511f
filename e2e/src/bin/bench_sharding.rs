//! Sharding benchmark: N namespaced VPCs over three namespaces, applied
//! before the provider starts, until all are Ready, first with one
//! provider process (no sharding), then with R replicas (`--sharding`),
//! each on a fresh control plane and fakecloud in the same run.
//!
//! `scripts/bench-sharding --count 30000 --replicas 3`
//!
//! For each run it prints the time to all Ready, each process's peak RSS
//! (sampled from `/proc` once a second), each replica's share of the
//! objects, the cloud's VPC count (which must be exactly N) and the API
//! server's 5xx answers; then the ratios docs/operating/sharding.md quotes: the replicas'
//! time to the single provider's, and each replica's peak RSS to the
//! single provider's. `--only-sharded` skips the single run (the one-off
//! 100,000-VPC run).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apis::kinds::vpc::m::Vpc;
use clap::Parser;
use e2e::apiserver_metrics::{self, apiserver_requests};
use e2e::provider_process::{ProviderProcess, usage_of};
use e2e::world::{World, WorldOptions, is_ready};
use fakecloud::model::Kind;
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;

const NAMESPACES: [&str; 3] = ["bench-a", "bench-b", "bench-c"];
const LEASE_NAMESPACE: &str = "crossplane-system";
const LABEL: &str = "fakecloud.crossplane.io/shard";
const MIB: f64 = 1024.0 * 1024.0;

#[derive(Parser)]
struct Args {
    /// VPCs to apply.
    #[arg(long, default_value_t = 3_000)]
    count: usize,
    /// Replicas of the sharded run.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Clients applying at once.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// The provider binary (a release build for real figures).
    #[arg(long)]
    provider_bin: PathBuf,
    /// Skip the single provider's run.
    #[arg(long)]
    only_sharded: bool,
}

/// What one run measured.
struct Run {
    ready: Duration,
    /// Per process: its identity, peak RSS and objects owned.
    processes: Vec<(String, u64, usize)>,
    cloud: usize,
    /// The API server's 5xx answers, by series.
    server_errors: Vec<(String, f64)>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let single = if args.only_sharded {
        None
    } else {
        Some(run(&args, 1, false).await?)
    };
    let sharded = run(&args, args.replicas, true).await?;
    if let Some(single) = &single {
        let (_, single_rss, _) = single.processes[0];
        println!(
            "time to all Ready: {} replicas {:.1} s, one provider {:.1} s: {:.2}x",
            args.replicas,
            sharded.ready.as_secs_f64(),
            single.ready.as_secs_f64(),
            sharded.ready.as_secs_f64() / single.ready.as_secs_f64()
        );
        for (identity, rss, _) in &sharded.processes {
            println!(
                "peak RSS {identity}: {:.1} MiB, {:.0} % of one provider's {:.1} MiB",
                *rss as f64 / MIB,
                100.0 * *rss as f64 / single_rss as f64,
                single_rss as f64 / MIB
            );
        }
    }
    Ok(())
}

async fn run(args: &Args, replicas: usize, sharding: bool) -> anyhow::Result<Run> {
    let label = if sharding {
        format!("{replicas} replicas (--sharding)")
    } else {
        "one provider".to_owned()
    };
    let mut world = World::start_with(WorldOptions {
        provisioning_delay: Duration::ZERO,
        ..WorldOptions::default()
    })
    .await?;
    for kind in Kind::ALL {
        world.admin.set_timing(kind, Duration::ZERO).await?;
    }
    world.stop_provider().await;
    for namespace in NAMESPACES.iter().chain([&LEASE_NAMESPACE]) {
        world.create_namespace(namespace).await?;
    }
    let applying = Instant::now();
    apply(&world, args.count, args.clients).await?;
    println!(
        "[{label}] applied {} VPCs in {:.1} s",
        args.count,
        applying.elapsed().as_secs_f64()
    );

    let watching = tokio::spawn(all_ready(world.kube(), args.count));
    let start = Instant::now();
    let mut processes = Vec::new();
    let peaks: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let mut samplers = Vec::new();
    // Started together, as a Deployment's pods are.
    for i in 0..replicas {
        let identity = format!("replica-{i}");
        let mut flags = vec!["--poll-interval=1m".to_owned()];
        if sharding {
            flags.extend([
                "--sharding".to_owned(),
                format!("--identity={identity}"),
                format!("--leader-election-namespace={LEASE_NAMESPACE}"),
            ]);
        }
        let log = std::env::temp_dir().join(format!("bench_sharding-{identity}.log"));
        let process =
            ProviderProcess::start(&args.provider_bin, world.cluster.kubeconfig(), &flags, log)?;
        processes.push((identity, process));
    }
    for (identity, process) in &mut processes {
        process.wait_ready(Duration::from_secs(60)).await?;
        let (pid, peaks, name) = (process.pid(), peaks.clone(), identity.clone());
        samplers.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Ok(usage) = usage_of(pid) else { return };
                let mut peaks = peaks.lock().expect("peaks");
                let peak = peaks.entry(name.clone()).or_default();
                *peak = (*peak).max(usage.rss_bytes);
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(3_600), watching).await???;
    let ready = start.elapsed();
    for sampler in samplers {
        sampler.abort();
    }
    let owners = owners(&world).await?;
    let cloud = cloud_vpcs(&world).await?;
    let server_errors = server_errors(&world).await?;
    let peaks = peaks.lock().expect("peaks").clone();
    let measured = Run {
        ready,
        processes: processes
            .iter()
            .map(|(identity, _)| {
                let owned = if sharding {
                    owners.get(identity).copied().unwrap_or(0)
                } else {
                    args.count
                };
                let peak = peaks.get(identity).copied().unwrap_or(0);
                (identity.clone(), peak, owned)
            })
            .collect(),
        cloud,
        server_errors,
    };
    println!(
        "[{label}] all {} Ready in {:.1} s; {} cloud VPCs; API server 5xx: {}",
        args.count,
        ready.as_secs_f64(),
        measured.cloud,
        measured
            .server_errors
            .iter()
            .fold(0.0, |sum, (_, n)| sum + n)
    );
    for (series, count) in &measured.server_errors {
        println!("[{label}] API server 5xx: {series}: {count}");
    }
    for (identity, peak, owned) in &measured.processes {
        println!(
            "[{label}] {identity}: peak RSS {:.1} MiB, owns {owned} ({:.1} %)",
            *peak as f64 / MIB,
            100.0 * *owned as f64 / args.count as f64
        );
    }
    anyhow::ensure!(
        measured.cloud == args.count,
        "{} cloud VPCs for {} managed",
        measured.cloud,
        args.count
    );
    for (_, process) in processes {
        process.stop().await;
    }
    world.shutdown().await;
    Ok(measured)
}

async fn apply(world: &World, count: usize, clients: usize) -> anyhow::Result<()> {
    let kube = world.kube();
    stream::iter(0..count)
        .map(|i| {
            let namespace = NAMESPACES[i % NAMESPACES.len()];
            let api: Api<Vpc> = Api::namespaced(kube.clone(), namespace);
            let name = format!("vpc-{i}");
            let vpc = json!({
                "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": { "name": name, "namespace": namespace },
                "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
            });
            async move {
                api.patch(&name, &PatchParams::apply("bench"), &Patch::Apply(&vpc))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(clients)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Resolves once `count` VPCs have been Ready, from one watch. Its list
/// comes from the API server's watch cache (`any_semantic`), as the
/// provider's do: at 100,000 VPCs on a busy API server, a list paged from
/// etcd outlived etcd's compaction, and its next page was refused with 410
/// Expired, again on every attempt. A watch error is not the end: the
/// watcher lists again after its backoff.
async fn all_ready(kube: kube::Client, count: usize) -> anyhow::Result<()> {
    let mut ready = HashSet::new();
    // From the watch cache, in one piece: while the API server's cache is
    // not ready a paged list from etcd outlives its compaction at this
    // size (410 Expired), and kube-runtime starts it again from the top.
    let mut config = watcher::Config::default().any_semantic();
    config.page_size = None;
    let events = watcher(Api::<Vpc>::all(kube), config)
        .default_backoff()
        .applied_objects();
    tokio::pin!(events);
    while let Some(event) = events.next().await {
        let vpc = match event {
            Ok(vpc) => vpc,
            Err(error) => {
                eprintln!("the benchmark's watch of VPCs failed, listing again: {error}");
                continue;
            }
        };
        if is_ready(&vpc) {
            ready.insert(vpc.uid().unwrap_or_default());
            if ready.len() >= count {
                return Ok(());
            }
        }
    }
    anyhow::bail!("the watch ended with {} of {count} Ready", ready.len())
}

/// Objects by owner label, page by page.
async fn owners(world: &World) -> anyhow::Result<BTreeMap<String, usize>> {
    let api: Api<Vpc> = Api::all(world.kube());
    let mut params = ListParams::default().limit(1_000);
    let mut owners = BTreeMap::new();
    loop {
        let page = api.list_metadata(&params).await?;
        for vpc in &page.items {
            let owner = vpc.labels().get(LABEL).cloned().unwrap_or_default();
            *owners.entry(owner).or_insert(0) += 1;
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(owners),
        }
    }
}

/// The cloud's VPCs, as fakecloud's admin API counts them.
async fn cloud_vpcs(world: &World) -> anyhow::Result<usize> {
    Ok(world.admin.resources(Some(Kind::Vpc), None).await?.len())
}

/// The API server's 5xx answers, by verb, resource and code.
async fn server_errors(world: &World) -> anyhow::Result<Vec<(String, f64)>> {
    Ok(apiserver_metrics::server_errors(
        &apiserver_requests(world).await?,
    ))
}

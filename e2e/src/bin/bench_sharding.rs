//! Sharding benchmark: N namespaced VPCs over three namespaces, applied
//! before the provider starts, until all are Ready, first with one
//! provider process (no sharding), then with R replicas (`--sharding`),
//! each on a fresh control plane and fakecloud in the same run.
//!
//! The VPCs are applied and watched at `v1beta1`, the version the API
//! server stores and the provider reads. At `v1alpha1` the API server
//! called the conversion webhook (served by this process) for every apply
//! and for every event of this benchmark's watch, one HTTPS call each:
//! work for the API server that was the benchmark's, not the provider's,
//! and more of it in the sharded run, whose label write is one more event
//! per VPC. One conversion per write remains, which no client asks for:
//! the API server fills a watch cache for each version of the CRD from
//! etcd, so each write stored at `v1beta1` is converted once for the
//! `v1alpha1` one. The run prints the API server's own count of them.
//!
//! `scripts/bench-sharding --count 30000 --replicas 3`
//! (`--without-v1alpha1` runs it with `v1alpha1` dropped from the CRD).
//!
//! For each run it prints the time to all Ready, each process's peak RSS
//! (sampled from `/proc` once a second), each replica's share of the
//! objects, the cloud's VPC count (which must be exactly N), the API
//! server's 5xx answers, and where the API server's work went (its
//! requests while the providers ran, by verb and resource, the writes per
//! VPC, the conflicts) with each process's CPU time, which is what explains
//! a time ratio on a machine whose API server is the bottleneck; then the
//! ratios docs/operating/sharding.md quotes: the replicas' time to the
//! single provider's, and each replica's peak RSS to the single
//! provider's. `--only-sharded` skips the single run (the one-off
//! 100,000-VPC run). `--rounds N` runs N pairs, every other one with the
//! replicas first, and ends with the median of each ratio: on this shared
//! 2-core machine one pair is not a figure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use apis::kinds::provider_config::m::ProviderConfigUsage;
use apis::kinds::vpc::v1beta1::Vpc;
use clap::Parser;
use crossplane_types::well_known::{
    EXTERNAL_CREATE_PENDING_ANNOTATION, EXTERNAL_CREATE_SUCCEEDED_ANNOTATION,
    EXTERNAL_NAME_ANNOTATION, MANAGED_RESOURCE_FINALIZER, PROVIDER_CONFIG_KIND_LABEL,
    PROVIDER_CONFIG_NAME_LABEL,
};
use e2e::apiserver_metrics::{self, Counters, Requests, is_write, since, sum_by_label};
use e2e::provider_process::{ProviderProcess, metrics_at, usage_of};
use e2e::world::{World, WorldOptions, is_ready};
use fakecloud::model::Kind;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use runtime::metrics::sum_samples;
use serde_json::json;

const NAMESPACES: [&str; 3] = ["bench-a", "bench-b", "bench-c"];
const LEASE_NAMESPACE: &str = "crossplane-system";
const LABEL: &str = "fakecloud.crossplane.io/shard";
const MIB: f64 = 1024.0 * 1024.0;
/// How often a run says how far it got.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

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
    /// Drop the deprecated `v1alpha1` from the VPCs' CRD before applying,
    /// as a cluster that no longer needs it may: what listing it costs the
    /// API server (a conversion per write) is then gone from the run.
    #[arg(long)]
    without_v1alpha1: bool,
    /// Seconds the providers get to make every VPC Ready before the run
    /// fails (the 100,000-VPC run on 2 cores needs more than the default).
    #[arg(long, default_value_t = 3_600)]
    limit: u64,
    /// Pairs of runs (one provider, then the replicas; the other way
    /// round every other round), each on a fresh control plane; with more
    /// than one, the medians of the ratios close the output.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// The providers' `--poll-interval` (their default, 1m). Under it
    /// the two halves do different work: the replicas, whose creates
    /// come at the labelling's pace, poll each Ready VPC about on time,
    /// while one provider behind a backlog of creates polls less; a poll
    /// longer than the run leaves both with the same work, the creates.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    poll_interval: Duration,
    /// VPCs each floor measurement writes to (0: no floor; see the
    /// module's documentation).
    #[arg(long, default_value_t = 0)]
    floor: usize,
}

/// What one run measured.
struct Run {
    ready: Duration,
    processes: Vec<Process>,
    cloud: usize,
    /// The API server's 5xx answers while the providers ran, by series.
    server_errors: Vec<(String, f64)>,
    /// Those before they started (the cluster's start, the apply): not
    /// the providers', shown apart so that neither hides the other.
    server_errors_before: Vec<(String, f64)>,
}

/// One provider process of a run.
struct Process {
    identity: String,
    usage: Sampled,
    owned: usize,
    /// Its reconciles (`controller_runtime_reconcile_total`) when all
    /// were Ready: the first look at each VPC, the look once it is
    /// available, and its polls.
    reconciles: f64,
    /// Its reconciles by result (`provider_reconciles_total`), those
    /// cut short (a stale copy, a deferral) included.
    by_result: BTreeMap<String, f64>,
    /// The rate cap's slots by lane (`provider_rate_limit_slots_total`):
    /// `poll` counts the looks at settled VPCs, `work` the rest.
    by_lane: BTreeMap<String, f64>,
}

/// What a process's samples showed: its highest RSS and when it was
/// sampled (from the start), and its CPU time at the last sample.
#[derive(Clone, Copy, Default)]
struct Sampled {
    peak_rss: u64,
    peak_at: Duration,
    cpu: Duration,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.floor > 0 {
        floor(&args).await?;
    }
    let mut pairs = Vec::new();
    for round in 0..args.rounds {
        if args.rounds > 1 {
            println!("round {} of {}", round + 1, args.rounds);
        }
        if args.only_sharded {
            run(&args, args.replicas, true).await?;
            continue;
        }
        // Every other round runs the replicas first: a machine that slows
        // down or warms up over the hour weighs on both halves alike.
        let (single, sharded) = if round % 2 == 0 {
            let single = run(&args, 1, false).await?;
            (single, run(&args, args.replicas, true).await?)
        } else {
            let sharded = run(&args, args.replicas, true).await?;
            (run(&args, 1, false).await?, sharded)
        };
        print_pair(&args, &single, &sharded);
        pairs.push((single, sharded));
    }
    if pairs.len() > 1 {
        print_rounds(&args, &pairs);
    }
    Ok(())
}

/// The replicas' time to all Ready over one provider's.
fn time_ratio(single: &Run, sharded: &Run) -> f64 {
    sharded.ready.as_secs_f64() / single.ready.as_secs_f64()
}

/// The ratios docs/operating/sharding.md quotes, for one pair of runs.
fn print_pair(args: &Args, single: &Run, sharded: &Run) {
    let single_rss = single.processes[0].usage.peak_rss;
    println!(
        "time to all Ready: {} replicas {:.1} s, one provider {:.1} s: {:.2}x",
        args.replicas,
        sharded.ready.as_secs_f64(),
        single.ready.as_secs_f64(),
        time_ratio(single, sharded)
    );
    for Process {
        identity, usage, ..
    } in &sharded.processes
    {
        println!(
            "peak RSS {identity}: {:.1} MiB, {:.0} % of one provider's {:.1} MiB",
            usage.peak_rss as f64 / MIB,
            100.0 * usage.peak_rss as f64 / single_rss as f64,
            single_rss as f64 / MIB
        );
    }
}

/// Every round's time ratio and largest replica's share of one
/// provider's memory, and the median of each: one pair of runs on this
/// shared 2-core machine is not a figure (one provider alone took 260.7 s
/// and 381.0 s within two hours, on the same build).
fn print_rounds(args: &Args, pairs: &[(Run, Run)]) {
    let mut times = Vec::new();
    let mut memory = Vec::new();
    for (round, (single, sharded)) in pairs.iter().enumerate() {
        let time = time_ratio(single, sharded);
        let largest = sharded
            .processes
            .iter()
            .map(|p| p.usage.peak_rss)
            .max()
            .unwrap_or_default();
        let share = largest as f64 / single.processes[0].usage.peak_rss as f64;
        println!(
            "round {}: one provider {:.1} s, {} replicas {:.1} s: {time:.2}x; largest replica {:.1} % of one provider's memory",
            round + 1,
            single.ready.as_secs_f64(),
            args.replicas,
            sharded.ready.as_secs_f64(),
            100.0 * share
        );
        times.push(time);
        memory.push(share);
    }
    println!(
        "over {} rounds: time {:.2}x (median; {:.2}x to {:.2}x), largest replica's memory {:.1} % (median; {:.1} to {:.1} %)",
        pairs.len(),
        median(&mut times),
        times[0],
        times[times.len() - 1],
        100.0 * median(&mut memory),
        100.0 * memory[0],
        100.0 * memory[memory.len() - 1],
    );
}

/// The median of `values`, which it leaves sorted.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

async fn run(args: &Args, replicas: usize, sharding: bool) -> anyhow::Result<Run> {
    let mut label = if sharding {
        format!("{replicas} replicas (--sharding)")
    } else {
        "one provider".to_owned()
    };
    if args.without_v1alpha1 {
        label.push_str(", v1beta1 alone");
    }
    let mut world = World::start_with(WorldOptions {
        provisioning_delay: Duration::ZERO,
        ..WorldOptions::default()
    })
    .await?;
    for kind in Kind::ALL {
        world.admin.set_timing(kind, Duration::ZERO).await?;
    }
    world.stop_provider().await;
    if args.without_v1alpha1 {
        drop_v1alpha1(&world).await?;
    }
    for namespace in NAMESPACES.iter().chain([&LEASE_NAMESPACE]) {
        world.create_namespace(namespace).await?;
    }
    let applying = Instant::now();
    apply(&world, "vpc", args.count, args.clients).await?;
    println!(
        "[{label}] applied {} VPCs in {:.1} s",
        args.count,
        applying.elapsed().as_secs_f64()
    );

    let counted_before = Counters::read(&world).await?;
    let cpu_before = cpu_elsewhere();
    let start = Instant::now();
    let mut processes = Vec::new();
    let samples: Arc<Mutex<BTreeMap<String, Sampled>>> = Arc::default();
    let mut samplers = Vec::new();
    // Started together, as a Deployment's pods are.
    for i in 0..replicas {
        let identity = format!("replica-{i}");
        let mut flags = vec![format!(
            "--poll-interval={}",
            humantime::format_duration(args.poll_interval)
        )];
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
        let (pid, samples, name) = (process.pid(), samples.clone(), identity.clone());
        samplers.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Ok(usage) = usage_of(pid) else { return };
                let mut samples = samples.lock().expect("samples");
                let sampled = samples.entry(name.clone()).or_default();
                sampled.cpu = usage.cpu;
                if usage.rss_bytes > sampled.peak_rss {
                    sampled.peak_rss = usage.rss_bytes;
                    sampled.peak_at = start.elapsed();
                }
            }
        }));
    }
    let metrics = processes
        .iter()
        .map(|(_, process)| process.metrics_addr.to_string())
        .collect();
    let all = all_ready(world.kube(), metrics, args.count, &label, start);
    let (reached, owners) = tokio::time::timeout(Duration::from_secs(args.limit), all)
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "not all {} Ready within --limit={} s",
                args.count,
                args.limit
            )
        })??;
    let ready = reached - start;
    // Each process's reconciles, in the order of `processes`.
    let mut reconciles = Vec::new();
    for (identity, process) in &processes {
        let text = metrics_at(&process.metrics_addr.to_string())
            .await
            .with_context(|| format!("reading {identity}'s metrics"))?;
        reconciles.push((
            sum_samples(&text, "controller_runtime_reconcile_total", &[]),
            sum_by_label(&text, "provider_reconciles_total", "result"),
            sum_by_label(&text, "provider_rate_limit_slots_total", "lane"),
        ));
    }
    let counted = Counters::read(&world).await?;
    let requests = since(&counted_before.requests, &counted.requests);
    let conversions = counted.conversions_since(&counted_before);
    let replayed = counted.replayed - counted_before.replayed;
    let cpu = cpu_elsewhere().since(&cpu_before);
    for sampler in samplers {
        sampler.abort();
    }
    let cloud = cloud_vpcs(&world).await?;
    let server_errors = apiserver_metrics::server_errors(&requests);
    let server_errors_before = apiserver_metrics::server_errors(&counted_before.requests);
    let samples = samples.lock().expect("samples").clone();
    let measured = Run {
        ready,
        processes: processes
            .iter()
            .zip(reconciles)
            .map(|((identity, _), (reconciles, by_result, by_lane))| {
                let owned = if sharding {
                    owners.get(identity).copied().unwrap_or(0)
                } else {
                    args.count
                };
                Process {
                    identity: identity.clone(),
                    usage: samples.get(identity).copied().unwrap_or_default(),
                    owned,
                    reconciles,
                    by_result,
                    by_lane,
                }
            })
            .collect(),
        cloud,
        server_errors,
        server_errors_before,
    };
    let total = |errors: &[(String, f64)]| errors.iter().fold(0.0, |sum, (_, n)| sum + n);
    println!(
        "[{label}] all {} Ready in {:.1} s; {} cloud VPCs; API server 5xx while the providers ran: {} (before they started: {})",
        args.count,
        ready.as_secs_f64(),
        measured.cloud,
        total(&measured.server_errors),
        total(&measured.server_errors_before),
    );
    for (series, count) in &measured.server_errors {
        println!("[{label}] API server 5xx: {series}: {count}");
    }
    for (series, count) in &measured.server_errors_before {
        println!("[{label}] API server 5xx before the providers started: {series}: {count}");
    }
    for p in &measured.processes {
        println!(
            "[{label}] {}: peak RSS {:.1} MiB at {:.0} s, CPU {:.1} s, owns {} ({:.1} %), {:.0} reconciles ({:.2} per VPC owned)",
            p.identity,
            p.usage.peak_rss as f64 / MIB,
            p.usage.peak_at.as_secs_f64(),
            p.usage.cpu.as_secs_f64(),
            p.owned,
            100.0 * p.owned as f64 / args.count as f64,
            p.reconciles,
            p.reconciles / p.owned.max(1) as f64,
        );
        println!(
            "[{label}] {}: reconciles by result: {:?}",
            p.identity, p.by_result
        );
        let polls = p.by_lane.get("poll").copied().unwrap_or(0.0);
        println!(
            "[{label}] {}: rate cap slots by lane: {:?} ({:.2} polls per VPC owned)",
            p.identity,
            p.by_lane,
            polls / p.owned.max(1) as f64,
        );
    }
    print_requests(&label, &requests, replayed, args.count);
    for (version, (calls, seconds)) in &conversions {
        println!(
            "[{label}] API server's conversion webhook calls to {version}: {calls:.0} ({:.2} per VPC), {:.1} ms each on average",
            calls / args.count as f64,
            1_000.0 * seconds / calls,
        );
    }
    println!(
        "[{label}] CPU: the machine {:.0} % busy of {} cores; kube-apiserver {:.1} s, etcd {:.1} s, fakecloud and this benchmark {:.1} s",
        cpu.busy_share() * 100.0,
        std::thread::available_parallelism().map_or(1, usize::from),
        cpu.apiserver.as_secs_f64(),
        cpu.etcd.as_secs_f64(),
        cpu.this.as_secs_f64(),
    );
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

async fn apply(world: &World, prefix: &str, count: usize, clients: usize) -> anyhow::Result<()> {
    let kube = world.kube();
    stream::iter(0..count)
        .map(|i| {
            let (namespace, name) = vpc_at(prefix, i);
            let api: Api<Vpc> = Api::namespaced(kube.clone(), namespace);
            let vpc = json!({
                "apiVersion": Vpc::api_version(&()), "kind": "VPC",
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

/// The namespace and name of the `i`th VPC named after `prefix`: the
/// VPCs go round the namespaces.
fn vpc_at(prefix: &str, i: usize) -> (&'static str, String) {
    (NAMESPACES[i % NAMESPACES.len()], format!("{prefix}-{i}"))
}

/// How often the replicas' gauges are read while waiting for all Ready.
const GAUGES_EVERY: Duration = Duration::from_secs(2);

/// Resolves, with the moment it happened and the VPCs each owner label
/// holds (from the same read), once the replicas' gauges
/// (`crossplane_managed_resource_ready` on each one's `/metrics`, summed)
/// say `count` VPCs are Ready and a paged read of every VPC from the API
/// server confirms it; every [`PROGRESS_EVERY`] it says how many the
/// replicas hold (`crossplane_managed_resource_exists`: a replica's cache
/// holds only its share, so in a sharded run that is the VPCs labelled and
/// seen by their owner) and how many are Ready, so a run's pace over time
/// is on record, in seconds since `start`.
///
/// Not a watch of its own: at 100,000 VPCs the benchmark's watch of every
/// VPC fell out of the API server's event window (410 Expired) four
/// minutes in, and its list again of all 100,000 whole objects from the
/// watch cache never completed within the API server's one-minute limit
/// for the next 40 minutes, tried again and again beside the replicas'
/// work while the API server grew to 20 GiB: load that was the
/// benchmark's, not the provider's. The gauges cost the API server
/// nothing; the one confirming read, a page at a time, runs only when they
/// say all are Ready, and if it finds fewer, or a page fails on the busy
/// API server, the wait goes on.
async fn all_ready(
    kube: kube::Client,
    metrics: Vec<String>,
    count: usize,
    label: &str,
    start: Instant,
) -> anyhow::Result<(Instant, BTreeMap<String, usize>)> {
    let mut last_progress = start;
    loop {
        let (mut held, mut ready) = (0.0, 0.0);
        for addr in &metrics {
            // A replica not serving yet (or busy past the read's limit)
            // counts nothing this round.
            if let Ok(text) = metrics_at(addr).await {
                held += sum_samples(&text, "crossplane_managed_resource_exists", &[]);
                ready += sum_samples(&text, "crossplane_managed_resource_ready", &[]);
            }
        }
        let reached = Instant::now();
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = reached;
            println!(
                "[{label}] {:.0} s: {held} held by the replicas, {ready} Ready",
                start.elapsed().as_secs_f64(),
            );
        }
        if ready >= count as f64 {
            match read_all(&kube).await {
                Ok((confirmed, owners)) if confirmed >= count => return Ok((reached, owners)),
                Ok((confirmed, _)) => println!(
                    "[{label}] the gauges said {ready} Ready, the API server {confirmed}: waiting on"
                ),
                Err(error) => {
                    println!("[{label}] cannot read the VPCs to confirm: {error}; waiting on")
                }
            }
        }
        tokio::time::sleep(GAUGES_EVERY).await;
    }
}

/// Every VPC, read a page at a time: how many are `Ready`, and how many
/// each owner label holds (`""` for none).
async fn read_all(kube: &kube::Client) -> anyhow::Result<(usize, BTreeMap<String, usize>)> {
    let api: Api<Vpc> = Api::all(kube.clone());
    let first = ListParams::default().limit(500);
    let mut params = first.clone();
    let mut ready = 0;
    let mut owners = BTreeMap::new();
    loop {
        let page = match api.list(&params).await {
            Ok(page) => page,
            // At 100,000 VPCs on a busy API server the read outlasts the
            // version its continue token names (410 Expired); the token
            // the API server offers then goes on after the same VPC.
            Err(kube::Error::Api(status)) if status.code == 410 => {
                match status.metadata.as_ref().and_then(|m| m.continue_.clone()) {
                    Some(token) if !token.is_empty() => {
                        params = first.clone().continue_token(&token);
                        continue;
                    }
                    _ => return Err(kube::Error::Api(status).into()),
                }
            }
            Err(error) => return Err(error.into()),
        };
        for vpc in &page.items {
            ready += usize::from(is_ready(vpc));
            let owner = vpc.labels().get(LABEL).cloned().unwrap_or_default();
            *owners.entry(owner).or_insert(0) += 1;
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = first.clone().continue_token(&token),
            _ => return Ok((ready, owners)),
        }
    }
}

/// Removes `v1alpha1` from the namespaced VPCs' CRD (no object is stored
/// at it yet) and waits until the API server no longer serves it.
async fn drop_v1alpha1(world: &World) -> anyhow::Result<()> {
    const CRD: &str = "vpcs.network.fakecloud.m.crossplane.io";
    let crds: Api<CustomResourceDefinition> = Api::all(world.kube());
    let mut crd = crds.get(CRD).await?;
    crd.spec.versions.retain(|v| v.name == "v1beta1");
    crd.spec.conversion = None;
    crd.metadata.managed_fields = None;
    crds.replace(CRD, &Default::default(), &crd).await?;
    let old: Api<apis::kinds::vpc::m::Vpc> = Api::all(world.kube());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match old.list(&ListParams::default().limit(1)).await {
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            _ if Instant::now() > deadline => {
                anyhow::bail!("{CRD} still serves v1alpha1 after 30 s")
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The cloud's VPCs, as fakecloud's admin API counts them.
async fn cloud_vpcs(world: &World) -> anyhow::Result<usize> {
    Ok(world.admin.resources(Some(Kind::Vpc), None).await?.len())
}

/// Where the API server's work went while the providers ran: writes to
/// VPCs per VPC, conflicts, the watches of VPCs it opened and the events
/// it `replayed` to watches as they opened, and every series of at least
/// one request per ten VPCs, largest first.
fn print_requests(label: &str, requests: &Requests, replayed: f64, count: usize) {
    let sum = |f: &dyn Fn(&apiserver_metrics::Request) -> bool| {
        requests
            .iter()
            .filter(|(r, _)| f(r))
            .fold(0.0, |sum, (_, n)| sum + n)
    };
    let vpc_writes = sum(&|r| r.resource == "vpcs" && is_write(&r.verb));
    println!(
        "[{label}] API server: {:.0} requests, {:.0} VPC writes ({:.2} per VPC), {:.0} answered 409",
        sum(&|_| true),
        vpc_writes,
        vpc_writes / count as f64,
        sum(&|r| r.code == "409"),
    );
    println!(
        "[{label}] API server: {:.0} watches of VPCs opened, {replayed:.0} events replayed to watches as they opened",
        sum(&|r| r.resource == "vpcs" && r.verb == "WATCH"),
    );
    let mut series: Vec<_> = requests
        .iter()
        .filter(|(_, n)| **n * 10.0 >= count as f64)
        .collect();
    series.sort_by(|a, b| b.1.total_cmp(a.1));
    for (r, n) in series {
        let resource = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        println!("[{label}]   {} {resource} {}: {n:.0}", r.verb, r.code);
    }
}

/// CPU time spent outside the providers: the control plane's two
/// processes, this one (fakecloud runs in it), and the machine's share of
/// time busy.
#[derive(Default)]
struct CpuElsewhere {
    apiserver: Duration,
    etcd: Duration,
    this: Duration,
    /// Busy and all jiffies of every core, from `/proc/stat`.
    busy: u64,
    total: u64,
}

impl CpuElsewhere {
    fn since(&self, before: &CpuElsewhere) -> CpuElsewhere {
        CpuElsewhere {
            apiserver: self.apiserver.saturating_sub(before.apiserver),
            etcd: self.etcd.saturating_sub(before.etcd),
            this: self.this.saturating_sub(before.this),
            busy: self.busy.saturating_sub(before.busy),
            total: self.total.saturating_sub(before.total),
        }
    }

    /// The share of the machine's time it was busy.
    fn busy_share(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.busy as f64 / self.total as f64
        }
    }
}

/// Reads [`CpuElsewhere`] from `/proc`; what cannot be read counts as zero
/// (a figure to explain a ratio, not one the run depends on).
fn cpu_elsewhere() -> CpuElsewhere {
    let mut out = CpuElsewhere::default();
    let cpu_of = |pid: u32| usage_of(pid).map(|u| u.cpu).unwrap_or_default();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        match std::fs::read_to_string(entry.path().join("comm"))
            .as_deref()
            .map(str::trim)
        {
            Ok("kube-apiserver") => out.apiserver += cpu_of(pid),
            Ok("etcd") => out.etcd += cpu_of(pid),
            _ => {}
        }
    }
    out.this = cpu_of(std::process::id());
    if let Some(line) = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|stat| stat.lines().next().map(str::to_owned))
    {
        // cpu user nice system idle iowait irq softirq steal ...
        let jiffies: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|n| n.parse().ok())
            .collect();
        out.total = jiffies.iter().sum();
        let idle = jiffies.get(3).copied().unwrap_or(0) + jiffies.get(4).copied().unwrap_or(0);
        out.busy = out.total - idle;
    }
    out
}

/// Tasks issuing a floor's writes at once: many more than two cores need
/// to keep the API server busy, so the client side never waits.
const FLOOR_TASKS: usize = 64;

/// The field manager of the floor's writes, as the provider names its own.
const FLOOR_MANAGER: &str = "bench-floor";

/// Measures the floor of the time ratio (see the module's documentation)
/// on a control plane of its own, and prints it.
async fn floor(args: &Args) -> anyhow::Result<()> {
    let mut world = World::start_with(WorldOptions {
        provisioning_delay: Duration::ZERO,
        ..WorldOptions::default()
    })
    .await?;
    world.stop_provider().await;
    if args.without_v1alpha1 {
        drop_v1alpha1(&world).await?;
    }
    for namespace in NAMESPACES {
        world.create_namespace(namespace).await?;
    }
    // Time taken by one provider's writes, then by the replicas'.
    let mut took = [Duration::ZERO; 2];
    for (set, labelled) in [false, true, true, false].into_iter().enumerate() {
        let prefix = format!("floor{set}");
        // Applied first, untimed, as the providers' clocks start after the
        // apply.
        apply(&world, &prefix, args.floor, args.clients).await?;
        let start = Instant::now();
        stream::iter(0..args.floor)
            .map(|i| floor_writes(world.kube(), vpc_at(&prefix, i), labelled))
            .buffer_unordered(FLOOR_TASKS)
            .try_collect::<Vec<()>>()
            .await?;
        let elapsed = start.elapsed();
        let whose = if labelled {
            "the replicas' writes (label, marks, status, usage, Event)"
        } else {
            "one provider's writes (marks, status, usage, Event)"
        };
        println!(
            "[floor] {whose} for {} VPCs: {:.1} s, {:.0} VPCs a second",
            args.floor,
            elapsed.as_secs_f64(),
            args.floor as f64 / elapsed.as_secs_f64()
        );
        took[usize::from(labelled)] += elapsed;
    }
    println!(
        "[floor] the replicas' writes took {:.2}x one provider's: the least the time ratio can be where the API server is the bottleneck",
        took[1].as_secs_f64() / took[0].as_secs_f64()
    );
    world.shutdown().await;
    Ok(())
}

/// The API writes one VPC costs, as the provider makes them: with
/// `labelled`, the leader's owner label first (a merge patch answered as
/// metadata, as the assigner's); then the create-pending mark with the
/// finalizer and the external name with create-succeeded (merge patches),
/// the status and the ProviderConfigUsage (server-side applies), and the
/// Event of the create.
async fn floor_writes(
    kube: kube::Client,
    (namespace, name): (&'static str, String),
    labelled: bool,
) -> anyhow::Result<()> {
    let api: Api<Vpc> = Api::namespaced(kube.clone(), namespace);
    let vpc_version = Vpc::api_version(&());
    let merge = PatchParams {
        field_manager: Some(FLOOR_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let apply = PatchParams::apply(FLOOR_MANAGER).force();
    if labelled {
        let label = json!({ "metadata": { "labels": { LABEL: "replica-0" } } });
        api.patch_metadata(&name, &merge, &Patch::Merge(&label))
            .await?;
    }
    let now = jiff::Timestamp::now().to_string();
    let pending = json!({ "metadata": {
        "finalizers": [MANAGED_RESOURCE_FINALIZER],
        "annotations": { EXTERNAL_CREATE_PENDING_ANNOTATION: now },
    } });
    api.patch(&name, &merge, &Patch::Merge(&pending)).await?;
    let external = format!("vpc-{namespace}-{name}");
    let created = json!({ "metadata": { "annotations": {
        EXTERNAL_NAME_ANNOTATION: external,
        EXTERNAL_CREATE_SUCCEEDED_ANNOTATION: now,
    } } });
    let vpc = api.patch(&name, &merge, &Patch::Merge(&created)).await?;
    let status = json!({
        "apiVersion": vpc_version, "kind": "VPC",
        "status": {
            "atProvider": { "id": external, "state": "available" },
            "conditions": [
                { "type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": now },
                { "type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": now },
            ],
        },
    });
    api.patch_status(&name, &apply, &Patch::Apply(&status))
        .await?;
    let uid = vpc.uid().context("the API server gave the VPC no uid")?;
    let usage = json!({
        "apiVersion": ProviderConfigUsage::api_version(&()),
        "kind": ProviderConfigUsage::kind(&()),
        "metadata": {
            "name": uid,
            "labels": {
                PROVIDER_CONFIG_NAME_LABEL: "default",
                PROVIDER_CONFIG_KIND_LABEL: "ClusterProviderConfig",
            },
            "ownerReferences": [{
                "apiVersion": vpc_version, "kind": "VPC", "name": name, "uid": uid,
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "providerConfigRef": { "kind": "ClusterProviderConfig", "name": "default" },
        "resourceRef": { "apiVersion": vpc_version, "kind": "VPC", "name": name, "uid": uid },
    });
    Api::<ProviderConfigUsage>::namespaced(kube.clone(), namespace)
        .patch(&uid, &apply, &Patch::Apply(&usage))
        .await?;
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": { "name": format!("{name}.{}", jiff::Timestamp::now().as_nanosecond()) },
        "involvedObject": {
            "apiVersion": vpc_version, "kind": "VPC", "namespace": namespace,
            "name": name, "uid": uid,
        },
        "type": "Normal", "reason": "CreatedExternalResource",
        "message": "Successfully requested creation of external resource",
        "count": 1, "firstTimestamp": now, "lastTimestamp": now,
        "source": { "component": FLOOR_MANAGER },
    });
    Api::<Event>::namespaced(kube, namespace)
        .create(&PostParams::default(), &serde_json::from_value(event)?)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_two_middle_ones() {
        assert_eq!(median(&mut [1.6, 0.9, 1.4]), 1.4);
        let mut even = [1.5, 1.2, 1.4, 1.3];
        assert_eq!(median(&mut even), 1.35);
        assert_eq!(even, [1.2, 1.3, 1.4, 1.5]);
    }
}

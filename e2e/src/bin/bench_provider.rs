//! Provider benchmark: N managed resources from apply to all Ready, against
//! the floor that the same control plane sets for the writes a managed
//! create needs, with what each resource cost on the way.
//!
//! `cargo run --release -p e2e --bin bench_provider [-- --count 1000 --start before --mix]`
//!
//! One run measures, on one control plane:
//! 1. **The floors**, the fastest this control plane does the work, by
//!    many concurrent tasks with no queue and no client limit: the writes
//!    a managed create needs on objects that exist (finalizer,
//!    create-pending, external name + create-succeeded, a Ready status),
//!    and the least any controller needs (create each object, write its
//!    status once). No cloud, no ProviderConfig; their objects are removed
//!    before the provider runs.
//! 2. **The provider**: N resources applied by the same clients, either
//!    before the provider starts (`--start before`) or while it runs
//!    (`--start while`), until all are Ready. `--mix` makes each unit a VPC,
//!    a Subnet referencing it and a DatabaseInstance (3N resources).
//!    `--replicas` runs more instances without leader election.
//!
//! It prints the time to all Ready and its ratio to each floor, then per
//! resource: API writes and reads and 409 answers (the API server's own
//! `apiserver_request_total`, less the benchmark's own applies and its one
//! watch), reconciles and cloud calls (the provider's metrics, first
//! instance), then the steady state. It fails unless fakecloud holds exactly
//! one cloud resource per managed resource and a steady reconcile writes
//! nothing.
//!
//! It also prints the API server's answers 429 and 5xx up to all Ready, and
//! in the steady state the API reads and writes per minute on what the
//! provider touches (its kinds, ProviderConfigs, Secrets, Events).
//!
//! `--burst M` then applies M more units at once and reports how long they
//! took to be Ready and how many polls of the Ready ones the rate cap
//! admitted per second meanwhile, against the steady state's rate: a burst
//! of new resources must not starve the polling of Ready ones.
//!
//! Runs the real control plane and fakecloud (in this process, provisioning
//! instantly, so the figures are the provider's and the API server's own
//! cost). The provider runs in-process by default; `--provider-bin` runs
//! that binary (a release build for real figures) as a process of its own,
//! so its memory and CPU can be read from `/proc`: idle RSS (started with
//! nothing to reconcile), peak RSS up to all Ready and in the steady state,
//! and the steady state's CPU per minute and share of one core.
//!
//! The 10,000-VPC run docs/benchmarks.md gives:
//! `scripts/bench-provider --count 10000 --start before --no-floor --steady 2m`

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apis::kinds::{DatabaseInstance, ProviderConfig, Subnet, Vpc};
use clap::{Parser, ValueEnum};
use e2e::apiserver_metrics::{Request, Requests, apiserver_requests, is_read, is_write, since};
use e2e::objects::Kind as ObjectKind;
use e2e::provider_process::{ProviderProcess, Usage, usage_of};
use e2e::world::{NAMESPACE, World, WorldOptions, is_ready};
use fakecloud::model::Kind;
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use runtime::metrics::sum_samples;
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
    /// After the steady state, apply this many more units at once and
    /// report how the polling of the Ready ones held up while the new ones
    /// became Ready (0: no burst).
    #[arg(long, default_value_t = 0)]
    burst: usize,
    /// How long to watch the steady state.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    steady: Duration,
    /// Extra provider flags (repeatable), e.g. `--provider-arg=--max-reconcile-rate=200`.
    #[arg(long = "provider-arg", allow_hyphen_values = true)]
    provider_args: Vec<String>,
    /// Run this provider binary as its own process (one replica) and report
    /// its RSS and CPU, instead of the provider in this process.
    #[arg(long)]
    provider_bin: Option<PathBuf>,
}

/// The provider being measured.
enum Under {
    /// `provider::run` in this process; its metrics read directly.
    Task,
    /// The binary as its own process; metrics over HTTP, usage from /proc.
    Process(Box<ProcessUnder>),
}

struct ProcessUnder {
    binary: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    running: Option<ProviderProcess>,
    /// Samples taken once a second while it runs.
    samples: Arc<Mutex<Vec<(Instant, Usage)>>>,
    sampler: Option<tokio::task::JoinHandle<()>>,
}

impl Under {
    async fn start(&mut self, world: &mut World) -> anyhow::Result<()> {
        match self {
            Under::Task => world.start_provider()?,
            Under::Process(p) => {
                let mut process = ProviderProcess::start(
                    &p.binary,
                    world.cluster.kubeconfig(),
                    &p.args,
                    p.log.clone(),
                )?;
                process.wait_ready(Duration::from_secs(60)).await?;
                let pid = process.pid();
                let samples = p.samples.clone();
                p.sampler = Some(tokio::spawn(async move {
                    let mut tick = tokio::time::interval(Duration::from_secs(1));
                    loop {
                        tick.tick().await;
                        match usage_of(pid) {
                            Ok(usage) => samples
                                .lock()
                                .expect("samples")
                                .push((Instant::now(), usage)),
                            Err(_) => return,
                        }
                    }
                }));
                p.running = Some(process);
            }
        }
        Ok(())
    }

    async fn stop(&mut self, world: &mut World) {
        match self {
            Under::Task => world.stop_provider().await,
            Under::Process(p) => {
                if let Some(sampler) = p.sampler.take() {
                    sampler.abort();
                }
                if let Some(process) = p.running.take() {
                    process.stop().await;
                }
            }
        }
    }

    /// Its metrics, as Prometheus text.
    async fn metrics(&self, world: &World) -> anyhow::Result<String> {
        Ok(match self {
            Under::Task => world.metrics.encode(),
            Under::Process(p) => {
                p.running
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("the provider process is not running"))?
                    .metrics()
                    .await?
            }
        })
    }

    /// Its usage now, when it is a process of its own.
    fn usage(&self) -> anyhow::Result<Option<Usage>> {
        match self {
            Under::Task => Ok(None),
            Under::Process(p) => match &p.running {
                Some(process) => Ok(Some(process.usage()?)),
                None => Ok(None),
            },
        }
    }

    /// The highest RSS sampled from `since` on.
    fn peak_rss(&self, since: Instant) -> Option<u64> {
        match self {
            Under::Task => None,
            Under::Process(p) => p
                .samples
                .lock()
                .expect("samples")
                .iter()
                .filter(|(at, _)| *at >= since)
                .map(|(_, usage)| usage.rss_bytes)
                .max(),
        }
    }
}

/// The provider's counters the benchmark reports, read at one moment.
struct Counters {
    reconciles: f64,
    /// Slots of the rate cap's poll lane: the periodic looks at Ready
    /// resources.
    polls: f64,
    conflicts: f64,
    cloud_calls: f64,
    writes: f64,
    /// Every series of the writes and reconciles, by its labels: what a
    /// write in the steady state was, should one be made.
    series: BTreeMap<String, f64>,
}

impl Counters {
    async fn read(under: &Under, world: &World) -> anyhow::Result<Self> {
        let text = under.metrics(world).await?;
        let total = |family| sum_samples(&text, family, &[]);
        Ok(Self {
            reconciles: total("provider_reconciles_total"),
            polls: sum_samples(
                &text,
                "provider_rate_limit_slots_total",
                &[("lane", "poll")],
            ),
            conflicts: sum_samples(
                &text,
                "provider_reconciles_total",
                &[("result", "conflict")],
            ),
            cloud_calls: total("provider_cloud_calls_total"),
            writes: total("provider_kube_writes_total"),
            series: ["provider_kube_writes_total", "provider_reconciles_total"]
                .iter()
                .flat_map(|family| series(&text, family))
                .collect(),
        })
    }

    /// The series that moved since `before`, with how much.
    fn moved_since(&self, before: &Counters) -> Vec<String> {
        self.series
            .iter()
            .filter_map(|(series, now)| {
                let delta = now - before.series.get(series).copied().unwrap_or(0.0);
                (delta != 0.0).then(|| format!("{series} +{delta}"))
            })
            .collect()
    }
}

/// The samples of `family` in a text exposition, by series (name and
/// labels).
fn series(text: &str, family: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|line| {
            line.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

const MIB: f64 = 1024.0 * 1024.0;

const LABEL: &str = "bench";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut provider_args = vec!["--poll-interval=1m".to_owned()];
    provider_args.extend(args.provider_args.iter().cloned());
    let mut under = match &args.provider_bin {
        None => Under::Task,
        Some(binary) => {
            anyhow::ensure!(
                args.replicas == 1,
                "--provider-bin runs one provider process; --replicas needs the in-process provider"
            );
            Under::Process(Box::new(ProcessUnder {
                binary: binary.clone(),
                args: provider_args.clone(),
                log: std::env::temp_dir().join("bench_provider-provider.log"),
                running: None,
                samples: Arc::default(),
                sampler: None,
            }))
        }
    };
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

    // Idle: started, with its ProviderConfig and nothing to reconcile.
    let idle_rss = if matches!(under, Under::Process(_)) {
        under.start(&mut world).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let usage = under.usage()?;
        under.stop(&mut world).await;
        usage.map(|u| u.rss_bytes)
    } else {
        None
    };

    let floor = if args.no_floor {
        None
    } else {
        Some(floors(&world, args.count).await?)
    };

    let manifests = units("bench", args.count, args.mix);
    let total = manifests.len();
    let mut replicas = Vec::new();
    let before_api = apiserver_requests(&world).await?;
    let watching = tokio::spawn(count_ready(world.kube(), args.mix, total));
    let start;
    if args.start == Start::Before {
        apply_all(&world, manifests, args.clients).await?;
        start = Instant::now();
        under.start(&mut world).await?;
        for _ in 1..args.replicas {
            replicas.push(world.start_replica().await?);
        }
    } else {
        under.start(&mut world).await?;
        for _ in 1..args.replicas {
            replicas.push(world.start_replica().await?);
        }
        start = Instant::now();
        apply_all(&world, manifests, args.clients).await?;
    }
    within_an_hour(watching, "not all Ready").await?;
    let all_ready = start.elapsed();
    let after_api = apiserver_requests(&world).await?;
    let peak_rss = under.peak_rss(start);

    let in_cloud = in_cloud(&world, args.mix).await?;

    // Ready is not the end of a create's writes (late initialisation
    // follows, and the ProviderConfig's recount), so the steady state starts
    // once the provider has written nothing for a while and the
    // ProviderConfig counts every resource.
    let (counters, settled) = settle(&under, &world, total).await?;
    let steady_api_before = apiserver_requests(&world).await?;
    let steady_usage_before = under.usage()?;
    let steady_start = Instant::now();
    tokio::time::sleep(args.steady).await;
    let steady_elapsed = steady_start.elapsed();
    let steady_usage_after = under.usage()?;
    let steady_api_after = apiserver_requests(&world).await?;
    let steady_counters = Counters::read(&under, &world).await?;
    let steady_writes = steady_counters.writes - counters.writes;
    let steady_reconciles = steady_counters.reconciles - counters.reconciles;
    let steady_peak_rss = under.peak_rss(steady_start);
    let burst = match args.burst {
        0 => None,
        count => Some(burst(&under, &world, &args, total, count).await?),
    };

    let n = total as f64;
    let delta = |before: &Requests, after: &Requests, f: &dyn Fn(&Request) -> bool| -> f64 {
        let sum = |m: &Requests| m.iter().filter(|(r, _)| f(r)).map(|(_, v)| v).sum::<f64>();
        sum(after) - sum(before)
    };
    let run = |f: &dyn Fn(&Request) -> bool| delta(&before_api, &after_api, f);
    // The benchmark's own requests: one apply per resource and its watch.
    // Writes are counted on what the provider touches; the control plane's
    // own (its leases, its controllers' objects) go on as time passes and
    // are printed apart.
    let api_writes = run(&|r| is_write(&r.verb) && is_providers(&r.resource)) - n;
    let others_writes = run(&|r| is_write(&r.verb) && !is_providers(&r.resource));
    let api_reads = run(&|r| is_read(&r.verb));
    let api_conflicts = run(&|r| r.code == "409");
    let api_throttled = run(&|r| r.code == "429");
    let api_failed = run(&|r| r.code.starts_with('5'));
    let per_minute = 60.0 / steady_elapsed.as_secs_f64();
    let steady = |f: &dyn Fn(&Request) -> bool| {
        delta(&steady_api_before, &steady_api_after, &|r| {
            is_providers(&r.resource) && f(r)
        }) * per_minute
    };

    println!(
        "resources:                     {total} ({}, {} replica(s), {} clients, applied {}, provider {})",
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
        },
        match &args.provider_bin {
            None => "in this process".to_owned(),
            Some(binary) => format!("process {}", binary.display()),
        }
    );
    if let Some(idle) = idle_rss {
        println!(
            "provider idle RSS:             {:.1} MiB",
            idle as f64 / MIB
        );
    }
    if let Some(floor) = &floor {
        let ratio =
            |to: Duration| all_ready.as_secs_f64() / to.as_secs_f64() * args.count as f64 / n;
        println!(
            "floor, managed writes:         {:.2?} for {} objects (4 writes each, {FLOOR_TASKS} tasks)",
            floor.managed_writes, args.count
        );
        println!(
            "floor, create + status:        {:.2?} for {} objects ({FLOOR_TASKS} tasks)",
            floor.create_and_status, args.count
        );
        println!(
            "provider -> all Ready:         {all_ready:.2?} ({:.1}/s, {:.2}x the managed-writes floor, {:.2}x create + status)",
            n / all_ready.as_secs_f64(),
            ratio(floor.managed_writes),
            ratio(floor.create_and_status)
        );
    } else {
        println!(
            "provider -> all Ready:         {all_ready:.2?} ({:.1}/s)",
            n / all_ready.as_secs_f64()
        );
    }
    if let Some(peak) = peak_rss {
        println!(
            "provider peak RSS to Ready:    {:.1} MiB",
            peak as f64 / MIB
        );
    }
    println!("API server answers 429, 5xx:   {api_throttled}, {api_failed} (up to all Ready)");
    println!("per resource, up to all Ready:");
    println!(
        "  API writes:                  {:.2} (on its kinds, ProviderConfigs, Secrets, Events)",
        api_writes / n
    );
    for (resource, writes) in by_resource(&before_api, &after_api, is_write) {
        // The benchmark's own applies: one per resource of each kind.
        let own = match resource.as_str() {
            "vpcs" => args.count as f64,
            "subnets" | "databaseinstances" if args.mix => args.count as f64,
            _ => 0.0,
        };
        println!("    {resource}: {:.3}", (writes - own) / n);
    }
    println!("  control plane's own writes:  {others_writes} in all (leases, its controllers)");
    println!(
        "  API reads (GET, LIST):       {:.2} (the control plane's and this benchmark's too)",
        api_reads / n
    );
    // GETs alone, by resource: the control plane's controllers and the
    // watches list, so a GET is a read someone asked of one object (a
    // provider reading a usage per new resource, say).
    println!("  API GETs on its resources:");
    for (resource, gets) in by_resource(&before_api, &after_api, |verb| verb == "GET") {
        println!("    {resource}: {:.3}", gets / n);
    }
    println!("  API answers 409:             {:.2}", api_conflicts / n);
    println!(
        "  reconciles (first instance): {:.2}",
        counters.reconciles / n
    );
    println!(
        "  of which conflicts:          {:.2}",
        counters.conflicts / n
    );
    println!(
        "  cloud calls:                 {:.2}",
        counters.cloud_calls / n
    );
    println!(
        "steady state:                  {steady_reconciles} reconciles, {steady_writes} API writes by the provider in {steady_elapsed:.1?}"
    );
    println!(
        "  settled {settled:.1?} after all Ready (all counted by the ProviderConfig, then no provider write for {QUIET:?})"
    );
    println!(
        "  API per minute (its kinds, ProviderConfigs, Secrets, Events): {:.1} reads, {:.1} writes",
        steady(&|r| is_read(&r.verb)),
        steady(&|r| is_write(&r.verb))
    );
    for (request, count) in &steady_api_after {
        let before = steady_api_before.get(request).copied().unwrap_or(0.0);
        if count - before > 0.0
            && is_providers(&request.resource)
            && (is_read(&request.verb) || is_write(&request.verb))
        {
            println!(
                "    {} {} {}: {}",
                request.verb,
                request.resource,
                request.code,
                count - before
            );
        }
    }
    if let (Some(before), Some(after)) = (steady_usage_before, steady_usage_after) {
        let cpu = after.cpu.saturating_sub(before.cpu).as_secs_f64();
        println!(
            "  provider CPU:                {:.2} s per minute ({:.1} % of one core)",
            cpu * per_minute,
            cpu / steady_elapsed.as_secs_f64() * 100.0
        );
    }
    if let Some(peak) = steady_peak_rss {
        println!(
            "  provider peak RSS:           {:.1} MiB",
            peak as f64 / MIB
        );
    }
    if let Some(burst) = &burst {
        println!(
            "burst:                         {} more applied at once, all Ready in {:.2?}",
            burst.resources, burst.took
        );
        println!(
            "  polls of the Ready ones:     {:.1}/s during the burst, {:.1}/s in the steady state",
            burst.polls_per_second,
            (steady_counters.polls - counters.polls) / steady_elapsed.as_secs_f64()
        );
        for (kind, count) in &burst.in_cloud {
            let label = format!("  {} in fakecloud after it:", kind.as_str());
            println!("{label:<40} {count}");
        }
    }
    for (kind, count) in &in_cloud {
        println!("{:<31}{count}", format!("{} in fakecloud:", kind.as_str()));
    }
    for replica in replicas {
        replica.stop().await;
    }
    under.stop(&mut world).await;
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
        "{steady_writes} API writes in the steady state: {:?}",
        steady_counters.moved_since(&counters)
    );
    if let Some(burst) = burst {
        for (kind, count) in burst.in_cloud {
            anyhow::ensure!(
                count == args.count + args.burst,
                "after the burst fakecloud holds {count} {} for {} managed resources",
                kind.as_str(),
                args.count + args.burst
            );
        }
    }
    Ok(())
}

/// What a burst of new resources on top of Ready ones showed.
struct Burst {
    resources: usize,
    took: Duration,
    /// Poll-lane slots a second while the burst was becoming Ready.
    polls_per_second: f64,
    in_cloud: Vec<(Kind, usize)>,
}

/// Applies `count` more units on top of the `ready` Ready resources and
/// waits until every one is Ready, counting the poll lane's slots
/// meanwhile: a cap that let the burst starve the polling would show
/// (nearly) none.
async fn burst(
    under: &Under,
    world: &World,
    args: &Args,
    ready: usize,
    count: usize,
) -> anyhow::Result<Burst> {
    let manifests = units("burst", count, args.mix);
    let resources = manifests.len();
    let watching = tokio::spawn(count_ready(world.kube(), args.mix, ready + resources));
    let before = Counters::read(under, world).await?;
    let start = Instant::now();
    apply_all(world, manifests, args.clients).await?;
    within_an_hour(watching, "the burst was not all Ready").await?;
    let took = start.elapsed();
    let after = Counters::read(under, world).await?;
    Ok(Burst {
        resources,
        took,
        polls_per_second: (after.polls - before.polls) / took.as_secs_f64(),
        in_cloud: in_cloud(world, args.mix).await?,
    })
}

/// Waits for a [`count_ready`] task; `failure` says what did not happen
/// within an hour.
async fn within_an_hour(
    watching: tokio::task::JoinHandle<anyhow::Result<()>>,
    failure: &str,
) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(3600), watching)
        .await
        .map_err(|_| anyhow::anyhow!("{failure} within an hour"))??
}

/// How many cloud resources of each benchmarked kind fakecloud holds.
async fn in_cloud(world: &World, mix: bool) -> anyhow::Result<Vec<(Kind, usize)>> {
    let mut counts = Vec::new();
    for kind in kinds(mix) {
        counts.push((kind, world.admin.resources(Some(kind), None).await?.len()));
    }
    Ok(counts)
}

/// How long the provider must write nothing before the steady state starts.
const QUIET: Duration = Duration::from_secs(5);

/// Waits until the `default` ProviderConfig counts `users` and the provider
/// has made no API write for [`QUIET`] (at most ten minutes); returns its
/// counters then and how long that took.
async fn settle(
    under: &Under,
    world: &World,
    users: usize,
) -> anyhow::Result<(Counters, Duration)> {
    let start = Instant::now();
    let configs: Api<ProviderConfig> = Api::all(world.kube());
    let mut last = Counters::read(under, world).await?;
    let mut quiet_since = Instant::now();
    loop {
        let counted = configs
            .get("default")
            .await?
            .status
            .and_then(|s| s.users)
            .unwrap_or(0);
        if quiet_since.elapsed() >= QUIET && counted == users as i64 {
            break;
        }
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(600),
            "not settled ten minutes after all were Ready (the ProviderConfig must count {users}; or the provider kept writing)"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = Counters::read(under, world).await?;
        if now.writes != last.writes {
            quiet_since = Instant::now();
        }
        last = now;
    }
    Ok((last, start.elapsed()))
}

fn kinds(mix: bool) -> Vec<Kind> {
    if mix {
        vec![Kind::Vpc, Kind::Subnet, Kind::DatabaseInstance]
    } else {
        vec![Kind::Vpc]
    }
}

/// The manifests of `count` units named `{prefix}-NNNNN`, each labelled
/// `bench=provider`.
fn units(prefix: &str, count: usize, mix: bool) -> Vec<(Kind, Value)> {
    let metadata = |name: String| json!({ "name": name, "labels": { LABEL: "provider" } });
    let mut out = Vec::new();
    for i in 0..count {
        let vpc = format!("{prefix}-{i:05}");
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
/// then a watch per kind) rather than polling the API server. The count of
/// Ready ones is kept as events come, not recounted over all resources on
/// each: recounting took 11 % of this process's CPU at 10,000 VPCs (perf),
/// CPU the API server lacked while the provider was being timed.
async fn count_ready(kube: kube::Client, mix: bool, total: usize) -> anyhow::Result<()> {
    let mut ready = BTreeMap::<String, bool>::new();
    let mut ready_count = 0;
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
        let was = ready.insert(key, is).unwrap_or(false);
        match (was, is) {
            (false, true) => ready_count += 1,
            (true, false) => ready_count -= 1,
            _ => {}
        }
        if ready_count == total {
            return Ok(());
        }
    }
    anyhow::bail!("the watch ended")
}

type ReadyStream = futures::stream::BoxStream<'static, Result<(String, bool), watcher::Error>>;

fn ready_stream<K: ObjectKind + Send + Sync + 'static>(
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

/// Requests of the verbs `verb` picks on the provider's resources between
/// `before` and `after`, summed by resource, so that a figure per created
/// resource shows where it comes from.
fn by_resource(
    before: &Requests,
    after: &Requests,
    verb: fn(&str) -> bool,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (request, delta) in since(before, after) {
        if verb(&request.verb) && is_providers(&request.resource) {
            *out.entry(request.resource).or_default() += delta;
        }
    }
    out
}

/// The API resources the provider reads or writes; the control plane's own
/// traffic (leases, service accounts, nodes) is not counted against it.
fn is_providers(resource: &str) -> bool {
    matches!(
        resource,
        "vpcs"
            | "subnets"
            | "nodegroups"
            | "databaseinstances"
            | "providerconfigs"
            | "providerconfigusages"
            | "secrets"
            | "events"
    )
}

/// Tasks issuing the floors' writes at once: many more than two cores
/// need to keep the API server busy, so the client side never waits.
const FLOOR_TASKS: usize = 64;

/// What the same control plane needs, at best, for `count` objects: the
/// provider's ratios are to these, measured in the same run.
struct Floors {
    /// A managed create's writes on objects that exist (as the provider
    /// finds resources applied before it starts): finalizer,
    /// create-pending, external name + create-succeeded, a Ready status,
    /// as crossplane-runtime makes them, issued directly by
    /// [`FLOOR_TASKS`] tasks: no watch, no queue, no client limit.
    managed_writes: Duration,
    /// The least any controller of such objects must do: create each and
    /// write its status once, by as many tasks.
    create_and_status: Duration,
}

/// Measures both [`Floors`] on objects labelled `bench=floor`, which the
/// provider (stopped meanwhile) never sees, then removes them.
async fn floors(world: &World, count: usize) -> anyhow::Result<Floors> {
    let api: Api<Vpc> = Api::all(world.kube());
    let names =
        |prefix: &str| -> Vec<String> { (0..count).map(|i| format!("{prefix}-{i:05}")).collect() };
    let create = |name: String| {
        let api = api.clone();
        async move {
            let object: Vpc = serde_json::from_value(json!({
                "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": { "name": name, "labels": { LABEL: "floor" } },
                "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
            }))?;
            api.create(&PostParams::default(), &object).await?;
            anyhow::Ok(name)
        }
    };

    let start = Instant::now();
    on_each(names("floor-cs"), |name| {
        let (api, created) = (api.clone(), create(name));
        async move { ready_status(&api, &created.await?).await }
    })
    .await?;
    let create_and_status = start.elapsed();

    // Created first, untimed: the provider's clock also starts after the
    // applies.
    on_each(names("floor-mw"), |name| {
        let created = create(name);
        async move { created.await.map(drop) }
    })
    .await?;
    let start = Instant::now();
    on_each(names("floor-mw"), |name| {
        let api = api.clone();
        async move { managed_writes(&api, &name).await }
    })
    .await?;
    let managed_writes = start.elapsed();

    // Remove them one by one, as many at a time as wrote them: a single
    // deletecollection of 20,000 objects outlasts the API server's request
    // timeout (it answers 500 `context deadline exceeded`). Only the
    // managed-writes objects hold a finalizer.
    on_each(names("floor-cs"), |name| {
        let api = api.clone();
        async move { remove(&api, &name, false).await }
    })
    .await?;
    on_each(names("floor-mw"), |name| {
        let api = api.clone();
        async move { remove(&api, &name, true).await }
    })
    .await?;
    Ok(Floors {
        managed_writes,
        create_and_status,
    })
}

/// Deletes the floor's object `name`, dropping its finalizer first when it
/// has one.
async fn remove(api: &Api<Vpc>, name: &str, finalized: bool) -> anyhow::Result<()> {
    if finalized {
        let patch = json!({ "metadata": { "finalizers": null } });
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
    }
    api.delete(name, &DeleteParams::default()).await?;
    Ok(())
}

/// Runs `work` on every name, [`FLOOR_TASKS`] at a time.
async fn on_each<F, Fut>(names: Vec<String>, work: F) -> anyhow::Result<()>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    stream::iter(names)
        .map(work)
        .buffer_unordered(FLOOR_TASKS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// A managed create's writes, as crossplane-runtime makes them: finalizer,
/// create-pending, external name + create-succeeded, then a Ready status.
async fn managed_writes(api: &Api<Vpc>, name: &str) -> anyhow::Result<()> {
    let merge = |patch: Value| async move {
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
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
    ready_status(api, name).await
}

/// Writes `Ready=True` and `Synced=True` through the status subresource.
async fn ready_status(api: &Api<Vpc>, name: &str) -> anyhow::Result<()> {
    let now = jiff::Timestamp::now().to_string();
    let status = json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "status": { "conditions": [
            { "type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": now },
            { "type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": now },
        ] },
    });
    api.patch_status(
        name,
        &PatchParams::apply("bench-floor").force(),
        &Patch::Apply(status),
    )
    .await?;
    Ok(())
}

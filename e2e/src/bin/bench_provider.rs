//! Provider benchmark: how long N VPCs take from apply to all Ready, how
//! many VPCs fakecloud then holds (must be N), and how many API-server
//! writes a steady-state reconcile makes (target: 0).
//!
//! `cargo run --release -p e2e --bin bench_provider [-- --count 100 --replicas 2 --clients 16]`
//!
//! `--replicas` runs that many provider instances without leader election
//! (a rolling update's overlap); the VPCs are applied by `--clients`
//! concurrent clients while they run.
//!
//! Runs the real control plane, fakecloud and the provider (in-process, so
//! its write counter can be read). fakecloud provisions instantly here, so
//! the figure is the provider's and the API server's own cost.

use std::time::{Duration, Instant};

use apis::kinds::Vpc;
use clap::Parser;
use e2e::world::{World, WorldOptions, is_ready};
use fakecloud::model::Kind;
use futures::{StreamExt, TryStreamExt, stream};
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// How many VPCs to create.
    #[arg(long, default_value_t = 100)]
    count: usize,
    /// Provider instances running at once, without leader election.
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Clients applying VPCs at once.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// How long to watch the steady state.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    steady: Duration,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let world = World::start_with(WorldOptions {
        provisioning_delay: Duration::ZERO,
        provider_args: vec![
            "--poll-interval=2s".into(),
            "--pending-poll-interval=100ms".into(),
        ],
        ..WorldOptions::default()
    })
    .await?;
    for kind in Kind::ALL {
        world.admin.set_timing(kind, Duration::ZERO).await?;
    }
    let mut replicas = Vec::new();
    for _ in 1..args.replicas {
        replicas.push(world.start_replica().await?);
    }
    let api: Api<Vpc> = Api::all(world.kube());

    let start = Instant::now();
    stream::iter(0..args.count)
        .map(|i| {
            world.apply::<Vpc>(json!({
                "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": { "name": format!("bench-{i:05}"), "labels": { "bench": "provider" } },
                "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": format!("10.{}.0.0/16", i % 250) } },
            }))
        })
        .buffer_unordered(args.clients)
        .try_collect::<Vec<_>>()
        .await?;
    let applied = start.elapsed();
    loop {
        let list = api
            .list(&ListParams::default().labels("bench=provider"))
            .await?;
        let ready = list.items.iter().filter(|v| is_ready(*v)).count();
        if ready == args.count {
            break;
        }
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(600),
            "only {ready}/{} Ready after 10 min",
            args.count
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all_ready = start.elapsed();
    let in_cloud = world.admin.resources(Some(Kind::Vpc), None).await?.len();

    // Let pending requeues drain, then watch the steady state.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let writes = world.metrics.total("provider_kube_writes_total");
    let reconciles = world.metrics.total("provider_reconciles_total");
    tokio::time::sleep(args.steady).await;
    let steady_writes = world.metrics.total("provider_kube_writes_total") - writes;
    let steady_reconciles = world.metrics.total("provider_reconciles_total") - reconciles;

    println!(
        "VPCs:                          {} ({} provider replicas, {} clients)",
        args.count, args.replicas, args.clients
    );
    println!("applied all in:                {applied:.2?}");
    println!(
        "apply -> all Ready:            {all_ready:.2?} ({:.1} VPC/s)",
        args.count as f64 / all_ready.as_secs_f64()
    );
    println!(
        "steady-state reconciles:       {steady_reconciles} in {:?}",
        args.steady
    );
    println!("API writes during steady state: {steady_writes}");
    println!(
        "API writes per steady reconcile: {:.3}",
        if steady_reconciles > 0.0 {
            steady_writes / steady_reconciles
        } else {
            f64::NAN
        }
    );
    println!("VPCs in fakecloud:             {in_cloud}");
    for replica in replicas {
        replica.stop().await;
    }
    world.shutdown().await;
    anyhow::ensure!(
        in_cloud == args.count,
        "fakecloud holds {in_cloud} VPCs for {} managed resources",
        args.count
    );
    Ok(())
}

//! Benchmark of late activation: how long from a CRD appearing to its
//! controller reconciling a managed resource, over repeated activations.
//!
//! `cargo run --release -p e2e --bin bench_activation [-- --activations 20]`
//!
//! One world (control plane, fakecloud, the provider in-process) starts with
//! only the ProviderConfig CRDs. Each round installs the VPC CRD, creates a
//! VPC as soon as the CRD is Established, waits for the VPC's first status,
//! then deletes the CRD (the VPC goes with it) and waits until the gate has
//! stopped the controller. Two figures per round:
//!
//! - `gate`: the provider's own `provider_activation_latency_seconds`, from
//!   the gate seeing the CRD Established to the kind's first reconcile
//!   starting (it includes the client creating the VPC right after).
//! - `external`: measured here, from sending the CRD apply to the VPC's
//!   first status write (`Synced`/`Ready` conditions) being readable.

use std::error::Error;
use std::time::{Duration, Instant};

use apis::kinds::Vpc;
use clap::Parser;
use e2e::world::{World, WorldOptions};
use runtime::metrics::Metrics;
use serde_json::json;

const VPC_CRD: &str = "network.fakecloud.crossplane.io_vpcs.yaml";
const VPC_CRD_NAME: &str = "vpcs.network.fakecloud.crossplane.io";
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Parser)]
struct Args {
    /// How many activations to measure.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..))]
    activations: u16,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let world = World::start_with(WorldOptions {
        install_crds: false,
        provisioning_delay: Duration::from_millis(50),
        ..WorldOptions::default()
    })
    .await?;
    let crds = e2e::crds::package_crds_dir();
    world
        .cluster
        .install_crd_files(&[
            crds.join("fakecloud.crossplane.io_providerconfigs.yaml"),
            crds.join("fakecloud.crossplane.io_providerconfigusages.yaml"),
        ])
        .await?;
    world.create_provider_config("default").await?;

    let mut gate = Vec::with_capacity(usize::from(args.activations));
    let mut external = Vec::with_capacity(usize::from(args.activations));
    for round in 1..=usize::from(args.activations) {
        let (sum_before, count_before) = activation_latency(&world.metrics, "VPC");
        let began = Instant::now();
        world
            .cluster
            .install_crd_files(&[crds.join(VPC_CRD)])
            .await?;
        let name = e2e::unique_name("bench");
        create_vpc(&world, &name).await?;
        world
            .wait_for::<Vpc>(&name, "a first status", TIMEOUT, |v| {
                v.status.as_ref().is_some_and(|s| !s.conditions.is_empty())
            })
            .await?;
        let took = began.elapsed();
        let (sum, count) = activation_latency(&world.metrics, "VPC");
        if count != count_before + 1.0 {
            return Err(format!(
                "round {round}: expected one more activation recorded, saw {count_before} -> {count}"
            )
            .into());
        }
        gate.push(Duration::from_secs_f64(sum - sum_before));
        external.push(took);
        world.cluster.delete_crd(VPC_CRD_NAME).await?;
        wait_stopped(&world.metrics, "VPC").await?;
        eprintln!(
            "round {round:>2}: gate {:>6.1} ms, external {:>6.1} ms",
            ms(gate[round - 1]),
            ms(took)
        );
    }
    report("gate (CRD Established seen -> first reconcile)", &mut gate);
    report("external (CRD apply -> first status)", &mut external);
    world.shutdown().await;
    Ok(())
}

/// Creates the VPC, retrying while the new CRD's endpoint is not served
/// yet (a 404 in the moment after Established).
async fn create_vpc(world: &World, name: &str) -> Result<(), Box<dyn Error>> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let vpc = json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name },
            "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
        });
        match world.apply::<Vpc>(vpc).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline && e.to_string().contains("404") => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// `provider_activation_latency_seconds` (sum, count) for `kind`.
fn activation_latency(metrics: &Metrics, kind: &str) -> (f64, f64) {
    let series = format!("{{kind=\"{kind}\"}} ");
    let value = |family: &str| {
        metrics
            .encode()
            .lines()
            .find_map(|line| line.strip_prefix(family)?.strip_prefix(series.as_str()))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    (
        value("provider_activation_latency_seconds_sum"),
        value("provider_activation_latency_seconds_count"),
    )
}

/// Waits until the gate reports `kind`'s controller stopped.
async fn wait_stopped(metrics: &Metrics, kind: &str) -> Result<(), Box<dyn Error>> {
    let stopped = format!("provider_active_controllers{{kind=\"{kind}\"}} 0");
    let deadline = Instant::now() + TIMEOUT;
    while !metrics.encode().lines().any(|line| line == stopped) {
        if Instant::now() >= deadline {
            return Err(format!("{kind} controller still running after {TIMEOUT:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Prints p50 (nearest rank) and max.
fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let p50 = samples[samples.len().div_ceil(2) - 1];
    let max = samples[samples.len() - 1];
    println!(
        "{what}: n={} p50={:.1} ms max={:.1} ms",
        samples.len(),
        ms(p50),
        ms(max)
    );
}

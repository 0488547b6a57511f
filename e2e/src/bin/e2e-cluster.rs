//! Runs one test cluster until interrupted, for demos and for poking at the
//! harness by hand: `cargo run -p e2e --bin e2e-cluster -- --kubeconfig-out kc.yaml`
//! then `KUBECONFIG=kc.yaml kubectl get crds`. Exits non-zero with the
//! harness's error when no cluster can be had.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use e2e::TestCluster;

/// Start a test cluster (local control plane, E2E_KUBECONFIG or E2E_CLUSTER=k3s) and keep it until Ctrl-C.
#[derive(Debug, Parser)]
struct Args {
    /// Start without the package's CRDs.
    #[arg(long)]
    no_crds: bool,
    /// Copy the kubeconfig to this path (it lives in a temporary folder otherwise).
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(e2e::DEFAULT_LOG_FILTER)),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut options = TestCluster::options();
    if args.no_crds {
        options = options.without_package_crds();
    }
    // Ctrl-C during start-up drops the half-started cluster, which cleans
    // up after itself, instead of killing the process before it can.
    let started = tokio::select! {
        started = options.start() => started,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted during start-up");
            return ExitCode::FAILURE;
        }
    };
    let cluster = match started {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut kubeconfig = cluster.kubeconfig().to_path_buf();
    if let Some(out) = args.kubeconfig_out {
        if let Err(e) = std::fs::copy(&kubeconfig, &out) {
            eprintln!("error: copying the kubeconfig to {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
        kubeconfig = out;
    }
    println!("kubeconfig: {}", kubeconfig.display());
    println!(
        "server: {} ({:?}), ready in {:?}, CRDs: {}",
        cluster.server_version().git_version,
        cluster.backend(),
        cluster.startup_time(),
        cluster.installed_crds().join(", ")
    );
    if let Some(logs) = cluster.logs_dir() {
        println!("logs: {}", logs.display());
    }
    println!("press Ctrl-C to stop");
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("error: waiting for Ctrl-C: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

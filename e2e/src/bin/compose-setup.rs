//! `compose-setup`: the set-up steps of docker-compose.yml (see
//! `e2e::compose`). `prepare` runs before the API server starts, `grant`
//! once it answers; both are one-shot. `crossplane-standin` is the one that
//! keeps running: the stand-in for Crossplane's MRD and MRAP controllers
//! (`e2e::crossplane_standin`), as the compose service of that name. It
//! lives here because this binary is already in the tools image and already
//! talks to the cluster with the admin kubeconfig.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use e2e::compose::{self, Grant, Prepare};
use e2e::crossplane_standin::StandInError;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(name = "compose-setup", about = "Set-up steps of docker-compose.yml")]
struct Args {
    /// The state volume shared by the control plane, the provider and the demo.
    #[arg(
        long,
        env = "SETUP_STATE_DIR",
        default_value = "/var/lib/fakecloud-provider"
    )]
    state: PathBuf,
    #[command(subcommand)]
    step: Step,
}

#[derive(Debug, Subcommand)]
enum Step {
    /// PKI and tokens (kept if present), admin kubeconfigs for the services
    /// and for kubectl on the host.
    Prepare {
        /// The API server's name on the compose network.
        #[arg(long, default_value = "kube-apiserver")]
        apiserver_host: String,
        #[arg(long, default_value_t = 6443)]
        apiserver_port: u16,
        /// Host folder (bind-mounted) for kubectl's kubeconfig.
        #[arg(long)]
        host_dir: Option<PathBuf>,
        /// The port the API server is published on, on the host's 127.0.0.1.
        #[arg(long, default_value_t = 6443)]
        host_port: u16,
        /// uid:gid that owns the state files (the images' non-root user).
        #[arg(long, default_value = "65532:65532", value_parser = uid_gid)]
        state_owner: (u32, u32),
    },
    /// Waits for the API server, binds the provider's ServiceAccount to the
    /// package's ClusterRole and writes the provider's kubeconfig.
    Grant {
        /// The package's ClusterRole manifest. Default: rbac/clusterrole.yaml
        /// in the package folder.
        #[arg(long)]
        cluster_role: Option<PathBuf>,
        /// How long the API server may take to become ready.
        #[arg(long, default_value = "180s", value_parser = humantime::parse_duration)]
        ready_timeout: Duration,
    },
    /// Runs the stand-in for Crossplane's activation controllers until
    /// SIGTERM or Ctrl-C: installs the ManagedResourceDefinition and
    /// ManagedResourceActivationPolicy CRDs, then activates the MRDs that
    /// MRAPs name and creates their CRDs (Crossplane itself does this on a
    /// real cluster).
    CrossplaneStandin,
}

/// Runs the stand-in with the admin kubeconfig of the state volume until
/// SIGTERM (`docker compose stop`) or Ctrl-C; its log (activations, CRDs
/// created, MRDs Established) goes to stderr, which compose shows.
async fn crossplane_standin(state: &Path) -> Result<(), StandInError> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(e2e::DEFAULT_LOG_FILTER)),
        )
        .with_ansi(false)
        .with_target(false)
        .with_writer(std::io::stderr)
        .init();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(error) => {
                    tracing::warn!(%error, "no SIGTERM handler; Ctrl-C still stops it");
                    let _ = tokio::signal::ctrl_c().await;
                    stop.cancel();
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        stop.cancel();
    });
    println!(
        "Crossplane stand-in: the ManagedResourceDefinition and ManagedResourceActivationPolicy controllers (Crossplane itself runs them on a real cluster)"
    );
    let webhook = e2e::compose::webhook_target(state)?;
    e2e::crossplane_standin::run_with_kubeconfig(
        &state.join(e2e::compose::files::ADMIN_KUBECONFIG),
        Some(webhook),
        shutdown,
    )
    .await
}

fn uid_gid(text: &str) -> Result<(u32, u32), String> {
    let (uid, gid) = text.split_once(':').ok_or("expected uid:gid")?;
    Ok((
        uid.parse().map_err(|e| format!("uid: {e}"))?,
        gid.parse().map_err(|e| format!("gid: {e}"))?,
    ))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let result: Result<(), Box<dyn std::error::Error>> = match args.step {
        Step::Prepare {
            apiserver_host,
            apiserver_port,
            host_dir,
            host_port,
            state_owner,
        } => compose::prepare(&Prepare {
            state: args.state,
            apiserver_host,
            apiserver_port,
            host_dir,
            host_port,
            state_owner,
        })
        .map(|prepared| {
            println!(
                "control-plane PKI and tokens {}",
                if prepared.generated {
                    "generated"
                } else {
                    "kept from the last run"
                }
            );
            if let Some(path) = prepared.host_kubeconfig {
                println!(
                    "kubeconfig for kubectl on the host written (host folder, file {})",
                    path.file_name().unwrap_or_default().to_string_lossy()
                );
            }
        })
        .map_err(Into::into),
        Step::Grant {
            cluster_role,
            ready_timeout,
        } => {
            let cluster_role = cluster_role.unwrap_or_else(|| {
                e2e::crds::package_dir()
                    .join("rbac")
                    .join("clusterrole.yaml")
            });
            compose::grant(&Grant {
                state: args.state,
                cluster_role,
                ready_timeout,
            })
            .await
            .map(|granted| {
                println!(
                    "API server ready after {:.1}s",
                    granted.ready_after.as_secs_f64()
                );
                println!(
                    "ServiceAccount {}/{} bound to ClusterRole {} (not cluster-admin); its kubeconfig: {}",
                    compose::NAMESPACE,
                    compose::PROVIDER_ACCOUNT,
                    granted.cluster_role,
                    granted.kubeconfig.display()
                );
            })
            .map_err(Into::into)
        }
        Step::CrossplaneStandin => crossplane_standin(&args.state).await.map_err(Into::into),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

//! `compose-setup`: the one-shot set-up steps of docker-compose.yml (see
//! `e2e::compose`). `prepare` runs before the API server starts, `grant`
//! once it answers.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use e2e::compose::{self, Grant, Prepare};

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
    let result = match args.step {
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
        }),
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
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

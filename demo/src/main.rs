//! `demo`: starts the whole system on this machine (control plane,
//! fakecloud, the provider binary) and plays the seeds' stories; see
//! the `demo` library. `scripts/demo` provisions, builds and runs it. With
//! `--existing` it plays them on a system that runs already: the `demo`
//! service of docker-compose.yml. The flags are in [`cli`].

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::Parser;
use cli::Args;
#[cfg(feature = "node")]
use cli::NodeArgs;
use demo::{DemoOptions, Existing, Mode, Progress, RunDir, Target};

// The demo's flags, and `--on-node` when built with the `node` feature. (A
// doc comment here would become the command's about text.)
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
    #[cfg(feature = "node")]
    #[command(flatten)]
    node: NodeArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = cli.args;
    let progress = Progress::started_ago(Duration::from_millis(args.clock_offset_ms));
    let run_dir = match RunDir::create() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(demo::EXIT_ERROR);
        }
    };
    let target = if args.existing {
        // A container's files vanish with it: its log goes to stderr, where
        // `docker compose logs` keeps it; errors only by default, since
        // `docker compose up` shows it between the stories.
        init_tracing(Mutex::new(std::io::stderr()), "error");
        match existing(&args) {
            Ok(existing) => Target::Existing(existing),
            Err(missing) => {
                eprintln!("error: --existing needs {missing}");
                return ExitCode::from(demo::EXIT_ERROR);
            }
        }
    } else {
        match std::fs::File::create(run_dir.path().join("demo.log")) {
            Ok(file) => init_tracing(Mutex::new(file), e2e::DEFAULT_LOG_FILTER),
            Err(error) => {
                eprintln!("error: creating the demo's log: {error}");
                return ExitCode::from(demo::EXIT_ERROR);
            }
        }
        match args.provider_bin.clone() {
            #[cfg(feature = "node")]
            _ if cli.node.on_node => Target::Node,
            Some(provider_bin) => Target::Local { provider_bin },
            None => match beside_this_binary("provider") {
                Ok(provider_bin) => Target::Local { provider_bin },
                Err(error) => {
                    eprintln!("error: locating the provider binary: {error}");
                    return ExitCode::from(demo::EXIT_ERROR);
                }
            },
        }
    };
    let mode = if args.once || args.existing {
        Mode::Once
    } else {
        Mode::UntilInterrupted
    };
    if args.existing {
        println!("fakecloud provider demo: the seeds' stories on the running system");
    } else {
        println!(
            "fakecloud provider demo: the whole system on this machine, then the seeds' stories"
        );
        progress.step(format!("logs in {}", run_dir.path().display()));
    }
    let options = DemoOptions {
        target,
        provisioning_delay: Duration::from_millis(args.provisioning_delay_ms),
        poll_interval: Duration::from_millis(args.poll_interval_ms),
    };
    ExitCode::from(demo::run(options, mode, run_dir, progress).await)
}

/// The running system `--existing` names, or the flags that are missing.
fn existing(args: &Args) -> Result<Existing, String> {
    let mut missing = Vec::new();
    let mut need = |value: &Option<String>, flag: &str| {
        if value.is_none() {
            missing.push(flag.to_owned());
        }
        value.clone().unwrap_or_default()
    };
    let cloud_url = need(&args.cloud_url, "--cloud-url");
    let api_key = need(&args.api_key, "--api-key");
    let admin_token = need(&args.admin_token, "--admin-token");
    let provider_metrics = need(&args.provider_metrics, "--provider-metrics");
    let kubeconfig = need(
        &args.kubeconfig.as_ref().map(|p| p.display().to_string()),
        "--kubeconfig",
    );
    if !missing.is_empty() {
        return Err(missing.join(", "));
    }
    Ok(Existing {
        kubeconfig: PathBuf::from(kubeconfig),
        cloud_url,
        api_key,
        admin_token,
        provider_metrics,
        host_kubeconfig: args.host_kubeconfig.clone(),
        host_cloud_url: args.host_cloud_url.clone(),
    })
}

/// The demo's own log (kube client, fakecloud's server) goes to `writer`,
/// a file locally, so the terminal shows only the stories. `RUST_LOG`
/// overrides `default_filter`.
fn init_tracing<W>(writer: Mutex<W>, default_filter: &str)
where
    W: std::io::Write + Send + 'static,
{
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(writer)
        .init();
}

fn beside_this_binary(name: &str) -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe.with_file_name(name))
}

//! `demo`: starts the whole system on this machine (control plane,
//! fakecloud, the provider binary) and plays the seeds' stories; see
//! the `demo` library. `scripts/demo` provisions, builds and runs it. With
//! `--existing` it plays them on a system that runs already: the `demo`
//! service of docker-compose.yml.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::Parser;
use demo::{DemoOptions, Existing, Mode, Progress, RunDir, Target};

#[derive(Debug, Parser)]
#[command(
    name = "demo",
    about = "Run etcd + kube-apiserver, fakecloud and the provider here, and play the seeds' stories"
)]
struct Args {
    /// Exit after the stories: status 0 only if every story's expectation held.
    #[arg(long)]
    once: bool,
    /// The provider binary. Default: `provider` next to this binary (both
    /// are built into the same target folder).
    #[arg(long, env = "DEMO_PROVIDER_BIN")]
    provider_bin: Option<PathBuf>,
    /// fakecloud's provisioning delay in milliseconds.
    #[arg(long, default_value_t = 1000)]
    provisioning_delay_ms: u64,
    /// The provider's poll interval in milliseconds: how soon outside
    /// changes show.
    #[arg(long, default_value_t = 2000)]
    poll_interval_ms: u64,
    /// Play the stories on a system that runs already (docker-compose.yml's
    /// services) instead of starting one; exits after the stories. Needs
    /// the five flags below.
    #[arg(long)]
    existing: bool,
    /// Run the provider as the package's pods on a real node here (a
    /// kubelet over this machine's Docker engine), installed as Crossplane
    /// installs a provider, instead of as a process. Needs root, a Docker
    /// engine with cgroup v1 and the project's images (made if missing).
    #[cfg(feature = "node")]
    #[arg(long, conflicts_with_all = ["existing", "provider_bin"])]
    on_node: bool,
    /// With --existing: an admin kubeconfig of the cluster.
    #[arg(long, env = "DEMO_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// With --existing: fakecloud's URL, as the provider reaches it.
    #[arg(long, env = "DEMO_CLOUD_URL")]
    cloud_url: Option<String>,
    /// With --existing: an API key of fakecloud (for the credentials Secret).
    #[arg(long, env = "DEMO_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// With --existing: fakecloud's admin token (to read its audit log).
    #[arg(long, env = "DEMO_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// With --existing: the provider's metrics address, host:port.
    #[arg(long, env = "DEMO_PROVIDER_METRICS")]
    provider_metrics: Option<String>,
    /// With --existing: the kubeconfig path a user on the host uses, for
    /// the closing hints.
    #[arg(long, env = "DEMO_HOST_KUBECONFIG")]
    host_kubeconfig: Option<String>,
    /// With --existing: fakecloud's URL from the host, for the closing hints.
    #[arg(long, env = "DEMO_HOST_CLOUD_URL")]
    host_cloud_url: Option<String>,
    /// Milliseconds already spent before this process started (set by
    /// `scripts/demo` for its provisioning and build), so progress lines
    /// show the time since the command was typed.
    #[arg(long, default_value_t = 0, hide = true)]
    clock_offset_ms: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
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
            _ if args.on_node => Target::Node,
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

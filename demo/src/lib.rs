//! The demo behind the README's first command (`scripts/demo`): it starts
//! the whole system on this machine and plays the seeds' stories against it,
//! printing what a user would check and whether each story's expectation
//! held.
//!
//! What runs where, and why:
//! - etcd, kube-apiserver and kube-controller-manager: separate processes,
//!   started by the e2e harness ([`e2e::TestCluster`]).
//! - the provider: its real binary, a separate process given only a
//!   kubeconfig, started before any of its CRDs exists. That is the point of
//!   the late-activation story, and it proves the binary a user would deploy
//!   works, not a test double.
//! - the stand-in for Crossplane's MRD and MRAP controllers
//!   ([`e2e::crossplane_standin`]): in-process, like the e2e tests run it;
//!   it is test equipment, and Crossplane does its work on a real cluster.
//! - fakecloud: in-process through [`fakecloud::spawn`], the same server its
//!   binary runs. It needs no separate build, its URL, API key and admin
//!   token are known without parsing another process's output, and it cannot
//!   outlive the demo.
//!
//! Every process is torn down when the demo ends (Ctrl-C, SIGTERM or
//! `--once`); children also carry a parent-death signal, so even a killed
//! demo leaves nothing behind.
//!
//! With `--existing` ([`Target::Existing`]) the demo starts nothing: it plays
//! the same stories against a system that runs already, as the `demo`
//! service of docker-compose.yml does against the compose services.
//!
//! With `--on-node` (`Target::Node`, the `node` feature) the control plane
//! has a node (kubelet over this machine's Docker engine, kube-scheduler,
//! kube-proxy: the e2e harness's node backend), and the provider runs as
//! the pods of the Deployment that the stand-in for Crossplane's package
//! manager makes from the package (`.xpkg`), the way Crossplane runs a
//! provider; its conversion webhook is reached through its Service.
//! fakecloud listens on the Docker bridge's address, where the pods reach
//! it. The stories are the same.

mod progress;
mod stories;
mod system;

use std::path::PathBuf;
use std::time::Duration;

pub use e2e::provider_process::ProviderProcess;
pub use progress::Progress;
pub use stories::Story;
pub use system::{RunDir, System};

/// What the demo was asked to do.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Which system the stories play on.
    pub target: Target,
    /// fakecloud's provisioning delay, so "creating" is visible but short
    /// (local mode; a running fakecloud keeps its own).
    pub provisioning_delay: Duration,
    /// The provider's `--poll-interval`: how soon outside changes show (the
    /// stories wait this long for them, so with `--existing` it must match
    /// the running provider's).
    pub poll_interval: Duration,
}

/// The system the stories play on.
#[derive(Debug, Clone)]
pub enum Target {
    /// Start everything here; the provider from this binary.
    Local { provider_bin: PathBuf },
    /// Connect to a system that runs already.
    Existing(Existing),
    /// Start the control plane with a node here, and the provider as the
    /// package's pods on it, installed as Crossplane installs a provider
    /// (`--on-node`).
    #[cfg(feature = "node")]
    Node,
}

/// Where the parts of a running system are, as the demo reaches them.
#[derive(Debug, Clone)]
pub struct Existing {
    /// An admin kubeconfig of the cluster.
    pub kubeconfig: PathBuf,
    /// fakecloud's URL; the ProviderConfig the demo creates names it too, so
    /// it must be the URL the provider reaches fakecloud by.
    pub cloud_url: String,
    pub api_key: String,
    pub admin_token: String,
    /// The provider's metrics address, `host:port`.
    pub provider_metrics: String,
    /// How a user on the host reaches the system, for the closing hints.
    pub host_kubeconfig: Option<String>,
    pub host_cloud_url: Option<String>,
}

/// Why the demo could not run (as opposed to a story whose expectation did
/// not hold, which is a [`e2e::scenarios::Verdict`]).
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("starting the control plane: {0}")]
    Cluster(e2e::ClusterError),
    #[error("fakecloud: {0}")]
    Cloud(fakecloud::Error),
    #[error("fakecloud client: {0}")]
    CloudClient(fakecloud::client::ClientError),
    #[error("kubernetes: {0}")]
    Kube(kube::Error),
    #[error(transparent)]
    Objects(#[from] e2e::objects::ObjectsError),
    #[error(transparent)]
    Scenario(#[from] e2e::scenarios::ScenarioError),
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error(transparent)]
    Provider(#[from] e2e::provider_process::ProviderProcessError),
    #[error("Crossplane stand-in: {0}")]
    StandIn(e2e::crossplane_standin::StandInError),
    #[error("unexpected: {0}")]
    Unexpected(String),
}

impl From<e2e::ClusterError> for DemoError {
    fn from(error: e2e::ClusterError) -> Self {
        DemoError::Cluster(error)
    }
}

impl From<fakecloud::Error> for DemoError {
    fn from(error: fakecloud::Error) -> Self {
        DemoError::Cloud(error)
    }
}

impl From<fakecloud::client::ClientError> for DemoError {
    fn from(error: fakecloud::client::ClientError) -> Self {
        DemoError::CloudClient(error)
    }
}

impl From<kube::Error> for DemoError {
    fn from(error: kube::Error) -> Self {
        DemoError::Kube(error)
    }
}

impl From<e2e::crossplane_standin::StandInError> for DemoError {
    fn from(error: e2e::crossplane_standin::StandInError) -> Self {
        DemoError::StandIn(error)
    }
}

impl DemoError {
    pub(crate) fn io(what: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            error,
        }
    }
}

/// Whether the demo exits after the stories or keeps the system running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--once`: exit after the stories, 0 only if every story held.
    Once,
    /// Keep running and print how to explore until Ctrl-C or SIGTERM.
    UntilInterrupted,
}

/// Exit status when a story's expectation did not hold.
pub const EXIT_STORY_FAILED: u8 = 1;
/// Exit status when the demo could not run (a step failed).
pub const EXIT_ERROR: u8 = 2;
/// Exit status after an interrupt before the stories finished.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Starts the system, plays the stories and tears everything down; returns
/// the process exit status. Failures keep `run_dir` (with every log) and
/// print its path.
pub async fn run(options: DemoOptions, mode: Mode, run_dir: RunDir, progress: Progress) -> u8 {
    let options_target = options.target.clone();
    let mut slot: Option<System> = None;
    let played = tokio::select! {
        played = start_and_play(options, &run_dir, &progress, &mut slot) => Some(played),
        () = interrupted() => None,
    };
    let code = match played {
        None => {
            println!();
            progress.step("interrupted; stopping everything");
            EXIT_INTERRUPTED
        }
        Some(Err(error)) => {
            println!();
            eprintln!("error: {error}");
            EXIT_ERROR
        }
        Some(Ok(results)) => {
            let held = results.iter().filter(|(_, held)| *held).count();
            println!();
            progress.step(format!("{held} of {} stories held", results.len()));
            let code = if held == results.len() {
                0
            } else {
                EXIT_STORY_FAILED
            };
            if let (Some(system), Target::Existing(existing)) = (&slot, &options_target) {
                explain_existing(system, existing);
            }
            if mode == Mode::UntilInterrupted
                && let Some(system) = &slot
            {
                explain_how_to_explore(system, &run_dir);
                interrupted().await;
                println!();
                progress.step("stopping everything");
            }
            code
        }
    };
    if code != 0
        && let Some(system) = &slot
    {
        system.save_control_plane_logs(run_dir.path());
    }
    if let Some(system) = slot.take() {
        system.shutdown().await;
    }
    let local = !matches!(options_target, Target::Existing(_));
    if code == 0 {
        if local {
            progress.step("stopped; no process left behind");
        }
    } else {
        let kept = run_dir.keep();
        eprintln!(
            "logs kept in {} (demo.log, provider.log, control-plane logs)",
            kept.display()
        );
    }
    code
}

async fn start_and_play(
    options: DemoOptions,
    run_dir: &RunDir,
    progress: &Progress,
    slot: &mut Option<System>,
) -> Result<Vec<(Story, bool)>, DemoError> {
    let system = slot.insert(System::start(options, run_dir, progress).await?);
    stories::play_all(system, progress).await
}

fn explain_how_to_explore(system: &System, run_dir: &RunDir) {
    if let Target::Existing(_) = &system.options.target {
        return;
    }
    let url = system.cloud_url();
    println!();
    println!("The system keeps running. Explore it from another shell:");
    println!(
        "    export KUBECONFIG={}",
        system.cluster.kubeconfig().display()
    );
    println!("    kubectl get managed                    # READY, SYNCED, DRIFT, EXTERNAL-NAME");
    println!("    kubectl get vpc team-b-vpc -o yaml     # status.atProvider");
    println!("    fakecloud {url}   dev API key {}", system.api_key());
    println!(
        "    curl -s -H 'Authorization: Bearer {}' {url}/v1/regions/us-east-1/vpcs",
        system.api_key()
    );
    println!(
        "    curl -s -H 'Authorization: Bearer {}' '{url}/admin/audit?actor=api&mutating=true'",
        system.admin_token()
    );
    println!(
        "    console {url}/console   (log in with the admin token {})",
        system.admin_token()
    );
    println!("    provider: {}", system.provider_hint());
    println!("    demo folder {}", run_dir.path().display());
    println!("Press Ctrl-C to stop and remove everything.");
}

/// The closing hints of `--existing`: how to reach, from the host, the
/// system that keeps running after the demo exits.
fn explain_existing(system: &System, existing: &Existing) {
    println!();
    println!("The system keeps running. Explore it from the host:");
    if let Some(kubeconfig) = &existing.host_kubeconfig {
        println!("    export KUBECONFIG={kubeconfig}");
        println!(
            "    kubectl get managed                    # READY, SYNCED, DRIFT, EXTERNAL-NAME"
        );
    }
    let url = existing
        .host_cloud_url
        .as_deref()
        .unwrap_or(&existing.cloud_url);
    println!(
        "    curl -s -H 'Authorization: Bearer {}' {url}/v1/regions/us-east-1/vpcs",
        system.api_key()
    );
    println!(
        "    curl -s -H 'Authorization: Bearer {}' '{url}/admin/audit?actor=api&mutating=true'",
        system.admin_token()
    );
    println!(
        "    console {url}/console   (log in with the admin token {})",
        system.admin_token()
    );
    println!("`docker compose down -v` removes everything.");
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(error) => {
            tracing::warn!(%error, "no SIGTERM handler; Ctrl-C still stops the demo");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

//! The demo's command line. A file of its own, with nothing but clap and
//! std, because the e2e crate compiles it too (`e2e::reference`, which
//! writes docs/reference/flags.md): the demo depends on e2e, so e2e cannot
//! depend on the demo, and the reference must come from the definitions
//! `--help` prints. For the same reason no `cfg` here: the `node` feature's
//! flag is a struct of its own (`NodeArgs`), added in `main.rs`.

use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "demo",
    about = "Run etcd + kube-apiserver, fakecloud and the provider here, and play the seeds' stories"
)]
pub struct Args {
    /// Exit after the stories: status 0 only if every story's expectation held.
    #[arg(long)]
    pub once: bool,
    /// The provider binary. Default: `provider` next to this binary (both
    /// are built into the same target folder).
    #[arg(long, env = "DEMO_PROVIDER_BIN")]
    pub provider_bin: Option<PathBuf>,
    /// fakecloud's provisioning delay in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub provisioning_delay_ms: u64,
    /// The provider's poll interval in milliseconds: how soon outside
    /// changes show.
    #[arg(long, default_value_t = 2000)]
    pub poll_interval_ms: u64,
    /// Play the stories on a system that runs already (docker-compose.yml's
    /// services) instead of starting one; exits after the stories. Needs
    /// the five flags below.
    #[arg(long)]
    pub existing: bool,
    /// With --existing: an admin kubeconfig of the cluster.
    #[arg(long, env = "DEMO_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// With --existing: fakecloud's URL, as the provider reaches it.
    #[arg(long, env = "DEMO_CLOUD_URL")]
    pub cloud_url: Option<String>,
    /// With --existing: an API key of fakecloud (for the credentials Secret).
    #[arg(long, env = "DEMO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// With --existing: fakecloud's admin token (to read its audit log).
    #[arg(long, env = "DEMO_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// With --existing: the provider's metrics address, host:port.
    #[arg(long, env = "DEMO_PROVIDER_METRICS")]
    pub provider_metrics: Option<String>,
    /// With --existing: the kubeconfig path a user on the host uses, for
    /// the closing hints.
    #[arg(long, env = "DEMO_HOST_KUBECONFIG")]
    pub host_kubeconfig: Option<String>,
    /// With --existing: fakecloud's URL from the host, for the closing hints.
    #[arg(long, env = "DEMO_HOST_CLOUD_URL")]
    pub host_cloud_url: Option<String>,
    /// Milliseconds already spent before this process started (set by
    /// `scripts/demo` for its provisioning and build), so progress lines
    /// show the time since the command was typed.
    #[arg(long, default_value_t = 0, hide = true)]
    pub clock_offset_ms: u64,
}

// The flags of a demo built with the `node` feature (`scripts/demo
// --on-node` builds it), which `main.rs` adds to `Args`. (A doc comment
// here would replace the command's about text.)
#[derive(Debug, clap::Args)]
pub struct NodeArgs {
    /// Run the provider as the package's pods on a real node here (a
    /// kubelet over this machine's Docker engine), installed as Crossplane
    /// installs a provider, instead of as a process. Needs root, a Docker
    /// engine with cgroup v1 and the project's images (made if missing).
    #[arg(long, conflicts_with_all = ["existing", "provider_bin"])]
    pub on_node: bool,
}

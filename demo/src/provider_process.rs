//! The provider's real binary as a separate process, configured the way a
//! user would run it: a kubeconfig in `KUBECONFIG` and flags, nothing else.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

use super::{DemoError, http};
use e2e::ClusterError;
use e2e::process::{ManagedProcess, log_tail};

/// How long the provider may take to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

pub struct ProviderProcess {
    process: ManagedProcess,
    pub metrics_addr: SocketAddr,
    pub health_addr: SocketAddr,
}

impl ProviderProcess {
    /// Starts `binary` against the cluster of `kubeconfig`, logging to `log`.
    /// `/usr/bin/env` sets `KUBECONFIG` for the child only, so the demo's own
    /// environment stays untouched and the harness's process handling
    /// (own process group, parent-death signal, log file) applies as is.
    pub fn start(
        binary: &Path,
        kubeconfig: &Path,
        extra_args: &[String],
        log: PathBuf,
    ) -> Result<Self, DemoError> {
        if !binary.is_file() {
            return Err(DemoError::ProviderMissing(binary.to_path_buf()));
        }
        let metrics_addr = free_port()?;
        let health_addr = free_port()?;
        let mut args = vec![
            format!("KUBECONFIG={}", kubeconfig.display()),
            "RUST_LOG=info,kube=warn".to_owned(),
            binary.display().to_string(),
            format!("--metrics-addr={metrics_addr}"),
            format!("--health-addr={health_addr}"),
        ];
        args.extend(extra_args.iter().cloned());
        let process = ManagedProcess::spawn("provider", Path::new("/usr/bin/env"), &args, log)?;
        Ok(Self {
            process,
            metrics_addr,
            health_addr,
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    pub fn log(&self) -> &Path {
        self.process.log()
    }

    /// An error with the log tail if the provider has exited.
    pub fn ensure_running(&mut self) -> Result<(), DemoError> {
        self.process.ensure_running().map_err(|e| match e {
            ClusterError::ExitedEarly { status, tail, .. } => DemoError::ProviderExited {
                status: status.to_string(),
                tail,
            },
            other => DemoError::Cluster(other),
        })
    }

    /// Waits until `/readyz` answers 200 (the CRD gate has listed CRDs once).
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<(), DemoError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.ensure_running()?;
            let last = match http::get(&self.health_addr.to_string(), "/readyz").await {
                Ok((200, _)) => return Ok(()),
                Ok((status, body)) => format!("{status} {body}"),
                Err(e) => e.to_string(),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(DemoError::Timeout {
                    what: "the provider's /readyz".into(),
                    timeout,
                    last: format!("{last}; log tail:\n{}", log_tail(self.log())),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kinds whose controller runs, per `provider_active_controllers`.
    pub async fn active_controllers(&self) -> Result<Vec<String>, DemoError> {
        active_controllers_at(&self.metrics_addr.to_string()).await
    }

    /// SIGTERM, then up to [`STOP_GRACE`] for a graceful exit; the process
    /// group is killed in any case when the handle drops.
    pub async fn stop(mut self) {
        if self.process.exit_status().is_some() {
            return;
        }
        if let Some(pid) = Pid::from_raw(self.pid() as i32) {
            let _ = kill_process(pid, Signal::TERM);
        }
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while self.process.exit_status().is_none() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Kinds whose controller runs, per `provider_active_controllers` in the
/// metrics served at `addr` (`host:port`), wherever that provider runs.
pub(crate) async fn active_controllers_at(addr: &str) -> Result<Vec<String>, DemoError> {
    let (status, body) = http::get(addr, "/metrics")
        .await
        .map_err(|e| DemoError::io(format!("reading the provider's /metrics at {addr}"), e))?;
    if status != 200 {
        return Err(DemoError::Unexpected(format!(
            "the provider's /metrics at {addr} answered {status}"
        )));
    }
    Ok(active_kinds(&body))
}

/// A loopback address with a port that was free a moment ago. The provider
/// binds it itself; a clash would show as its exit, reported with its log.
fn free_port() -> Result<SocketAddr, DemoError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| DemoError::io("finding a free port for the provider", e))
}

/// Kinds with `provider_active_controllers{kind="..."} 1` in a Prometheus
/// text exposition.
fn active_kinds(exposition: &str) -> Vec<String> {
    let mut kinds: Vec<String> = exposition
        .lines()
        .filter_map(|line| line.strip_prefix("provider_active_controllers{kind=\""))
        .filter_map(|rest| rest.split_once("\"} "))
        .filter(|(_, value)| value.trim() == "1")
        .map(|(kind, _)| kind.to_owned())
        .collect();
    kinds.sort();
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_kinds_reads_only_the_gauge_at_one() {
        let text = "# HELP provider_active_controllers x\n\
                    provider_active_controllers{kind=\"VPC\"} 1\n\
                    provider_active_controllers{kind=\"Subnet\"} 0\n\
                    provider_reconciles_total{kind=\"VPC\"} 1\n\
                    provider_active_controllers{kind=\"NodeGroup\"} 1\n";
        assert_eq!(active_kinds(text), ["NodeGroup", "VPC"]);
        assert!(active_kinds("").is_empty());
    }
}

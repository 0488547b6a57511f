//! The provider's real binary as a separate process, configured the way a
//! user would run it: a kubeconfig in `KUBECONFIG` and flags, nothing else.
//! The demo runs it so, and so does `bench_provider --provider-bin`, which
//! reads the process's own memory and CPU from `/proc`.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

use crate::ClusterError;
use crate::http;
use crate::process::{ManagedProcess, log_tail};

/// Why the provider process could not be started, queried or kept running.
#[derive(Debug, thiserror::Error)]
pub enum ProviderProcessError {
    #[error("the provider binary {0} does not exist; build it with `cargo build -p provider`")]
    Missing(PathBuf),
    #[error("the provider exited ({status}); last log lines:\n{tail}")]
    Exited { status: String, tail: String },
    #[error("starting the provider: {0}")]
    Spawn(ClusterError),
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("timed out after {timeout:?} waiting for the provider's /readyz; last seen: {last}")]
    NotReady { timeout: Duration, last: String },
    #[error("the provider's {path} at {addr} answered {status}")]
    Status {
        addr: String,
        path: &'static str,
        status: u16,
    },
    #[error("/proc/{pid}/{file} is not as expected: {line}")]
    Proc {
        pid: u32,
        file: &'static str,
        line: String,
    },
}

impl ProviderProcessError {
    fn io(what: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            error,
        }
    }
}

/// What the provider process has used so far, from `/proc`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Resident memory now (`VmRSS`), in bytes.
    pub rss_bytes: u64,
    /// User plus system CPU time since the process started.
    pub cpu: Duration,
}

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
    ) -> Result<Self, ProviderProcessError> {
        Self::start_with_env(binary, kubeconfig, &[], extra_args, log)
    }

    /// [`ProviderProcess::start`] with `env` (`NAME=value` each) set for
    /// the child too, as a Deployment's `env` would.
    pub fn start_with_env(
        binary: &Path,
        kubeconfig: &Path,
        env: &[String],
        extra_args: &[String],
        log: PathBuf,
    ) -> Result<Self, ProviderProcessError> {
        if !binary.is_file() {
            return Err(ProviderProcessError::Missing(binary.to_path_buf()));
        }
        let metrics_addr = free_port()?;
        let health_addr = free_port()?;
        let mut args = vec![
            format!("KUBECONFIG={}", kubeconfig.display()),
            "RUST_LOG=info,kube=warn".to_owned(),
        ];
        args.extend(env.iter().cloned());
        args.extend([
            binary.display().to_string(),
            format!("--metrics-addr={metrics_addr}"),
            format!("--health-addr={health_addr}"),
        ]);
        args.extend(extra_args.iter().cloned());
        let process = ManagedProcess::spawn("provider", Path::new("/usr/bin/env"), &args, log)
            .map_err(ProviderProcessError::Spawn)?;
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
    pub fn ensure_running(&mut self) -> Result<(), ProviderProcessError> {
        self.process.ensure_running().map_err(|e| match e {
            ClusterError::ExitedEarly { status, tail, .. } => ProviderProcessError::Exited {
                status: status.to_string(),
                tail,
            },
            other => ProviderProcessError::Spawn(other),
        })
    }

    /// Waits until `/readyz` answers 200 (the CRD gate has listed CRDs once).
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<(), ProviderProcessError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.ensure_running()?;
            let last = match http::get(&self.health_addr.to_string(), "/readyz").await {
                Ok((200, _)) => return Ok(()),
                Ok((status, body)) => format!("{status} {body}"),
                Err(e) => e.to_string(),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(ProviderProcessError::NotReady {
                    timeout,
                    last: format!("{last}; log tail:\n{}", log_tail(self.log())),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kinds whose controller runs, per `provider_active_controllers`.
    pub async fn active_controllers(&self) -> Result<Vec<String>, ProviderProcessError> {
        active_controllers_at(&self.metrics_addr.to_string()).await
    }

    /// Its Prometheus metrics, as served on `--metrics-addr`.
    pub async fn metrics(&self) -> Result<String, ProviderProcessError> {
        metrics_at(&self.metrics_addr.to_string()).await
    }

    /// Its resident memory and CPU time so far ([`usage_of`]).
    pub fn usage(&self) -> Result<Usage, ProviderProcessError> {
        usage_of(self.pid())
    }

    /// Sends `signal` to the process: SIGKILL to kill it where it stands,
    /// SIGSTOP and SIGCONT to freeze and resume it.
    pub fn signal(&self, signal: Signal) -> Result<(), ProviderProcessError> {
        let pid = Pid::from_raw(self.pid() as i32).ok_or_else(|| {
            ProviderProcessError::io("a provider pid", std::io::Error::other("pid 0"))
        })?;
        kill_process(pid, signal)
            .map_err(|e| ProviderProcessError::io("signalling the provider", e.into()))
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
pub async fn active_controllers_at(addr: &str) -> Result<Vec<String>, ProviderProcessError> {
    Ok(active_kinds(&metrics_at(addr).await?))
}

/// The Prometheus text a provider serves at `addr` (`host:port`).
pub async fn metrics_at(addr: &str) -> Result<String, ProviderProcessError> {
    let (status, body) = http::get(addr, "/metrics").await.map_err(|e| {
        ProviderProcessError::io(format!("reading the provider's /metrics at {addr}"), e)
    })?;
    if status != 200 {
        return Err(ProviderProcessError::Status {
            addr: addr.to_owned(),
            path: "/metrics",
            status,
        });
    }
    Ok(body)
}

/// The resident memory and CPU time so far of process `pid`, read from
/// `/proc/<pid>`. For a [`ProviderProcess`] that is the provider itself:
/// `env` and `setpriv` exec it.
pub fn usage_of(pid: u32) -> Result<Usage, ProviderProcessError> {
    let read = |file: &'static str| {
        std::fs::read_to_string(format!("/proc/{pid}/{file}"))
            .map_err(|e| ProviderProcessError::io(format!("reading /proc/{pid}/{file}"), e))
    };
    let status = read("status")?;
    let stat = read("stat")?;
    let rss_bytes = rss_of(&status).ok_or_else(|| ProviderProcessError::Proc {
        pid,
        file: "status",
        line: "no VmRSS line".into(),
    })?;
    let ticks = cpu_ticks_of(&stat).ok_or_else(|| ProviderProcessError::Proc {
        pid,
        file: "stat",
        line: stat.clone(),
    })?;
    let per_second = rustix::param::clock_ticks_per_second();
    Ok(Usage {
        rss_bytes,
        cpu: Duration::from_secs_f64(ticks as f64 / per_second as f64),
    })
}

/// `VmRSS` of a `/proc/<pid>/status` text, in bytes.
fn rss_of(status: &str) -> Option<u64> {
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// utime + stime, in clock ticks, of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may hold spaces, so fields are
/// counted after its closing parenthesis.
fn cpu_ticks_of(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A loopback address with a port that was free a moment ago. The provider
/// binds it itself; a clash would show as its exit, reported with its log.
fn free_port() -> Result<SocketAddr, ProviderProcessError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| ProviderProcessError::io("finding a free port for the provider", e))
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

    #[test]
    fn usage_is_read_from_proc_texts() {
        let status = "Name:\tprovider\nVmPeak:\t  90000 kB\nVmRSS:\t   14336 kB\nThreads:\t3\n";
        assert_eq!(rss_of(status), Some(14_336 * 1024));
        assert_eq!(rss_of("Name:\tx\n"), None);
        // A command name with spaces and parentheses does not shift fields.
        let stat = "42 (my (odd) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000";
        assert_eq!(cpu_ticks_of(stat), Some(300));
        assert_eq!(cpu_ticks_of("42 (x) S 1"), None);
    }

    #[test]
    fn the_usage_of_a_running_process_is_read_and_a_missing_one_is_an_error() {
        let me = usage_of(std::process::id()).unwrap();
        assert!(me.rss_bytes > 1024 * 1024, "{me:?}");
        let gone = usage_of(u32::MAX).unwrap_err();
        assert!(
            gone.to_string().contains("/proc/4294967295/status"),
            "{gone}"
        );
    }
}

//! The local control plane: etcd, kube-apiserver and, on request,
//! kube-controller-manager, started as processes on free loopback ports
//! (the envtest pattern: no Docker, no root, a few seconds per start).

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::Client;
use tempfile::TempDir;

use crate::assets::Assets;
use crate::error::ClusterError;
use crate::kubeconfig;
use crate::pki::{self, PkiFiles, write_pki};
use crate::process::{ManagedProcess, log_tail};

/// The user the admin token authenticates as; `system:masters` bypasses RBAC.
const ADMIN_USER: &str = "e2e-admin";

/// How often `/readyz` is polled while the server starts.
const READY_POLL: Duration = Duration::from_millis(100);

/// The Services' cluster IPs; the first is the `kubernetes` Service's.
pub(crate) const SERVICE_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";
pub(crate) const KUBERNETES_SERVICE_IP: &str = "10.0.0.1";

/// Attempts when a port picked as free was taken before the server bound it.
const PORT_RACE_ATTEMPTS: usize = 3;

pub(crate) struct LocalControlPlane {
    /// etcd, kube-apiserver, then kube-controller-manager once started.
    processes: Vec<ManagedProcess>,
    /// Logs, PKI, token file and kubeconfig; kept when a test fails.
    workdir: Option<TempDir>,
    /// etcd's data, on tmpfs where available; never kept (it is large).
    _etcd_data: TempDir,
    /// The address kube-apiserver listens on and advertises: loopback,
    /// or the Docker bridge's for the node backend, whose pods reach it.
    host: IpAddr,
    apiserver_port: u16,
    /// Read by the node backend only (its controllers' service-account
    /// key and root CA), which is Docker-backed.
    #[cfg_attr(not(feature = "containers"), allow(dead_code))]
    pub(crate) pki: PkiFiles,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) client: Client,
    pub(crate) startup: Duration,
}

impl LocalControlPlane {
    /// Starts etcd and kube-apiserver on loopback and waits until
    /// `/readyz` is ok.
    pub(crate) async fn start(
        assets: &Assets,
        ready_timeout: Duration,
    ) -> Result<Self, ClusterError> {
        Self::start_on(assets, ready_timeout, IpAddr::V4(Ipv4Addr::LOCALHOST)).await
    }

    /// The same with kube-apiserver on `host` (etcd stays on loopback).
    pub(crate) async fn start_on(
        assets: &Assets,
        ready_timeout: Duration,
        host: IpAddr,
    ) -> Result<Self, ClusterError> {
        let mut attempt = 1;
        loop {
            match Self::start_once(assets, ready_timeout, host).await {
                Err(ClusterError::ExitedEarly { tail, .. })
                    if attempt < PORT_RACE_ATTEMPTS && tail.contains("address already in use") =>
                {
                    tracing::warn!(
                        attempt,
                        "a control-plane port was taken meanwhile; retrying"
                    );
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(
        assets: &Assets,
        ready_timeout: Duration,
        host: IpAddr,
    ) -> Result<Self, ClusterError> {
        let began = Instant::now();
        let workdir = tempfile::Builder::new()
            .prefix("e2e-cluster-")
            .tempdir()
            .map_err(|e| ClusterError::io("creating the cluster folder", e))?;
        let etcd_data = etcd_data_dir()?;
        let dir = workdir.path();
        let logs = dir.join("logs");
        std::fs::create_dir(&logs)
            .map_err(|e| ClusterError::io(format!("creating {}", logs.display()), e))?;

        let [etcd_client, etcd_peer, apiserver_port] = free_ports()?;
        // Pods reach the API server at the `kubernetes` Service's cluster
        // IP (the first of the range below) and verify it as they do
        // everywhere else.
        let host_name = host.to_string();
        let pki = write_pki(dir, &[&host_name, KUBERNETES_SERVICE_IP])?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let token_file = dir.join("tokens.csv");
        pki::write_private(
            &token_file,
            &format!("{token},{ADMIN_USER},{ADMIN_USER},system:masters\n"),
        )?;
        let server = format!(
            "https://{}",
            std::net::SocketAddr::new(host, apiserver_port)
        );
        let kubeconfig_path = dir.join("kubeconfig");
        kubeconfig::write_token_kubeconfig(&kubeconfig_path, &server, &pki.ca_pem, &token)?;

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd = ManagedProcess::spawn(
            "etcd",
            &assets.etcd,
            &[
                "--name=e2e".to_owned(),
                format!("--data-dir={}", etcd_data.path().display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=e2e={peer_url}"),
            ],
            logs.join("etcd.log"),
        )?;
        // kube-apiserver retries etcd by itself: starting both at once saves
        // the time etcd needs to come up.
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--bind-address={host}"),
            format!("--advertise-address={host}"),
            format!("--secure-port={apiserver_port}"),
            format!("--cert-dir={}", dir.display()),
            format!("--tls-cert-file={}", pki.serving_cert.display()),
            format!("--tls-private-key-file={}", pki.serving_key.display()),
            format!(
                "--service-account-key-file={}",
                pki.service_account_public_key.display()
            ),
            format!(
                "--service-account-signing-key-file={}",
                pki.service_account_key.display()
            ),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
            format!("--token-auth-file={}", token_file.display()),
            "--authorization-mode=RBAC".to_owned(),
            format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
            "--allow-privileged=true".to_owned(),
            // Off unless asked for: `E2E_APISERVER_PROFILING=1` serves
            // Go's /debug/pprof, to see where the API server's CPU goes
            // under a benchmark (docs/operating/api-server-cost.md).
            format!(
                "--profiling={}",
                std::env::var_os("E2E_APISERVER_PROFILING").is_some_and(|v| v == "1")
            ),
        ];
        // Its log's verbosity, when asked for: at 1 it says each watcher it
        // closes for falling behind ("Forcing watcher close due to
        // unresponsiveness"), which the default level keeps quiet.
        if let Some(level) = std::env::var("E2E_APISERVER_VERBOSITY")
            .ok()
            .filter(|v| v.parse::<u8>().is_ok())
        {
            apiserver_args.push(format!("--v={level}"));
        }
        if std::env::var_os("E2E_APISERVER_AUDIT").is_some_and(|v| v == "1") {
            apiserver_args.extend(audit_args(dir, &logs)?);
        }
        let apiserver = ManagedProcess::spawn(
            "kube-apiserver",
            &assets.kube_apiserver,
            &apiserver_args,
            logs.join("kube-apiserver.log"),
        )?;

        let client = kubeconfig::client_from_file(&kubeconfig_path).await?;
        let mut plane = Self {
            processes: vec![etcd, apiserver],
            workdir: Some(workdir),
            _etcd_data: etcd_data,
            host,
            apiserver_port,
            pki,
            kubeconfig: kubeconfig_path,
            client,
            startup: Duration::ZERO,
        };
        plane.wait_ready(ready_timeout).await?;
        plane.startup = began.elapsed();
        tracing::info!(
            startup_ms = plane.startup.as_millis(),
            %server,
            "local control plane ready"
        );
        Ok(plane)
    }

    /// Starts kube-controller-manager with only the garbage collector and
    /// the namespace controller: enough for owner references and namespace
    /// deletion, nothing that would act on the tests' objects otherwise.
    /// `server_minor` picks flags that exist in that version.
    pub(crate) async fn start_controller_manager(
        &mut self,
        binary: &Path,
        server_minor: u32,
    ) -> Result<(), ClusterError> {
        self.start_controllers(binary, server_minor, "garbagecollector,namespace", &[])
            .await
    }

    /// Starts kube-controller-manager running `controllers` (its
    /// `--controllers` list), with `extra` flags.
    pub(crate) async fn start_controllers(
        &mut self,
        binary: &Path,
        server_minor: u32,
        controllers: &str,
        extra: &[String],
    ) -> Result<(), ClusterError> {
        let mut args = vec![
            format!("--kubeconfig={}", self.kubeconfig.display()),
            format!("--controllers={controllers}"),
            "--leader-elect=false".to_owned(),
            "--use-service-account-credentials=false".to_owned(),
            // No serving at all: parallel tests would fight over fixed ports.
            "--secure-port=0".to_owned(),
        ];
        if server_minor < 24 {
            // The insecure port (default 10252) was removed in 1.24.
            args.push("--port=0".to_owned());
        }
        args.extend_from_slice(extra);
        let log = self.logs_dir().join("kube-controller-manager.log");
        let mut kcm = ManagedProcess::spawn("kube-controller-manager", binary, &args, log)?;
        // A bad flag or kubeconfig makes it exit at once; catch that here
        // rather than as a garbage-collection timeout later.
        tokio::time::sleep(Duration::from_millis(200)).await;
        kcm.ensure_running()?;
        self.processes.push(kcm);
        Ok(())
    }

    async fn wait_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let began = Instant::now();
        loop {
            for process in &mut self.processes {
                process.ensure_running()?;
            }
            // Until the port accepts connections, probe with plain TCP: a
            // refused HTTPS request would make kube log an error each time.
            if tokio::net::TcpStream::connect((self.host, self.apiserver_port))
                .await
                .is_err()
            {
                if began.elapsed() >= timeout {
                    return Err(self.not_ready(timeout, "port not open".to_owned()));
                }
                tokio::time::sleep(READY_POLL).await;
                continue;
            }
            let last = match crate::readyz::probe(&self.client).await {
                Ok(()) => return Ok(()),
                Err(last) => last,
            };
            if began.elapsed() >= timeout {
                return Err(self.not_ready(timeout, last));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    fn not_ready(&self, waited: Duration, last: String) -> ClusterError {
        ClusterError::NotReady {
            waited,
            last,
            logs: self.logs_dir(),
            tail: log_tail(&self.logs_dir().join("kube-apiserver.log")),
        }
    }

    /// Where the control-plane logs are written.
    pub(crate) fn logs_dir(&self) -> PathBuf {
        self.workdir
            .as_ref()
            .map(|d| d.path().join("logs"))
            .unwrap_or_default()
    }

    pub(crate) fn process_ids(&self) -> Vec<u32> {
        self.processes.iter().map(ManagedProcess::id).collect()
    }

    /// Components that have exited although they should be running.
    pub(crate) fn exited_components(&mut self) -> Vec<String> {
        self.processes
            .iter_mut()
            .filter_map(|p| {
                p.exit_status()
                    .map(|status| format!("{} ({status}), log {:?}", p.component(), p.log()))
            })
            .collect()
    }
}

impl Drop for LocalControlPlane {
    fn drop(&mut self) {
        // Controller manager first, etcd last: nothing logs errors about a
        // dependency that vanished before it did.
        while let Some(mut process) = self.processes.pop() {
            process.stop();
        }
        if std::thread::panicking()
            && let Some(workdir) = self.workdir.take()
        {
            let kept = workdir.keep();
            eprintln!(
                "e2e: test failed; control-plane logs kept in {}",
                kept.join("logs").display()
            );
        }
    }
}

/// The API server's flags for an audit log of every list and watch, with
/// who asked (user agent), what (selector, resourceVersion) and how it
/// ended, in `logs/audit.log`: asked for with `E2E_APISERVER_AUDIT=1`, to
/// see which client reopens its watches and why
/// (docs/operating/api-server-cost.md). Writes are not logged: they are
/// most of a benchmark's requests, and the metrics count them.
fn audit_args(dir: &Path, logs: &Path) -> Result<Vec<String>, ClusterError> {
    let policy = dir.join("audit-policy.yaml");
    let rules = "apiVersion: audit.k8s.io/v1\n\
                 kind: Policy\n\
                 omitStages: [RequestReceived]\n\
                 rules:\n\
                 - level: Metadata\n  verbs: [list, watch]\n\
                 - level: None\n";
    std::fs::write(&policy, rules)
        .map_err(|e| ClusterError::io(format!("writing {}", policy.display()), e))?;
    Ok(vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", logs.join("audit.log").display()),
        "--audit-log-mode=batch".to_owned(),
    ])
}

/// etcd fsyncs on every write; on tmpfs that costs nothing, and the data
/// is thrown away anyway.
fn etcd_data_dir() -> Result<TempDir, ClusterError> {
    let shm = Path::new("/dev/shm");
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix("e2e-etcd-");
        b
    };
    let on_shm = shm.is_dir().then(|| builder.tempdir_in(shm).ok()).flatten();
    match on_shm {
        Some(dir) => Ok(dir),
        None => builder
            .tempdir()
            .map_err(|e| ClusterError::io("creating the etcd data folder", e)),
    }
}

/// Distinct ports that were free a moment ago. All listeners are held until
/// every port is picked so the kernel cannot hand out one twice.
pub(crate) fn free_ports<const N: usize>() -> Result<[u16; N], ClusterError> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ClusterError::io("picking a free port", e))?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| ClusterError::io("picking a free port", e))?
            .port();
    }
    Ok(ports)
}

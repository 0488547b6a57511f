//! The node backend (`E2E_CLUSTER=node`): the local control plane plus a
//! real node on this machine, so Deployments, ReplicaSets, pods and
//! Services run as they do on kind.
//!
//! - **kube-apiserver** listens on the Docker engine's default bridge
//!   address (not loopback), where pods reach it.
//! - **kube-controller-manager** runs the controllers a Deployment needs
//!   ([`NODE_CONTROLLERS`]), with the service-account key, so pods get
//!   their tokens.
//! - **kube-scheduler** places pods on the node.
//! - **kubelet** runs them on this machine's Docker engine through
//!   dockershim (Kubernetes 1.20 still has it), with no network plugin:
//!   every pod is a container on Docker's default bridge. It needs a cgroup
//!   v1 engine with the `cgroupfs` driver, and a kubelet built with the two
//!   OOM-score constants `e2e/control-plane/install.sh` patches.
//! - **kube-proxy** (iptables mode) makes Services' cluster IPs reach their
//!   endpoints, so an in-cluster client finds the API server at the
//!   `kubernetes` Service as on any cluster.
//!
//! The pause image every pod sandbox runs is `docker import`ed from the
//! static `pause` binary the install script compiles from the same source.
//!
//! One node runs on a machine at a time (a lock file serialises them): a
//! kubelet removes the pod containers it does not know of, and kube-proxy
//! owns the host's `KUBE-*` chains. Dropping the node removes what it made:
//! its pods' containers, the kubelet's mounts, kube-proxy's rules and its
//! one sysctl; [`leftovers`] says what, if anything, remains.

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::{Api, Client};
use tempfile::TempDir;

use crate::error::ClusterError;
use crate::local::free_ports;
use crate::process::{ManagedProcess, log_tail};

/// The node's name (one node per machine at a time, so a fixed one).
pub const NODE_NAME: &str = "e2e-node";

/// The image of every pod's sandbox: kubelet 1.20's default.
pub const PAUSE_IMAGE: &str = "k8s.gcr.io/pause:3.2";

/// kube-controller-manager's controllers on the node backend: the garbage
/// collector and namespaces as on the local one, service accounts and
/// their token Secrets (a pod mounts one), Deployments and ReplicaSets,
/// Endpoints and EndpointSlices (what kube-proxy routes to), and the node
/// lifecycle controller, which lifts the `not-ready` taint a new node
/// starts with (without it nothing schedules).
pub const NODE_CONTROLLERS: &str = "garbagecollector,namespace,serviceaccount,serviceaccount-token,deployment,replicaset,endpoint,endpointslice,endpointslicemirroring,nodelifecycle";

/// Docker's label on every container dockershim creates (sandboxes and
/// containers alike).
const DOCKERSHIM_LABEL: &str = "io.kubernetes.docker.type";

/// kube-proxy sets it to 1 (it routes to cluster IPs from loopback); the
/// node restores the value it found.
const ROUTE_LOCALNET: &str = "/proc/sys/net/ipv4/conf/all/route_localnet";

/// How often the node's Ready condition is polled.
const READY_POLL: Duration = Duration::from_millis(250);

/// The node's binaries, from the control plane's assets folder.
#[derive(Debug, Clone)]
pub struct NodeAssets {
    pub kubelet: PathBuf,
    pub kube_scheduler: PathBuf,
    pub kube_proxy: PathBuf,
    /// The pause binary, static, for the sandbox image.
    pub pause: PathBuf,
}

impl NodeAssets {
    /// The node's binaries in `dir`, or an error naming what is missing
    /// and the script that builds them.
    pub fn in_dir(dir: &Path) -> Result<Self, ClusterError> {
        let path = |name: &str| dir.join(name);
        let missing: Vec<&str> = ["kubelet", "kube-scheduler", "kube-proxy", "pause"]
            .into_iter()
            .filter(|name| !path(name).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(ClusterError::AssetsNotFound {
                searched: format!(
                    "{} lacks the node's {} (e2e/control-plane/install.sh builds them)",
                    dir.display(),
                    missing.join(", ")
                ),
            });
        }
        Ok(Self {
            kubelet: path("kubelet"),
            kube_scheduler: path("kube-scheduler"),
            kube_proxy: path("kube-proxy"),
            pause: path("pause"),
        })
    }
}

/// The Docker engine's default bridge gateway: the host's address as pods
/// see it, where the API server (and a test's fakecloud) listen for them.
/// The engine reports the gateway, or only the subnet, whose first address
/// is then the gateway (Docker's rule; this engine reports only the subnet).
pub fn bridge_address() -> Result<Ipv4Addr, ClusterError> {
    bridge().map(|(gateway, _)| gateway)
}

/// The default bridge's gateway and IPv4 subnet.
pub(crate) fn bridge() -> Result<(Ipv4Addr, String), ClusterError> {
    let text = docker(&[
        "network",
        "inspect",
        "bridge",
        "--format",
        "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}} {{end}}",
    ])?;
    match (gateway_of(&text), subnet_of(&text)) {
        (Some(gateway), Some(subnet)) => Ok((gateway, subnet.to_owned())),
        _ => Err(ClusterError::Node {
            what: "finding the Docker bridge's gateway and subnet".into(),
            reason: format!("`docker network inspect bridge` gave {text:?}"),
        }),
    }
}

/// The first IPv4 subnet in `docker network inspect`'s words: the pods'
/// addresses (kube-proxy's `--cluster-cidr`).
fn subnet_of(words: &str) -> Option<&str> {
    words.split_whitespace().find(|w| {
        w.split_once('/')
            .is_some_and(|(n, _)| n.parse::<Ipv4Addr>().is_ok())
    })
}

/// The first IPv4 gateway in `docker network inspect`'s words, or the
/// first host address of the first IPv4 subnet.
fn gateway_of(words: &str) -> Option<Ipv4Addr> {
    let words: Vec<&str> = words.split_whitespace().collect();
    if let Some(gateway) = words.iter().find_map(|w| w.parse::<Ipv4Addr>().ok()) {
        return Some(gateway);
    }
    words.iter().find_map(|w| {
        let (network, bits) = w.split_once('/')?;
        let network: Ipv4Addr = network.parse().ok()?;
        let bits: u32 = bits.parse().ok().filter(|b| *b < 31)?;
        let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
        Some(Ipv4Addr::from((u32::from(network) & mask) + 1))
    })
}

/// Holds the machine's one node for as long as it lives.
#[derive(Debug)]
pub(crate) struct NodeLock {
    /// Locked; closing it releases the lock.
    _file: File,
}

impl NodeLock {
    /// Waits (off the async runtime) until no other node runs here.
    pub(crate) async fn acquire() -> Result<Self, ClusterError> {
        tokio::task::spawn_blocking(|| {
            let path = std::env::temp_dir().join("fakecloud-provider-node.lock");
            let file = File::create(&path)
                .map_err(|e| ClusterError::io(format!("creating {}", path.display()), e))?;
            file.lock()
                .map_err(|e| ClusterError::io(format!("locking {}", path.display()), e))?;
            Ok(Self { _file: file })
        })
        .await
        .map_err(|e| ClusterError::io("waiting for the node lock", std::io::Error::other(e)))?
    }
}

/// The node's processes and what they made on the host; torn down on drop.
pub(crate) struct Node {
    /// kube-scheduler, kube-proxy, kubelet (stopped in reverse).
    processes: Vec<ManagedProcess>,
    /// kubelet's and dockershim's state; its mounts are undone on drop.
    workdir: Option<TempDir>,
    kube_proxy: PathBuf,
    /// `route_localnet` as found, put back on drop.
    route_localnet: Option<String>,
    pub(crate) startup: Duration,
    /// Dropped last: the next node may start once this one is gone.
    _lock: NodeLock,
}

impl Node {
    /// Starts kube-scheduler, kube-proxy and a kubelet against the API
    /// server `kubeconfig` names (listening on `host`, the Docker bridge's
    /// gateway, whose subnet holds the pods), and waits until the
    /// node is Ready. `logs` receives their logs.
    pub(crate) async fn start(
        assets: &NodeAssets,
        lock: NodeLock,
        client: &Client,
        kubeconfig: &Path,
        (host, pods_subnet): (Ipv4Addr, &str),
        logs: &Path,
        timeout: Duration,
    ) -> Result<Self, ClusterError> {
        let began = Instant::now();
        ensure_pause_image(&assets.pause)?;
        // Pod containers of a node that died with its test process (the
        // lock says none runs now).
        remove_pod_containers()?;
        let workdir = tempfile::Builder::new()
            .prefix("e2e-node-")
            .tempdir()
            .map_err(|e| ClusterError::io("creating the node's folder", e))?;
        let root = workdir.path().to_path_buf();
        let route_localnet = route_localnet();
        let mut node = Self {
            processes: Vec::new(),
            workdir: Some(workdir),
            kube_proxy: assets.kube_proxy.clone(),
            route_localnet,
            startup: Duration::ZERO,
            _lock: lock,
        };
        let kubeconfig = format!("--kubeconfig={}", kubeconfig.display());
        let [proxy_metrics, proxy_healthz, kubelet_port, kubelet_healthz] = free_ports()?;

        node.spawn(
            "kube-scheduler",
            &assets.kube_scheduler,
            vec![
                kubeconfig.clone(),
                "--leader-elect=false".to_owned(),
                // No serving: nothing here scrapes it.
                "--port=0".to_owned(),
                "--secure-port=0".to_owned(),
            ],
            logs,
        )?;
        node.spawn(
            "kube-proxy",
            &assets.kube_proxy,
            vec![
                kubeconfig.clone(),
                format!("--hostname-override={NODE_NAME}"),
                "--proxy-mode=iptables".to_owned(),
                // Pods are on Docker's bridge; traffic from elsewhere to a
                // cluster IP is masqueraded.
                format!("--cluster-cidr={pods_subnet}"),
                // The sandbox refuses a negative OOM score adjustment.
                "--oom-score-adj=0".to_owned(),
                // Leave the host's conntrack table size alone.
                "--conntrack-max-per-core=0".to_owned(),
                format!("--metrics-bind-address=127.0.0.1:{proxy_metrics}"),
                format!("--healthz-bind-address=127.0.0.1:{proxy_healthz}"),
            ],
            logs,
        )?;
        node.spawn(
            "kubelet",
            &assets.kubelet,
            vec![
                kubeconfig,
                format!("--hostname-override={NODE_NAME}"),
                format!("--node-ip={host}"),
                format!("--address={host}"),
                format!("--port={kubelet_port}"),
                "--read-only-port=0".to_owned(),
                format!("--healthz-port={kubelet_healthz}"),
                format!("--root-dir={}", root.join("kubelet").display()),
                format!("--cert-dir={}", root.join("pki").display()),
                format!(
                    "--experimental-dockershim-root-directory={}",
                    root.join("dockershim").display()
                ),
                "--container-runtime=docker".to_owned(),
                format!("--pod-infra-container-image={PAUSE_IMAGE}"),
                // This engine's cgroups: v1, managed by cgroupfs; the kubelet
                // makes no QoS or allocatable hierarchy of its own, which this
                // sandbox would not let it.
                "--cgroup-driver=cgroupfs".to_owned(),
                "--cgroups-per-qos=false".to_owned(),
                "--enforce-node-allocatable=".to_owned(),
                "--fail-swap-on=false".to_owned(),
                "--oom-score-adj=0".to_owned(),
                // Never evict, never collect images: the engine's images are
                // the project's, and the disk is the machine's.
                "--eviction-hard=".to_owned(),
                "--image-gc-high-threshold=100".to_owned(),
                "--image-gc-low-threshold=99".to_owned(),
                // The iptables chains are kube-proxy's alone, so its
                // `--cleanup` leaves none behind.
                "--make-iptables-util-chains=false".to_owned(),
                // Ready soon after start, and status changes seen soon.
                "--node-status-update-frequency=2s".to_owned(),
                "--sync-frequency=5s".to_owned(),
            ],
            logs,
        )?;
        node.wait_ready(client, timeout).await?;
        node.startup = began.elapsed();
        tracing::info!(startup_ms = node.startup.as_millis(), "node ready");
        Ok(node)
    }

    /// The kubelet's and dockershim's state folder.
    pub(crate) fn state_dir(&self) -> &Path {
        self.workdir
            .as_ref()
            .map(TempDir::path)
            .unwrap_or(Path::new(""))
    }

    fn spawn(
        &mut self,
        component: &'static str,
        binary: &Path,
        args: Vec<String>,
        logs: &Path,
    ) -> Result<(), ClusterError> {
        let log = logs.join(format!("{component}.log"));
        self.processes
            .push(ManagedProcess::spawn(component, binary, &args, log)?);
        Ok(())
    }

    async fn wait_ready(&mut self, client: &Client, timeout: Duration) -> Result<(), ClusterError> {
        let nodes = Api::<NodeObject>::all(client.clone());
        let began = Instant::now();
        let mut last = "not registered".to_owned();
        loop {
            for process in &mut self.processes {
                process.ensure_running()?;
            }
            if let Some(node) = nodes
                .get_opt(NODE_NAME)
                .await
                .map_err(|e| ClusterError::kube("reading the node", e))?
            {
                let ready = node
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .into_iter()
                    .find(|c| c.type_ == "Ready");
                let tainted = node
                    .spec
                    .and_then(|s| s.taints)
                    .unwrap_or_default()
                    .into_iter()
                    .any(|t| t.effect == "NoSchedule");
                match ready {
                    Some(c) if c.status == "True" && !tainted => return Ok(()),
                    Some(c) => {
                        last = format!(
                            "Ready={} ({}){}",
                            c.status,
                            c.message.unwrap_or_default(),
                            if tainted { ", still tainted" } else { "" }
                        );
                    }
                    None => last = "no Ready condition yet".to_owned(),
                }
            }
            if began.elapsed() >= timeout {
                let kubelet_log = self
                    .processes
                    .iter()
                    .find(|p| p.component() == "kubelet")
                    .map(|p| log_tail(p.log()))
                    .unwrap_or_default();
                return Err(ClusterError::NodeNotReady {
                    node: NODE_NAME,
                    waited: timeout,
                    last: format!("{last}\nkubelet log tail:\n{kubelet_log}"),
                });
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // kubelet first, so nothing restarts the containers removed next.
        while let Some(mut process) = self.processes.pop() {
            process.stop();
        }
        if let Err(e) = remove_pod_containers() {
            tracing::warn!(error = %e, "removing the node's pod containers");
        }
        if let Some(workdir) = &self.workdir {
            unmount_under(workdir.path());
        }
        // kube-proxy removes its rules, then fails (exit 1) on the IPVS
        // sets it never made without `ipset` installed: its status says
        // nothing. What it leaves (its canary chains, the mark chains) goes
        // next.
        if let Err(e) = Command::new(&self.kube_proxy).arg("--cleanup").output() {
            tracing::warn!(error = %e, "running kube-proxy --cleanup");
        }
        remove_kube_chains();
        if let Some(value) = &self.route_localnet
            && let Err(e) = std::fs::write(ROUTE_LOCALNET, value)
        {
            tracing::warn!(error = %e, "restoring {ROUTE_LOCALNET}");
        }
        if std::thread::panicking()
            && let Some(workdir) = self.workdir.take()
        {
            let kept = workdir.keep();
            eprintln!("e2e: test failed; node state kept in {}", kept.display());
        }
    }
}

/// What a node left on the host: pod containers, mounts under `root`
/// (none when `None`), `KUBE-*` iptables chains, and `route_localnet`
/// unlike `route_localnet_before`. Empty when it cleaned up after itself.
pub fn leftovers(root: Option<&Path>, route_localnet_before: Option<&str>) -> Vec<String> {
    let mut found = Vec::new();
    match pod_containers() {
        Ok(ids) if ids.is_empty() => {}
        Ok(ids) => found.push(format!("pod containers: {}", ids.join(" "))),
        Err(e) => found.push(format!("could not list containers: {e}")),
    }
    if let Some(root) = root {
        let mounts = mounts_under(root);
        if !mounts.is_empty() {
            found.push(format!("mounts: {}", mounts.join(", ")));
        }
    }
    match Command::new("iptables-save").output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let kube: Vec<&str> = text
                .lines()
                .filter(|l| {
                    l.starts_with(":KUBE-") || (l.starts_with("-A ") && l.contains("KUBE-"))
                })
                .collect();
            if !kube.is_empty() {
                found.push(format!("iptables: {}", kube.join(" | ")));
            }
        }
        Err(e) => found.push(format!("could not run iptables-save: {e}")),
    }
    if let Some(before) = route_localnet_before {
        let now = std::fs::read_to_string(ROUTE_LOCALNET).unwrap_or_default();
        if now.trim() != before {
            found.push(format!("route_localnet is {} (was {before})", now.trim()));
        }
    }
    found
}

/// `route_localnet` now (to compare with [`leftovers`] after a node).
pub fn route_localnet() -> Option<String> {
    std::fs::read_to_string(ROUTE_LOCALNET)
        .ok()
        .map(|v| v.trim().to_owned())
}

/// Imports the pause image from the static binary unless present.
fn ensure_pause_image(pause: &Path) -> Result<(), ClusterError> {
    if docker(&["image", "inspect", "--format", "{{.Id}}", PAUSE_IMAGE]).is_ok() {
        return Ok(());
    }
    let dir = tempfile::tempdir().map_err(|e| ClusterError::io("creating a folder", e))?;
    let tarball = dir.path().join("pause.tar");
    let file = File::create(&tarball)
        .map_err(|e| ClusterError::io(format!("creating {}", tarball.display()), e))?;
    let mut builder = tar::Builder::new(file);
    builder
        .append_path_with_name(pause, "pause")
        .and_then(|()| builder.finish())
        .map_err(|e| ClusterError::io(format!("archiving {}", pause.display()), e))?;
    docker(&[
        "import",
        "--change",
        "ENTRYPOINT [\"/pause\"]",
        &tarball.display().to_string(),
        PAUSE_IMAGE,
    ])?;
    Ok(())
}

/// The ids of every container dockershim made (sandboxes included).
fn pod_containers() -> Result<Vec<String>, ClusterError> {
    let label = format!("label={DOCKERSHIM_LABEL}");
    let ids = docker(&["ps", "-aq", "--filter", &label])?;
    Ok(ids.split_whitespace().map(str::to_owned).collect())
}

/// Removes every container dockershim made, with its volumes.
fn remove_pod_containers() -> Result<(), ClusterError> {
    let ids = pod_containers()?;
    if ids.is_empty() {
        return Ok(());
    }
    let mut args = vec!["rm", "-f", "-v"];
    args.extend(ids.iter().map(String::as_str));
    docker(&args).map(drop)
}

/// Mount points at or below `root`, deepest first.
fn mounts_under(root: &Path) -> Vec<String> {
    let root = root.display().to_string();
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<String> = table
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| p.replace("\\040", " "))
        .filter(|p| p.starts_with(&root))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    points
}

/// Lazily unmounts whatever the kubelet mounted under `root`: its Secret
/// and projected volumes (tmpfs) and its root folder, which it bind-mounts
/// onto itself as a shared mount. Unmounting that shared mount can leave a
/// volume mount behind (seen here), so passes repeat until none is left.
fn unmount_under(root: &Path) {
    for _ in 0..5 {
        let points = mounts_under(root);
        if points.is_empty() {
            return;
        }
        for point in points {
            match Command::new("umount").args(["-l", &point]).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => tracing::debug!(
                    point,
                    stderr = %String::from_utf8_lossy(&out.stderr),
                    "unmounting"
                ),
                Err(e) => tracing::warn!(point, error = %e, "running umount"),
            }
        }
    }
}

/// The tables kube-proxy writes.
const TABLES: [&str; 3] = ["nat", "filter", "mangle"];

/// Deletes every rule that jumps to a `KUBE-*` chain from the other
/// chains, then every `KUBE-*` chain. Rules are deleted one by one, never
/// by restoring a table: Docker adds rules of its own meanwhile (other
/// tests' networks), which a restore would lose.
fn remove_kube_chains() {
    for table in TABLES {
        let Ok(out) = Command::new("iptables-save").args(["-t", table]).output() else {
            tracing::warn!(table, "iptables-save did not run");
            continue;
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let iptables = |args: &[String]| {
            let result = Command::new("iptables")
                .args(["-w", "-t", table])
                .args(args)
                .output();
            if let Ok(out) = result
                && !out.status.success()
            {
                tracing::warn!(table, ?args, stderr = %String::from_utf8_lossy(&out.stderr), "iptables");
            }
        };
        for rule in text.lines().filter_map(|l| l.strip_prefix("-A ")) {
            let words = split_rule(rule);
            let own_chain = words.first().is_some_and(|c| c.starts_with("KUBE-"));
            let jumps = words
                .windows(2)
                .any(|w| w[0] == "-j" && w[1].starts_with("KUBE-"));
            if jumps && !own_chain {
                let mut args = vec!["-D".to_owned()];
                args.extend(words);
                iptables(&args);
            }
        }
        let chains: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix(':'))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| c.starts_with("KUBE-"))
            .map(str::to_owned)
            .collect();
        for flag in ["-F", "-X"] {
            for chain in &chains {
                iptables(&[flag.to_owned(), chain.clone()]);
            }
        }
    }
}

/// Splits a rule as `iptables-save` prints it into arguments: words
/// separated by spaces, a double-quoted word (a comment) kept whole.
fn split_rule(rule: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut chars = rule.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => word.extend(chars.next()),
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Runs `docker args`, returning stdout or an error with stderr.
pub(crate) fn docker(args: &[&str]) -> Result<String, ClusterError> {
    let output = Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| ClusterError::Node {
            what: "running docker (is the Docker CLI installed?)".into(),
            reason: e.to_string(),
        })?;
    if !output.status.success() {
        return Err(ClusterError::Node {
            what: format!("docker {}", args.join(" ")),
            reason: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_rule_splits_into_the_arguments_that_delete_it() {
        let rule =
            r#"PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES"#;
        assert_eq!(
            split_rule(rule),
            [
                "PREROUTING",
                "-m",
                "comment",
                "--comment",
                "kubernetes service portals",
                "-j",
                "KUBE-SERVICES"
            ]
        );
        assert_eq!(
            split_rule(r#"X --comment "a \"b\" c""#),
            ["X", "--comment", "a \"b\" c"]
        );
    }

    #[test]
    fn the_gateway_is_the_one_reported_or_the_subnets_first_address() {
        assert_eq!(
            gateway_of("172.18.0.1 172.18.0.0/16 "),
            Some(Ipv4Addr::new(172, 18, 0, 1))
        );
        assert_eq!(
            gateway_of(" 172.17.0.0/16 "),
            Some(Ipv4Addr::new(172, 17, 0, 1))
        );
        assert_eq!(
            gateway_of(" 10.1.2.128/25 "),
            Some(Ipv4Addr::new(10, 1, 2, 129))
        );
        assert_eq!(gateway_of(" \n"), None);
        assert_eq!(gateway_of(" fd00::/64 "), None);
    }

    #[test]
    fn the_subnet_is_the_first_ipv4_one() {
        assert_eq!(
            subnet_of("172.18.0.1 172.18.0.0/16 "),
            Some("172.18.0.0/16")
        );
        assert_eq!(subnet_of(" fd00::/64 10.0.0.0/8 "), Some("10.0.0.0/8"));
        assert_eq!(subnet_of(" "), None);
    }

    #[test]
    fn missing_node_binaries_are_named_with_the_script_that_builds_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kubelet"), "").unwrap();
        let err = NodeAssets::in_dir(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("kube-scheduler, kube-proxy, pause") && err.contains("install.sh"),
            "{err}"
        );
        assert!(!err.contains("kubelet,"), "{err}");
    }
}

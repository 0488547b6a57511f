//! The container backend (`E2E_CLUSTER=containers`): the control plane and
//! fakecloud from the images docker-compose.yml runs, started through
//! testcontainers. It proves those images work as a test's cluster and
//! cloud, not only under compose.
//!
//! etcd, kube-apiserver and kube-controller-manager share a network of their
//! own (a unique name per cluster) and find each other by container name;
//! the API server and fakecloud publish their ports on the host, where the
//! test and its in-process provider reach them. The PKI is made here, as for
//! the local control plane, and copied into the containers, so nothing is
//! bind-mounted. Everything is removed when the handles drop.
//!
//! Missing images are a clear error that names the commands making them;
//! testcontainers would otherwise try to pull them from a registry.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use kube::Client;
use tempfile::TempDir;
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, CopyTargetOptions, GenericImage, ImageExt};

use crate::error::ClusterError;
use crate::{kubeconfig, pki};

/// An image by repository and tag.
pub type ImageName = (&'static str, &'static str);

/// The images docker-compose.yml names (and scripts/images makes here).
pub const ETCD_IMAGE: ImageName = ("quay.io/coreos/etcd", "v3.4.23");
pub const APISERVER_IMAGE: ImageName = ("registry.k8s.io/kube-apiserver", "v1.20.2");
pub const CONTROLLER_MANAGER_IMAGE: ImageName =
    ("registry.k8s.io/kube-controller-manager", "v1.20.2");
pub const FAKECLOUD_IMAGE: ImageName = ("fakecloud-provider/fakecloud", "dev");
/// The provider's runtime image (what its Crossplane package embeds).
pub const PROVIDER_IMAGE: ImageName = ("fakecloud-provider/provider", "dev");

/// What makes the images when they are missing.
const MAKE_IMAGES: &str = "scripts/images (base and control-plane images), then scripts/host-images (the project's, from this checkout's binaries) or scripts/compose build (the project's, compiled inside Docker)";

const APISERVER_PORT: u16 = 6443;
const FAKECLOUD_PORT: u16 = 8787;
/// Where the PKI is copied in the API server's container.
const PKI_DIR: &str = "/etc/kubernetes/pki";
const ADMIN_USER: &str = "e2e-admin";

/// An error unless every image is present on the Docker engine.
pub fn ensure_images(images: &[ImageName]) -> Result<(), ClusterError> {
    for (repository, tag) in images {
        let image = format!("{repository}:{tag}");
        let output = Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", &image])
            .output()
            .map_err(|e| ClusterError::Containers {
                what: "running docker (is the Docker CLI installed?)".into(),
                reason: e.to_string(),
            })?;
        if output.status.success() {
            continue;
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("No such image") {
            return Err(ClusterError::ImageMissing {
                image,
                make: MAKE_IMAGES,
            });
        }
        return Err(ClusterError::Containers {
            what: format!("looking for image {image} (is the Docker engine running?)"),
            reason: stderr.trim().to_owned(),
        });
    }
    Ok(())
}

/// The repository the harness was built from (its scripts make the images).
fn repo_root() -> PathBuf {
    crate::crds::package_dir()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// Makes the base images (`scripts/images`, which leaves present ones
/// alone) and the project's images from the binaries in `target/debug`
/// (`scripts/host-images`: seconds of `docker build`; it builds them only
/// when one is missing). As with the process tests, after a change build
/// them as scripts/test does first. Test processes on one machine take turns
/// through a lock file: concurrent builds would build the same images
/// twice at once.
pub fn build_images() -> Result<(), ClusterError> {
    let lock_path = std::env::temp_dir().join("fakecloud-provider-images.lock");
    let lock = std::fs::File::create(&lock_path)
        .map_err(|e| ClusterError::io(format!("creating {}", lock_path.display()), e))?;
    lock.lock()
        .map_err(|e| ClusterError::io(format!("locking {}", lock_path.display()), e))?;
    let root = repo_root();
    for script in ["scripts/images", "scripts/host-images"] {
        let output = Command::new(root.join(script))
            .current_dir(&root)
            .output()
            .map_err(|e| ClusterError::io(format!("running {script}"), e))?;
        if !output.status.success() {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            return Err(ClusterError::Containers {
                what: format!("{script} failed ({})", output.status),
                reason: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            });
        }
    }
    Ok(())
}

fn failed(
    what: impl Into<String>,
) -> impl FnOnce(testcontainers::TestcontainersError) -> ClusterError {
    let what = what.into();
    move |e| ClusterError::Containers {
        what,
        reason: e.to_string(),
    }
}

/// etcd, kube-apiserver and (on request) kube-controller-manager in
/// containers. Dropping it removes them (controller manager first).
pub(crate) struct ContainerControlPlane {
    controller_manager: Option<ContainerAsync<GenericImage>>,
    apiserver: ContainerAsync<GenericImage>,
    _etcd: ContainerAsync<GenericImage>,
    /// PKI, token file and the host's kubeconfig.
    _dir: TempDir,
    admin_kubeconfig_in_network: Vec<u8>,
    network: String,
    apiserver_host: String,
    ca_pem: String,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) client: Client,
}

impl ContainerControlPlane {
    pub(crate) async fn start(ready_timeout: Duration) -> Result<Self, ClusterError> {
        ensure_images(&[ETCD_IMAGE, APISERVER_IMAGE])?;
        let dir = tempfile::Builder::new()
            .prefix("e2e-containers-")
            .tempdir()
            .map_err(|e| ClusterError::io("creating the cluster folder", e))?;
        let network = crate::names::unique_name("e2e-net");
        let etcd_name = format!("{network}-etcd");
        let apiserver_name = format!("{network}-apiserver");

        let pki_files = pki::write_pki(dir.path(), &[apiserver_name.as_str()])?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let tokens = format!("{token},{ADMIN_USER},{ADMIN_USER},system:masters\n");

        let etcd_url = format!("http://{etcd_name}:2379");
        let etcd = GenericImage::new(ETCD_IMAGE.0, ETCD_IMAGE.1)
            .with_entrypoint("/usr/local/bin/etcd")
            .with_cmd([
                "--name=e2e".to_owned(),
                "--data-dir=/var/lib/etcd".to_owned(),
                "--listen-client-urls=http://0.0.0.0:2379".to_owned(),
                format!("--advertise-client-urls={etcd_url}"),
                "--listen-peer-urls=http://127.0.0.1:2380".to_owned(),
                "--initial-advertise-peer-urls=http://127.0.0.1:2380".to_owned(),
                "--initial-cluster=e2e=http://127.0.0.1:2380".to_owned(),
            ])
            .with_network(network.clone())
            .with_container_name(etcd_name)
            .start()
            .await
            .map_err(failed("starting etcd"))?;

        let read = |path: &std::path::Path| {
            std::fs::read(path)
                .map_err(|e| ClusterError::io(format!("reading {}", path.display()), e))
        };
        let copy =
            |name: &str| CopyTargetOptions::new(format!("{PKI_DIR}/{name}")).with_mode(0o600);
        let apiserver = GenericImage::new(APISERVER_IMAGE.0, APISERVER_IMAGE.1)
            .with_entrypoint("/usr/local/bin/kube-apiserver")
            .with_exposed_port(APISERVER_PORT.tcp())
            .with_cmd([
                format!("--etcd-servers={etcd_url}"),
                format!("--secure-port={APISERVER_PORT}"),
                format!("--tls-cert-file={PKI_DIR}/apiserver.crt"),
                format!("--tls-private-key-file={PKI_DIR}/apiserver.key"),
                format!("--service-account-key-file={PKI_DIR}/service-account.pub"),
                format!("--service-account-signing-key-file={PKI_DIR}/service-account.key"),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
                format!("--token-auth-file={PKI_DIR}/tokens.csv"),
                "--authorization-mode=RBAC".to_owned(),
                "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
                "--profiling=false".to_owned(),
            ])
            .with_copy_to(copy("apiserver.crt"), read(&pki_files.serving_cert)?)
            .with_copy_to(copy("apiserver.key"), read(&pki_files.serving_key)?)
            .with_copy_to(
                copy("service-account.key"),
                read(&pki_files.service_account_key)?,
            )
            .with_copy_to(
                copy("service-account.pub"),
                read(&pki_files.service_account_public_key)?,
            )
            .with_copy_to(copy("tokens.csv"), tokens.into_bytes())
            .with_network(network.clone())
            .with_container_name(apiserver_name.clone())
            .start()
            .await
            .map_err(failed("starting kube-apiserver"))?;
        let port = apiserver
            .get_host_port_ipv4(APISERVER_PORT.tcp())
            .await
            .map_err(failed("reading the API server's host port"))?;

        let kubeconfig_path = dir.path().join("kubeconfig");
        kubeconfig::write_token_kubeconfig(
            &kubeconfig_path,
            &format!("https://127.0.0.1:{port}"),
            &pki_files.ca_pem,
            &token,
        )?;
        let in_network = dir.path().join("kubeconfig-in-network");
        kubeconfig::write_token_kubeconfig(
            &in_network,
            &format!("https://{apiserver_name}:{APISERVER_PORT}"),
            &pki_files.ca_pem,
            &token,
        )?;
        let client = kubeconfig::client_from_file(&kubeconfig_path).await?;
        let plane = Self {
            controller_manager: None,
            apiserver,
            _etcd: etcd,
            admin_kubeconfig_in_network: read(&in_network)?,
            _dir: dir,
            network,
            apiserver_host: apiserver_name,
            ca_pem: pki_files.ca_pem.clone(),
            kubeconfig: kubeconfig_path,
            client,
        };
        plane.wait_ready(ready_timeout).await?;
        Ok(plane)
    }

    /// Starts kube-controller-manager with the garbage collector and the
    /// namespace controller only, as the local backend does.
    pub(crate) async fn start_controller_manager(&mut self) -> Result<(), ClusterError> {
        ensure_images(&[CONTROLLER_MANAGER_IMAGE])?;
        let container = GenericImage::new(CONTROLLER_MANAGER_IMAGE.0, CONTROLLER_MANAGER_IMAGE.1)
            .with_entrypoint("/usr/local/bin/kube-controller-manager")
            .with_cmd([
                "--kubeconfig=/etc/kubernetes/admin.kubeconfig",
                "--controllers=garbagecollector,namespace",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                "--secure-port=0",
                "--port=0",
            ])
            .with_copy_to(
                CopyTargetOptions::new("/etc/kubernetes/admin.kubeconfig").with_mode(0o600),
                self.admin_kubeconfig_in_network.clone(),
            )
            .with_network(self.network.clone())
            .start()
            .await
            .map_err(failed("starting kube-controller-manager"))?;
        self.controller_manager = Some(container);
        Ok(())
    }

    /// How a container on the cluster's network reaches the API server.
    pub(crate) fn in_network(&self) -> InNetwork {
        InNetwork {
            network: self.network.clone(),
            apiserver_host: self.apiserver_host.clone(),
            apiserver_port: APISERVER_PORT,
            ca_pem: self.ca_pem.clone(),
        }
    }

    async fn wait_ready(&self, timeout: Duration) -> Result<(), ClusterError> {
        let began = Instant::now();
        loop {
            let last = match crate::readyz::probe(&self.client).await {
                Ok(()) => return Ok(()),
                Err(last) => last,
            };
            if began.elapsed() >= timeout {
                let logs = self.apiserver.stderr_to_vec().await.unwrap_or_default();
                let logs = String::from_utf8_lossy(&logs);
                let tail: Vec<&str> = logs.lines().rev().take(20).collect();
                return Err(ClusterError::ContainerNotReady {
                    waited: timeout,
                    last,
                    tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl std::fmt::Debug for ContainerControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerControlPlane")
            .field("network", &self.network)
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

/// What a container on a cluster's network needs to reach its API server
/// as a pod does: the service host and port, and the CA to trust.
#[derive(Debug, Clone)]
pub struct InNetwork {
    /// The Docker network the control plane's containers share.
    pub network: String,
    /// `KUBERNETES_SERVICE_HOST`: the API server's container name.
    pub apiserver_host: String,
    /// `KUBERNETES_SERVICE_PORT`.
    pub apiserver_port: u16,
    /// The cluster CA, PEM (a pod's `ca.crt`).
    pub ca_pem: String,
}

/// fakecloud from its image, its port published on the host.
pub struct FakecloudContainer {
    _container: ContainerAsync<GenericImage>,
    base_url: String,
    /// Its URL from containers on the same network, if it joined one.
    in_network_url: Option<String>,
    api_key: String,
    admin_token: String,
}

impl FakecloudContainer {
    /// Starts fakecloud with a fresh API key and admin token and the given
    /// provisioning delay; returns once it listens.
    pub async fn start(provisioning_delay: Duration) -> Result<Self, ClusterError> {
        Self::start_on(provisioning_delay, None).await
    }

    /// As [`FakecloudContainer::start`], and on `network` (when given) under
    /// a container name other containers there reach it by.
    pub async fn start_on(
        provisioning_delay: Duration,
        network: Option<&str>,
    ) -> Result<Self, ClusterError> {
        ensure_images(&[FAKECLOUD_IMAGE])?;
        let api_key = uuid::Uuid::new_v4().simple().to_string();
        let admin_token = uuid::Uuid::new_v4().simple().to_string();
        let image = GenericImage::new(FAKECLOUD_IMAGE.0, FAKECLOUD_IMAGE.1)
            .with_exposed_port(FAKECLOUD_PORT.tcp())
            .with_wait_for(WaitFor::message_on_stdout("listening on"))
            .with_env_var("FAKECLOUD_API_KEYS", format!("{api_key}=e2e"))
            .with_env_var("FAKECLOUD_ADMIN_TOKEN", admin_token.clone())
            .with_env_var(
                "FAKECLOUD_DELAY_MS",
                provisioning_delay.as_millis().to_string(),
            );
        let name = network.map(|n| format!("{n}-fakecloud"));
        let image = match (network, &name) {
            (Some(network), Some(name)) => image.with_network(network).with_container_name(name),
            _ => image,
        };
        let container = image.start().await.map_err(failed("starting fakecloud"))?;
        let port = container
            .get_host_port_ipv4(FAKECLOUD_PORT.tcp())
            .await
            .map_err(failed("reading fakecloud's host port"))?;
        Ok(Self {
            _container: container,
            base_url: format!("http://127.0.0.1:{port}"),
            in_network_url: name.map(|n| format!("http://{n}:{FAKECLOUD_PORT}")),
            api_key,
            admin_token,
        })
    }

    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Its URL from the network it joined ([`FakecloudContainer::start_on`]).
    pub fn in_network_url(&self) -> Option<&str> {
        self.in_network_url.as_deref()
    }

    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }
}

/// Where a pod finds its ServiceAccount's token, CA and namespace.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The metrics port Crossplane's provider pods expose.
const METRICS_PORT: u16 = 8080;

/// The provider's image run as Crossplane runs a provider pod: on the
/// cluster's network, with a ServiceAccount's token, CA and namespace
/// mounted where in-cluster clients look, `KUBERNETES_SERVICE_HOST` and
/// `_PORT`, `POD_NAMESPACE` and `POD_NAME` set, and no kubeconfig. Its
/// metrics port (8080) is published on the host. Removed on drop.
pub struct ProviderPod {
    container: ContainerAsync<GenericImage>,
    metrics_url: String,
}

impl ProviderPod {
    /// Starts it as pod `namespace/name`, authenticating with `token`,
    /// with extra provider flags `args`.
    pub async fn start(
        cluster: &InNetwork,
        namespace: &str,
        name: &str,
        token: &str,
        args: &[&str],
    ) -> Result<Self, ClusterError> {
        ensure_images(&[PROVIDER_IMAGE])?;
        // Readable by the image's non-root user, as the kubelet's projected
        // volume makes them.
        let mounted = |file: &str| {
            CopyTargetOptions::new(format!("{SERVICE_ACCOUNT_DIR}/{file}")).with_mode(0o644)
        };
        let container = GenericImage::new(PROVIDER_IMAGE.0, PROVIDER_IMAGE.1)
            .with_exposed_port(METRICS_PORT.tcp())
            .with_cmd(args.iter().map(|a| (*a).to_owned()))
            .with_copy_to(mounted("token"), token.as_bytes().to_vec())
            .with_copy_to(mounted("ca.crt"), cluster.ca_pem.as_bytes().to_vec())
            .with_copy_to(mounted("namespace"), namespace.as_bytes().to_vec())
            .with_env_var("KUBERNETES_SERVICE_HOST", cluster.apiserver_host.clone())
            .with_env_var(
                "KUBERNETES_SERVICE_PORT",
                cluster.apiserver_port.to_string(),
            )
            .with_env_var("POD_NAMESPACE", namespace)
            .with_env_var("POD_NAME", name)
            .with_network(cluster.network.clone())
            .with_container_name(format!("{}-{name}", cluster.network))
            .start()
            .await
            .map_err(failed("starting the provider's image"))?;
        let port = container
            .get_host_port_ipv4(METRICS_PORT.tcp())
            .await
            .map_err(failed("reading the provider's metrics port"))?;
        Ok(Self {
            container,
            metrics_url: format!("http://127.0.0.1:{port}/metrics"),
        })
    }

    /// Its `/metrics`, through the published port 8080.
    pub fn metrics_url(&self) -> &str {
        &self.metrics_url
    }

    /// Its container's id, for the Docker CLI (`docker network connect`).
    pub fn container_id(&self) -> &str {
        self.container.id()
    }

    /// What it logged so far, for a failure's message.
    pub async fn logs(&self) -> String {
        let out = self.container.stdout_to_vec().await.unwrap_or_default();
        let err = self.container.stderr_to_vec().await.unwrap_or_default();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&err)
        )
    }
}

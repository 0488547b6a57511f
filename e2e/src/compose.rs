//! The one-shot set-up steps of `docker-compose.yml`, run by the
//! `compose-setup` binary of the tools image:
//!
//! - [`prepare`] (service `setup`, before the API server starts): the
//!   control plane's PKI and static tokens in the shared state volume, an
//!   admin kubeconfig for the other services and one for `kubectl` on the
//!   host. Kept across `up`s, since etcd's data in its volume outlives them.
//! - [`grant`] (service `grant`, once the API server answers): the
//!   provider's ServiceAccount, bound to the package's ClusterRole
//!   (`package/rbac/clusterrole.yaml`) and nothing else, and a kubeconfig
//!   with a token for it, which is all the provider container is given.
//!
//! The same PKI code as the local control plane ([`crate::pki`]), so both
//! ways of running the system trust certificates made the same way.

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::conversion::WebhookTarget;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::error::ClusterError;
use crate::{crds, kubeconfig, pki};

/// The user the admin token authenticates as (group `system:masters`).
pub const ADMIN_USER: &str = "compose-admin";
/// The provider's ServiceAccount and the ClusterRoleBinding of it.
pub const PROVIDER_ACCOUNT: &str = "provider-fakecloud";
/// Namespace of the ServiceAccount and of the demo's Secrets.
pub const NAMESPACE: &str = "crossplane-system";
/// Field manager of the set-up's writes.
const FIELD_MANAGER: &str = "compose-setup";
/// Lifetime of the provider's token. Every `up` runs `grant` again and
/// replaces it, so it only has to outlive one session of the system.
const TOKEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// Files in the state volume.
pub mod files {
    /// The PKI folder: `ca.crt`, `apiserver.crt`/`.key`, `service-account.key`/`.pub`.
    pub const PKI: &str = "pki";
    /// kube-apiserver's `--token-auth-file`.
    pub const TOKENS: &str = "tokens.csv";
    /// Admin kubeconfig for the services (API server by service name).
    pub const ADMIN_KUBECONFIG: &str = "admin.kubeconfig";
    /// The provider's kubeconfig, written by `grant`.
    pub const PROVIDER_KUBECONFIG: &str = "provider.kubeconfig";
    /// Name of the host's kubeconfig in the host folder.
    pub const HOST_KUBECONFIG: &str = "kubeconfig";
    /// The provider's conversion-webhook certificate (`tls.crt`,
    /// `tls.key`): the provider's `WEBHOOK_TLS_CERT_DIR`, as Crossplane
    /// mounts a provider's TLS Secret.
    pub const WEBHOOK: &str = "webhook";
}

/// The provider's name on the compose network, which its webhook
/// certificate names.
pub const PROVIDER_HOST: &str = "provider";

/// Where the API server sends the CRDs' conversions in the compose
/// system: the provider's webhook, verified with the certificate
/// [`prepare`] made for it. The crossplane-standin service writes it into
/// the CRDs it makes, as Crossplane's package manager does with a
/// provider's Service and certificate.
pub fn webhook_target(state: &Path) -> Result<WebhookTarget, ClusterError> {
    let path = state.join(files::WEBHOOK).join("tls.crt");
    let pem = std::fs::read_to_string(&path)
        .map_err(|e| ClusterError::io(format!("reading {}", path.display()), e))?;
    Ok(WebhookTarget::new(
        PROVIDER_HOST,
        apis::generate::WEBHOOK_SERVICE.2 as u16,
        pem,
    ))
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("{what}: {error}")]
    Kube { what: String, error: kube::Error },
    #[error("the API server did not become ready within {waited:?}; last answer: {last}")]
    NotReady { waited: Duration, last: String },
    #[error("{0}")]
    Invalid(String),
}

impl SetupError {
    fn io(what: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            error,
        }
    }

    fn kube(what: impl Into<String>, error: kube::Error) -> Self {
        Self::Kube {
            what: what.into(),
            error,
        }
    }
}

/// What [`prepare`] needs to know.
#[derive(Debug, Clone)]
pub struct Prepare {
    /// The state volume.
    pub state: PathBuf,
    /// The API server's name and port on the compose network.
    pub apiserver_host: String,
    pub apiserver_port: u16,
    /// The host folder for `kubectl`'s kubeconfig and the port the API
    /// server is published on there.
    pub host_dir: Option<PathBuf>,
    pub host_port: u16,
    /// Owner (uid, gid) of the state files: the non-root user of the
    /// provider and tools images, which read them.
    pub state_owner: (u32, u32),
}

/// What [`prepare`] did, for its log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// False when the PKI and tokens of an earlier `up` were kept.
    pub generated: bool,
    pub host_kubeconfig: Option<PathBuf>,
}

/// Writes (or keeps) the PKI and tokens and writes both kubeconfigs.
pub fn prepare(options: &Prepare) -> Result<Prepared, SetupError> {
    let pki_dir = options.state.join(files::PKI);
    let tokens = options.state.join(files::TOKENS);
    let ca_file = pki_dir.join("ca.crt");
    let generated = !(ca_file.is_file() && tokens.is_file());
    if generated {
        std::fs::create_dir_all(&pki_dir)
            .map_err(|e| SetupError::io(format!("creating {}", pki_dir.display()), e))?;
        pki::write_pki(&pki_dir, &[options.apiserver_host.as_str()])?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        pki::write_private(
            &tokens,
            &format!("{token},{ADMIN_USER},{ADMIN_USER},system:masters\n"),
        )?;
    }
    let webhook_dir = options.state.join(files::WEBHOOK);
    if !webhook_dir.join("tls.crt").is_file() {
        std::fs::create_dir_all(&webhook_dir)
            .map_err(|e| SetupError::io(format!("creating {}", webhook_dir.display()), e))?;
        crate::conversion::write_serving_cert(&webhook_dir, &[PROVIDER_HOST])?;
    }
    let ca_pem = read(&ca_file)?;
    let token = admin_token(&read(&tokens)?)?;

    let admin = options.state.join(files::ADMIN_KUBECONFIG);
    let server = format!(
        "https://{}:{}",
        options.apiserver_host, options.apiserver_port
    );
    kubeconfig::write_token_kubeconfig(&admin, &server, &ca_pem, &token)?;
    own_tree(&options.state, options.state_owner)?;

    let host_kubeconfig = match &options.host_dir {
        Some(dir) => {
            let path = dir.join(files::HOST_KUBECONFIG);
            let server = format!("https://127.0.0.1:{}", options.host_port);
            kubeconfig::write_token_kubeconfig(&path, &server, &ca_pem, &token)?;
            // The folder is the user's (or Docker made it, as root): the
            // file goes to whoever owns the folder, so kubectl can read it.
            let meta = std::fs::metadata(dir)
                .map_err(|e| SetupError::io(format!("reading {}", dir.display()), e))?;
            use std::os::unix::fs::MetadataExt as _;
            chown(&path, Some(meta.uid()), Some(meta.gid()))
                .map_err(|e| SetupError::io(format!("handing {} over", path.display()), e))?;
            Some(path)
        }
        None => None,
    };
    Ok(Prepared {
        generated,
        host_kubeconfig,
    })
}

/// The admin token of a token file [`prepare`] wrote.
fn admin_token(tokens: &str) -> Result<String, SetupError> {
    tokens
        .lines()
        .find_map(|line| {
            let mut fields = line.split(',');
            let token = fields.next()?;
            (fields.next() == Some(ADMIN_USER)).then(|| token.to_owned())
        })
        .ok_or_else(|| SetupError::Invalid(format!("the token file names no {ADMIN_USER}")))
}

fn read(path: &Path) -> Result<String, SetupError> {
    std::fs::read_to_string(path)
        .map_err(|e| SetupError::io(format!("reading {}", path.display()), e))
}

/// Hands `dir` and everything in it to `owner`.
fn own_tree(dir: &Path, (uid, gid): (u32, u32)) -> Result<(), SetupError> {
    chown(dir, Some(uid), Some(gid))
        .map_err(|e| SetupError::io(format!("handing {} over", dir.display()), e))?;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| SetupError::io(format!("listing {}", dir.display()), e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| SetupError::io(format!("listing {}", dir.display()), e))?
            .path();
        if path.is_dir() {
            own_tree(&path, (uid, gid))?;
        } else {
            chown(&path, Some(uid), Some(gid))
                .map_err(|e| SetupError::io(format!("handing {} over", path.display()), e))?;
        }
    }
    Ok(())
}

/// What [`grant`] needs to know.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The state volume (admin kubeconfig in, provider kubeconfig out).
    pub state: PathBuf,
    /// The package's ClusterRole manifest.
    pub cluster_role: PathBuf,
    /// How long the API server may take to answer `/readyz` with `ok`.
    pub ready_timeout: Duration,
}

/// What [`grant`] did, for its log lines.
#[derive(Debug, Clone)]
pub struct Granted {
    pub ready_after: Duration,
    pub cluster_role: String,
    pub kubeconfig: PathBuf,
}

/// Waits for the API server, binds the provider's ServiceAccount to the
/// package's ClusterRole and writes a kubeconfig with a token for it.
pub async fn grant(options: &Grant) -> Result<Granted, SetupError> {
    let admin_path = options.state.join(files::ADMIN_KUBECONFIG);
    let admin = Kubeconfig::read_from(&admin_path).map_err(|e| ClusterError::Kubeconfig {
        path: admin_path.clone(),
        reason: e.to_string(),
    })?;
    let (server, ca_pem) = cluster_of(&admin)?;
    let client = kubeconfig::client_from(admin, &admin_path).await?;
    let ready_after = wait_ready(&client, options.ready_timeout).await?;

    let role = cluster_role(&options.cluster_role)?;
    let role_name = role.name_any();
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    Api::<Namespace>::all(client.clone())
        .patch(
            NAMESPACE,
            &apply,
            &Patch::Apply(json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": NAMESPACE } })),
        )
        .await
        .map_err(|e| SetupError::kube(format!("applying namespace {NAMESPACE}"), e))?;
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), NAMESPACE);
    accounts
        .patch(
            PROVIDER_ACCOUNT,
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": { "name": PROVIDER_ACCOUNT, "namespace": NAMESPACE },
            })),
        )
        .await
        .map_err(|e| SetupError::kube("applying the provider's ServiceAccount", e))?;
    let mut role_manifest =
        serde_json::to_value(&role).map_err(|e| SetupError::Invalid(e.to_string()))?;
    role_manifest["apiVersion"] = "rbac.authorization.k8s.io/v1".into();
    role_manifest["kind"] = "ClusterRole".into();
    Api::<ClusterRole>::all(client.clone())
        .patch(&role_name, &apply, &Patch::Apply(role_manifest))
        .await
        .map_err(|e| SetupError::kube(format!("applying ClusterRole {role_name}"), e))?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(
            PROVIDER_ACCOUNT,
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": PROVIDER_ACCOUNT },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name },
                "subjects": [{ "kind": "ServiceAccount", "name": PROVIDER_ACCOUNT, "namespace": NAMESPACE }],
            })),
        )
        .await
        .map_err(|e| SetupError::kube("binding the provider's ServiceAccount", e))?;

    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(TOKEN_LIFETIME.as_secs() as i64),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let token = accounts
        .create_token_request(PROVIDER_ACCOUNT, &PostParams::default(), &request)
        .await
        .map_err(|e| SetupError::kube("requesting the provider's token", e))?
        .status
        .and_then(|s| s.token)
        .ok_or_else(|| SetupError::Invalid("the TokenRequest API granted no token".into()))?;
    let kubeconfig = options.state.join(files::PROVIDER_KUBECONFIG);
    kubeconfig::write_token_kubeconfig(&kubeconfig, &server, &ca_pem, &token)?;
    Ok(Granted {
        ready_after,
        cluster_role: role_name,
        kubeconfig,
    })
}

/// The server URL and CA (PEM) of a kubeconfig's first cluster.
fn cluster_of(config: &Kubeconfig) -> Result<(String, String), SetupError> {
    let cluster = config
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| SetupError::Invalid("the admin kubeconfig names no cluster".into()))?;
    let server = cluster
        .server
        .clone()
        .ok_or_else(|| SetupError::Invalid("the admin kubeconfig names no server".into()))?;
    let ca = cluster
        .certificate_authority_data
        .as_deref()
        .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .and_then(|pem| String::from_utf8(pem).ok())
        .ok_or_else(|| SetupError::Invalid("the admin kubeconfig holds no CA".into()))?;
    Ok((server, ca))
}

/// The ClusterRole of `path` (one manifest of that kind).
fn cluster_role(path: &Path) -> Result<ClusterRole, SetupError> {
    let manifests = crds::load_manifests(path)?;
    let manifest = manifests
        .into_iter()
        .find(|m| m["kind"] == "ClusterRole")
        .ok_or_else(|| SetupError::Invalid(format!("{} holds no ClusterRole", path.display())))?;
    serde_json::from_value(manifest)
        .map_err(|e| SetupError::Invalid(format!("{}: {e}", path.display())))
}

/// Polls `/readyz` until it answers `ok`; returns how long that took.
async fn wait_ready(client: &Client, timeout: Duration) -> Result<Duration, SetupError> {
    let began = Instant::now();
    loop {
        let request = http::Request::get("/readyz")
            .body(Vec::new())
            .expect("a static request is valid");
        let last = match client.request_text(request).await {
            Ok(body) if body.trim() == "ok" => return Ok(began.elapsed()),
            Ok(body) => body,
            Err(e) => e.to_string(),
        };
        if began.elapsed() >= timeout {
            return Err(SetupError::NotReady {
                waited: timeout,
                last,
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_token_is_read_back_from_the_token_file() {
        let file = format!("abc,{ADMIN_USER},{ADMIN_USER},system:masters\n");
        assert_eq!(admin_token(&file).unwrap(), "abc");
        assert!(admin_token("abc,someone,someone\n").is_err());
    }

    #[test]
    fn prepare_keeps_the_pki_of_an_earlier_run_and_rewrites_the_kubeconfigs() {
        let state = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        let me = {
            use std::os::unix::fs::MetadataExt as _;
            let meta = std::fs::metadata(state.path()).unwrap();
            (meta.uid(), meta.gid())
        };
        let mut options = Prepare {
            state: state.path().to_path_buf(),
            apiserver_host: "kube-apiserver".into(),
            apiserver_port: 6443,
            host_dir: Some(host.path().to_path_buf()),
            host_port: 16443,
            state_owner: me,
        };
        let first = prepare(&options).unwrap();
        assert!(first.generated);
        let ca = std::fs::read_to_string(state.path().join("pki/ca.crt")).unwrap();

        options.host_port = 26443;
        let second = prepare(&options).unwrap();
        assert!(!second.generated, "the PKI of the first run is kept");
        assert_eq!(
            std::fs::read_to_string(state.path().join("pki/ca.crt")).unwrap(),
            ca
        );
        let host_config = std::fs::read_to_string(second.host_kubeconfig.unwrap()).unwrap();
        assert!(
            host_config.contains("https://127.0.0.1:26443"),
            "{host_config}"
        );
        let admin = std::fs::read_to_string(state.path().join(files::ADMIN_KUBECONFIG)).unwrap();
        assert!(admin.contains("https://kube-apiserver:6443"), "{admin}");
    }
}

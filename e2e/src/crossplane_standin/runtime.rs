//! The package manager's other half, for the node backend: what Crossplane
//! v2 creates to run a Provider's active revision, made from the provider's
//! Crossplane package (its `.xpkg`) as Crossplane makes it. Test
//! equipment, never part of the provider; on kind, Crossplane does this.
//!
//! The reference is Crossplane's `internal/controller/pkg/runtime/`
//! (v2.0.0 to v2.3.4) and its RBAC manager, cited per part below. `<pkg>` is
//! the Provider's name (the package's `metadata.name`), `<rev>` its
//! revision's (`<pkg>-<12 hex digits of the image id>`, as Crossplane
//! names a revision after its package digest).
//!
//! - The image: the package image itself, `docker load`ed onto the node's
//!   engine (a provider package embeds its runtime image; Crossplane runs
//!   the resolved package source, `DeploymentRuntimeWithOptionalImage`).
//! - ServiceAccount `<rev>` (`DeploymentRuntimeBuilder.ServiceAccount`),
//!   labels and annotations from the runtime config's
//!   `serviceAccountTemplate`.
//! - Deployment `<rev>` (`DeploymentRuntimeBuilder.Deployment` and
//!   `providerDeploymentOverrides`): the runtime config's
//!   `deploymentTemplate` is the base object and Crossplane's settings go on
//!   top; selector and pod labels `pkg.crossplane.io/revision` and
//!   `pkg.crossplane.io/provider`; one replica unless the template says;
//!   the `package-runtime` container first, image pull policy
//!   `IfNotPresent`; env `TLS_CLIENT_CERTS_DIR`, `TLS_SERVER_CERTS_DIR`,
//!   `POD_NAMESPACE`, `PROVIDER_NAME`, `REVISION_NAME`, `REVISION_UID`,
//!   `WEBHOOK_TLS_CERT_DIR` appended after the template's; ports `metrics`
//!   8080 and `webhook` 9443 unless the template names them; pod and
//!   container security contexts (user and group 2000, non-root, no
//!   privilege escalation) unless the template has its own; the
//!   Prometheus scrape annotations; the two TLS Secrets mounted at
//!   `/tls/client` and `/tls/server`. No probes, args or resources: those
//!   come from a `DeploymentRuntimeConfig` only, as on Crossplane.
//! - Service `<pkg>`, port `webhook` 9443 to the pods' `webhook` port
//!   (`DeploymentRuntimeBuilder.Service`).
//! - TLS Secrets `<pkg>-tls-server` (for `<pkg>`, `<pkg>.<ns>`,
//!   `<pkg>.<ns>.svc`) and `<pkg>-tls-client` (for `<rev>`), each with
//!   `tls.crt`, `tls.key` and `ca.crt`, signed by a CA kept in
//!   `crossplane-root-ca` (`TLSCertificateGenerator.Run`).
//! - The conversion webhook of each CRD that converts by webhook pointed at
//!   that Service, path `/convert`, with the CA as its bundle (the
//!   establisher).
//! - ClusterRole and ClusterRoleBinding `crossplane:provider:<rev>:system`
//!   (the RBAC manager's `RenderClusterRoles`, with the `safe-start` rule),
//!   bound to the Deployment's ServiceAccount
//!   ([`crate::grants::crossplane_safe_start_role`] makes the rules).
//!
//! Not done, and why: no `Provider` or `ProviderRevision` objects exist here
//! (no Crossplane CRDs), so nothing carries an owner reference to one and
//! [`ProviderRuntime::uninstall`] deletes what was made; the `default`
//! runtime config is the one passed in, not one read from the cluster; the
//! safe-start rule of Crossplane's development branch (0 replicas until an
//! MRD is active) is not in any release yet and is not played.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use serde_json::{Value, json};

use super::{PACKAGE_MANAGER, StandInError};
use crate::conversion::WebhookTarget;

/// The runtime container's name, which a runtime config must use to
/// configure it (`ContainerName` in Crossplane).
pub const RUNTIME_CONTAINER: &str = "package-runtime";
/// The labels Crossplane selects a revision's pods by.
pub const REVISION_LABEL: &str = "pkg.crossplane.io/revision";
pub const PROVIDER_LABEL: &str = "pkg.crossplane.io/provider";
const METRICS_PORT: i32 = 8080;
const WEBHOOK_PORT: i32 = 9443;
/// The user and group Crossplane runs a provider as.
const RUNTIME_ID: i64 = 2000;
const ROOT_CA_SECRET: &str = "crossplane-root-ca";

/// A provider package read from its `.xpkg` and loaded into the engine.
#[derive(Debug, Clone)]
pub struct ProviderPackage {
    /// The Provider's name, `metadata.name` of the package's meta object.
    pub name: String,
    /// The image `docker load` named, which the pods run.
    pub image: String,
    /// The revision's name.
    pub revision: String,
}

impl ProviderPackage {
    /// Builds the project's package from the provider's image (as
    /// `scripts/xpkg` does, into `out_dir`) and [`Self::load`]s it.
    pub fn build(out_dir: &Path) -> Result<Self, StandInError> {
        let (repository, tag) = crate::containers::PROVIDER_IMAGE;
        let options = xpkg::BuildOptions {
            base: xpkg::BaseImage::Docker(format!("{repository}:{tag}")),
            package_dir: crate::crds::package_dir(),
            out_dir: out_dir.to_path_buf(),
            repository: xpkg::DEFAULT_REPOSITORY.to_owned(),
        };
        let built = xpkg::build(&options).map_err(|e| StandInError::Package {
            path: out_dir.to_path_buf(),
            reason: format!("building the package: {e}"),
        })?;
        Self::load(&built.xpkg)
    }

    /// Reads the package's meta object from `xpkg` (a docker archive, as
    /// Crossplane's xpkg reader finds it) and loads the image into the
    /// Docker engine the node's kubelet runs.
    pub fn load(xpkg: &Path) -> Result<Self, StandInError> {
        let fail = |reason: String| StandInError::Package {
            path: xpkg.to_path_buf(),
            reason,
        };
        let read = xpkg::read::read_docker_archive(xpkg).map_err(|e| fail(e.to_string()))?;
        let objects = xpkg::contents::parse_stream(&read.package_yaml, xpkg)
            .map_err(|e| fail(e.to_string()))?;
        let meta = objects
            .iter()
            .find(|o| {
                o["kind"] == "Provider"
                    && o["apiVersion"]
                        .as_str()
                        .is_some_and(|v| v.starts_with("meta.pkg.crossplane.io/"))
            })
            .ok_or_else(|| fail("package.yaml has no meta.pkg.crossplane.io Provider".into()))?;
        let name = xpkg::object::name_of(meta).to_owned();
        let loaded = crate::node::docker(&["load", "-q", "-i", &xpkg.display().to_string()])?;
        let image = loaded
            .lines()
            .find_map(|l| l.strip_prefix("Loaded image: "))
            .ok_or_else(|| fail(format!("`docker load` named no image: {loaded:?}")))?
            .trim()
            .to_owned();
        let id = crate::node::docker(&["image", "inspect", "--format", "{{.Id}}", &image])?;
        let digest = id.trim().trim_start_matches("sha256:");
        let revision = format!("{name}-{}", &digest[..digest.len().min(12)]);
        Ok(Self {
            name,
            image,
            revision,
        })
    }
}

/// Whether `pod`'s `Ready` condition is true (its readiness probe passes).
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// What [`ProviderRuntime::install`] made, to find and remove it.
#[derive(Debug, Clone)]
pub struct ProviderRuntime {
    pub namespace: String,
    pub package: ProviderPackage,
    /// The Deployment's (and by default the ServiceAccount's) name.
    pub deployment: String,
    pub service_account: String,
    /// The webhook's Service.
    pub service: String,
    /// CRDs whose conversion now goes to the Service.
    pub converting_crds: Vec<String>,
    /// The Service and the CA that signed its certificate: where CRDs
    /// installed later (the stand-in's, from MRDs) send conversions.
    pub webhook: WebhookTarget,
}

impl ProviderRuntime {
    /// Creates the revision's runtime in `namespace` (which must exist),
    /// shaped by `runtime_config`, a `DeploymentRuntimeConfig`'s spec
    /// (`deploymentTemplate`, `serviceAccountTemplate`, `serviceTemplate`),
    /// or `{}` for Crossplane's empty default one.
    pub async fn install(
        client: &Client,
        package: &ProviderPackage,
        namespace: &str,
        runtime_config: &Value,
    ) -> Result<Self, StandInError> {
        let pkg = package.name.as_str();
        let rev = package.revision.as_str();
        let params = PatchParams::apply(PACKAGE_MANAGER).force();

        let ca = certificate_authority(client, namespace).await?;
        let server_secret = format!("{pkg}-tls-server");
        let client_secret = format!("{pkg}-tls-client");
        let server_names = vec![
            pkg.to_owned(),
            format!("{pkg}.{namespace}"),
            format!("{pkg}.{namespace}.svc"),
        ];
        for (secret, names, usage) in [
            (
                &server_secret,
                server_names,
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            (
                &client_secret,
                vec![rev.to_owned()],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
        ] {
            let (cert, key) = ca.sign(names, usage)?;
            let object = tls_secret(secret, namespace, &cert, &key, &ca.cert_pem);
            Api::<Secret>::namespaced(client.clone(), namespace)
                .patch(secret, &params, &Patch::Apply(&object))
                .await
                .map_err(|e| StandInError::kube(format!("applying Secret {secret}"), e))?;
        }

        let deployment = deployment(package, namespace, runtime_config);
        let deployment_name = deployment["metadata"]["name"]
            .as_str()
            .unwrap_or(rev)
            .to_owned();
        let service_account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or(rev)
            .to_owned();
        // Crossplane creates the ServiceAccount only when the Deployment
        // runs as the one it names; another is managed by someone else.
        let account_name = runtime_config
            .pointer("/serviceAccountTemplate/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(rev);
        if account_name == service_account {
            let mut account = json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": { "name": account_name, "namespace": namespace },
            });
            copy_labels(
                runtime_config.pointer("/serviceAccountTemplate/metadata"),
                &mut account["metadata"],
            );
            Api::<ServiceAccount>::namespaced(client.clone(), namespace)
                .patch(account_name, &params, &Patch::Apply(&account))
                .await
                .map_err(|e| {
                    StandInError::kube(format!("applying ServiceAccount {account_name}"), e)
                })?;
        }

        let role_name = format!("crossplane:provider:{rev}:system");
        let mut role = serde_json::to_value(crate::grants::crossplane_safe_start_role()?)
            .expect("a ClusterRole serialises");
        role["apiVersion"] = "rbac.authorization.k8s.io/v1".into();
        role["kind"] = "ClusterRole".into();
        role["metadata"] =
            json!({ "name": role_name, "labels": { "rbac.crossplane.io/system": rev } });
        Api::<ClusterRole>::all(client.clone())
            .patch(&role_name, &params, &Patch::Apply(&role))
            .await
            .map_err(|e| StandInError::kube(format!("applying ClusterRole {role_name}"), e))?;
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": role_name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name },
            "subjects": [{ "kind": "ServiceAccount", "name": service_account, "namespace": namespace }],
        });
        Api::<ClusterRoleBinding>::all(client.clone())
            .patch(&role_name, &params, &Patch::Apply(&binding))
            .await
            .map_err(|e| {
                StandInError::kube(format!("applying ClusterRoleBinding {role_name}"), e)
            })?;

        let mut service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": { "name": pkg, "namespace": namespace },
            "spec": {
                "selector": { REVISION_LABEL: rev, PROVIDER_LABEL: pkg },
                "ports": [{ "name": "webhook", "protocol": "TCP", "port": WEBHOOK_PORT, "targetPort": "webhook" }],
            },
        });
        copy_labels(
            runtime_config.pointer("/serviceTemplate/metadata"),
            &mut service["metadata"],
        );
        let service_name = service["metadata"]["name"]
            .as_str()
            .unwrap_or(pkg)
            .to_owned();
        Api::<Service>::namespaced(client.clone(), namespace)
            .patch(&service_name, &params, &Patch::Apply(&service))
            .await
            .map_err(|e| StandInError::kube(format!("applying Service {service_name}"), e))?;

        Api::<Deployment>::namespaced(client.clone(), namespace)
            .patch(&deployment_name, &params, &Patch::Apply(&deployment))
            .await
            .map_err(|e| StandInError::kube(format!("applying Deployment {deployment_name}"), e))?;

        let webhook =
            WebhookTarget::service(namespace, &service_name, WEBHOOK_PORT, ca.cert_pem.clone());
        let converting_crds = webhook.point_installed_crds(client).await?;
        Ok(Self {
            namespace: namespace.to_owned(),
            package: package.clone(),
            deployment: deployment_name,
            service_account,
            service: service_name,
            converting_crds,
            webhook,
        })
    }

    /// Waits until the Deployment has `want` replicas ready (by their
    /// readiness probes, if the runtime config gave them one) and no
    /// other pod is left, terminating ones included: after a change of
    /// the runtime config, the old ReplicaSet's pods keep reconciling until
    /// they exit. Returns how long that took.
    pub async fn wait_ready(
        &self,
        client: &Client,
        want: i32,
        timeout: Duration,
    ) -> Result<Duration, StandInError> {
        let api = Api::<Deployment>::namespaced(client.clone(), &self.namespace);
        let began = Instant::now();
        loop {
            let deployment = api.get(&self.deployment).await.map_err(|e| {
                StandInError::kube(format!("reading Deployment {}", self.deployment), e)
            })?;
            let status = deployment.status.unwrap_or_default();
            let ready = status.ready_replicas.unwrap_or(0);
            let total = status.replicas.unwrap_or(0);
            let updated = status.updated_replicas.unwrap_or(0);
            let pods = self.pods(client).await?.len();
            let want_pods = usize::try_from(want).unwrap_or_default();
            if ready == want && total == want && updated == want && pods == want_pods {
                return Ok(began.elapsed());
            }
            let last = format!(
                "{ready} ready, {updated} updated, {total} in all, {pods} pods; want {want}"
            );
            if began.elapsed() >= timeout {
                return Err(StandInError::Timeout {
                    what: format!("Deployment {} ({last})", self.deployment),
                    waited: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The revision's pods, terminating ones included.
    pub async fn pods(&self, client: &Client) -> Result<Vec<Pod>, StandInError> {
        let selector = format!("{REVISION_LABEL}={}", self.package.revision);
        Ok(Api::<Pod>::namespaced(client.clone(), &self.namespace)
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| StandInError::kube("listing the provider's pods", e))?
            .items)
    }

    /// Deletes what [`Self::install`] made (Crossplane's owner references
    /// would have the garbage collector do it).
    pub async fn uninstall(&self, client: &Client) -> Result<(), StandInError> {
        let ns = self.namespace.as_str();
        let pkg = self.package.name.as_str();
        let role = format!("crossplane:provider:{}:system", self.package.revision);
        delete_if_present(
            Api::<Deployment>::namespaced(client.clone(), ns),
            &self.deployment,
        )
        .await?;
        delete_if_present(
            Api::<Service>::namespaced(client.clone(), ns),
            &self.service,
        )
        .await?;
        for secret in [format!("{pkg}-tls-server"), format!("{pkg}-tls-client")] {
            delete_if_present(Api::<Secret>::namespaced(client.clone(), ns), &secret).await?;
        }
        delete_if_present(
            Api::<ServiceAccount>::namespaced(client.clone(), ns),
            &self.service_account,
        )
        .await?;
        delete_if_present(Api::<ClusterRoleBinding>::all(client.clone()), &role).await?;
        delete_if_present(Api::<ClusterRole>::all(client.clone()), &role).await
    }
}

/// Deletes `name` through `api`; one already gone is no error.
async fn delete_if_present<K>(api: Api<K>, name: &str) -> Result<(), StandInError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(StandInError::kube(
            format!("deleting {} {name}", K::kind(&())),
            e,
        )),
    }
}

/// The Deployment Crossplane makes for `package`'s revision from the
/// runtime config's `deploymentTemplate` (the base object) and its own
/// settings on top (`providerDeploymentOverrides` and the builder's).
pub fn deployment(package: &ProviderPackage, namespace: &str, runtime_config: &Value) -> Value {
    let pkg = package.name.as_str();
    let rev = package.revision.as_str();
    let template = runtime_config
        .get("deploymentTemplate")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": rev, "namespace": namespace },
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    if let Some(meta) = template.get("metadata") {
        if let Some(name) = meta.get("name") {
            deployment["metadata"]["name"] = name.clone();
        }
        copy_labels(Some(meta), &mut deployment["metadata"]);
    }
    let selector = json!({ REVISION_LABEL: rev, PROVIDER_LABEL: pkg });
    let spec = &mut deployment["spec"];
    if spec.get("replicas").is_none_or(Value::is_null) {
        spec["replicas"] = 1.into();
    }
    spec["selector"] = json!({ "matchLabels": selector });
    let pod = &mut spec["template"];
    let labels = &mut pod["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    for (key, value) in selector.as_object().into_iter().flatten() {
        labels[key] = value.clone();
    }
    let annotations = &mut pod["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if annotations.get("prometheus.io/scrape").is_none() {
        annotations["prometheus.io/scrape"] = "true".into();
        annotations["prometheus.io/port"] = METRICS_PORT.to_string().into();
        annotations["prometheus.io/path"] = "/metrics".into();
    }
    let pod_spec = &mut pod["spec"];
    if pod_spec
        .get("serviceAccountName")
        .is_none_or(Value::is_null)
    {
        pod_spec["serviceAccountName"] = rev.into();
    }
    if pod_spec.get("securityContext").is_none_or(Value::is_null) {
        pod_spec["securityContext"] =
            json!({ "runAsNonRoot": true, "runAsUser": RUNTIME_ID, "runAsGroup": RUNTIME_ID });
    }
    // The runtime container first, the template's if it named one.
    let mut containers: Vec<Value> = pod_spec["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let index = containers
        .iter()
        .position(|c| c["name"] == RUNTIME_CONTAINER);
    let mut runtime = match index {
        Some(i) => containers.remove(i),
        None => json!({ "name": RUNTIME_CONTAINER }),
    };
    if runtime.get("image").is_none_or(Value::is_null) {
        runtime["image"] = package.image.clone().into();
    }
    if runtime.get("imagePullPolicy").is_none_or(Value::is_null) {
        runtime["imagePullPolicy"] = "IfNotPresent".into();
    }
    if runtime.get("securityContext").is_none_or(Value::is_null) {
        runtime["securityContext"] = json!({
            "runAsUser": RUNTIME_ID, "runAsGroup": RUNTIME_ID, "runAsNonRoot": true,
            "allowPrivilegeEscalation": false, "privileged": false,
        });
    }
    let mut ports: Vec<Value> = runtime["ports"].as_array().cloned().unwrap_or_default();
    for (name, port) in [("metrics", METRICS_PORT), ("webhook", WEBHOOK_PORT)] {
        if !ports.iter().any(|p| p["name"] == name) {
            ports.push(json!({ "name": name, "containerPort": port, "protocol": "TCP" }));
        }
    }
    runtime["ports"] = ports.into();
    let mut env: Vec<Value> = runtime["env"].as_array().cloned().unwrap_or_default();
    let field = |path: &str| json!({ "fieldRef": { "apiVersion": "v1", "fieldPath": path } });
    env.extend([
        json!({ "name": "TLS_CLIENT_CERTS_DIR", "value": "/tls/client" }),
        json!({ "name": "TLS_SERVER_CERTS_DIR", "value": "/tls/server" }),
        json!({ "name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace") }),
        json!({ "name": "PROVIDER_NAME", "valueFrom": field(&format!("metadata.labels['{PROVIDER_LABEL}']")) }),
        json!({ "name": "REVISION_NAME", "valueFrom": field(&format!("metadata.labels['{REVISION_LABEL}']")) }),
        // No ProviderRevision object exists here; its name stands in for
        // the UID.
        json!({ "name": "REVISION_UID", "value": rev }),
        json!({ "name": "WEBHOOK_TLS_CERT_DIR", "value": "$(TLS_SERVER_CERTS_DIR)" }),
    ]);
    runtime["env"] = env.into();
    let mut mounts: Vec<Value> = runtime["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    mounts.extend([
        json!({ "name": "tls-client-certs", "mountPath": "/tls/client", "readOnly": true }),
        json!({ "name": "tls-server-certs", "mountPath": "/tls/server", "readOnly": true }),
    ]);
    runtime["volumeMounts"] = mounts.into();
    containers.insert(0, runtime);
    pod_spec["containers"] = containers.into();
    let mut volumes: Vec<Value> = pod_spec["volumes"].as_array().cloned().unwrap_or_default();
    let items = json!([
        { "key": "tls.crt", "path": "tls.crt" },
        { "key": "tls.key", "path": "tls.key" },
        { "key": "ca.crt", "path": "ca.crt" },
    ]);
    volumes.extend([
        json!({ "name": "tls-client-certs", "secret": { "secretName": format!("{pkg}-tls-client"), "items": items } }),
        json!({ "name": "tls-server-certs", "secret": { "secretName": format!("{pkg}-tls-server"), "items": items } }),
    ]);
    pod_spec["volumes"] = volumes.into();
    deployment
}

/// Copies `labels` and `annotations` of a template's metadata.
fn copy_labels(from: Option<&Value>, to: &mut Value) {
    for key in ["labels", "annotations"] {
        if let Some(map) = from.and_then(|m| m.get(key)).filter(|m| m.is_object()) {
            to[key] = map.clone();
        }
    }
}

/// The CA that signs the provider's TLS Secrets, kept in
/// `crossplane-root-ca` as Crossplane keeps it.
struct Authority {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    fn sign(
        &self,
        names: Vec<String>,
        usage: ExtendedKeyUsagePurpose,
    ) -> Result<(String, String), StandInError> {
        let fail = |e: rcgen::Error| StandInError::Package {
            path: PathBuf::from("<tls>"),
            reason: format!("signing a certificate: {e}"),
        };
        let key = KeyPair::generate().map_err(fail)?;
        let mut params = CertificateParams::new(names).map_err(fail)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "Crossplane");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Crossplane");
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.issuer).map_err(fail)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

async fn certificate_authority(
    client: &Client,
    namespace: &str,
) -> Result<Authority, StandInError> {
    let fail = |e: rcgen::Error| StandInError::Package {
        path: PathBuf::from(ROOT_CA_SECRET),
        reason: format!("making the CA: {e}"),
    };
    let key = KeyPair::generate().map_err(fail)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "Crossplane Root CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).map_err(fail)?;
    let cert_pem = cert.pem();
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": ROOT_CA_SECRET, "namespace": namespace },
        "stringData": { "tls.crt": cert_pem, "tls.key": key.serialize_pem() },
    });
    Api::<Secret>::namespaced(client.clone(), namespace)
        .patch(
            ROOT_CA_SECRET,
            &PatchParams::apply(PACKAGE_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|e| StandInError::kube(format!("applying Secret {ROOT_CA_SECRET}"), e))?;
    Ok(Authority {
        cert_pem,
        issuer: Issuer::new(params, key),
    })
}

fn tls_secret(name: &str, namespace: &str, cert: &str, key: &str, ca: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": name, "namespace": namespace },
        "stringData": { "tls.crt": cert, "tls.key": key, "ca.crt": ca },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package() -> ProviderPackage {
        ProviderPackage {
            name: "provider-fakecloud".into(),
            image: "fakecloud-provider/provider-fakecloud-xpkg:0.1.0".into(),
            revision: "provider-fakecloud-0123456789ab".into(),
        }
    }

    #[test]
    fn the_default_runtime_config_gives_crossplanes_shape() {
        let d = deployment(&package(), "crossplane-system", &json!({}));
        assert_eq!(d["metadata"]["name"], "provider-fakecloud-0123456789ab");
        assert_eq!(d["spec"]["replicas"], 1);
        let pod = &d["spec"]["template"];
        assert_eq!(
            pod["metadata"]["labels"],
            json!({ REVISION_LABEL: "provider-fakecloud-0123456789ab", PROVIDER_LABEL: "provider-fakecloud" })
        );
        assert_eq!(
            d["spec"]["selector"]["matchLabels"],
            pod["metadata"]["labels"]
        );
        assert_eq!(pod["metadata"]["annotations"]["prometheus.io/port"], "8080");
        assert_eq!(
            pod["spec"]["serviceAccountName"],
            "provider-fakecloud-0123456789ab"
        );
        assert_eq!(pod["spec"]["securityContext"]["runAsUser"], 2000);
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["name"], RUNTIME_CONTAINER);
        assert_eq!(
            c["image"],
            "fakecloud-provider/provider-fakecloud-xpkg:0.1.0"
        );
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
        let ports: Vec<(&str, i64)> = c["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap(),
                    p["containerPort"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(ports, [("metrics", 8080), ("webhook", 9443)]);
        let env: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            env,
            [
                "TLS_CLIENT_CERTS_DIR",
                "TLS_SERVER_CERTS_DIR",
                "POD_NAMESPACE",
                "PROVIDER_NAME",
                "REVISION_NAME",
                "REVISION_UID",
                "WEBHOOK_TLS_CERT_DIR"
            ]
        );
        assert!(c.get("args").is_none() && c.get("readinessProbe").is_none());
        assert_eq!(
            pod["spec"]["volumes"][1]["secret"]["secretName"],
            "provider-fakecloud-tls-server"
        );
    }

    #[test]
    fn a_runtime_config_is_the_base_and_crossplane_keeps_its_own_fields() {
        let config = json!({ "deploymentTemplate": {
            "metadata": { "labels": { "team": "platform" } },
            "spec": {
                "replicas": 3,
                "selector": { "matchLabels": { "ignored": "yes" } },
                "template": { "spec": { "containers": [
                    { "name": "sidecar", "image": "busybox" },
                    { "name": RUNTIME_CONTAINER, "args": ["--poll-interval=2s"],
                      "env": [{ "name": "EXTRA", "value": "1" }],
                      "ports": [{ "name": "metrics", "containerPort": 9090 }] },
                ] } },
            },
        } });
        let d = deployment(&package(), "ns", &config);
        assert_eq!(d["metadata"]["labels"]["team"], "platform");
        assert_eq!(d["spec"]["replicas"], 3);
        assert!(
            d["spec"]["selector"]["matchLabels"]
                .get("ignored")
                .is_none()
        );
        let containers = d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(containers[0]["name"], RUNTIME_CONTAINER);
        assert_eq!(containers[1]["name"], "sidecar");
        assert_eq!(containers[0]["args"], json!(["--poll-interval=2s"]));
        assert_eq!(containers[0]["env"][0]["name"], "EXTRA");
        assert_eq!(containers[0]["ports"][0]["containerPort"], 9090);
        assert_eq!(containers[0]["ports"].as_array().unwrap().len(), 2);
    }
}

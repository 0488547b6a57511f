//! Test equipment standing in for Crossplane's webhook wiring: where
//! Crossplane's package manager gives a provider a serving certificate and
//! points the CRDs whose conversion is a webhook at the provider's Service
//! with that certificate as their CA bundle, the harness makes a
//! certificate ([`write_serving_cert`]) and writes a URL and the bundle
//! into the CRDs ([`WebhookTarget::wire`]). Never part of the provider.
//!
//! Each test's cluster runs the conversion webhook in the test process
//! ([`ConversionStandIn`]: the runtime's server with the provider's own
//! conversions, `apis::kinds::CONVERSIONS`), so any test may read and
//! write either version while provider processes come and go; a test of
//! the provider's own webhook points the CRDs at the provider instead
//! ([`crate::TestCluster::point_conversions_at`]). The API servers of the
//! container backends cannot reach the test process's loopback: tests
//! there use the stored version only, which needs no conversion.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
use runtime::conversion::{Conversions, Webhook, WebhookSettings};
use runtime::metrics::Metrics;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use crate::error::ClusterError;

/// Where the CRDs' conversion goes: a URL, or a Service as Crossplane's
/// package manager names the provider's, and the CA bundle that verifies
/// its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookTarget {
    at: Endpoint,
    /// The PEM the CRDs get as `caBundle`.
    pub ca_pem: String,
}

/// A webhook's address, in the two forms a CRD's `clientConfig` takes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Endpoint {
    /// `https://<host>:<port>/convert`.
    Url(String),
    /// A Service's port, the path [`apis::generate::WEBHOOK_PATH`].
    Service {
        namespace: String,
        name: String,
        port: i32,
    },
}

impl WebhookTarget {
    /// The target for a webhook at `host:port` whose certificate is `ca_pem`.
    pub fn new(host: &str, port: u16, ca_pem: String) -> Self {
        Self {
            at: Endpoint::Url(format!(
                "https://{host}:{port}{}",
                apis::generate::WEBHOOK_PATH
            )),
            ca_pem,
        }
    }

    /// The target for a webhook behind the Service `namespace/name` on
    /// `port`, whose certificate `ca_pem` signed: what the API server of a
    /// cluster with a node reaches through kube-proxy.
    pub fn service(namespace: &str, name: &str, port: i32, ca_pem: String) -> Self {
        Self {
            at: Endpoint::Service {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                port,
            },
            ca_pem,
        }
    }

    /// `clientConfig` as the CRD carries it.
    pub fn client_config(&self) -> Value {
        let bundle = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        match &self.at {
            Endpoint::Url(url) => json!({ "url": url, "caBundle": bundle }),
            Endpoint::Service {
                namespace,
                name,
                port,
            } => json!({
                "service": {
                    "namespace": namespace, "name": name, "port": port,
                    "path": apis::generate::WEBHOOK_PATH,
                },
                "caBundle": bundle,
            }),
        }
    }

    /// A JSON merge patch of a CRD that points its conversion here,
    /// removing the other form of address it may have had.
    pub fn merge_patch(&self) -> Value {
        let mut config = self.client_config();
        for form in ["url", "service"] {
            if config.get(form).is_none() {
                config[form] = Value::Null;
            }
        }
        json!({ "spec": { "conversion": { "webhook": { "clientConfig": config } } } })
    }

    /// Points every installed CRD that converts by webhook here; returns
    /// their names.
    pub async fn point_installed_crds(&self, client: &Client) -> Result<Vec<String>, ClusterError> {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let list = api
            .list(&Default::default())
            .await
            .map_err(|e| ClusterError::kube("listing CRDs", e))?;
        let mut pointed = Vec::new();
        for crd in list {
            let name = crd.name_any();
            let value = serde_json::to_value(&crd).map_err(|e| ClusterError::Manifest {
                path: PathBuf::from(format!("<CustomResourceDefinition {name}>")),
                reason: e.to_string(),
            })?;
            if !converts_by_webhook(&value) {
                continue;
            }
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&self.merge_patch()),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("pointing CRD {name}'s conversion"), e))?;
            pointed.push(name);
        }
        Ok(pointed)
    }

    /// Points `crd` (a CRD, or an MRD's spec as JSON) at this target when
    /// its conversion is a webhook, as Crossplane's package manager does
    /// with the provider's Service; returns whether it did.
    pub fn wire(&self, crd: &mut Value) -> bool {
        let Some(conversion) = crd.pointer_mut("/spec/conversion") else {
            return false;
        };
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return false;
        }
        conversion["webhook"]["clientConfig"] = self.client_config();
        true
    }
}

/// Whether `crd`'s conversion is a webhook.
pub fn converts_by_webhook(crd: &Value) -> bool {
    crd.pointer("/spec/conversion/strategy")
        .and_then(Value::as_str)
        == Some("Webhook")
}

/// Writes a self-signed serving certificate for `hosts` (IP addresses or
/// DNS names) into `dir` as a mounted TLS Secret has it (`tls.crt`,
/// `tls.key`); returns the certificate's PEM, its own CA bundle.
pub fn write_serving_cert(dir: &Path, hosts: &[&str]) -> Result<String, ClusterError> {
    let pki = |what| move |error| ClusterError::Pki { what, error };
    let key = KeyPair::generate().map_err(pki("the webhook key"))?;
    let mut params =
        CertificateParams::new(hosts.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>())
            .map_err(pki("the webhook certificate"))?;
    params
        .distinguished_name
        .push(DnType::CommonName, "provider-fakecloud conversion webhook");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .self_signed(&key)
        .map_err(pki("the webhook certificate"))?;
    let pem = cert.pem();
    crate::pki::write_private(&dir.join("tls.crt"), &pem)?;
    crate::pki::write_private(&dir.join("tls.key"), &key.serialize_pem())?;
    Ok(pem)
}

/// The conversion webhook of one test's cluster, served from the test
/// process on loopback until dropped.
pub struct ConversionStandIn {
    target: WebhookTarget,
    stop: CancellationToken,
    _dir: TempDir,
}

impl ConversionStandIn {
    /// Makes a certificate for `127.0.0.1` and serves the provider's
    /// conversions on a free loopback port.
    pub async fn start() -> Result<Self, ClusterError> {
        let dir = tempfile::Builder::new()
            .prefix("conversion-webhook")
            .tempdir()
            .map_err(|e| ClusterError::io("making the webhook's folder", e))?;
        let ca_pem = write_serving_cert(dir.path(), &["127.0.0.1"])?;
        let settings = WebhookSettings {
            addr: SocketAddr::new(IpAddr::from([127, 0, 0, 1]), 0),
            cert_dir: dir.path().to_owned(),
        };
        let conversions = Conversions::new(apis::kinds::CONVERSIONS, &Metrics::new());
        let webhook = Webhook::bind(conversions, &settings)
            .await
            .map_err(|e| ClusterError::Webhook(e.to_string()))?;
        let port = webhook
            .local_addr()
            .map_err(|e| ClusterError::io("reading the webhook's port", e))?
            .port();
        let stop = CancellationToken::new();
        tokio::spawn(webhook.run(stop.clone().cancelled_owned()));
        Ok(Self {
            target: WebhookTarget::new("127.0.0.1", port, ca_pem),
            stop,
            _dir: dir,
        })
    }

    /// Where it serves.
    pub fn target(&self) -> &WebhookTarget {
        &self.target
    }
}

impl Drop for ConversionStandIn {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

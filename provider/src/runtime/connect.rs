//! Connecting a managed resource to fakecloud: its ProviderConfig gives the
//! endpoint and names the credentials Secret (both read from watch caches,
//! not with a GET per reconcile); a usage records that the resource depends
//! on that ProviderConfig, so the ProviderConfig cannot be deleted from
//! under it.
//!
//! A legacy cluster-scoped resource uses a legacy `ProviderConfig` and
//! records a cluster-scoped legacy `ProviderConfigUsage`. A namespaced one
//! uses a `ProviderConfig` in its own namespace or a
//! `ClusterProviderConfig`, and records a namespaced `ProviderConfigUsage`
//! in its own namespace, labelled with the config's kind and name.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use apis::common::{
    ClusterScoped, CommonSpec, LocateSecretKey, Namespaced, ProviderConfigKey, ProviderConfigKind,
    Scope,
};
use apis::kinds::provider_config::{self, CredentialsSource, ProviderCredentials, m};
use apis::well_known::{
    PROVIDER_CONFIG_KIND_LABEL, PROVIDER_CONFIG_LABEL, PROVIDER_CONFIG_NAME_LABEL,
};
use kube::ResourceExt;
use kube::api::ApiResource;
use serde::Deserialize;
use serde_json::{Value, json};

use super::cluster::{Cluster, ObjectKey, typed};
use super::error::ConnectError;
use super::kind::ManagedKind;
use super::session::read_secret_key;
use crate::metrics::Metrics;

/// The API resource of a kind of ProviderConfig.
pub fn provider_config_resource(kind: ProviderConfigKind) -> ApiResource {
    match kind {
        ProviderConfigKind::Legacy => ApiResource::erase::<provider_config::ProviderConfig>(&()),
        ProviderConfigKind::Namespaced => ApiResource::erase::<m::ProviderConfig>(&()),
        ProviderConfigKind::Cluster => ApiResource::erase::<m::ClusterProviderConfig>(&()),
    }
}

/// Where a ProviderConfig is.
pub fn provider_config_object(key: &ProviderConfigKey) -> ObjectKey {
    ObjectKey {
        resource: provider_config_resource(key.kind),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
    }
}

/// A ProviderConfig as errors and logs name it: `ProviderConfig "team" in
/// namespace "app"`, `ClusterProviderConfig "default"`.
pub fn describe(key: &ProviderConfigKey) -> String {
    let kind = provider_config_resource(key.kind).kind;
    match &key.namespace {
        Some(namespace) => format!("{kind} {:?} in namespace {namespace:?}", key.name),
        None => format!("{kind} {:?}", key.name),
    }
}

/// The part of every kind of ProviderConfig's spec the connection reads;
/// `S` is the scope of its credentials Secret reference.
#[derive(Deserialize)]
#[serde(bound = "")]
struct Settings<S: Scope> {
    endpoint: String,
    credentials: ProviderCredentials<S>,
}

/// Builds fakecloud clients for managed resources, reusing one client (and
/// its connection pool) per endpoint and key.
pub struct Connector {
    cluster: Arc<dyn Cluster>,
    clients: Mutex<HashMap<(String, String), fakecloud::client::Client>>,
    /// Usages already known to exist, by MR uid and ProviderConfig, so a
    /// steady-state reconcile does not even read them.
    usages: Mutex<HashSet<(String, ProviderConfigKey)>>,
    /// Counts usage writes (`kube_writes{target="usage"}`).
    metrics: Metrics,
}

impl Connector {
    pub fn new(cluster: Arc<dyn Cluster>, metrics: Metrics) -> Self {
        Self {
            cluster,
            clients: Mutex::new(HashMap::new()),
            usages: Mutex::new(HashSet::new()),
            metrics,
        }
    }

    /// The fakecloud client for `mr`, after recording its usage of the
    /// ProviderConfig. `kind` is its label in metrics.
    pub async fn connect<K: ManagedKind>(
        &self,
        mr: &K,
        kind: &str,
    ) -> Result<fakecloud::client::Client, ConnectError> {
        let key = mr
            .resource_spec()
            .provider_config(mr.namespace().as_deref());
        // Described only for an error: connect runs on every reconcile.
        let name = || describe(&key);
        let read_error = |source| ConnectError::ProviderConfigRead {
            name: name(),
            source,
        };
        let config: Value = self
            .cluster
            .get_watched(&provider_config_object(&key))
            .await
            .map_err(read_error)?
            .ok_or_else(|| ConnectError::ProviderConfigMissing(name()))?;
        let spec = config.get("spec").cloned().unwrap_or(Value::Null);
        // A namespaced ProviderConfig's Secret is in its own namespace; the
        // cluster-scoped kinds name the Secret's namespace.
        let (endpoint, source, secret) = if key.kind == ProviderConfigKind::Namespaced {
            let settings: Settings<Namespaced> = typed(spec).map_err(read_error)?;
            let at = key.namespace.as_deref();
            let secret = settings.credentials.secret_ref.map(|s| s.locate(at));
            (settings.endpoint, settings.credentials.source, secret)
        } else {
            let settings: Settings<ClusterScoped> = typed(spec).map_err(read_error)?;
            let secret = settings.credentials.secret_ref.map(|s| s.locate(None));
            (settings.endpoint, settings.credentials.source, secret)
        };
        let api_key = match source {
            CredentialsSource::None => String::new(),
            CredentialsSource::Secret => {
                let selector = secret.ok_or_else(|| ConnectError::SecretRefMissing(name()))?;
                read_secret_key(&*self.cluster, &selector, true)
                    .await
                    .map_err(|source| ConnectError::Credentials {
                        provider_config: name(),
                        source,
                    })?
                    .trim()
                    .to_owned()
            }
        };
        match self.track_usage(mr, kind, &key).await {
            Ok(()) => {}
            // A resource being deleted needs the config only to finish: a
            // usage that cannot be written then (its namespace is being
            // deleted, and refuses new objects) must not keep the cloud
            // resource alive. The usage it had protected it until now.
            Err(error) if mr.meta().deletion_timestamp.is_some() => {
                tracing::debug!(%error, "usage not recorded for a resource being deleted");
            }
            Err(error) => return Err(error),
        }
        Ok(self.client(&endpoint, api_key))
    }

    fn client(&self, endpoint: &str, api_key: String) -> fakecloud::client::Client {
        let mut clients = self.clients.lock().expect("client cache lock poisoned");
        clients
            .entry((endpoint.to_owned(), api_key.clone()))
            .or_insert_with(|| fakecloud::client::Client::new(endpoint, api_key))
            .clone()
    }

    /// Makes sure a usage, controlled by `mr`, points from `mr` to the
    /// ProviderConfig `config`. Named after the MR's uid, so it is unique
    /// across kinds; in the MR's namespace, if it has one; collected by
    /// Kubernetes with the MR.
    async fn track_usage<K: ManagedKind>(
        &self,
        mr: &K,
        kind: &str,
        config: &ProviderConfigKey,
    ) -> Result<(), ConnectError> {
        let uid = mr.uid().unwrap_or_default();
        let key = (uid.clone(), config.clone());
        if self
            .usages
            .lock()
            .expect("usage cache lock poisoned")
            .contains(&key)
        {
            return Ok(());
        }
        let usage = usage_of(mr, config);
        let at = ObjectKey {
            resource: usage_resource(config.kind),
            namespace: mr.namespace(),
            name: uid,
        };
        let existing = self.cluster.get(&at).await.map_err(ConnectError::Usage)?;
        let up_to_date = existing
            .is_some_and(|u| u.pointer("/metadata/labels") == usage.pointer("/metadata/labels"));
        if !up_to_date {
            self.cluster
                .apply(&at, usage, false)
                .await
                .map_err(ConnectError::Usage)?;
            self.metrics.kube_write(kind, "usage");
        }
        self.usages
            .lock()
            .expect("usage cache lock poisoned")
            .insert(key);
        Ok(())
    }
}

/// The usage kind that records a use of a ProviderConfig of `kind`: the
/// legacy one for the legacy ProviderConfig, else the namespaced one.
pub fn usage_resource(kind: ProviderConfigKind) -> ApiResource {
    match kind {
        ProviderConfigKind::Legacy => {
            ApiResource::erase::<provider_config::ProviderConfigUsage>(&())
        }
        ProviderConfigKind::Namespaced | ProviderConfigKind::Cluster => {
            ApiResource::erase::<m::ProviderConfigUsage>(&())
        }
    }
}

/// The labels of a usage of the ProviderConfig `key`: its name, and for
/// the `fakecloud.m.crossplane.io` kinds its kind too.
fn usage_labels(key: &ProviderConfigKey) -> Vec<(&'static str, String)> {
    match key.kind {
        ProviderConfigKind::Legacy => vec![(PROVIDER_CONFIG_LABEL, key.name.clone())],
        kind => vec![
            (PROVIDER_CONFIG_NAME_LABEL, key.name.clone()),
            (
                PROVIDER_CONFIG_KIND_LABEL,
                provider_config_resource(kind).kind,
            ),
        ],
    }
}

/// The label selector of the usages of the ProviderConfig `key`.
pub fn usage_selector(key: &ProviderConfigKey) -> String {
    usage_labels(key)
        .into_iter()
        .map(|(label, value)| format!("{label}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The usage object recording that `mr` uses `config`.
fn usage_of<K: ManagedKind>(mr: &K, config: &ProviderConfigKey) -> Value {
    let resource = usage_resource(config.kind);
    let uid = mr.uid().unwrap_or_default();
    let labels: serde_json::Map<String, Value> = usage_labels(config)
        .into_iter()
        .map(|(label, value)| (label.to_owned(), Value::String(value)))
        .collect();
    let config_ref = match config.kind {
        ProviderConfigKind::Legacy => json!({ "name": config.name }),
        kind => json!({ "kind": provider_config_resource(kind).kind, "name": config.name }),
    };
    let mut metadata = json!({
        "name": uid,
        "labels": labels,
        "ownerReferences": [mr.controller_owner_ref(&())],
    });
    if let Some(namespace) = mr.namespace() {
        metadata["namespace"] = Value::String(namespace);
    }
    json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
        "providerConfigRef": config_ref,
        "resourceRef": {
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "name": mr.name_any(),
            "uid": uid,
        },
    })
}

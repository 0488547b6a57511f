//! Connecting a managed resource to its cloud: its ProviderConfig (read
//! from a watch cache, not with a GET per reconcile) names the credentials,
//! which the runtime reads as every Crossplane provider spells them
//! (`spec.credentials`: `source` and `secretRef`); the provider's
//! [`Connect`] turns the ProviderConfig's spec and those credentials into a
//! client. A usage records that the resource depends on that
//! ProviderConfig, so the ProviderConfig cannot be deleted from under it.
//!
//! A legacy cluster-scoped resource uses a legacy `ProviderConfig` and
//! records a cluster-scoped legacy `ProviderConfigUsage`. A namespaced one
//! uses a `ProviderConfig` in its own namespace or a
//! `ClusterProviderConfig`, and records a namespaced `ProviderConfigUsage`
//! in its own namespace, labelled with the config's kind and name. Which
//! Kubernetes kinds those are is the provider's: [`ProviderConfigTypes`].

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crossplane_types::well_known::{PROVIDER_CONFIG_KIND_LABEL, PROVIDER_CONFIG_NAME_LABEL};
use crossplane_types::{
    ClusterScoped, CommonSpec, CredentialsSource, LocateSecretKey, Managed, Namespaced,
    ProviderConfigKey, ProviderConfigKind, ProviderCredentials, Scope,
};
use kube::ResourceExt;
use kube::api::ApiResource;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cluster::{Cluster, ObjectKey, typed};
use crate::error::{ConnectError, UnusableConfig};
use crate::metrics::Metrics;
use crate::pacing::{Pacer, Pacers};
use crate::session::read_secret_key;

/// A provider's kinds of ProviderConfig and of usage: the runtime reads the
/// first and writes the second, and knows neither's group.
#[derive(Clone, Debug)]
pub struct ProviderConfigTypes {
    /// The legacy cluster-scoped `ProviderConfig`.
    pub legacy: ApiResource,
    /// The namespaced `ProviderConfig` of the `.m.` group.
    pub namespaced: ApiResource,
    /// The `ClusterProviderConfig` of the `.m.` group.
    pub cluster: ApiResource,
    /// The legacy cluster-scoped `ProviderConfigUsage`.
    pub legacy_usage: ApiResource,
    /// The namespaced `ProviderConfigUsage` of the `.m.` group.
    pub usage: ApiResource,
    /// The label on a legacy usage that names its ProviderConfig
    /// (`<provider group>/provider-config`); the namespaced usages carry
    /// crossplane-runtime v2's labels.
    pub legacy_usage_label: String,
}

impl ProviderConfigTypes {
    /// Crossplane's usual kinds at `version`: `ProviderConfig`,
    /// `ClusterProviderConfig` and `ProviderConfigUsage` in `group` (the
    /// namespaced kinds' group), and the legacy `ProviderConfig` and
    /// `ProviderConfigUsage` in `legacy_group`, whose usages name their
    /// ProviderConfig in the label `<legacy_group>/provider-config`.
    ///
    /// ```
    /// use crossplane_managed_runtime::ProviderConfigTypes;
    ///
    /// let types = ProviderConfigTypes::standard("aws.m.example.org", "aws.example.org", "v1beta1");
    /// assert_eq!(types.cluster.kind, "ClusterProviderConfig");
    /// assert_eq!(types.cluster.api_version, "aws.m.example.org/v1beta1");
    /// assert_eq!(types.legacy.api_version, "aws.example.org/v1beta1");
    /// assert_eq!(types.usage.plural, "providerconfigusages");
    /// assert_eq!(types.legacy_usage_label, "aws.example.org/provider-config");
    /// ```
    pub fn standard(group: &str, legacy_group: &str, version: &str) -> Self {
        let at = |group: &str, kind: &str| {
            ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(group, version, kind))
        };
        Self {
            legacy: at(legacy_group, "ProviderConfig"),
            namespaced: at(group, "ProviderConfig"),
            cluster: at(group, "ClusterProviderConfig"),
            legacy_usage: at(legacy_group, "ProviderConfigUsage"),
            usage: at(group, "ProviderConfigUsage"),
            legacy_usage_label: format!("{legacy_group}/provider-config"),
        }
    }

    /// The API resource of a kind of ProviderConfig.
    pub fn resource(&self, kind: ProviderConfigKind) -> &ApiResource {
        match kind {
            ProviderConfigKind::Legacy => &self.legacy,
            ProviderConfigKind::Namespaced => &self.namespaced,
            ProviderConfigKind::Cluster => &self.cluster,
        }
    }

    /// Where a ProviderConfig is.
    pub fn object(&self, key: &ProviderConfigKey) -> ObjectKey {
        ObjectKey {
            resource: self.resource(key.kind).clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        }
    }

    /// A ProviderConfig as errors and logs name it: `ProviderConfig "team"
    /// in namespace "app"`, `ClusterProviderConfig "default"`.
    pub fn describe(&self, key: &ProviderConfigKey) -> String {
        let kind = &self.resource(key.kind).kind;
        match &key.namespace {
            Some(namespace) => format!("{kind} {:?} in namespace {namespace:?}", key.name),
            None => format!("{kind} {:?}", key.name),
        }
    }

    /// The usage kind that records a use of a ProviderConfig of `kind`: the
    /// legacy one for the legacy ProviderConfig, else the namespaced one.
    pub fn usage_resource(&self, kind: ProviderConfigKind) -> &ApiResource {
        match kind {
            ProviderConfigKind::Legacy => &self.legacy_usage,
            ProviderConfigKind::Namespaced | ProviderConfigKind::Cluster => &self.usage,
        }
    }

    /// The labels of a usage of the ProviderConfig `key`: its name, and
    /// for the `.m.` kinds its kind too.
    fn usage_labels(&self, key: &ProviderConfigKey) -> Vec<(&str, String)> {
        match key.kind {
            ProviderConfigKind::Legacy => {
                vec![(self.legacy_usage_label.as_str(), key.name.clone())]
            }
            kind => vec![
                (PROVIDER_CONFIG_NAME_LABEL, key.name.clone()),
                (PROVIDER_CONFIG_KIND_LABEL, self.resource(kind).kind.clone()),
            ],
        }
    }

    /// The label selector of the usages of the ProviderConfig `key`.
    pub fn usage_selector(&self, key: &ProviderConfigKey) -> String {
        self.usage_labels(key)
            .into_iter()
            .map(|(label, value)| format!("{label}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// [`Self::usage_labels`] as the map a usage carries.
    fn usage_label_map(&self, key: &ProviderConfigKey) -> BTreeMap<String, String> {
        self.usage_labels(key)
            .into_iter()
            .map(|(label, value)| (label.to_owned(), value))
            .collect()
    }

    /// The usage object recording that `mr` uses `config`, labelled
    /// `labels` ([`Self::usage_label_map`]).
    fn usage_of<K: Managed>(
        &self,
        mr: &K,
        config: &ProviderConfigKey,
        labels: &BTreeMap<String, String>,
    ) -> Value {
        let resource = self.usage_resource(config.kind);
        let uid = mr.uid().unwrap_or_default();
        let config_ref = match config.kind {
            ProviderConfigKind::Legacy => json!({ "name": config.name }),
            kind => json!({ "kind": self.resource(kind).kind, "name": config.name }),
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
}

/// How a provider turns a ProviderConfig into a client of its cloud: the
/// one piece of connecting that is the provider's own.
pub trait Connect: Send + Sync + 'static {
    /// The cloud client the kinds' calls use ([`crate::Session::cloud`]).
    type Client: Send + Sync;

    /// A client for the ProviderConfig `config`, whose `spec` this is, with the
    /// credentials its `spec.credentials` named (empty for source `None`,
    /// trimmed of surrounding whitespace). Called on every reconcile:
    /// cache what is costly to build. A spec it cannot use is an
    /// [`UnusableConfig`] saying why, which the runtime reports on the
    /// resource's `Synced` condition, naming the ProviderConfig.
    fn connect(
        &self,
        config: &ProviderConfigKey,
        spec: &Value,
        credentials: String,
    ) -> Result<Self::Client, UnusableConfig>;

    /// The server that clients of the ProviderConfig `config` call, as
    /// the pacing of calls names it ([`crate::pacing`]): ProviderConfigs
    /// whose clients share a quota (the same endpoint and account) must
    /// name the same server, so that a throttled account is paced once
    /// and the others not at all. It is a metric label and is logged, so
    /// it must never hold a secret. By default the ProviderConfig itself.
    fn server(&self, config: &ProviderConfigKey, _spec: &Value, _credentials: &str) -> String {
        match &config.namespace {
            Some(namespace) => format!("{:?}/{namespace}/{}", config.kind, config.name),
            None => format!("{:?}/{}", config.kind, config.name),
        }
    }
}

/// A client of a ProviderConfig's cloud, and the pacer of the server it
/// calls.
pub struct Connected<T> {
    pub client: T,
    pub pacer: Arc<Pacer>,
}

/// The part of every kind of ProviderConfig's spec the runtime reads; `S`
/// is the scope of its credentials Secret reference.
#[derive(Deserialize)]
#[serde(bound = "")]
struct Credentials<S: Scope> {
    credentials: ProviderCredentials<S>,
}

/// Reads the ProviderConfig of managed resources and its credentials, and
/// records their usage of it; the provider's [`Connect`] makes the client.
pub struct Connector {
    cluster: Arc<dyn Cluster>,
    types: ProviderConfigTypes,
    /// Usages already known to exist, by MR uid and ProviderConfig, so a
    /// steady-state reconcile does not even read them.
    usages: Mutex<HashSet<(String, ProviderConfigKey)>>,
    /// Counts usage writes (`kube_writes{target="usage"}`).
    metrics: Metrics,
    pacers: Arc<Pacers>,
}

impl Connector {
    /// A connector whose clients' calls are paced by `pacers`.
    pub fn new(
        cluster: Arc<dyn Cluster>,
        types: ProviderConfigTypes,
        metrics: Metrics,
        pacers: Arc<Pacers>,
    ) -> Self {
        Self {
            cluster,
            types,
            usages: Mutex::new(HashSet::new()),
            metrics,
            pacers,
        }
    }

    /// The provider's kinds of ProviderConfig and usage.
    pub fn types(&self) -> &ProviderConfigTypes {
        &self.types
    }

    /// The pacers of the servers its clients call.
    pub(crate) fn pacers(&self) -> &Pacers {
        &self.pacers
    }

    /// The client `connect` makes for `mr`, after recording its usage of
    /// the ProviderConfig. `kind` is its label in metrics.
    pub async fn connect<K: Managed, C: Connect>(
        &self,
        mr: &K,
        kind: &str,
        connect: &C,
    ) -> Result<Connected<C::Client>, ConnectError> {
        let key = mr
            .resource_spec()
            .provider_config(mr.namespace().as_deref());
        let (spec, credentials) = self.configured(&key).await?;
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
        self.connected(&key, &spec, credentials, connect)
            .map_err(|reason| self.unusable(&key, reason))
    }

    /// `connect`'s client for the ProviderConfig `key`, and its server's
    /// pacer.
    fn connected<C: Connect>(
        &self,
        key: &ProviderConfigKey,
        spec: &Value,
        credentials: String,
        connect: &C,
    ) -> Result<Connected<C::Client>, UnusableConfig> {
        let pacer = self.pacers.cloud(&connect.server(key, spec, &credentials));
        let client = connect.connect(key, spec, credentials)?;
        Ok(Connected { client, pacer })
    }

    /// The client `connect` makes for the ProviderConfig `key`, recording
    /// no usage: for an object that reads the cloud on behalf of managed
    /// resources without being one (a query, [`crate::query`]), which the
    /// usages of the managed resources it creates already cover.
    pub async fn client<C: Connect>(
        &self,
        key: &ProviderConfigKey,
        connect: &C,
    ) -> Result<Connected<C::Client>, ConnectError> {
        let (spec, credentials) = self.configured(key).await?;
        self.connected(key, &spec, credentials, connect)
            .map_err(|reason| self.unusable(key, reason))
    }

    /// The spec of the ProviderConfig `key` and the credentials its
    /// `spec.credentials` names, both read from watch caches.
    async fn configured(&self, key: &ProviderConfigKey) -> Result<(Value, String), ConnectError> {
        // Described only for an error: connect runs on every reconcile.
        let name = || self.types.describe(key);
        let read_error = |error| ConnectError::ProviderConfigRead {
            name: name(),
            error,
        };
        let config: Value = self
            .cluster
            .get_watched(&self.types.object(key))
            .await
            .map_err(read_error)?
            .ok_or_else(|| ConnectError::ProviderConfigMissing(name()))?;
        let spec = config.get("spec").cloned().unwrap_or(Value::Null);
        // A namespaced ProviderConfig's Secret is in its own namespace; the
        // cluster-scoped kinds name the Secret's namespace.
        let (source, secret) = if key.kind == ProviderConfigKind::Namespaced {
            let read: Credentials<Namespaced> = typed(spec.clone()).map_err(read_error)?;
            let at = key.namespace.as_deref();
            let secret = read.credentials.secret_ref.map(|s| s.locate(at));
            (read.credentials.source, secret)
        } else {
            let read: Credentials<ClusterScoped> = typed(spec.clone()).map_err(read_error)?;
            let secret = read.credentials.secret_ref.map(|s| s.locate(None));
            (read.credentials.source, secret)
        };
        let credentials = match source {
            CredentialsSource::None => String::new(),
            CredentialsSource::Secret => {
                let selector = secret.ok_or_else(|| ConnectError::SecretRefMissing(name()))?;
                read_secret_key(&*self.cluster, &selector, true)
                    .await
                    .map_err(|error| ConnectError::Credentials {
                        provider_config: name(),
                        error,
                    })?
                    .trim()
                    .to_owned()
            }
        };
        Ok((spec, credentials))
    }

    /// Why the provider's [`Connect`] refused the ProviderConfig `key`.
    fn unusable(&self, key: &ProviderConfigKey, reason: UnusableConfig) -> ConnectError {
        ConnectError::Unusable {
            provider_config: self.types.describe(key),
            reason,
        }
    }

    /// Makes sure a usage, controlled by `mr`, points from `mr` to the
    /// ProviderConfig `config`. Named after the MR's uid, so it is unique
    /// across kinds; in the MR's namespace, if it has one; collected by
    /// Kubernetes with the MR.
    async fn track_usage<K: Managed>(
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
        let labels = self.types.usage_label_map(config);
        let usage = self.types.usage_of(mr, config, &labels);
        let at = ObjectKey {
            resource: self.types.usage_resource(config.kind).clone(),
            namespace: mr.namespace(),
            name: uid,
        };
        // From the watch cache, not a GET: every resource asks this once
        // per process, all at once after a start (a GET each was 1.0 API
        // reads per created VPC, now 0.01).
        let existing = self
            .cluster
            .labels_watched(&at)
            .await
            .map_err(ConnectError::Usage)?;
        // A usage the cache has not seen yet (another replica's, or one
        // just written) is applied again, which changes nothing.
        if existing.as_ref() != Some(&labels) {
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

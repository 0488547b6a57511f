//! Connecting a managed resource to fakecloud: its ProviderConfig gives the
//! endpoint and names the credentials Secret (both read from watch caches,
//! not with a GET per reconcile); a ProviderConfigUsage records
//! that the resource depends on that ProviderConfig, so the ProviderConfig
//! cannot be deleted from under it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use apis::kinds::provider_config::{CredentialsSource, ProviderConfig, ProviderConfigUsage};
use apis::well_known::PROVIDER_CONFIG_LABEL;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::cluster::{Cluster, ObjectKey, typed};
use super::error::ConnectError;
use super::kind::ManagedKind;
use super::session::read_secret_key;
use crate::metrics::Metrics;

/// Builds fakecloud clients for managed resources, reusing one client (and
/// its connection pool) per endpoint and key.
pub struct Connector {
    cluster: Arc<dyn Cluster>,
    clients: Mutex<HashMap<(String, String), fakecloud::client::Client>>,
    /// Usages already known to exist, by MR uid and ProviderConfig name, so a
    /// steady-state reconcile does not even read them.
    usages: Mutex<HashSet<(String, String)>>,
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
    /// ProviderConfig.
    pub async fn connect<K: ManagedKind>(
        &self,
        mr: &K,
        kind: &str,
    ) -> Result<fakecloud::client::Client, ConnectError> {
        let name = mr.resource_spec().provider_config_ref.name.clone();
        let read_error = |source| ConnectError::ProviderConfigRead {
            name: name.clone(),
            source,
        };
        let config: ProviderConfig = self
            .cluster
            .get_watched(&ObjectKey::of::<ProviderConfig>(None, &name))
            .await
            .map_err(read_error)?
            .map(typed)
            .transpose()
            .map_err(read_error)?
            .ok_or_else(|| ConnectError::ProviderConfigMissing(name.clone()))?;
        let api_key = match config.spec.credentials.source {
            CredentialsSource::None => String::new(),
            CredentialsSource::Secret => {
                let selector = config
                    .spec
                    .credentials
                    .secret_ref
                    .as_ref()
                    .ok_or_else(|| ConnectError::SecretRefMissing(name.clone()))?;
                read_secret_key(&*self.cluster, selector, true)
                    .await
                    .map_err(|source| ConnectError::Credentials {
                        provider_config: name.clone(),
                        source,
                    })?
                    .trim()
                    .to_owned()
            }
        };
        self.track_usage(mr, kind, &name).await?;
        Ok(self.client(&config.spec.endpoint, api_key))
    }

    fn client(&self, endpoint: &str, api_key: String) -> fakecloud::client::Client {
        let mut clients = self.clients.lock().expect("client cache lock poisoned");
        clients
            .entry((endpoint.to_owned(), api_key.clone()))
            .or_insert_with(|| fakecloud::client::Client::new(endpoint, api_key))
            .clone()
    }

    /// Makes sure a ProviderConfigUsage, controlled by `mr`, points from `mr`
    /// to the ProviderConfig `config`. Named after the MR's uid, so it is
    /// unique across kinds; collected by Kubernetes with the MR.
    async fn track_usage<K: ManagedKind>(
        &self,
        mr: &K,
        kind: &str,
        config: &str,
    ) -> Result<(), ConnectError> {
        let uid = mr.uid().unwrap_or_default();
        let key = (uid.clone(), config.to_owned());
        if self
            .usages
            .lock()
            .expect("usage cache lock poisoned")
            .contains(&key)
        {
            return Ok(());
        }
        let at = ObjectKey::of::<ProviderConfigUsage>(None, &uid);
        let existing = self.cluster.get(&at).await.map_err(ConnectError::Usage)?;
        let up_to_date = existing.is_some_and(|u| {
            u.pointer(&format!(
                "/metadata/labels/{}",
                PROVIDER_CONFIG_LABEL.replace('/', "~1")
            ))
            .and_then(|v| v.as_str())
                == Some(config)
        });
        if !up_to_date {
            let usage = json!({
                "apiVersion": ProviderConfigUsage::api_version(&()),
                "kind": ProviderConfigUsage::kind(&()),
                "metadata": {
                    "name": uid,
                    "labels": { PROVIDER_CONFIG_LABEL: config },
                    "ownerReferences": [mr.controller_owner_ref(&())],
                },
                "providerConfigRef": { "name": config },
                "resourceRef": {
                    "apiVersion": K::api_version(&()),
                    "kind": kind,
                    "name": mr.name_any(),
                    "uid": uid,
                },
            });
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

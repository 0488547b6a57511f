//! What a kind's cloud calls can reach during one reconcile: the fakecloud
//! client of the resource's ProviderConfig, Secrets it needs, and its
//! connection Secret.

use std::collections::BTreeMap;

use apis::common::SecretKeySelector;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::Mutex;

use super::connection::ConnectionSecret;
use super::error::ExternalError;

pub struct Session {
    pub cloud: fakecloud::client::Client,
    kube: kube::Client,
    connection: Option<ConnectionSecret>,
    /// The connection Secret's data as last read or written.
    connection_data: Mutex<BTreeMap<String, String>>,
    /// Counts writes of the connection Secret (`kube_writes{target="secret"}`).
    secret_writes: Counter,
}

impl Session {
    pub fn new(
        cloud: fakecloud::client::Client,
        kube: kube::Client,
        connection: Option<ConnectionSecret>,
        connection_data: BTreeMap<String, String>,
        secret_writes: Counter,
    ) -> Self {
        Self {
            cloud,
            kube,
            connection,
            connection_data: Mutex::new(connection_data),
            secret_writes,
        }
    }

    /// The value of one key of a Secret.
    pub async fn secret_value(
        &self,
        selector: &SecretKeySelector,
    ) -> Result<String, ExternalError> {
        read_secret_key(&self.kube, selector).await
    }

    /// Whether the resource has a connection Secret to keep details in.
    pub fn keeps_connection_details(&self) -> bool {
        self.connection.is_some()
    }

    /// What the connection Secret holds now (empty without one).
    pub async fn connection_data(&self) -> BTreeMap<String, String> {
        self.connection_data.lock().await.clone()
    }

    /// Saves one connection detail right away, before the cloud call that
    /// uses it, so that a value only the provider knows (a generated
    /// password) is never lost to a crash. Without a connection Secret it
    /// could not be kept, so that is an error naming the field to set.
    pub async fn remember_connection_detail(
        &self,
        key: &str,
        value: &str,
    ) -> Result<(), ExternalError> {
        let Some(connection) = &self.connection else {
            return Err(ExternalError::InvalidSpec(format!(
                "the provider must keep a generated {key}: set spec.writeConnectionSecretToRef"
            )));
        };
        let mut data = self.connection_data.lock().await;
        let mut desired = data.clone();
        desired.insert(key.to_owned(), value.to_owned());
        if connection.publish(&self.kube, &data, &desired).await? {
            self.secret_writes.inc();
        }
        *data = desired;
        Ok(())
    }

    /// Publishes the full set of connection details, writing only on change.
    pub async fn publish_connection_details(
        &self,
        desired: &BTreeMap<String, String>,
    ) -> Result<(), super::error::ConnectionError> {
        let Some(connection) = &self.connection else {
            return Ok(());
        };
        let mut data = self.connection_data.lock().await;
        if connection.publish(&self.kube, &data, desired).await? {
            self.secret_writes.inc();
        }
        *data = desired.clone();
        Ok(())
    }
}

/// Reads `selector.key` of a Secret as UTF-8.
pub async fn read_secret_key(
    kube: &kube::Client,
    selector: &SecretKeySelector,
) -> Result<String, ExternalError> {
    let secret = Api::<Secret>::namespaced(kube.clone(), &selector.namespace)
        .get(&selector.name)
        .await
        .map_err(|source| ExternalError::ReadSecret {
            namespace: selector.namespace.clone(),
            name: selector.name.clone(),
            source,
        })?;
    let value = secret
        .data
        .as_ref()
        .and_then(|d| d.get(&selector.key))
        .map(|v| String::from_utf8_lossy(&v.0).into_owned())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(&selector.key))
                .cloned()
        });
    value.ok_or_else(|| ExternalError::SecretKeyMissing {
        namespace: selector.namespace.clone(),
        name: selector.name.clone(),
        key: selector.key.clone(),
    })
}

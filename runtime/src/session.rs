//! What a kind's cloud calls can reach during one reconcile: the cloud
//! client of the resource's ProviderConfig (the provider's [`crate::Connect`]
//! made it), Secrets it reads as input, and
//! what the resource's connection Secret holds.
//!
//! The connection Secret itself belongs to the runtime: it reads it once per
//! reconcile and is its only writer. A kind sees its data and returns the
//! details to keep; it never writes the Secret.

use std::collections::BTreeMap;

use crossplane_types::{LocateSecretKey, SecretKeyLocation};
use k8s_openapi::api::core::v1::Secret;
use prometheus_client::metrics::counter::Counter;

use crate::cluster::{Cluster, ObjectKey, typed};
use crate::connection::ConnectionSecret;
use crate::error::{ConnectionError, ExternalError};
use crate::pacing::Pacing;

/// Connection details as the Secret's `data` holds them, decoded.
pub type Details = BTreeMap<String, String>;

/// What a kind's cloud calls ([`crate::CloudKind`]) can reach during one
/// reconcile: the cloud client `C` of the resource's ProviderConfig, the
/// Secrets the kind takes input from ([`Session::secret_value`]) and what
/// the resource's connection Secret holds ([`Session::connection_data`]).
/// The runtime opens one per reconcile; a kind never writes the connection
/// Secret, it returns the details to keep.
pub struct Session<'a, C> {
    /// The cloud client, of the type the provider's [`crate::Connect`] makes.
    pub cloud: C,
    /// How this reconcile's calls to the cloud are paced.
    pub(crate) pacing: Pacing<'a>,
    cluster: &'a dyn Cluster,
    /// The managed resource's namespace (`None` when cluster-scoped): where
    /// a namespaced resource's Secret inputs are.
    namespace: Option<String>,
    connection: Option<ConnectionSecret>,
    /// The connection Secret's data as last read or written.
    connection_data: Details,
    /// Counts writes of the connection Secret (`kube_writes{target="secret"}`).
    secret_writes: Counter,
}

impl<'a, C> Session<'a, C> {
    /// Reads the connection Secret (when the resource has one) once, for
    /// every step of this reconcile.
    pub(crate) async fn open(
        cloud: C,
        pacing: Pacing<'a>,
        cluster: &'a dyn Cluster,
        namespace: Option<String>,
        connection: Option<ConnectionSecret>,
        secret_writes: Counter,
    ) -> Result<Self, ConnectionError> {
        let connection_data = match &connection {
            Some(c) => c.read(cluster).await?,
            None => Details::new(),
        };
        Ok(Self {
            cloud,
            pacing,
            cluster,
            namespace,
            connection,
            connection_data,
            secret_writes,
        })
    }

    /// The value of one key of a Secret the kind takes input from; a
    /// namespaced resource's is in its own namespace.
    pub async fn secret_value(
        &self,
        selector: &impl LocateSecretKey,
    ) -> Result<String, ExternalError> {
        let located = selector.locate(self.namespace.as_deref());
        read_secret_key(self.cluster, &located, false).await
    }

    /// What the connection Secret holds now (empty without one).
    pub fn connection_data(&self) -> &Details {
        &self.connection_data
    }

    /// Publishes the full set of connection details, writing only on change.
    pub(crate) async fn publish(&mut self, desired: Details) -> Result<(), ConnectionError> {
        let Some(connection) = &self.connection else {
            return Ok(());
        };
        if connection
            .publish(self.cluster, &self.connection_data, &desired)
            .await?
        {
            self.secret_writes.inc();
        }
        self.connection_data = desired;
        Ok(())
    }

    /// Adds `details` to the Secret, when the resource has one.
    pub(crate) async fn record(&mut self, details: Details) -> Result<(), ConnectionError> {
        let mut desired = self.connection_data.clone();
        desired.extend(details);
        self.publish(desired).await
    }

    /// Adds `details` that must not be lost (a generated password, before
    /// the create that uses it): without a connection Secret they could not
    /// be kept, so that is an error naming the field to set.
    pub(crate) async fn keep(&mut self, details: Details) -> Result<(), ConnectionError> {
        if self.connection.is_none() && !details.is_empty() {
            return Err(ConnectionError::Unkept {
                keys: details.into_keys().collect::<Vec<_>>().join(", "),
            });
        }
        self.record(details).await
    }
}

/// Reads `selector.key` of a Secret as UTF-8; through a watch cache when
/// `watched` (see [`Cluster::get_watched`]).
pub async fn read_secret_key(
    cluster: &dyn Cluster,
    selector: &SecretKeyLocation,
    watched: bool,
) -> Result<String, ExternalError> {
    let read_error = |error| ExternalError::ReadSecret {
        namespace: selector.namespace.clone(),
        name: selector.name.clone(),
        error,
    };
    let key = ObjectKey::of::<Secret>(Some(&selector.namespace), &selector.name);
    let read = if watched {
        cluster.get_watched(&key)
    } else {
        cluster.get(&key)
    };
    let secret: Secret = read
        .await
        .map_err(read_error)?
        .map(typed)
        .transpose()
        .map_err(read_error)?
        .ok_or_else(|| ExternalError::SecretMissing {
            namespace: selector.namespace.clone(),
            name: selector.name.clone(),
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

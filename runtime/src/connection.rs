//! The connection Secret of a managed resource (`writeConnectionSecretToRef`).
//!
//! Rules: type `connection.crossplane.io/v1alpha1`; controller-owned by the
//! MR, so Kubernetes collects it with the MR; written only when its data
//! would change; never written over a Secret another object controls.

use std::collections::BTreeMap;

use crossplane_types::SecretLocation;
use crossplane_types::well_known::CONNECTION_SECRET_TYPE;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;

use crate::cluster::{Cluster, ObjectKey, typed};
use crate::error::ConnectionError;

/// Where a resource's connection details go, and who owns them.
#[derive(Debug, Clone)]
pub struct ConnectionSecret {
    pub target: SecretLocation,
    /// The MR, as the Secret's controller.
    pub owner: OwnerReference,
}

impl ConnectionSecret {
    fn key(&self) -> ObjectKey {
        ObjectKey::of::<Secret>(Some(&self.target.namespace), &self.target.name)
    }

    fn read_error(&self, error: kube::Error) -> ConnectionError {
        ConnectionError::Read {
            namespace: self.target.namespace.clone(),
            name: self.target.name.clone(),
            error,
        }
    }

    fn write_error(&self, error: kube::Error) -> ConnectionError {
        ConnectionError::Write {
            namespace: self.target.namespace.clone(),
            name: self.target.name.clone(),
            error,
        }
    }

    /// The Secret's current data, empty when it does not exist yet.
    ///
    /// Fails when the Secret belongs to someone else, so that neither a read
    /// nor a later write takes over another object's Secret.
    pub async fn read(
        &self,
        cluster: &dyn Cluster,
    ) -> Result<BTreeMap<String, String>, ConnectionError> {
        let Some(secret) = cluster
            .get(&self.key())
            .await
            .and_then(|found| found.map(typed::<Secret>).transpose())
            .map_err(|e| self.read_error(e))?
        else {
            return Ok(BTreeMap::new());
        };
        self.check_ownership(&secret)?;
        Ok(secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
            .collect())
    }

    /// Refuses a Secret controlled by another object, or an uncontrolled
    /// one of another type (someone's own Secret that happens to share the
    /// name). An uncontrolled connection Secret is adopted, as
    /// crossplane-runtime does.
    fn check_ownership(&self, secret: &Secret) -> Result<(), ConnectionError> {
        let controller = secret
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        match controller {
            Some(c) if c.uid == self.owner.uid => Ok(()),
            Some(c) => Err(ConnectionError::ForeignOwner {
                namespace: self.target.namespace.clone(),
                name: self.target.name.clone(),
                owner: format!("{} {}", c.kind, c.name),
            }),
            None if secret.type_.as_deref() == Some(CONNECTION_SECRET_TYPE) => Ok(()),
            None => Err(ConnectionError::ForeignOwner {
                namespace: self.target.namespace.clone(),
                name: self.target.name.clone(),
                owner: "no controller (a Secret of another type)".to_owned(),
            }),
        }
    }

    /// Writes `desired` when it differs from `current` (what [`Self::read`]
    /// returned). Returns whether it wrote.
    pub async fn publish(
        &self,
        cluster: &dyn Cluster,
        current: &BTreeMap<String, String>,
        desired: &BTreeMap<String, String>,
    ) -> Result<bool, ConnectionError> {
        if desired == current {
            return Ok(false);
        }
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.target.name.clone()),
                namespace: Some(self.target.namespace.clone()),
                owner_references: Some(vec![self.owner.clone()]),
                ..ObjectMeta::default()
            },
            type_: Some(CONNECTION_SECRET_TYPE.to_owned()),
            data: Some(
                desired
                    .iter()
                    .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                    .collect(),
            ),
            ..Secret::default()
        };
        let mut body = serde_json::to_value(&secret).expect("a Secret serializes");
        body["apiVersion"] = "v1".into();
        body["kind"] = "Secret".into();
        cluster
            .apply(&self.key(), body, false)
            .await
            .map_err(|e| self.write_error(e))?;
        Ok(true)
    }
}

//! What a user does with kubectl, as calls: apply, patch, get, delete and
//! wait. Shared by [`crate::world::World`] (tests, provider in-process) and
//! the demo (provider as its own process), which differ only in who runs
//! the provider.

use std::fmt::Debug;
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// How often waits look again.
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error("manifest without metadata.name: {0}")]
    Unnamed(String),
    #[error("timed out after {timeout:?} waiting for {what}; last seen: {last}")]
    Timeout {
        what: String,
        timeout: Duration,
        last: String,
    },
}

/// A cluster-scoped kind (the four managed kinds, the ProviderConfig).
pub trait ClusterKind:
    Resource<DynamicType = (), Scope = ClusterResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
{
}

impl<K> ClusterKind for K where
    K: Resource<DynamicType = (), Scope = ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
{
}

/// Object calls over one client, applying as one field manager.
#[derive(Clone)]
pub struct Objects {
    client: kube::Client,
    manager: &'static str,
}

impl Objects {
    /// `manager` is the server-side-apply field manager, as a user's
    /// kubectl has its own.
    pub fn new(client: kube::Client, manager: &'static str) -> Self {
        Self { client, manager }
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    fn name_of(object: &Value) -> Result<String, ObjectsError> {
        object["metadata"]["name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ObjectsError::Unnamed(object.to_string()))
    }

    /// Server-side apply of a cluster-scoped object.
    pub async fn apply<K: ClusterKind>(&self, object: Value) -> Result<K, ObjectsError> {
        let name = Self::name_of(&object)?;
        let params = PatchParams::apply(self.manager).force();
        Ok(Api::<K>::all(self.client())
            .patch(&name, &params, &Patch::Apply(&object))
            .await?)
    }

    /// Server-side apply of a namespaced object.
    pub async fn apply_namespaced<K>(
        &self,
        namespace: &str,
        object: Value,
    ) -> Result<K, ObjectsError>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        let name = Self::name_of(&object)?;
        let params = PatchParams::apply(self.manager).force();
        Ok(Api::<K>::namespaced(self.client(), namespace)
            .patch(&name, &params, &Patch::Apply(&object))
            .await?)
    }

    /// Merge-patches an object, as a user editing it would.
    pub async fn patch<K: ClusterKind>(&self, name: &str, patch: Value) -> Result<K, ObjectsError> {
        Ok(Api::<K>::all(self.client())
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    pub async fn get<K: ClusterKind>(&self, name: &str) -> Result<Option<K>, ObjectsError> {
        Ok(Api::<K>::all(self.client()).get_opt(name).await?)
    }

    pub async fn delete<K: ClusterKind>(&self, name: &str) -> Result<(), ObjectsError> {
        Api::<K>::all(self.client())
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Polls until `done` holds and returns the object; a timeout carries
    /// the object as last seen, so the failure says why.
    pub async fn wait_for<K: ClusterKind>(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        done: impl Fn(&K) -> bool,
    ) -> Result<K, ObjectsError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let object = self.get::<K>(name).await?;
            match object {
                Some(object) if done(&object) => return Ok(object),
                _ if tokio::time::Instant::now() >= deadline => {
                    return Err(ObjectsError::Timeout {
                        what: format!("{} {name}: {what}", K::kind(&())),
                        timeout,
                        last: describe(object.as_ref()),
                    });
                }
                _ => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Polls until the object no longer exists.
    pub async fn wait_gone<K: ClusterKind>(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<(), ObjectsError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.get::<K>(name).await? {
                None => return Ok(()),
                Some(object) if tokio::time::Instant::now() >= deadline => {
                    return Err(ObjectsError::Timeout {
                        what: format!("{} {name} to be deleted", K::kind(&())),
                        timeout,
                        last: describe(Some(&object)),
                    });
                }
                Some(_) => tokio::time::sleep(POLL).await,
            }
        }
    }
}

/// The parts of an object that explain why a wait did not end.
fn describe<K: Serialize>(object: Option<&K>) -> String {
    match object {
        None => "absent".to_owned(),
        Some(object) => {
            let json = serde_json::to_value(object).unwrap_or_default();
            json!({
                "annotations": json.pointer("/metadata/annotations"),
                "finalizers": json.pointer("/metadata/finalizers"),
                "spec": json.get("spec"),
                "status": json.get("status"),
            })
            .to_string()
        }
    }
}

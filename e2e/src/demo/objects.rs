//! What a user does with kubectl, as calls: apply, get, delete and wait.
//!
//! The demo cannot borrow [`crate::world::World`]'s helpers because the
//! world runs the provider in-process; these are the same few calls over a
//! plain client.

use std::fmt::Debug;
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use kube::core::ClusterResourceScope;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::DemoError;

/// The field manager the demo applies with, as a user's kubectl would.
pub(crate) const MANAGER: &str = "demo-user";
/// How often waits look again.
const POLL: Duration = Duration::from_millis(100);

/// A cluster-scoped kind the demo handles (the four managed kinds and the
/// ProviderConfig).
pub(crate) trait ClusterKind:
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

#[derive(Clone)]
pub(crate) struct Objects {
    client: kube::Client,
}

impl Objects {
    pub(crate) fn new(client: kube::Client) -> Self {
        Self { client }
    }

    pub(crate) fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Server-side apply of a cluster-scoped object.
    pub(crate) async fn apply<K: ClusterKind>(&self, object: Value) -> Result<K, DemoError> {
        let name = object["metadata"]["name"]
            .as_str()
            .ok_or_else(|| DemoError::Unexpected(format!("manifest without a name: {object}")))?
            .to_owned();
        Ok(Api::<K>::all(self.client())
            .patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&object),
            )
            .await?)
    }

    /// Server-side apply of a namespaced object of type `K`.
    pub(crate) async fn apply_namespaced<K>(
        &self,
        namespace: &str,
        object: Value,
    ) -> Result<K, DemoError>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        Ok(Api::<K>::namespaced(self.client(), namespace)
            .patch(
                name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&object),
            )
            .await?)
    }

    pub(crate) async fn get<K: ClusterKind>(&self, name: &str) -> Result<Option<K>, DemoError> {
        Ok(Api::<K>::all(self.client()).get_opt(name).await?)
    }

    pub(crate) async fn delete<K: ClusterKind>(&self, name: &str) -> Result<(), DemoError> {
        Api::<K>::all(self.client())
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Polls until `done` holds and returns the object; a timeout carries
    /// the object as last seen, so the failure says why.
    pub(crate) async fn wait_for<K: ClusterKind>(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        done: impl Fn(&K) -> bool,
    ) -> Result<K, DemoError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let object = self.get::<K>(name).await?;
            match object {
                Some(object) if done(&object) => return Ok(object),
                _ if tokio::time::Instant::now() >= deadline => {
                    return Err(DemoError::Timeout {
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
    pub(crate) async fn wait_gone<K: ClusterKind>(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<(), DemoError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.get::<K>(name).await? {
                None => return Ok(()),
                Some(object) if tokio::time::Instant::now() >= deadline => {
                    return Err(DemoError::Timeout {
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
                "status": json.get("status"),
            })
            .to_string()
        }
    }
}

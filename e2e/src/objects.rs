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
    Kube(kube::Error),
    #[error("manifest without metadata.name: {0}")]
    Unnamed(String),
    #[error("timed out after {timeout:?} waiting for {what}; last seen: {last}")]
    Timeout {
        what: String,
        timeout: Duration,
        last: String,
    },
}

impl From<kube::Error> for ObjectsError {
    fn from(error: kube::Error) -> Self {
        ObjectsError::Kube(error)
    }
}

/// A kind the user works with, of either scope (the managed kinds, the
/// ProviderConfig kinds); a namespaced one is addressed in the
/// [`Objects`]' namespace.
pub trait Kind:
    Resource<DynamicType = (), Scope: ApiScope> + Clone + DeserializeOwned + Serialize + Debug
{
}

impl<K> Kind for K where
    K: Resource<DynamicType = (), Scope: ApiScope> + Clone + DeserializeOwned + Serialize + Debug
{
}

/// How a kind of a scope is reached: across the cluster, or in a namespace.
pub trait ApiScope {
    fn api<K: Resource<DynamicType = (), Scope = Self>>(
        client: kube::Client,
        namespace: &str,
    ) -> Api<K>;
}

impl ApiScope for ClusterResourceScope {
    fn api<K: Resource<DynamicType = (), Scope = Self>>(client: kube::Client, _: &str) -> Api<K> {
        Api::all(client)
    }
}

impl ApiScope for NamespaceResourceScope {
    fn api<K: Resource<DynamicType = (), Scope = Self>>(
        client: kube::Client,
        namespace: &str,
    ) -> Api<K> {
        Api::namespaced(client, namespace)
    }
}

/// The namespace [`Objects`] address namespaced kinds in until told
/// otherwise ([`Objects::in_namespace`]).
pub const DEFAULT_NAMESPACE: &str = "default";

/// Object calls over one client, applying as one field manager; namespaced
/// kinds in one namespace.
#[derive(Clone)]
pub struct Objects {
    client: kube::Client,
    manager: &'static str,
    namespace: String,
}

impl Objects {
    /// `manager` is the server-side-apply field manager, as a user's
    /// kubectl has its own.
    pub fn new(client: kube::Client, manager: &'static str) -> Self {
        Self {
            client,
            manager,
            namespace: DEFAULT_NAMESPACE.to_owned(),
        }
    }

    /// The same calls, with namespaced kinds in `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            ..self.clone()
        }
    }

    /// The namespace namespaced kinds are addressed in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    fn api<K: Kind>(&self) -> Api<K> {
        <K::Scope as ApiScope>::api(self.client(), &self.namespace)
    }

    fn name_of(object: &Value) -> Result<String, ObjectsError> {
        object["metadata"]["name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ObjectsError::Unnamed(object.to_string()))
    }

    /// Server-side apply of an object (a namespaced one in this
    /// namespace).
    pub async fn apply<K: Kind>(&self, object: Value) -> Result<K, ObjectsError> {
        let name = Self::name_of(&object)?;
        let params = PatchParams::apply(self.manager).force();
        Ok(self
            .api::<K>()
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
    pub async fn patch<K: Kind>(&self, name: &str, patch: Value) -> Result<K, ObjectsError> {
        Ok(self
            .api::<K>()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    pub async fn get<K: Kind>(&self, name: &str) -> Result<Option<K>, ObjectsError> {
        Ok(self.api::<K>().get_opt(name).await?)
    }

    pub async fn delete<K: Kind>(&self, name: &str) -> Result<(), ObjectsError> {
        self.api::<K>()
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// The reasons and messages of the Events about the object `name` of
    /// kind `K` (in any namespace: a cluster-scoped object's Events live in
    /// `default`), oldest first, as `kubectl describe` lists them.
    pub async fn events<K: Kind>(&self, name: &str) -> Result<Vec<(String, String)>, ObjectsError> {
        let api = Api::<k8s_openapi::api::core::v1::Event>::all(self.client.clone());
        let selector = format!(
            "involvedObject.name={name},involvedObject.kind={}",
            K::kind(&())
        );
        let mut events = api
            .list(&kube::api::ListParams::default().fields(&selector))
            .await?
            .items;
        events.sort_by_key(|e| e.first_timestamp.clone().map(|t| t.0));
        Ok(events
            .into_iter()
            .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
            .collect())
    }

    /// Polls until `done` holds and returns the object; a timeout carries
    /// the object as last seen, so the failure says why.
    pub async fn wait_for<K: Kind>(
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
    pub async fn wait_gone<K: Kind>(
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

//! The Kubernetes side of a reconcile, narrowed to the five object
//! operations it makes: get, list by label, merge patch, server-side apply
//! and create.
//!
//! Everything the runtime writes or reads on the API server during a
//! reconcile (the managed resource's metadata and status, its connection
//! Secret, Events, ProviderConfigs and their usages, referenced objects,
//! Secrets a kind reads) goes through [`Cluster`]. [`KubeCluster`] is the
//! real one; the unit tests of the reconciler's flows run on an in-memory
//! one (`memory.rs`) that keeps the rules those flows rely on
//! (resourceVersion preconditions, generations, finalizers), so the flows are
//! tested without a cluster and the e2e suite tests them with one.
//!
//! A controller's watch is not part of it (kube-runtime's, and a reconcile
//! is handed the object it works on); the watch caches that serve
//! [`Cluster::get_watched`], [`Cluster::count_watched`] and
//! [`Cluster::labels_watched`] are the real implementation's business.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{StreamExt, future};
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams, Resource};
use kube::core::Status;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::task::AbortHandle;

use crate::watch::whole_list;

mod guard;
mod labels;
mod listed;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod memory;

pub use guard::Guard;
use labels::LabelCache;
pub(crate) use listed::Listed;

/// Where an object lives: its API resource (group, version, kind and plural)
/// and its namespace (`None` for cluster-scoped objects) and name.
#[derive(Debug, Clone)]
pub struct ObjectKey {
    /// The object's API resource: group, version, kind and plural.
    pub resource: ApiResource,
    /// The object's namespace; `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// The key of an object of `resource`.
    pub fn new(resource: &ApiResource, namespace: Option<&str>, name: &str) -> Self {
        Self {
            resource: resource.clone(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    /// The key of an object of the typed kind `K`.
    pub fn of<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }
}

/// The object operations a reconcile makes. Every write is made as the
/// provider's field manager; errors are the API server's own (`kube::Error`),
/// so a 409 or 404 means the same whichever implementation answered.
pub trait Cluster: Send + Sync {
    /// The object, or `None` when it does not exist.
    fn get<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, Result<Option<Value>, kube::Error>>;

    /// [`Cluster::get`] for objects that every reconcile reads and few
    /// write (ProviderConfigs, their credentials Secrets): served from a
    /// watch cache the API server keeps current, so a change takes effect on
    /// the next reconcile without a GET per reconcile. A namespaced object
    /// is watched alone, by name; a cluster-scoped kind, as a whole.
    fn get_watched<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Value>, kube::Error>>;

    /// The objects of a resource, in `namespace` (every namespace when
    /// `None`), whose labels match `labels` (a `k=v,k2=v2` selector; empty
    /// matches all).
    fn list<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, kube::Error>>;

    /// How many objects of a resource, in `namespace` (every namespace when
    /// `None`), match `labels`,
    /// for a resource that is counted again and again (ProviderConfigUsages,
    /// on every recount): served from a watch cache of the whole resource,
    /// the selector matched here, so a steady recount costs the API server
    /// nothing and copies no object.
    fn count_watched<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Result<usize, kube::Error>>;

    /// The labels of the object `key` (`None` when there is no such
    /// object), from the same cache of the whole resource as
    /// [`Cluster::count_watched`]: for a question asked once per managed
    /// resource (has its usage been written?) that a GET would answer at
    /// the cost of an API server read per resource, all of them at a cold
    /// start. The cache can lag a write by a watch event, so the caller
    /// must be content to write again what was already there.
    fn labels_watched<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<BTreeMap<String, String>>, kube::Error>>;

    /// A JSON merge patch. A `metadata.resourceVersion` in the patch is a
    /// precondition: the API server answers 409 when the object moved on.
    fn merge_patch<'a>(
        &'a self,
        key: &'a ObjectKey,
        patch: Value,
    ) -> BoxFuture<'a, Result<Value, kube::Error>>;

    /// A forced server-side apply of `body`, to the status subresource when
    /// `status`; creates the object when it does not exist. A
    /// `metadata.resourceVersion` in the body is a precondition too.
    fn apply<'a>(
        &'a self,
        key: &'a ObjectKey,
        body: Value,
        status: bool,
    ) -> BoxFuture<'a, Result<Value, kube::Error>>;

    /// Creates `body`; 409 when an object of that name exists.
    fn create<'a>(
        &'a self,
        key: &'a ObjectKey,
        body: Value,
    ) -> BoxFuture<'a, Result<Value, kube::Error>>;
}

/// Whether `labels` satisfy `selector`, an equality-only label selector
/// (`k=v,k2=v2`; empty matches everything), as the provider writes them.
pub(crate) fn selector_matches(labels: &BTreeMap<String, String>, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (key, value) = term.split_once('=').unwrap_or((term, ""));
        labels.get(key).is_some_and(|v| v == value)
    })
}

/// Reads a JSON object as a typed one, reporting a mismatch as kube does.
pub(crate) fn typed<T: DeserializeOwned>(value: Value) -> Result<T, kube::Error> {
    serde_json::from_value(value).map_err(kube::Error::SerdeError)
}

/// [`Cluster`] on a real API server.
#[derive(Clone)]
pub struct KubeCluster {
    client: kube::Client,
    /// The field manager of every server-side apply (the provider's name).
    field_manager: String,
    caches: Arc<Caches>,
    guard: Arc<Guard>,
}

/// How long a new watch cache may take to list before a read from it
/// fails: the provider cannot list or watch what it reads.
const CACHE_SYNC: Duration = Duration::from_secs(10);

/// What one object cache covers: a resource, and for a namespaced object
/// its namespace and name.
type CacheKey = (String, String, Option<String>, Option<String>);

/// The watch caches behind [`Cluster::get_watched`] (objects, less their
/// `managedFields`), [`Cluster::count_watched`] and
/// [`Cluster::labels_watched`] (the labels of a whole resource), started on
/// first use and stopped with the last clone of the [`KubeCluster`].
#[derive(Default)]
struct Caches {
    stores: Mutex<HashMap<CacheKey, (Store<DynamicObject>, Listed)>>,
    /// By api version and kind.
    labels: Mutex<HashMap<(String, String), LabelCache>>,
    watches: Mutex<Vec<AbortHandle>>,
}

impl Drop for Caches {
    fn drop(&mut self) {
        for watch in self.watches.get_mut().into_iter().flatten() {
            watch.abort();
        }
    }
}

impl KubeCluster {
    /// A cluster on `client`'s API server whose applies are made as
    /// `field_manager`, with requests paced by `guard`.
    pub fn new(client: kube::Client, field_manager: &str, guard: Guard) -> Self {
        Self {
            client,
            field_manager: field_manager.to_owned(),
            caches: Arc::default(),
            guard: Arc::new(guard),
        }
    }

    /// The watch cache that holds `key`, started when there is none yet,
    /// and its first listing.
    fn store(&self, key: &ObjectKey) -> (Store<DynamicObject>, Listed) {
        let name = key.namespace.as_ref().map(|_| key.name.clone());
        let cache: CacheKey = (
            key.resource.api_version.clone(),
            key.resource.kind.clone(),
            key.namespace.clone(),
            name.clone(),
        );
        let mut stores = self.caches.stores.lock().expect("cache lock poisoned");
        if let Some(cached) = stores.get(&cache) {
            return cached.clone();
        }
        let writer = Writer::<DynamicObject>::new(key.resource.clone());
        let store = writer.as_reader();
        let mut config = whole_list();
        if let Some(name) = &name {
            config = config.fields(&format!("metadata.name={name}"));
        }
        let watch = watcher(self.api(key), config)
            .default_backoff()
            .modify(|object: &mut DynamicObject| object.managed_fields_mut().clear())
            .reflect(writer)
            .for_each(|_| future::ready(()));
        let task = tokio::spawn(watch);
        self.caches
            .watches
            .lock()
            .expect("cache lock poisoned")
            .push(task.abort_handle());
        let cached = (store.clone(), Listed::of(&store));
        stores.insert(cache, cached.clone());
        cached
    }

    /// [`KubeCluster::store`], once it has listed: a 504 when it has not
    /// within [`CACHE_SYNC`].
    async fn synced_store(&self, key: &ObjectKey) -> Result<Store<DynamicObject>, kube::Error> {
        let (store, listed) = self.store(key);
        if !listed.within(CACHE_SYNC).await {
            return Err(not_listed(&key.resource));
        }
        Ok(store)
    }

    /// The labels of every object of `resource`, once listed (a 504 when
    /// not within [`CACHE_SYNC`]); the watch starts on first use.
    async fn synced_labels(&self, resource: &ApiResource) -> Result<LabelCache, kube::Error> {
        let cache = {
            let mut caches = self.caches.labels.lock().expect("cache lock poisoned");
            let key = (resource.api_version.clone(), resource.kind.clone());
            caches
                .entry(key)
                .or_insert_with(|| {
                    let api = Api::all_with(self.client.clone(), resource);
                    let (cache, task) = LabelCache::start(api);
                    self.caches
                        .watches
                        .lock()
                        .expect("cache lock poisoned")
                        .push(task.abort_handle());
                    cache
                })
                .clone()
        };
        if !cache.listed_within(CACHE_SYNC).await {
            return Err(not_listed(resource));
        }
        Ok(cache)
    }

    fn api(&self, key: &ObjectKey) -> Api<DynamicObject> {
        match &key.namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &key.resource),
            None => Api::all_with(self.client.clone(), &key.resource),
        }
    }
}

/// The answer to a read from a watch cache that has not listed in time.
fn not_listed(resource: &ApiResource) -> kube::Error {
    let message = format!(
        "the watch of {} has not listed within {CACHE_SYNC:?}: can the provider list and watch them?",
        resource.plural
    );
    kube::Error::Api(Status::failure(&message, "Timeout").with_code(504).boxed())
}

/// Where a watch cache keeps the object `key`.
fn object_ref(key: &ObjectKey) -> ObjectRef<DynamicObject> {
    let reference = ObjectRef::new_with(&key.name, key.resource.clone());
    match &key.namespace {
        Some(namespace) => reference.within(namespace),
        None => reference,
    }
}

/// `object` as JSON, less its `managedFields`: nothing the provider reads,
/// and most of a written object's size (an entry per field manager), which
/// a reconcile would otherwise hold from each write to its end.
fn json(mut object: DynamicObject) -> Result<Value, kube::Error> {
    object.managed_fields_mut().clear();
    serde_json::to_value(object).map_err(kube::Error::SerdeError)
}

impl Cluster for KubeCluster {
    fn get<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, Result<Option<Value>, kube::Error>> {
        Box::pin(async move {
            self.guard
                .run(self.api(key).get_opt(&key.name))
                .await?
                .map(json)
                .transpose()
        })
    }

    fn get_watched<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Value>, kube::Error>> {
        Box::pin(async move {
            let store = self.synced_store(key).await?;
            store
                .get(&object_ref(key))
                .map(|object| json((*object).clone()))
                .transpose()
        })
    }

    fn labels_watched<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<BTreeMap<String, String>>, kube::Error>> {
        Box::pin(async move {
            let cache = self.synced_labels(&key.resource).await?;
            Ok(cache.labels(key.namespace.as_deref(), &key.name))
        })
    }

    fn count_watched<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Result<usize, kube::Error>> {
        Box::pin(async move {
            let cache = self.synced_labels(resource).await?;
            Ok(cache.count(namespace, labels))
        })
    }

    fn list<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, kube::Error>> {
        Box::pin(async move {
            let api = match namespace {
                Some(namespace) => {
                    Api::<DynamicObject>::namespaced_with(self.client.clone(), namespace, resource)
                }
                None => Api::<DynamicObject>::all_with(self.client.clone(), resource),
            };
            self.guard
                .run(api.list(&ListParams::default().labels(labels)))
                .await?
                .items
                .into_iter()
                .map(json)
                .collect()
        })
    }

    fn merge_patch<'a>(
        &'a self,
        key: &'a ObjectKey,
        patch: Value,
    ) -> BoxFuture<'a, Result<Value, kube::Error>> {
        Box::pin(async move {
            let api = self.api(key);
            // Named, as applies are: without it the API server records the
            // patch's fields as owned by "unknown".
            let params = PatchParams {
                field_manager: Some(self.field_manager.clone()),
                ..PatchParams::default()
            };
            json(
                self.guard
                    .run(api.patch(&key.name, &params, &Patch::Merge(&patch)))
                    .await?,
            )
        })
    }

    fn apply<'a>(
        &'a self,
        key: &'a ObjectKey,
        body: Value,
        status: bool,
    ) -> BoxFuture<'a, Result<Value, kube::Error>> {
        Box::pin(async move {
            let params = PatchParams::apply(&self.field_manager).force();
            let api = self.api(key);
            let applied = if status {
                self.guard
                    .run(api.patch_status(&key.name, &params, &Patch::Apply(&body)))
                    .await?
            } else {
                self.guard
                    .run(api.patch(&key.name, &params, &Patch::Apply(&body)))
                    .await?
            };
            json(applied)
        })
    }

    fn create<'a>(
        &'a self,
        key: &'a ObjectKey,
        body: Value,
    ) -> BoxFuture<'a, Result<Value, kube::Error>> {
        Box::pin(async move {
            let object: DynamicObject = typed(body)?;
            let params = PostParams {
                field_manager: Some(self.field_manager.clone()),
                ..PostParams::default()
            };
            // Not through the guard: the one caller is the Event recorder,
            // and an Event waiting its turn in the line of writes holds
            // the reconcile that records it. With Events paced, a
            // throttled account's 60 new VPCs beside another account's
            // creates showed their first status 2.1 s to over 10 s after
            // they were applied (four runs of the isolation test); not
            // paced, 2.4 to 5.8 s (three runs).
            json(self.api(key).create(&params, &object).await?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_matches_only_labels_with_every_pair() {
        let labels: BTreeMap<String, String> = [
            ("example.crossplane.io/provider-config", "default"),
            ("team", "net"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert!(selector_matches(&labels, ""));
        assert!(selector_matches(
            &labels,
            "example.crossplane.io/provider-config=default"
        ));
        assert!(selector_matches(
            &labels,
            "team=net,example.crossplane.io/provider-config=default"
        ));
        assert!(!selector_matches(&labels, "team=db"));
        assert!(!selector_matches(&labels, "team=net,missing=x"));
        assert!(!selector_matches(
            &labels,
            "example.crossplane.io/provider-config=defaul"
        ));
    }
}

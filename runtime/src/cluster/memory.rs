//! An in-memory [`Cluster`] ([`MemoryCluster`]) for the tests of the
//! reconciler's flows: the runtime's own, and a provider's tests of its
//! kinds (through `crate::testing`), which run the real reconciler
//! ([`crate::reconcile::reconcile_once`]) on it without an API server.

use std::collections::BTreeMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use kube::api::ApiResource;
use kube::core::Status;
use serde_json::{Value, json};

use super::{Cluster, ObjectKey};

type Key = (String, String, Option<String>, String);

#[derive(Default)]
struct State {
    objects: BTreeMap<Key, Value>,
    last_version: u64,
    writes: usize,
    /// Writes whose body contains the text are answered with the codes,
    /// first first, one write each.
    refusals: Vec<(String, u16)>,
}

/// An in-memory [`Cluster`] for tests of the reconciler's flows, which run
/// the real reconciler on it without an API server.
///
/// It keeps the API server's rules that those flows depend on, and no more:
/// every write bumps `resourceVersion`, and a `resourceVersion` in a write is
/// a precondition (409 when stale); a changed `spec` bumps `generation`; an
/// object with finalizers is only marked for deletion, and goes once the
/// last finalizer is removed; the status changes only through the status
/// subresource. A forced apply by the provider's one field manager replaces
/// the fields it sends (the provider always sends whole values). It also
/// counts writes, and can refuse the next writes with a given code, for the
/// faults a test cannot otherwise cause (an overloaded API server).
#[derive(Default)]
pub struct MemoryCluster {
    state: Mutex<State>,
}

fn key_of(key: &ObjectKey) -> Key {
    (
        key.resource.api_version.clone(),
        key.resource.kind.clone(),
        key.namespace.clone(),
        key.name.clone(),
    )
}

fn error(code: u16, reason: &str, message: String) -> kube::Error {
    kube::Error::Api(Status::failure(&message, reason).with_code(code).boxed())
}

fn not_found(key: &ObjectKey) -> kube::Error {
    error(
        404,
        "NotFound",
        format!("{} {:?} not found", key.resource.kind, key.name),
    )
}

/// Whether an object's labels satisfy a `k=v,k2=v2` selector.
fn matches(object: &Value, selector: &str) -> bool {
    let labels = object
        .pointer("/metadata/labels")
        .cloned()
        .and_then(|labels| serde_json::from_value(labels).ok())
        .unwrap_or_default();
    super::selector_matches(&labels, selector)
}

impl State {
    fn next_version(&mut self) -> String {
        self.last_version += 1;
        self.last_version.to_string()
    }

    /// Counts a write, or refuses it when a refusal matches its body.
    fn admit(&mut self, body: &Value) -> Result<(), kube::Error> {
        let text = body.to_string();
        if let Some(at) = self
            .refusals
            .iter()
            .position(|(needle, _)| text.contains(needle))
        {
            let (_, code) = self.refusals.remove(at);
            return Err(error(
                code,
                "Refused",
                format!("refused with {code} by the test"),
            ));
        }
        self.writes += 1;
        Ok(())
    }

    /// The stored object for a write, after checking the write's
    /// resourceVersion precondition (taken out of `body`).
    fn existing(&self, key: &ObjectKey, body: &mut Value) -> Result<Value, kube::Error> {
        let current = self
            .objects
            .get(&key_of(key))
            .cloned()
            .ok_or_else(|| not_found(key))?;
        let wanted = body
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove("resourceVersion"));
        if let Some(wanted) = wanted.filter(|v| !v.is_null())
            && Some(&wanted) != current.pointer("/metadata/resourceVersion")
        {
            return Err(error(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} {:?}: the object has been modified",
                    key.resource.kind, key.name
                ),
            ));
        }
        Ok(current)
    }

    /// Stores `object` as the new state of `key`: a new resourceVersion, a
    /// new generation when the spec changed, gone when it was being deleted
    /// and has no finalizer left.
    fn store(&mut self, key: &ObjectKey, before: Option<&Value>, mut object: Value) -> Value {
        if let Some(before) = before
            && before.get("spec") != object.get("spec")
        {
            let generation = before
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            object["metadata"]["generation"] = json!(generation + 1);
        }
        object["metadata"]["resourceVersion"] = json!(self.next_version());
        let deleting = object.pointer("/metadata/deletionTimestamp").is_some();
        let finalizers = object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if deleting && !finalizers {
            self.objects.remove(&key_of(key));
        } else {
            self.objects.insert(key_of(key), object.clone());
        }
        object
    }

    fn insert_new(&mut self, key: &ObjectKey, mut object: Value) -> Value {
        object["apiVersion"] = json!(key.resource.api_version);
        object["kind"] = json!(key.resource.kind);
        object["metadata"]["name"] = json!(key.name);
        if let Some(namespace) = &key.namespace {
            object["metadata"]["namespace"] = json!(namespace);
        }
        object["metadata"]["uid"] = json!(uuid_like(self.last_version + 1));
        object["metadata"]["generation"] = json!(1);
        object["metadata"]["creationTimestamp"] = json!(jiff::Timestamp::now().to_string());
        self.store(key, None, object)
    }
}

/// A unique uid per created object.
fn uuid_like(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

impl MemoryCluster {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("memory cluster lock poisoned")
    }

    /// Creates `object` as a user would (no field manager involved).
    pub fn insert(&self, key: &ObjectKey, object: Value) -> Value {
        self.state().insert_new(key, object)
    }

    /// The stored object.
    pub fn object(&self, key: &ObjectKey) -> Option<Value> {
        self.state().objects.get(&key_of(key)).cloned()
    }

    /// The object at `key` as the type `K`; panics if it does not parse
    /// (a test's fixture is wrong).
    pub fn typed<K: serde::de::DeserializeOwned>(&self, key: &ObjectKey) -> Option<K> {
        let object = self.object(key)?;
        Some(super::typed(object).unwrap_or_else(|error| {
            panic!(
                "{} {:?} does not parse: {error}",
                key.resource.kind, key.name
            )
        }))
    }

    /// Deletes as the API server does: marks an object with finalizers,
    /// removes one without.
    pub fn delete(&self, key: &ObjectKey) {
        let mut state = self.state();
        let Some(mut object) = state.objects.get(&key_of(key)).cloned() else {
            return;
        };
        if object.pointer("/metadata/deletionTimestamp").is_none() {
            object["metadata"]["deletionTimestamp"] = json!(jiff::Timestamp::now().to_string());
        }
        let before = object.clone();
        state.store(key, Some(&before), object);
    }

    /// A user's edit: merges `patch` without a precondition.
    pub fn edit(&self, key: &ObjectKey, patch: &Value) -> Value {
        let mut state = self.state();
        let before = state
            .objects
            .get(&key_of(key))
            .cloned()
            .expect("edited object exists");
        let mut object = before.clone();
        json_patch::merge(&mut object, patch);
        state.store(key, Some(&before), object)
    }

    /// The objects of a kind, by `apiVersion` and `kind`.
    pub fn all(&self, api_version: &str, kind: &str) -> Vec<Value> {
        self.state()
            .objects
            .iter()
            .filter(|((v, k, _, _), _)| v == api_version && k == kind)
            .map(|(_, o)| o.clone())
            .collect()
    }

    /// The objects of `resource` whose labels satisfy `labels`.
    fn matching(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        labels: &str,
    ) -> Vec<Value> {
        self.all(&resource.api_version, &resource.kind)
            .into_iter()
            .filter(|o| {
                namespace.is_none()
                    || o.pointer("/metadata/namespace").and_then(Value::as_str) == namespace
            })
            .filter(|o| matches(o, labels))
            .collect()
    }

    /// How many writes were made through [`Cluster`].
    pub fn writes(&self) -> usize {
        self.state().writes
    }

    /// Makes the next writes whose body contains `needle` answer with these
    /// HTTP codes, one write each, in order.
    pub fn refuse_writes_containing(&self, needle: &str, codes: &[u16]) {
        self.state()
            .refusals
            .extend(codes.iter().map(|code| (needle.to_owned(), *code)));
    }
}

impl Cluster for MemoryCluster {
    fn get<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, Result<Option<Value>, kube::Error>> {
        let found = self.object(key);
        Box::pin(async move { Ok(found) })
    }

    /// Always current: there is no cache to lag.
    fn get_watched<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Value>, kube::Error>> {
        self.get(key)
    }

    fn count_watched<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Result<usize, kube::Error>> {
        let count = self.matching(resource, namespace, labels).len();
        Box::pin(async move { Ok(count) })
    }

    fn labels_watched<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<BTreeMap<String, String>>, kube::Error>> {
        let labels = self.object(key).map(|object| {
            object
                .pointer("/metadata/labels")
                .cloned()
                .map(|labels| serde_json::from_value(labels).unwrap_or_default())
                .unwrap_or_default()
        });
        Box::pin(async move { Ok(labels) })
    }

    fn list<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, kube::Error>> {
        let found = self.matching(resource, namespace, labels);
        Box::pin(async move { Ok(found) })
    }

    fn merge_patch<'a>(
        &'a self,
        key: &'a ObjectKey,
        mut patch: Value,
    ) -> BoxFuture<'a, Result<Value, kube::Error>> {
        let result = (|| {
            let mut state = self.state();
            state.admit(&patch)?;
            let before = state.existing(key, &mut patch)?;
            let mut object = before.clone();
            json_patch::merge(&mut object, &patch);
            // The main resource does not carry status changes.
            match before.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => _ = object.as_object_mut().map(|o| o.remove("status")),
            }
            Ok(state.store(key, Some(&before), object))
        })();
        Box::pin(async move { result })
    }

    fn apply<'a>(
        &'a self,
        key: &'a ObjectKey,
        mut body: Value,
        status: bool,
    ) -> BoxFuture<'a, Result<Value, kube::Error>> {
        let result = (|| {
            let mut state = self.state();
            let exists = state.objects.contains_key(&key_of(key));
            state.admit(&body)?;
            if !exists && !status {
                return Ok(state.insert_new(key, body));
            }
            let before = state.existing(key, &mut body)?;
            let mut object = before.clone();
            if status {
                object["status"] = body.get("status").cloned().unwrap_or(Value::Null);
            } else {
                for (field, value) in body.as_object().into_iter().flatten() {
                    if field == "metadata" {
                        json_patch::merge(&mut object["metadata"], value);
                    } else if field != "status" {
                        object[field] = value.clone();
                    }
                }
            }
            Ok(state.store(key, Some(&before), object))
        })();
        Box::pin(async move { result })
    }

    fn create<'a>(
        &'a self,
        key: &'a ObjectKey,
        body: Value,
    ) -> BoxFuture<'a, Result<Value, kube::Error>> {
        let result = (|| {
            let mut state = self.state();
            if state.objects.contains_key(&key_of(key)) {
                return Err(error(
                    409,
                    "AlreadyExists",
                    format!("{} {:?} already exists", key.resource.kind, key.name),
                ));
            }
            state.admit(&body)?;
            Ok(state.insert_new(key, body))
        })();
        Box::pin(async move { result })
    }
}

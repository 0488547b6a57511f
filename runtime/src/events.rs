//! Kubernetes Events about managed resources, written as core/v1 Events: in
//! a namespaced resource's own namespace (where its owner can read them),
//! and in the `default` namespace for a cluster-scoped one, as
//! crossplane-runtime's recorder does.
//!
//! Not kube's `events.k8s.io` recorder: API servers before 1.22 reject a
//! new-style Event about a cluster-scoped object unless it lives in
//! `kube-system`. The legacy form is accepted by every version and shown by
//! `kubectl describe`.
//!
//! Repeats are aggregated, as client-go's event correlator does: the same
//! type, reason and message about the same object again raises the first
//! Event's `count` and `lastTimestamp` instead of writing a new Event, so a
//! resource failing in a loop costs one Event, not one per reconcile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;
use serde_json::json;

use crate::cluster::{Cluster, ObjectKey};

/// Where Events about cluster-scoped objects go.
const EVENT_NAMESPACE: &str = "default";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

/// How many distinct Events are remembered for aggregation; past that the
/// memory starts again (a repeat then writes one new Event).
const REMEMBERED: usize = 4096;

/// What makes two Events the same one.
type Identity = (String, EventType, String, String);

pub struct Recorder {
    cluster: Arc<dyn Cluster>,
    /// `source.component` of every Event written: the provider's name.
    component: String,
    /// The Event written for each identity, and its count.
    written: Mutex<HashMap<Identity, (String, i32)>>,
}

impl Recorder {
    pub fn new(cluster: Arc<dyn Cluster>, component: &str) -> Self {
        Self {
            cluster,
            component: component.to_owned(),
            written: Mutex::new(HashMap::new()),
        }
    }

    fn written(&self) -> std::sync::MutexGuard<'_, HashMap<Identity, (String, i32)>> {
        self.written.lock().expect("event memory lock poisoned")
    }

    /// Writes one Event about `regarding`.
    pub async fn publish(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        message: &str,
    ) -> Result<(), kube::Error> {
        let now = Time(jiff::Timestamp::now());
        let identity: Identity = (
            regarding.uid.clone().unwrap_or_default(),
            type_,
            reason.to_owned(),
            message.to_owned(),
        );
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| EVENT_NAMESPACE.to_owned());
        let seen = self.written().get(&identity).cloned();
        if let Some((name, count)) = seen {
            let at = ObjectKey::of::<Event>(Some(&namespace), &name);
            let patch = json!({ "count": count + 1, "lastTimestamp": &now });
            match self.cluster.merge_patch(&at, patch).await {
                Ok(_) => {
                    self.written().insert(identity, (name, count + 1));
                    return Ok(());
                }
                // Expired (Events live an hour): write a new one.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or("object"),
            now.0.as_nanosecond()
        );
        let at = ObjectKey::of::<Event>(Some(&namespace), &name);
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: regarding,
            type_: Some(format!("{type_:?}")),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            ..Event::default()
        };
        let mut body = serde_json::to_value(&event).map_err(kube::Error::SerdeError)?;
        body["apiVersion"] = "v1".into();
        body["kind"] = "Event".into();
        self.cluster.create(&at, body).await?;
        let mut written = self.written();
        if written.len() >= REMEMBERED {
            written.clear();
        }
        written.insert(identity, (name, 1));
        Ok(())
    }
}

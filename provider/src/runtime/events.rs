//! Kubernetes Events about managed resources, written as core/v1 Events in
//! the `default` namespace, as crossplane-runtime's recorder does.
//!
//! Not kube's `events.k8s.io` recorder: API servers before 1.22 reject a
//! new-style Event about a cluster-scoped object unless it lives in
//! `kube-system`, and every managed resource is cluster-scoped. The legacy
//! form is accepted by every version and shown by `kubectl describe`.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

/// Where Events about cluster-scoped objects go.
const EVENT_NAMESPACE: &str = "default";
/// `source.component` of every Event the provider writes.
const COMPONENT: &str = "provider-fakecloud";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

pub struct Recorder {
    api: Api<Event>,
}

impl Recorder {
    pub fn new(kube: kube::Client) -> Self {
        Self {
            api: Api::namespaced(kube, EVENT_NAMESPACE),
        }
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
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or("object"),
            now.0.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(EVENT_NAMESPACE.to_owned()),
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
                component: Some(COMPONENT.to_owned()),
                host: None,
            }),
            reporting_component: Some(COMPONENT.to_owned()),
            ..Event::default()
        };
        self.api
            .create(&PostParams::default(), &event)
            .await
            .map(|_| ())
    }
}

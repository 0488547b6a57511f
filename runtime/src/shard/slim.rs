//! The assigner's copy of an unassigned object: the metadata it reads,
//! parsed without what it never reads.
//!
//! The leader's watch of unassigned objects lists every new object, and at
//! a start with 30,000 objects applied before it, all of them in one answer
//! from the watch cache, held until each is labelled. A full `ObjectMeta`
//! parses each object's `managedFields` into a tree of maps (a few KB an
//! object), which made the leader's peak about 55 MiB above the other
//! replicas'. This type skips them as it parses (serde ignores fields it
//! does not name, without allocating), and drops kubectl's
//! last-applied-configuration annotation (a second copy of the object).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ApiResource, ObjectMeta};
use kube::core::DynamicResourceScope;
use serde::{Deserialize, Deserializer};

/// The annotation `kubectl apply` (client side) keeps the whole object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// An object of any kind, with its name, namespace, uid, resourceVersion,
/// creation and deletion times, labels and annotations (but
/// [`LAST_APPLIED`]); nothing else.
#[derive(Clone, Debug)]
pub(crate) struct Slim {
    pub metadata: ObjectMeta,
}

impl<'de> Deserialize<'de> for Slim {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            metadata: WireMeta,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct WireMeta {
            name: Option<String>,
            namespace: Option<String>,
            uid: Option<String>,
            resource_version: Option<String>,
            creation_timestamp: Option<Time>,
            deletion_timestamp: Option<Time>,
            labels: Option<BTreeMap<String, String>>,
            annotations: Option<BTreeMap<String, String>>,
        }
        let Wire { metadata: meta } = Wire::deserialize(deserializer)?;
        let annotations = meta.annotations.map(|mut annotations| {
            annotations.remove(LAST_APPLIED);
            annotations
        });
        Ok(Slim {
            metadata: ObjectMeta {
                name: meta.name,
                namespace: meta.namespace,
                uid: meta.uid,
                resource_version: meta.resource_version,
                creation_timestamp: meta.creation_timestamp,
                deletion_timestamp: meta.deletion_timestamp,
                labels: meta.labels,
                annotations,
                ..ObjectMeta::default()
            },
        })
    }
}

impl kube::Resource for Slim {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_what_the_assigner_reads_and_drops_managed_fields_and_last_applied() {
        let object = json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1",
            "kind": "VPC",
            "metadata": {
                "name": "a", "namespace": "team", "uid": "u-1", "resourceVersion": "42",
                "creationTimestamp": "2026-11-29T00:00:00Z",
                "labels": {"fakecloud.crossplane.io/shard": "replica-0", "app": "x"},
                "annotations": {
                    "fakecloud.crossplane.io/shard-next": "replica-1",
                    LAST_APPLIED: "{\"the\":\"whole object\"}",
                },
                "managedFields": [{
                    "manager": "kubectl", "operation": "Apply",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:forProvider": {"f:region": {}}}},
                }],
                "finalizers": ["finalizer.managedresource.crossplane.io"],
            },
            "spec": {"forProvider": {"region": "us-east-1"}},
        });
        let slim: Slim = serde_json::from_value(object).expect("parses");
        let meta = &slim.metadata;
        assert_eq!(meta.name.as_deref(), Some("a"));
        assert_eq!(meta.namespace.as_deref(), Some("team"));
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert_eq!(meta.resource_version.as_deref(), Some("42"));
        assert!(meta.creation_timestamp.is_some());
        let labels = meta.labels.as_ref().expect("labels");
        assert_eq!(labels.len(), 2);
        assert_eq!(labels["fakecloud.crossplane.io/shard"], "replica-0");
        let annotations = meta.annotations.as_ref().expect("annotations");
        assert_eq!(
            annotations.keys().collect::<Vec<_>>(),
            ["fakecloud.crossplane.io/shard-next"]
        );
        assert!(meta.managed_fields.is_none(), "managedFields are not kept");
        assert!(meta.finalizers.is_none(), "nor anything else unread");
    }

    #[test]
    fn a_cluster_scoped_object_with_no_labels_parses_and_bad_input_is_refused() {
        let slim: Slim =
            serde_json::from_value(json!({"metadata": {"name": "b"}})).expect("parses");
        assert_eq!(slim.metadata.name.as_deref(), Some("b"));
        assert!(slim.metadata.namespace.is_none());
        assert!(slim.metadata.labels.is_none());

        let error = serde_json::from_value::<Slim>(json!({"spec": {}})).expect_err("no metadata");
        assert!(error.to_string().contains("metadata"), "{error}");
        let error = serde_json::from_value::<Slim>(json!({"metadata": {"labels": {"a": 1}}}))
            .expect_err("a label that is not a string");
        assert!(error.to_string().contains("string"), "{error}");
    }
}

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
//!
//! The assigner's pages and the answers to its writes are parsed the same
//! way ([`Slim::list`], [`Slim::patch`]): parsed as `PartialObjectMeta`,
//! each page of 500 was a few MB of `managedFields` trees made and
//! dropped while the replica's own cache grew beside them, and the
//! leader peaked 5 to 6 MiB above the other replicas at 30,000 VPCs
//! (2 MiB since).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{ApiResource, ListParams, ObjectList, ObjectMeta, Patch, PatchParams};
use kube::core::{DynamicResourceScope, Request};
use serde::{Deserialize, Deserializer, Serialize};

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

impl Slim {
    /// `Api::list_metadata`'s request (metadata only, from the API
    /// server), each object parsed as a [`Slim`].
    pub(crate) async fn list(
        api: &Api<Slim>,
        params: &ListParams,
    ) -> Result<ObjectList<Slim>, kube::Error> {
        let request = Request::new(api.resource_url())
            .list_metadata(params)
            .map_err(kube::Error::BuildRequest)?;
        api.clone().into_client().request(request).await
    }

    /// `Api::patch_metadata`'s request, its answer parsed as a [`Slim`].
    pub(crate) async fn patch<P: Serialize + std::fmt::Debug>(
        api: &Api<Slim>,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Slim, kube::Error> {
        let request = Request::new(api.resource_url())
            .patch_metadata(name, params, patch)
            .map_err(kube::Error::BuildRequest)?;
        api.clone().into_client().request(request).await
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
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::watch::tests::scripted_recording;

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

    /// A scripted API server ([`scripted_recording`]) that records each
    /// request's method, path and query, `Accept` and `Content-Type`.
    fn recording(answers: Vec<(u16, String)>) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
        scripted_recording(answers, |request| {
            let header = |name| {
                request
                    .headers()
                    .get(name)
                    .map(|value: &http::HeaderValue| value.to_str().unwrap_or("?").to_owned())
                    .unwrap_or_default()
            };
            format!(
                "{} {} accept={} type={}",
                request.method(),
                request.uri(),
                header(http::header::ACCEPT),
                header(http::header::CONTENT_TYPE),
            )
        })
    }

    fn vpcs() -> ApiResource {
        ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "network.fakecloud.crossplane.io",
            "v1alpha1",
            "VPC",
        ))
    }

    /// One object as the API server sends it in a metadata-only answer.
    fn partial(name: &str) -> serde_json::Value {
        json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {
                "name": name, "namespace": "team", "resourceVersion": "7",
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
            },
        })
    }

    #[tokio::test]
    async fn lists_and_patches_metadata_only_and_keeps_the_slim_parts() {
        let page = json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
            "metadata": {"resourceVersion": "9", "continue": "next-page"},
            "items": [partial("a"), partial("b")],
        });
        let (client, asked) = recording(vec![
            (200, page.to_string()),
            (200, partial("a").to_string()),
            (
                404,
                json!({"kind": "Status", "code": 404, "reason": "NotFound",
                "message": "vpcs \"gone\" not found"})
                .to_string(),
            ),
        ]);
        let api: Api<Slim> = Api::all_with(client, &vpcs());

        let listed = Slim::list(&api, &ListParams::default().labels("!shard").limit(500))
            .await
            .expect("the page parses");
        let names: Vec<_> = listed
            .items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(
            listed
                .items
                .iter()
                .all(|o| o.metadata.managed_fields.is_none())
        );
        assert_eq!(listed.metadata.continue_.as_deref(), Some("next-page"));

        let patch = Patch::Merge(json!({"metadata": {"labels": {"shard": "replica-0"}}}));
        let written = Slim::patch(&api, "a", &PatchParams::default(), &patch)
            .await
            .expect("the answer parses");
        assert_eq!(written.metadata.name.as_deref(), Some("a"));
        assert!(written.metadata.managed_fields.is_none());

        let error = Slim::patch(&api, "gone", &PatchParams::default(), &patch)
            .await
            .expect_err("a 404 is the caller's to handle");
        assert!(
            matches!(&error, kube::Error::Api(status) if status.code == 404),
            "{error}"
        );

        let asked = asked.lock().unwrap().clone();
        let metadata_only = "accept=application/json;as=PartialObjectMetadata";
        assert!(
            asked[0].starts_with("GET /apis/network.fakecloud.crossplane.io/v1alpha1/vpcs?"),
            "{}",
            asked[0]
        );
        assert!(
            asked[0].contains("labelSelector=%21shard") && asked[0].contains("limit=500"),
            "{}",
            asked[0]
        );
        assert!(
            asked[0].contains(&format!("{metadata_only}List;")),
            "{}",
            asked[0]
        );
        assert!(
            asked[1].starts_with("PATCH /apis/network.fakecloud.crossplane.io/v1alpha1/vpcs/a?"),
            "{}",
            asked[1]
        );
        assert!(
            asked[1].contains(&format!("{metadata_only};")),
            "{}",
            asked[1]
        );
        assert!(
            asked[1].ends_with("type=application/merge-patch+json"),
            "{}",
            asked[1]
        );
    }
}

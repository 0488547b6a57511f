//! Reading manifests and installing or deleting CRDs.
//!
//! CRDs are applied server-side from their JSON form, not through the typed
//! `CustomResourceDefinition`, so a field the typed struct does not know is
//! sent as written and any rejection comes from the API server itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::try_join_all;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::Value;

use crate::conversion::WebhookTarget;
use crate::error::ClusterError;

/// Field manager of every write the harness makes.
pub const FIELD_MANAGER: &str = "e2e-harness";

/// How long a CRD may take to become Established or to disappear.
pub const CRD_TIMEOUT: Duration = Duration::from_secs(30);

/// The CEL rules key that servers older than 1.25 do not know.
const CEL_RULES_KEY: &str = "x-kubernetes-validations";

/// Names another folder as the package (`E2E_PACKAGE_DIR`): the tools
/// image carries the package but not the repository it was built from.
pub const PACKAGE_DIR_ENV: &str = "E2E_PACKAGE_DIR";

/// The Crossplane package's folder: `E2E_PACKAGE_DIR`, else the
/// repository's `package/`.
pub fn package_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(PACKAGE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|root| root.join("package"))
        .unwrap_or_else(|| PathBuf::from("package"))
}

/// `package/crds`: the generated CRDs.
pub fn package_crds_dir() -> PathBuf {
    package_dir().join("crds")
}

/// `package/examples`: one manifest per user story.
pub fn package_examples_dir() -> PathBuf {
    package_dir().join("examples")
}

/// The `*.yaml` / `*.yml` files of `dir`, sorted by name.
pub fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, ClusterError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| ClusterError::io(format!("listing {}", dir.display()), e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every non-empty document of a (multi-document) YAML file. A document
/// that is not a Kubernetes object (no `apiVersion`/`kind`) is an error.
pub fn load_manifests(path: &Path) -> Result<Vec<Value>, ClusterError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ClusterError::io(format!("reading {}", path.display()), e))?;
    parse_manifests(&text).map_err(|reason| ClusterError::Manifest {
        path: path.to_path_buf(),
        reason,
    })
}

fn parse_manifests(text: &str) -> Result<Vec<Value>, String> {
    use serde::Deserialize as _;
    let mut docs = Vec::new();
    for (index, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(doc).map_err(|e| format!("document {index}: {e}"))?;
        if value.is_null() {
            continue;
        }
        let has = |key: &str| value.get(key).and_then(Value::as_str).is_some();
        if !has("apiVersion") || !has("kind") {
            return Err(format!(
                "document {index} is not a Kubernetes object (apiVersion and kind are required)"
            ));
        }
        docs.push(value);
    }
    Ok(docs)
}

/// Removes every `x-kubernetes-validations` key, at any depth; returns how
/// many were removed.
pub fn strip_cel_rules(value: &mut Value) -> usize {
    match value {
        Value::Object(map) => {
            let removed = usize::from(map.remove(CEL_RULES_KEY).is_some());
            removed + map.values_mut().map(strip_cel_rules).sum::<usize>()
        }
        Value::Array(items) => items.iter_mut().map(strip_cel_rules).sum(),
        _ => 0,
    }
}

/// Whether a server of this version understands CEL validation rules
/// (`x-kubernetes-validations`, beta and on by default from 1.25).
pub fn supports_cel_rules(major: &str, minor: &str) -> bool {
    let number = |s: &str| {
        s.trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse::<u32>()
            .ok()
    };
    match (number(major), number(minor)) {
        (Some(major), Some(minor)) => major > 1 || minor >= 25,
        // An unparsable version is a development build: assume it is new.
        _ => true,
    }
}

/// Applies CRDs server-side and waits until every one is Established.
/// Returns their names in input order. A CRD whose conversion is a
/// webhook is pointed at `webhook` first ([`crate::conversion`]).
pub(crate) async fn install(
    client: &Client,
    crds: Vec<Value>,
    strip_cel: bool,
    webhook: Option<&WebhookTarget>,
) -> Result<Vec<String>, ClusterError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::with_capacity(crds.len());
    // One line for the whole set, not one per CRD: a failing test's output
    // starts with what it logged, and a CI log shows only its first lines.
    let (mut stripped_crds, mut stripped_rules) = (0, 0);
    for mut crd in crds {
        let name = crd_name(&crd)?;
        if let Some(webhook) = webhook {
            webhook.wire(&mut crd);
        }
        if strip_cel {
            let removed = strip_cel_rules(&mut crd);
            if removed > 0 {
                stripped_crds += 1;
                stripped_rules += removed;
            }
        }
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(|e| ClusterError::kube(format!("applying CRD {name}"), e))?;
        names.push(name);
    }
    if stripped_crds > 0 {
        tracing::warn!(
            crds = stripped_crds,
            rules = stripped_rules,
            "server predates CEL validation rules (< 1.25): installing without x-kubernetes-validations; CEL rules are covered by the apis unit tests"
        );
    }
    try_join_all(names.iter().map(|name| wait_established(&api, name))).await?;
    Ok(names)
}

async fn wait_established(
    api: &Api<CustomResourceDefinition>,
    name: &str,
) -> Result<(), ClusterError> {
    tokio::time::timeout(
        CRD_TIMEOUT,
        await_condition(api.clone(), name, conditions::is_crd_established()),
    )
    .await
    .map_err(|_| ClusterError::CrdTimeout {
        name: name.to_owned(),
        wanted: "Established",
        waited: CRD_TIMEOUT,
    })?
    .map_err(|error| ClusterError::Wait {
        context: format!("waiting for CRD {name} to be Established"),
        error,
    })?;
    Ok(())
}

/// Names of the provider's CRDs (any of its API groups) the cluster has.
pub async fn installed_package_crds(client: &Client) -> Result<Vec<String>, ClusterError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let list = api
        .list(&Default::default())
        .await
        .map_err(|e| ClusterError::kube("listing CRDs", e))?;
    Ok(list
        .items
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| {
            name.ends_with(".fakecloud.crossplane.io")
                || name.ends_with(".fakecloud.m.crossplane.io")
        })
        .collect())
}

/// Deletes a CRD and waits until it is gone (its custom resources with it).
/// Deleting a CRD that does not exist is not an error.
pub(crate) async fn delete(client: &Client, name: &str) -> Result<(), ClusterError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let uid = match api
        .get_opt(name)
        .await
        .map_err(|e| ClusterError::kube(format!("reading CRD {name}"), e))?
    {
        Some(crd) => crd.uid(),
        None => return Ok(()),
    };
    match api.delete(name, &DeleteParams::foreground()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
        Err(e) => return Err(ClusterError::kube(format!("deleting CRD {name}"), e)),
    }
    tokio::time::timeout(
        CRD_TIMEOUT,
        await_condition(api, name, conditions::is_deleted(&uid.unwrap_or_default())),
    )
    .await
    .map_err(|_| ClusterError::CrdTimeout {
        name: name.to_owned(),
        wanted: "deleted",
        waited: CRD_TIMEOUT,
    })?
    .map_err(|error| ClusterError::Wait {
        context: format!("waiting for CRD {name} to be deleted"),
        error,
    })?;
    Ok(())
}

fn crd_name(crd: &Value) -> Result<String, ClusterError> {
    let kind = crd.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind != "CustomResourceDefinition" || name.is_empty() {
        return Err(ClusterError::Manifest {
            path: PathBuf::from(format!("<{kind} {name}>")),
            reason: "expected a CustomResourceDefinition with metadata.name".to_owned(),
        });
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cel_rules_are_removed_at_every_depth_and_nothing_else() {
        let mut schema = json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "true"}],
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.a == oldSelf.a"}],
                    "properties": {"items": {"type": "array", "items": {
                        "type": "object",
                        "x-kubernetes-validations": [{"rule": "has(self.b)"}],
                        "properties": {"b": {"type": "string"}}
                    }}}
                }
            }
        });
        assert_eq!(strip_cel_rules(&mut schema), 3);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"b": {"type": "string"}}}
                }}}}
            })
        );
        assert_eq!(strip_cel_rules(&mut schema), 0);
    }

    #[test]
    fn cel_support_starts_at_1_25() {
        assert!(!supports_cel_rules("1", "20"));
        assert!(!supports_cel_rules("1", "24+"));
        assert!(supports_cel_rules("1", "25"));
        assert!(supports_cel_rules("1", "31+"));
        assert!(supports_cel_rules("2", "0"));
        assert!(
            supports_cel_rules("", ""),
            "unknown versions are assumed new"
        );
    }

    #[test]
    fn manifests_skip_empty_documents_and_reject_non_objects() {
        let docs = parse_manifests(
            "---\napiVersion: v1\nkind: Secret\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\n",
        )
        .unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["kind"], "ConfigMap");

        let err = parse_manifests("apiVersion: v1\nkind: Secret\n---\nname: not-an-object\n")
            .unwrap_err();
        assert!(
            err.contains("document 1 is not a Kubernetes object"),
            "{err}"
        );
        let err = parse_manifests("kind: [unclosed\n").unwrap_err();
        assert!(err.starts_with("document 0:"), "{err}");
    }

    #[test]
    fn only_named_crds_are_installed() {
        assert!(
            crd_name(&json!({"kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}}))
                .is_ok()
        );
        let err = crd_name(&json!({"kind": "ConfigMap", "metadata": {"name": "x"}})).unwrap_err();
        assert!(
            err.to_string()
                .contains("expected a CustomResourceDefinition"),
            "{err}"
        );
    }
}

//! Who the provider runs as: a ServiceAccount bound to one ClusterRole, and
//! the ClusterRole Crossplane grants a provider package.

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::crds::{load_manifests, package_crds_dir, yaml_files};
use crate::error::ClusterError;

/// The ClusterRole Crossplane's RBAC manager grants a provider package with
/// the `safe-start` capability, made by the same rule from the package's
/// CRDs: get, list, watch, update, patch and create on each CRD's resource
/// and its status, update on its finalizers, every verb on Secrets,
/// ConfigMaps, Events and Leases, and read-only access to CRDs (to see
/// which kinds are active).
pub fn crossplane_safe_start_role() -> Result<ClusterRole, ClusterError> {
    let mut rules = Vec::new();
    for file in yaml_files(&package_crds_dir())? {
        for crd in load_manifests(&file)? {
            let names = (
                crd["spec"]["group"].as_str(),
                crd["spec"]["names"]["plural"].as_str(),
            );
            let (Some(group), Some(plural)) = names else {
                return Err(ClusterError::Manifest {
                    path: file,
                    reason: "a CRD without spec.group or spec.names.plural".into(),
                });
            };
            rules.push(json!({
                "apiGroups": [group],
                "resources": [plural, format!("{plural}/status")],
                "verbs": ["get", "list", "watch", "update", "patch", "create"],
            }));
            rules.push(json!({
                "apiGroups": [group],
                "resources": [format!("{plural}/finalizers")],
                "verbs": ["update"],
            }));
        }
    }
    rules.push(json!({
        "apiGroups": [""],
        "resources": ["secrets", "configmaps", "events"],
        "verbs": ["*"],
    }));
    rules.push(json!({
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["*"],
    }));
    rules.push(json!({
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "watch"],
    }));
    Ok(serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "crossplane:provider:provider-fakecloud:system" },
        "rules": rules,
    }))
    .expect("the rules above form a ClusterRole"))
}

/// Creates `role`, the ServiceAccount `namespace/name` and a binding of the
/// one to the other, and returns an hour's token for the account from the
/// TokenRequest API: an identity with that role's permissions and no more.
pub async fn bind_service_account(
    client: &Client,
    namespace: &str,
    name: &str,
    role: &ClusterRole,
) -> Result<String, ClusterError> {
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), role)
        .await
        .map_err(|e| ClusterError::kube(format!("creating ClusterRole {}", role.name_any()), e))?;
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
    let account = serde_json::from_value(json!({ "metadata": { "name": name } }))
        .expect("a valid ServiceAccount");
    accounts
        .create(&PostParams::default(), &account)
        .await
        .map_err(|e| {
            ClusterError::kube(format!("creating ServiceAccount {namespace}/{name}"), e)
        })?;
    let binding = serde_json::from_value(json!({
        "metadata": { "name": format!("{namespace}-{name}") },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.name_any() },
        "subjects": [{ "kind": "ServiceAccount", "name": name, "namespace": namespace }],
    }))
    .expect("a valid ClusterRoleBinding");
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .map_err(|e| ClusterError::kube(format!("binding {namespace}/{name}"), e))?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let granted = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .map_err(|e| ClusterError::kube(format!("a token for {namespace}/{name}"), e))?;
    granted
        .status
        .and_then(|s| s.token)
        .ok_or_else(|| ClusterError::NoToken(format!("{namespace}/{name}")))
}

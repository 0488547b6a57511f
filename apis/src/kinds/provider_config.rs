//! `ProviderConfig` and `ProviderConfigUsage`
//! (`fakecloud.crossplane.io/v1alpha1`): where fakecloud is and which API
//! key to use, and which managed resources use it.

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Condition, ProviderConfigReference, SecretKeySelector, TypedReference};

/// Where the credentials come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CredentialsSource {
    /// The API key is read from `secretRef`.
    Secret,
    /// No credentials: for a fakecloud that does not check API keys.
    None,
}

/// The fakecloud API key to use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("self.source != 'Secret' || has(self.secretRef)").message("secretRef is required when source is Secret"))]
pub struct ProviderCredentials {
    /// `Secret` or `None`.
    pub source: CredentialsSource,
    /// The Secret key holding the API key; required when `source` is
    /// `Secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeySelector>,
}

/// The observed state of a ProviderConfig.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigStatus {
    /// How many managed resources use this ProviderConfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<i64>,
    /// Conditions of the ProviderConfig.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// `spec` of a ProviderConfig.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "fakecloud.crossplane.io",
    version = "v1alpha1",
    kind = "ProviderConfig",
    singular = "providerconfig",
    plural = "providerconfigs",
    status = "ProviderConfigStatus",
    derive = "PartialEq",
    doc = "How the provider reaches fakecloud: its endpoint and the API key to use.",
    category = "crossplane",
    category = "provider",
    category = "fakecloud",
    printcolumn = r#"{"name":"ENDPOINT","type":"string","jsonPath":".spec.endpoint"}"#,
    printcolumn = r#"{"name":"SECRET-NAME","type":"string","jsonPath":".spec.credentials.secretRef.name","priority":1}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigSpec {
    /// Base URL of the fakecloud API, e.g. `http://fakecloud:8080`.
    #[schemars(regex(pattern = r"^https?://"))]
    pub endpoint: String,
    /// The API key to use.
    pub credentials: ProviderCredentials,
}

/// Records that a managed resource uses a ProviderConfig, so that the
/// ProviderConfig is not deleted from under it.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "fakecloud.crossplane.io",
    version = "v1alpha1",
    kind = "ProviderConfigUsage",
    singular = "providerconfigusage",
    plural = "providerconfigusages",
    no_spec,
    derive = "PartialEq",
    doc = "Records that a managed resource uses a ProviderConfig.",
    category = "crossplane",
    category = "provider",
    category = "fakecloud",
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"CONFIG-NAME","type":"string","jsonPath":".providerConfigRef.name"}"#,
    printcolumn = r#"{"name":"RESOURCE-KIND","type":"string","jsonPath":".resourceRef.kind"}"#,
    printcolumn = r#"{"name":"RESOURCE-NAME","type":"string","jsonPath":".resourceRef.name"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigUsageFields {
    /// The ProviderConfig in use.
    pub provider_config_ref: ProviderConfigReference,
    /// The managed resource using it.
    pub resource_ref: TypedReference,
}

//! Names of this provider's that Crossplane users and tools see: the
//! generic Crossplane ones are in [`crossplane_types::well_known`].

/// The categories every managed-resource CRD carries, so that
/// `kubectl get managed` and `kubectl get fakecloud` list them.
pub const MANAGED_CATEGORIES: [&str; 3] = ["crossplane", "managed", "fakecloud"];

/// Label on a legacy `ProviderConfigUsage` naming its `ProviderConfig`, so
/// the ProviderConfig controller counts its users by label.
pub const PROVIDER_CONFIG_LABEL: &str = "fakecloud.crossplane.io/provider-config";

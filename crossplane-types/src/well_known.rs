//! Names that Crossplane users and tools already know.
//!
//! They live here, beside the types, so that the provider, the examples and
//! the tests spell them once; a typo in an annotation name would silently
//! turn an import into a create.

/// The name of the resource in the cloud. Set by hand to import an existing
/// resource; set by the provider after a create to the cloud-assigned id.
pub const EXTERNAL_NAME_ANNOTATION: &str = "crossplane.io/external-name";

/// `"true"` stops all reconciliation of the object, like
/// `managementPolicies: []`.
pub const PAUSED_ANNOTATION: &str = "crossplane.io/paused";

/// Written (with an RFC 3339 time) just before the provider calls create, so
/// that a provider that dies mid-create knows on restart that a resource may
/// exist that it never recorded.
pub const EXTERNAL_CREATE_PENDING_ANNOTATION: &str = "crossplane.io/external-create-pending";

/// Written (with an RFC 3339 time) once a create call returned successfully.
pub const EXTERNAL_CREATE_SUCCEEDED_ANNOTATION: &str = "crossplane.io/external-create-succeeded";

/// Written (with an RFC 3339 time) when a create call failed.
pub const EXTERNAL_CREATE_FAILED_ANNOTATION: &str = "crossplane.io/external-create-failed";

/// Held on every managed resource until its external resource is gone or
/// orphaned.
pub const MANAGED_RESOURCE_FINALIZER: &str = "finalizer.managedresource.crossplane.io";

/// Held on a `ProviderConfig` while `ProviderConfigUsage` objects point at it,
/// so that credentials cannot be deleted from under live resources.
pub const PROVIDER_CONFIG_IN_USE_FINALIZER: &str = "in-use.crossplane.io";

/// The `type` of a connection Secret, as Crossplane writes it.
pub const CONNECTION_SECRET_TYPE: &str = "connection.crossplane.io/v1alpha1";

/// The `ProviderConfig` used when an MR names none.
pub const DEFAULT_PROVIDER_CONFIG_NAME: &str = "default";

/// Label on a namespaced `ProviderConfigUsage` naming the ProviderConfig or
/// ClusterProviderConfig in use (crossplane-runtime v2's label).
pub const PROVIDER_CONFIG_NAME_LABEL: &str = "crossplane.io/provider-config";

/// Label on a namespaced `ProviderConfigUsage` naming the kind in use:
/// `ProviderConfig` or `ClusterProviderConfig`.
pub const PROVIDER_CONFIG_KIND_LABEL: &str = "crossplane.io/provider-config-kind";

/// A managed resource's own poll period, as a Go duration (`30s`, `5m`,
/// `1h30m`): how long after a successful reconcile of a Ready resource it
/// is observed again, instead of the provider's `--poll-interval`; never
/// shorter than `--min-poll-interval` (crossplane-runtime v2's annotation).
pub const POLL_INTERVAL_ANNOTATION: &str = "crossplane.io/poll-interval";

/// An opaque token (typically a timestamp): a new value asks for a
/// reconcile now; once one has handled it, its value is recorded in
/// `status.lastHandledReconcileAt` (crossplane-runtime v2's annotation).
pub const RECONCILE_REQUESTED_AT_ANNOTATION: &str = "crossplane.io/reconcile-requested-at";

/// Crossplane's identifying tags, which crossplane-runtime's
/// `GetExternalTags` gives every taggable cloud resource a provider
/// creates, so that people find a managed resource's cloud resource in the
/// cloud's console: the kind (`vpc.network.fakecloud.m.crossplane.io`,
/// lower case), its name, its ProviderConfig's name and kind, and, for a
/// namespaced resource, its namespace.
pub const EXTERNAL_TAG_KIND: &str = "crossplane-kind";
/// See [`EXTERNAL_TAG_KIND`].
pub const EXTERNAL_TAG_NAME: &str = "crossplane-name";
/// See [`EXTERNAL_TAG_KIND`].
pub const EXTERNAL_TAG_PROVIDER_CONFIG: &str = "crossplane-providerconfig";
/// See [`EXTERNAL_TAG_KIND`].
pub const EXTERNAL_TAG_PROVIDER_CONFIG_KIND: &str = "crossplane-providerconfig-kind";
/// See [`EXTERNAL_TAG_KIND`]; only on namespaced resources.
pub const EXTERNAL_TAG_NAMESPACE: &str = "crossplane-namespace";

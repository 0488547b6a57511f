//! The Kubernetes API types every Crossplane managed resource shares, for
//! any provider written in Rust: the common spec fields (management
//! policies, ProviderConfig and connection-Secret references), references
//! and selectors between resources, conditions, the status shape, the two
//! scopes of Crossplane v2 (namespaced and legacy cluster-scoped), the
//! [`Managed`] trait through which a generic runtime reads a kind, the
//! well-known annotation, label and finalizer names, and the CEL rules the
//! CRDs carry. Beside them, the shared parts of query resources
//! ([`query`]), which own observe-only managed resources.
//!
//! It depends on the API types only (serde, schemars, k8s-openapi and
//! kube's core), so a crate of CRD types can use it without pulling in a
//! controller runtime.

pub mod condition;
pub mod drift;
pub mod managed;
pub mod policy;
pub mod provider_config;
pub mod query;
pub mod reference;
pub mod rules;
pub mod scope;
pub mod secret;
pub mod spec;
pub mod status;
pub mod well_known;

pub use condition::{Condition, ConditionStatus};
pub use drift::{Drift, DriftAction, DriftedField};
pub use managed::{ConnectionDetail, ExternalNameOrigin, Managed, ReferenceField};
pub use policy::{DeletionPolicy, ManagementAction};
pub use provider_config::{CredentialsSource, ProviderConfigStatus, ProviderCredentials};
pub use query::{Query, QueryMatch, QuerySpec, QueryStatus, Selection};
pub use reference::{
    NamespacedProviderConfigReference, NamespacedReference, NamespacedSelector,
    ProviderConfigRefKind, ProviderConfigReference, Reference, ReferencePolicy, ResolutionPolicy,
    ResolvePolicy, Selector, TypedReference,
};
pub use scope::{
    ClusterScoped, CommonSpec, LocateSecretKey, Namespaced, ProviderConfigKey, ProviderConfigKind,
    Scope, SecretKeyLocation, SecretLocation,
};
pub use secret::{
    LocalSecretKeySelector, LocalSecretReference, SecretKeySelector, SecretReference,
};
pub use spec::{NamespacedResourceSpec, ResourceSpec};
pub use status::ManagedStatus;

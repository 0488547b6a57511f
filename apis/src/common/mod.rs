//! Types every managed resource shares: policies, references, the common
//! spec fields, conditions, the status shape, and the two scopes.

pub mod condition;
pub mod policy;
pub mod reference;
pub mod scope;
pub mod secret;
pub mod spec;
pub mod status;

pub use condition::{Condition, ConditionStatus};
pub use policy::{DeletionPolicy, ManagementAction};
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

//! Types every managed resource shares: policies, references, the common
//! spec fields, conditions and the status shape.

pub mod condition;
pub mod policy;
pub mod reference;
pub mod secret;
pub mod spec;
pub mod status;

pub use condition::{Condition, ConditionStatus};
pub use policy::{DeletionPolicy, ManagementAction};
pub use reference::{
    ProviderConfigReference, Reference, ReferencePolicy, ResolutionPolicy, ResolvePolicy, Selector,
    TypedReference,
};
pub use secret::{SecretKeySelector, SecretReference};
pub use spec::ResourceSpec;
pub use status::ManagedStatus;

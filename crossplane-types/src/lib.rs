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
pub mod conversion;
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

/// Declares a managed resource kind once, on its parameters struct
/// (`spec.forProvider`).
///
/// From the one struct it makes:
/// - `<Root>InitParameters` (`spec.initProvider`): every field but the
///   identifiers and the scope's types (references, selectors, Secret
///   references), each optional as in the parameters;
/// - `<Root>Observation` (`status.atProvider`): every field but the
///   scope's types, each optional, plus the `observed` struct's fields
///   (what only the cloud reports: an id, a state) flattened in;
/// - `<Root>Status`, `ManagedStatus<<Root>Observation>`;
/// - `<Root>Spec` and the custom resource `<Root>` (kube's
///   `CustomResource`, namespaced, in `group`), with Crossplane's
///   categories and printer columns, and [`Managed`] for it;
/// - with `legacy_group`, also the legacy cluster-scoped resource in that
///   group: then the cluster-scoped `<Root>` is at the derive's site and
///   the namespaced one in a module `m` beside it (so one kind per module).
///
/// A generated form's field keeps the parameter's first sentence of docs
/// (up to a period followed by a capital), its `serde` attributes and, in
/// the init form, its `schemars` attributes but transforms (forProvider's
/// update rules, such as [`rules::immutable`]); list semantics
/// ([`rules::list_map`] and the other `list_*`) stay in every form.
///
/// The struct is generic over the scope when it holds the scope's types
/// (`S: Scope`, with `Option<S::Reference>` and so on); the derive then
/// uses `Params<Namespaced>` and `Params<ClusterScoped>`.
///
/// Kind settings, `#[managed(...)]` on the struct:
/// - `kind = "VPC"`, `group = "..."`, `version = "v1alpha1"`: required;
/// - `root = "Vpc"`: the Rust name of the resource type (default: `kind`);
///   the generated types are named from it;
/// - `singular`, `plural`: as kube's (default: the lowercase kind, and
///   kube's plural of it);
/// - `legacy_group = "..."`: also the cluster-scoped resource, in that group;
/// - `doc = "..."`: the kind's description; `noun = "the VPC"` names it in
///   the spec's field docs (default: `the <kind>`);
/// - `category = "..."` (repeatable), beside `crossplane` and `managed`;
/// - `rule = expr` (repeatable): a CEL rule on the spec (a
///   [`kube::core::Rule`], such as [`rules::required_to_create`]);
/// - `observed = Type`: the cloud-only fields of the observation (a struct
///   deriving `Clone, Debug, Default, PartialEq, Serialize, Deserialize,
///   JsonSchema`);
/// - `connection_details = EXPR`: a `&'static [ConnectionDetail]` (default
///   none);
/// - `external_name = AssignedByCloud | MetadataName` (default
///   `AssignedByCloud`).
///
/// Field settings, `#[managed(...)]` on a field:
/// - `identifier`: identifies the resource (a region), so it is in
///   forProvider only, never in initProvider;
/// - `not_observed`: the cloud does not report it;
/// - `init_doc = "..."`, `observed_doc = "..."`: that form's docs, when the
///   first sentence is not right;
/// - `reference(kind = "VPC", plural = "vpcs")`: filled from other
///   resources by `<field>Ref` / `<field>Selector` (or, for a list
///   `<stem>s`, `<stem>Refs` / `<stem>Selector`), fields the struct must
///   have; `group`, `legacy_group` and `version` default to the kind's
///   own, `value` (a JSON pointer into the target) to
///   `/status/atProvider/id`.
///
/// The crate using it needs `kube` (feature `derive`), `serde` and
/// `schemars` as dependencies: the generated code derives with them.
///
/// `tests/managed_resource.rs` declares a kind of each shape (one scope or
/// both, with a reference, a keyed list and cloud-only fields) and checks
/// every generated form; the runtime's minimal provider example uses it.
pub use crossplane_managed_derive::ManagedResource;

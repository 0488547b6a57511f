//! What a generic managed-resource runtime needs to know about each managed
//! kind, in one trait, so that it can reconcile every kind the same way.

use std::fmt::Debug;

use kube::{CustomResourceExt, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::scope::Scope;
use crate::status::ManagedStatus;

/// One key a kind writes to its connection Secret.
///
/// The MRD generator documents exactly these in `spec.connectionDetails`
/// and the provider publishes exactly these, so the two cannot drift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionDetail {
    /// The Secret data key.
    pub name: &'static str,
    /// What the value is, for users reading the MRD.
    pub description: &'static str,
}

/// Where a kind's external name comes from before the resource exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternalNameOrigin {
    /// The cloud assigns an id on create (`vpc-...`); until then the
    /// annotation is unset, and the provider records the id after create.
    AssignedByCloud,
    /// The client chooses the name; when the annotation is unset the
    /// provider sets it to `metadata.name` before creating.
    MetadataName,
}

/// A `forProvider` field that can be filled from other managed resources by
/// reference (`<field>Ref` / `<field>Refs`) or selector (`<field>Selector`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceField {
    /// The field that receives the value(s), e.g. `vpcId`.
    pub field: &'static str,
    /// The field holding the reference(s) by name, e.g. `vpcIdRef`.
    pub reference_field: &'static str,
    /// The field holding the label selector, e.g. `vpcIdSelector`.
    pub selector_field: &'static str,
    /// Whether `field` is a list (`subnetIds`, filled from `subnetIdRefs`)
    /// rather than a single value (`vpcId`, filled from `vpcIdRef`).
    pub many: bool,
    /// API group of the referenced kind.
    pub target_group: &'static str,
    /// API version of the referenced kind.
    pub target_version: &'static str,
    /// Kind of the referenced objects.
    pub target_kind: &'static str,
    /// Plural (resource) name of the referenced kind.
    pub target_plural: &'static str,
    /// JSON pointer, into the referenced object, of the value to copy.
    pub target_value_pointer: &'static str,
}

/// A managed-resource kind in one scope: its Crossplane spec fields, its
/// `forProvider` / `initProvider` / `atProvider` types and its status.
///
/// The runtime treats the three parameter types as JSON (it merges
/// `initProvider` under `forProvider` and compares `forProvider` with
/// `atProvider` field by field), which works because their fields share
/// names (see `docs/field-names.md`).
pub trait Managed:
    Resource<DynamicType = ()>
    + CustomResourceExt
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Namespaced or cluster-scoped, and the spec shapes that go with it.
    /// (Named so as not to clash with [`Resource::Scope`], kube's marker of
    /// the same fact.)
    type Scoped: Scope;
    /// `spec.forProvider`.
    type ForProvider: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// `spec.initProvider`.
    type InitProvider: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// `status.atProvider`.
    type AtProvider: Clone
        + Debug
        + PartialEq
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;

    /// The keys this kind writes to its connection Secret, in order.
    const CONNECTION_DETAILS: &'static [ConnectionDetail];
    /// The `forProvider` fields that references and selectors fill in.
    const REFERENCES: &'static [ReferenceField];
    /// Where the external name comes from before the resource exists.
    const EXTERNAL_NAME_ORIGIN: ExternalNameOrigin;

    /// `managementPolicies`, `providerConfigRef`,
    /// `writeConnectionSecretToRef` and, for the legacy kinds,
    /// `deletionPolicy`.
    fn resource_spec(&self) -> &<Self::Scoped as Scope>::Spec;
    /// `spec.forProvider`.
    fn for_provider(&self) -> &Self::ForProvider;
    /// `spec.forProvider`, for late initialisation and reference resolution.
    fn for_provider_mut(&mut self) -> &mut Self::ForProvider;
    /// `spec.initProvider`, if set.
    fn init_provider(&self) -> Option<&Self::InitProvider>;
    /// `status`, if set.
    fn managed_status(&self) -> Option<&ManagedStatus<Self::AtProvider>>;
    /// `status`, created empty if unset.
    fn managed_status_mut(&mut self) -> &mut ManagedStatus<Self::AtProvider>;
}

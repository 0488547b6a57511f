//! The Kubernetes API of the fakecloud Crossplane provider: the managed
//! resource kinds (`VPC`, `Subnet`, `NodeGroup`, `DatabaseInstance`) in
//! both scopes, the `ProviderConfig` kinds, and the generation of their
//! CRDs and MRDs. The types every managed resource shares (spec fields,
//! references, conditions, the [`crossplane_types::Managed`] trait) are
//! [`crossplane_types`]'.
//!
//! The Rust types are the one source of truth: `package/crds` and
//! `package/mrds` are generated from them (see [`generate`]), and so is the
//! API reference in `docs/reference/api` (see [`reference`](mod@reference)).

pub mod generate;
pub mod kinds;
pub mod reference;
pub mod well_known;

//! The Kubernetes API of the fakecloud Crossplane provider: the managed
//! resource kinds (`VPC`, `Subnet`, `NodeGroup`, `DatabaseInstance`), the
//! `ProviderConfig`, the Crossplane types they share, and the generation of
//! their CRDs and MRDs.
//!
//! The Rust types are the one source of truth: `package/crds` and
//! `package/mrds` are generated from them (see [`generate`]).

pub mod common;
pub mod generate;
pub mod kinds;
pub mod managed;
mod rules;
pub mod well_known;

pub use managed::{ConnectionDetail, ExternalNameOrigin, Managed, ReferenceField};

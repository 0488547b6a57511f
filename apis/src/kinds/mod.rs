//! The resource kinds, one module each; every managed kind is declared
//! once, on its parameters struct, by
//! [`ManagedResource`](crossplane_types::ManagedResource): its module holds
//! the legacy cluster-scoped resource and, in its `m` submodule, the
//! namespaced one. The query kinds, which own
//! observe-only managed resources, are in [`query`].

pub mod database_instance;
pub mod nodegroup;
pub mod provider_config;
pub mod query;
pub mod subnet;
pub mod vpc;

pub use database_instance::DatabaseInstance;
pub use nodegroup::NodeGroup;
pub use provider_config::{ProviderConfig, ProviderConfigUsage};
pub use query::{DatabaseInstanceQuery, NodeGroupQuery, SubnetQuery, VpcQuery};
pub use subnet::Subnet;
pub use vpc::Vpc;

use crossplane_types::conversion::KindVersions;

/// The kinds with more than one version, and how their versions convert:
/// the four namespaced managed kinds, at `v1alpha1` and `v1beta1`. The
/// legacy cluster-scoped kinds stay at `v1alpha1` alone: they are kept for
/// Crossplane v1 users, not evolved.
pub static CONVERSIONS: [&KindVersions; 4] = [
    &vpc::v1beta1::VERSIONS,
    &subnet::v1beta1::VERSIONS,
    &nodegroup::v1beta1::VERSIONS,
    &database_instance::v1beta1::VERSIONS,
];

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

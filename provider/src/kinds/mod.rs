//! The four managed-resource kinds, each a thin mapping of `forProvider`
//! onto fakecloud's API. Everything else is the generic runtime's.

mod database;
mod network;
mod node_group;

use std::sync::Arc;

use fakecloud::client::{ClientError, Versioned};
use runtime::gate::{Gated, Shutdown, Starter};
use runtime::{Context, ExternalError, ManagedKind, run_controller};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cloud::{CloudFailure, FakecloudConnect};
use crate::provider_config::ConfigKind;

/// Where every kind keeps its tags, and fakecloud's limit on them: created
/// resources get Crossplane's identifying tags there ([`runtime::tags`]).
const TAGS: runtime::TagsField = runtime::TagsField {
    field: "tags",
    max_entries: fakecloud::field_rules::TAGS_MAX,
};

/// Every controller the CRD gate may start, keyed by CRD: the four managed
/// kinds in both scopes (the namespaced ones first: Crossplane v2's), which
/// connect through `connect`, and the three ProviderConfig kinds.
pub fn gated(connect: Arc<FakecloudConnect>) -> Vec<Gated> {
    use apis::kinds::provider_config::{self, m};
    use apis::kinds::{database_instance, nodegroup, subnet, vpc};
    vec![
        managed::<vpc::m::Vpc>(&connect),
        managed::<subnet::m::Subnet>(&connect),
        managed::<nodegroup::m::NodeGroup>(&connect),
        managed::<database_instance::m::DatabaseInstance>(&connect),
        managed::<vpc::Vpc>(&connect),
        managed::<subnet::Subnet>(&connect),
        managed::<nodegroup::NodeGroup>(&connect),
        managed::<database_instance::DatabaseInstance>(&connect),
        config::<m::ProviderConfig>(),
        config::<m::ClusterProviderConfig>(),
        config::<provider_config::ProviderConfig>(),
    ]
}

/// The gate entry of a kind, keyed by its CRD's name (the query kinds'
/// too, [`crate::queries`]).
pub(crate) fn entry<K: kube::Resource<DynamicType = ()>>(start: Starter) -> Gated {
    // Once per kind at start-up: labels that live as long as the process.
    let crd_name = format!("{}.{}", K::plural(&()), K::group(&()));
    Gated {
        crd_name: crd_name.leak(),
        version: "v1alpha1",
        kind: runtime::kind_label::<K>().leak(),
        start,
    }
}

/// The gate entry of a managed kind: its controller is the generic one.
fn managed<K: ManagedKind<FakecloudConnect>>(connect: &Arc<FakecloudConnect>) -> Gated {
    let connect = connect.clone();
    entry::<K>(Arc::new(
        move |ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown| {
            Box::pin(run_controller::<K, _>(ctx, connect.clone(), kube, shutdown))
        },
    ))
}

/// The gate entry of a ProviderConfig kind.
fn config<P: ConfigKind>() -> Gated {
    entry::<P>(Arc::new(
        |ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown| {
            Box::pin(crate::provider_config::run::<P>(ctx, kube, shutdown))
        },
    ))
}

/// An observation from a `get_*` call: the resource, or `None` when the
/// cloud does not know it.
fn observed<T>(result: Result<Versioned<T>, ClientError>) -> Result<Option<T>, ExternalError> {
    match result {
        Ok(found) => Ok(Some(found.resource)),
        Err(error) if error.is_not_found() => Ok(None),
        Err(error) => Err(CloudFailure(error).into()),
    }
}

/// The create body of a kind, from the merged desired JSON. A missing
/// required field is reported by its wire name (`cidrBlock`), which is also
/// its `forProvider`/`initProvider` name.
fn create_body<T: DeserializeOwned>(desired: Value) -> Result<T, ExternalError> {
    serde_json::from_value(desired).map_err(|e| {
        ExternalError::InvalidSpec(format!(
            "{e} (set it in spec.forProvider or spec.initProvider)"
        ))
    })
}

/// A delete call's outcome: a resource that is already gone counts as
/// deleted, so a retried delete after a lost response is not an error.
fn deleted(result: Result<(), ClientError>) -> Result<(), ExternalError> {
    match result {
        Err(error) if !error.is_not_found() => Err(CloudFailure(error).into()),
        _ => Ok(()),
    }
}

/// Adds the client-chosen name to a create body under its wire key.
fn with_name(mut desired: Value, key: &str, name: Option<&str>) -> Result<Value, ExternalError> {
    let name = name
        .ok_or_else(|| ExternalError::InvalidSpec("no external name to create under".to_owned()))?;
    if let Value::Object(map) = &mut desired {
        map.insert(key.to_owned(), Value::String(name.to_owned()));
    }
    Ok(desired)
}

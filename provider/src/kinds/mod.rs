//! The four managed-resource kinds, each a thin mapping of `forProvider`
//! onto fakecloud's API. Everything else is the generic runtime's.

mod database;
mod later;
mod network;
mod node_group;

use std::sync::Arc;

use fakecloud::client::{ClientError, Versioned};
use fakecloud::model::Page;
use runtime::gate::{Shutdown, Starter};
use runtime::{Context, ExternalError, Provider};
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

/// `provider` with the four managed kinds in both scopes (the namespaced
/// ones first: Crossplane v2's, at their stored version `v1beta1`), which
/// connect through `connect`, and the three ProviderConfig kinds'
/// controllers.
pub fn add(provider: Provider, connect: &Arc<FakecloudConnect>) -> Provider {
    use apis::kinds::provider_config::{self, m};
    use apis::kinds::{database_instance, nodegroup, subnet, vpc};
    provider
        .managed::<vpc::v1beta1::Vpc, _>(connect.clone())
        .managed::<subnet::v1beta1::Subnet, _>(connect.clone())
        .managed::<nodegroup::v1beta1::NodeGroup, _>(connect.clone())
        .managed::<database_instance::v1beta1::DatabaseInstance, _>(connect.clone())
        .managed::<vpc::Vpc, _>(connect.clone())
        .managed::<subnet::Subnet, _>(connect.clone())
        .managed::<nodegroup::NodeGroup, _>(connect.clone())
        .managed::<database_instance::DatabaseInstance, _>(connect.clone())
        .controller::<m::ProviderConfig>(config::<m::ProviderConfig>())
        .controller::<m::ClusterProviderConfig>(config::<m::ClusterProviderConfig>())
        .controller::<provider_config::ProviderConfig>(config::<provider_config::ProviderConfig>())
}

/// The controller of a ProviderConfig kind: usage counts and the in-use
/// finalizer ([`crate::provider_config`]).
fn config<P: ConfigKind>() -> Starter {
    Arc::new(
        |ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown| {
            Box::pin(crate::provider_config::run::<P>(ctx, kube, shutdown))
        },
    )
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

/// The ids of a tag-filtered list's first page ([`runtime::CloudKind::find_tagged`]):
/// the tags name one managed resource, so more than a page of matches is
/// as ambiguous as two, and the first page shows enough of them.
fn tagged_ids<T>(
    result: Result<Page<T>, ClientError>,
    id: impl Fn(&T) -> String,
) -> Result<Vec<String>, ExternalError> {
    let page = result.map_err(CloudFailure)?;
    Ok(page.items.iter().map(id).collect())
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

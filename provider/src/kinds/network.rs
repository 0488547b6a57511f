//! VPC and Subnet: the same shape of kind. The cloud assigns the id that
//! becomes the external name, `region` steers every call, and the state
//! goes `pending` -> `available`. A Subnet's `vpcId` may come from
//! `vpcIdRef` or `vpcIdSelector`, which the runtime resolves to the
//! referenced VPC's `status.atProvider.id` before any of this runs.

use fakecloud::client::{Client, ListOptions};
use fakecloud::model::NetworkState;
use serde_json::{Map, Value};

use super::{create_body, deleted, observed, tagged_ids};
use crossplane_types::Scope;
use runtime::ExternalError;

use runtime::{CloudKind, Created, Details, Readiness, Session, TagsField};

use crate::cloud::{CloudFailure, FakecloudConnect};

/// Readiness of the network kinds: `pending` -> `available`.
fn network_readiness(state: NetworkState) -> Readiness {
    match state {
        NetworkState::Available => Readiness::Available,
        NetworkState::Pending => Readiness::Creating,
    }
}

/// One network kind: its `forProvider` type (generic over the scope where
/// it has references), fakecloud model, the fields fakecloud's update
/// refuses (create-only) and client calls. A macro rather
/// than a generic impl because fakecloud's client names a method per kind.
macro_rules! network_kind {
    ([$($generics:tt)*] $params:ty, $model:ty, [$($create_only:literal),*], $get:ident, $list:ident, $create:ident, $patch:ident, $delete:ident) => {
        impl<$($generics)*> CloudKind<FakecloudConnect> for $params {
            type Observation = $model;

            const STEERING_FIELDS: &'static [&'static str] = &["region"];

            const TAGS: Option<TagsField> = Some(super::TAGS);

            const CREATE_ONLY_FIELDS: &'static [&'static str] = &[$($create_only),*];

            async fn observe(
                &self,
                session: &Session<'_, Client>,
                id: &str,
            ) -> Result<Option<Self::Observation>, ExternalError> {
                observed(session.cloud.$get(&self.region, id).await)
            }

            async fn create(
                &self,
                session: &Session<'_, Client>,
                _: Option<&str>,
                desired: Value,
                idempotency_key: &str,
            ) -> Result<Created<Self::Observation>, ExternalError> {
                let body = create_body(desired)?;
                let created = session
                    .cloud
                    .$create(&self.region, &body, Some(idempotency_key))
                    .await
                    .map_err(CloudFailure)?
                    .resource;
                // fakecloud answers a create with the new resource: the
                // runtime's first observation, at no extra call.
                Ok(Created::answered(created.id.clone(), created))
            }

            async fn find_tagged(
                &self,
                session: &Session<'_, Client>,
                tags: &[(&'static str, String)],
            ) -> Result<Vec<String>, ExternalError> {
                let options = ListOptions {
                    tags: tags
                        .iter()
                        .map(|(key, value)| ((*key).to_owned(), Some(value.clone())))
                        .collect(),
                    ..ListOptions::default()
                };
                tagged_ids(session.cloud.$list(&self.region, &options).await, |found| found.id.clone())
            }

            async fn update(
                &self,
                session: &Session<'_, Client>,
                id: &str,
                patch: Map<String, Value>,
            ) -> Result<Details, ExternalError> {
                session
                    .cloud
                    .$patch(&self.region, id, &patch, None)
                    .await
                    .map_err(CloudFailure)?;
                Ok(Details::new())
            }

            async fn delete(&self, session: &Session<'_, Client>, id: &str) -> Result<(), ExternalError> {
                deleted(
                    session
                        .cloud
                        .$delete(&self.region, id)
                        .await,
                )
            }

            fn readiness(observed: &Self::Observation) -> Readiness {
                network_readiness(observed.state)
            }
        }
    };
}

network_kind!(
    [] apis::kinds::vpc::VpcParameters,
    fakecloud::model::Vpc,
    ["cidrBlock"],
    get_vpc,
    list_vpcs,
    create_vpc,
    patch_vpc,
    delete_vpc
);
network_kind!(
    [S: Scope] apis::kinds::subnet::SubnetParameters<S>,
    fakecloud::model::Subnet,
    ["vpcId", "cidrBlock", "availabilityZone"],
    get_subnet,
    list_subnets,
    create_subnet,
    patch_subnet,
    delete_subnet
);

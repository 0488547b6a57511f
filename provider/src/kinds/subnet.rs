//! Subnet: cloud-assigned id; `vpcId` may come from `vpcIdRef` or
//! `vpcIdSelector`, resolved to the referenced VPC's `status.atProvider.id`.

use apis::kinds::Subnet;
use serde_json::{Map, Value};

use super::{create_body, deleted, network_readiness, observed};
use crate::runtime::error::ExternalError;
use crate::runtime::{ManagedKind, Readiness, Session};

impl ManagedKind for Subnet {
    type Observation = fakecloud::model::Subnet;

    const STEERING_FIELDS: &'static [&'static str] = &["region"];

    async fn observe(
        &self,
        session: &Session,
        id: &str,
    ) -> Result<Option<Self::Observation>, ExternalError> {
        observed(
            session
                .cloud
                .get_subnet(&self.spec.for_provider.region, id)
                .await,
        )
    }

    async fn create(
        &self,
        session: &Session,
        _: Option<&str>,
        desired: Value,
        idempotency_key: &str,
    ) -> Result<String, ExternalError> {
        let body = create_body(desired)?;
        let created = session
            .cloud
            .create_subnet(&self.spec.for_provider.region, &body, Some(idempotency_key))
            .await?;
        Ok(created.resource.id)
    }

    async fn update(
        &self,
        session: &Session,
        id: &str,
        patch: Map<String, Value>,
    ) -> Result<(), ExternalError> {
        session
            .cloud
            .patch_subnet(&self.spec.for_provider.region, id, &patch, None)
            .await?;
        Ok(())
    }

    async fn delete(&self, session: &Session, id: &str) -> Result<(), ExternalError> {
        deleted(
            session
                .cloud
                .delete_subnet(&self.spec.for_provider.region, id)
                .await,
        )
    }

    fn readiness(observed: &Self::Observation) -> Readiness {
        network_readiness(observed.state)
    }
}

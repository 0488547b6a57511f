//! NodeGroup: the group's name is the external name (default
//! `metadata.name`); `region` and `clusterName` locate it; `subnetIds` may
//! come from references.

use apis::kinds::NodeGroup;
use serde_json::{Map, Value};

use fakecloud::model::NodeGroupStatus;

use super::{create_body, deleted, observed, with_name};
use crate::runtime::error::ExternalError;
use crate::runtime::{Created, Details, ManagedKind, Readiness, Session};

impl ManagedKind for NodeGroup {
    type Observation = fakecloud::model::NodeGroup;

    const STEERING_FIELDS: &'static [&'static str] = &["region", "clusterName"];

    async fn observe(
        &self,
        session: &Session<'_>,
        name: &str,
    ) -> Result<Option<Self::Observation>, ExternalError> {
        let p = &self.spec.for_provider;
        observed(
            session
                .cloud
                .get_node_group(&p.region, &p.cluster_name, name)
                .await,
        )
    }

    async fn create(
        &self,
        session: &Session<'_>,
        name: Option<&str>,
        desired: Value,
        idempotency_key: &str,
    ) -> Result<Created, ExternalError> {
        let p = &self.spec.for_provider;
        let body = create_body(with_name(desired, "name", name)?)?;
        let created = session
            .cloud
            .create_node_group(&p.region, &p.cluster_name, &body, Some(idempotency_key))
            .await?;
        Ok(Created::named(created.resource.name))
    }

    async fn update(
        &self,
        session: &Session<'_>,
        name: &str,
        patch: Map<String, Value>,
    ) -> Result<Details, ExternalError> {
        let p = &self.spec.for_provider;
        session
            .cloud
            .patch_node_group(&p.region, &p.cluster_name, name, &patch, None)
            .await?;
        Ok(Details::new())
    }

    async fn delete(&self, session: &Session<'_>, name: &str) -> Result<(), ExternalError> {
        let p = &self.spec.for_provider;
        deleted(
            session
                .cloud
                .delete_node_group(&p.region, &p.cluster_name, name)
                .await,
        )
    }

    fn readiness(observed: &Self::Observation) -> Readiness {
        match observed.status {
            NodeGroupStatus::Active => Readiness::Available,
            NodeGroupStatus::Creating => Readiness::Creating,
            NodeGroupStatus::Deleting => Readiness::Deleting,
            // UPDATING keeps serving but is not settled; report it as such.
            NodeGroupStatus::Updating => Readiness::Unavailable,
        }
    }
}

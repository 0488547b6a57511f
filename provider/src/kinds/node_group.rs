//! NodeGroup: the group's name is the external name (default
//! `metadata.name`); `region` and `clusterName` locate it; `subnetIds` may
//! come from references.

use apis::kinds::nodegroup::NodeGroupParameters;
use crossplane_types::Scope;
use serde_json::{Map, Value};

use fakecloud::client::Client;
use fakecloud::model::NodeGroupStatus;

use super::{create_body, deleted, observed, with_name};
use runtime::ExternalError;
use runtime::{CloudKind, Created, Details, Readiness, Session, TagsField};

use crate::cloud::{CloudFailure, FakecloudConnect};

impl<S: Scope> CloudKind<FakecloudConnect> for NodeGroupParameters<S> {
    type Observation = fakecloud::model::NodeGroup;

    const STEERING_FIELDS: &'static [&'static str] = &["region", "clusterName"];

    const TAGS: Option<TagsField> = Some(super::TAGS);

    /// fakecloud's node-group update takes version, labels, tags and
    /// scaling only.
    const CREATE_ONLY_FIELDS: &'static [&'static str] = &["subnetIds", "nodeRole", "instanceTypes"];

    async fn observe(
        &self,
        session: &Session<'_, Client>,
        name: &str,
    ) -> Result<Option<Self::Observation>, ExternalError> {
        observed(
            session
                .cloud
                .get_node_group(&self.region, &self.cluster_name, name)
                .await,
        )
    }

    async fn create(
        &self,
        session: &Session<'_, Client>,
        name: Option<&str>,
        desired: Value,
        idempotency_key: &str,
    ) -> Result<Created<Self::Observation>, ExternalError> {
        let body = create_body(with_name(desired, "name", name)?)?;
        let created = session
            .cloud
            .create_node_group(
                &self.region,
                &self.cluster_name,
                &body,
                Some(idempotency_key),
            )
            .await
            .map_err(CloudFailure)?
            .resource;
        // The answer is the new group: the runtime's first observation.
        Ok(Created::answered(created.name.clone(), created))
    }

    async fn update(
        &self,
        session: &Session<'_, Client>,
        name: &str,
        patch: Map<String, Value>,
    ) -> Result<Details, ExternalError> {
        session
            .cloud
            .patch_node_group(&self.region, &self.cluster_name, name, &patch, None)
            .await
            .map_err(CloudFailure)?;
        Ok(Details::new())
    }

    async fn delete(&self, session: &Session<'_, Client>, name: &str) -> Result<(), ExternalError> {
        deleted(
            session
                .cloud
                .delete_node_group(&self.region, &self.cluster_name, name)
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

//! `NodeGroupQuery`: one cluster's NodeGroups, by tag and state. A match's
//! managed resource needs its region and cluster besides its name.

use apis::kinds::NodeGroupQuery;
use apis::kinds::query::NodeGroupState;
use fakecloud::client::Client;
use fakecloud::model::NodeGroupStatus;
use runtime::ExternalError;
use runtime::query::{Found, Page, QueryKind};
use serde_json::json;

use super::{accepts, conflicting_tags, options, page};
use crate::cloud::FakecloudConnect;

/// The cloud's spelling of a NodeGroup state.
fn status(state: NodeGroupState) -> NodeGroupStatus {
    match state {
        NodeGroupState::Creating => NodeGroupStatus::Creating,
        NodeGroupState::Active => NodeGroupStatus::Active,
        NodeGroupState::Updating => NodeGroupStatus::Updating,
        NodeGroupState::Deleting => NodeGroupStatus::Deleting,
    }
}

impl QueryKind<FakecloudConnect> for NodeGroupQuery {
    fn unusable(&self) -> Option<String> {
        conflicting_tags(&self.spec.filter.base)
    }

    async fn list(&self, client: &Client, next: Option<String>) -> Result<Page, ExternalError> {
        let filter = &self.spec.filter;
        let listed = client
            .list_node_groups(
                &filter.base.region,
                &filter.cluster_name,
                &options(&filter.base, next),
            )
            .await;
        page(
            listed,
            |group| accepts(filter.state.map(status).as_ref(), &group.status),
            |group| Found {
                external_name: group.name,
                created_at: group.created_at,
                for_provider: json!({ "region": group.region, "clusterName": group.cluster_name }),
            },
        )
    }
}

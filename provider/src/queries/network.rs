//! `VPCQuery` and `SubnetQuery`: the region's VPCs or Subnets, by tag,
//! range, VPC, zone and state. A match's managed resource needs only its
//! region besides its id.

use std::str::FromStr;

use apis::kinds::query::NetworkState;
use apis::kinds::{SubnetQuery, VpcQuery};
use fakecloud::client::Client;
use ipnet::Ipv4Net;
use runtime::ExternalError;
use runtime::query::{Found, Page, QueryKind};
use serde_json::json;

use super::{accepts, conflicting_tags, options, page};
use crate::cloud::FakecloudConnect;

/// The cloud's spelling of a network state.
fn state(state: NetworkState) -> fakecloud::model::NetworkState {
    match state {
        NetworkState::Pending => fakecloud::model::NetworkState::Pending,
        NetworkState::Available => fakecloud::model::NetworkState::Available,
    }
}

/// A range the filter cannot compare: the cloud keeps every range with its
/// host bits cleared, so `10.0.0.1/16` would never match `10.0.0.0/16`.
fn unusable_range(cidr: &str) -> Option<String> {
    match Ipv4Net::from_str(cidr) {
        Err(_) => Some(format!(
            "spec.filter.cidrBlock {cidr:?} is not an IPv4 range"
        )),
        Ok(net) if net.trunc() != net => Some(format!(
            "spec.filter.cidrBlock {cidr:?} has host bits set, and the cloud records ranges without them: use {}",
            net.trunc()
        )),
        Ok(_) => None,
    }
}

impl QueryKind<FakecloudConnect> for VpcQuery {
    fn unusable(&self) -> Option<String> {
        let filter = &self.spec.filter;
        conflicting_tags(&filter.base)
            .or_else(|| filter.cidr_block.as_deref().and_then(unusable_range))
    }

    async fn list(&self, client: &Client, next: Option<String>) -> Result<Page, ExternalError> {
        let filter = &self.spec.filter;
        let listed = client
            .list_vpcs(&filter.base.region, &options(&filter.base, next))
            .await;
        page(
            listed,
            |vpc| {
                accepts(filter.cidr_block.as_ref(), &vpc.cidr_block)
                    && accepts(filter.state.map(state).as_ref(), &vpc.state)
            },
            |vpc| Found {
                external_name: vpc.id,
                created_at: vpc.created_at,
                for_provider: json!({ "region": vpc.region }),
            },
        )
    }
}

impl QueryKind<FakecloudConnect> for SubnetQuery {
    fn unusable(&self) -> Option<String> {
        conflicting_tags(&self.spec.filter.base)
    }

    async fn list(&self, client: &Client, next: Option<String>) -> Result<Page, ExternalError> {
        let filter = &self.spec.filter;
        let listed = client
            .list_subnets(&filter.base.region, &options(&filter.base, next))
            .await;
        page(
            listed,
            |subnet| {
                accepts(filter.vpc_id.as_ref(), &subnet.vpc_id)
                    && accepts(filter.availability_zone.as_ref(), &subnet.availability_zone)
                    && accepts(filter.state.map(state).as_ref(), &subnet.state)
            },
            |subnet| Found {
                external_name: subnet.id,
                created_at: subnet.created_at,
                for_provider: json!({ "region": subnet.region }),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_with_host_bits_is_refused_with_the_range_to_use() {
        assert_eq!(unusable_range("10.0.0.0/16"), None);
        assert_eq!(
            unusable_range("10.0.0.1/16").as_deref(),
            Some(
                "spec.filter.cidrBlock \"10.0.0.1/16\" has host bits set, and the cloud records ranges without them: use 10.0.0.0/16"
            )
        );
        assert!(
            unusable_range("999.0.0.0/16")
                .unwrap()
                .contains("not an IPv4 range")
        );
    }
}

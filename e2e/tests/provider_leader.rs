//! Leader election on a Lease: one holder at a time, and a successor takes
//! over once the holder stops renewing.

use std::time::Duration;

use e2e::TestCluster;
use runtime::leader::Elector;

#[tokio::test]
async fn only_one_replica_leads_and_a_successor_takes_over_after_expiry() -> anyhow::Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    let namespace = cluster.create_namespace("leader").await?;
    let first = Elector::new(cluster.client(), &namespace, "provider-leader", "replica-a");
    let second = Elector::new(cluster.client(), &namespace, "provider-leader", "replica-b");

    tokio::time::timeout(Duration::from_secs(10), first.acquire()).await?;
    // While the first renews, the second waits.
    let holding = tokio::spawn(async move { first.hold().await });
    let contender = tokio::time::timeout(Duration::from_secs(8), second.acquire()).await;
    assert!(contender.is_err(), "two replicas led at once");

    // The first stops renewing (it died); after the lease runs out the
    // second takes over.
    holding.abort();
    tokio::time::timeout(Duration::from_secs(30), second.acquire()).await?;
    Ok(())
}

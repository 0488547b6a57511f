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
    // It is told it stands by (the provider is ready then: /readyz), once.
    let standbys = std::sync::atomic::AtomicUsize::new(0);
    let standing_by = || {
        standbys.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    };
    let contender = tokio::time::timeout(
        Duration::from_secs(8),
        second.acquire_standing_by(standing_by),
    )
    .await;
    assert!(contender.is_err(), "two replicas led at once");
    assert_eq!(standbys.load(std::sync::atomic::Ordering::SeqCst), 1);

    // The first stops renewing (it died); after the lease runs out the
    // second takes over.
    holding.abort();
    tokio::time::timeout(Duration::from_secs(30), second.acquire()).await?;
    // A replica that finds the Lease free is never told it stands by.
    let third = Elector::new(cluster.client(), &namespace, "other-lease", "replica-c");
    let mut told = false;
    tokio::time::timeout(
        Duration::from_secs(10),
        third.acquire_standing_by(|| told = true),
    )
    .await?;
    assert!(!told, "the first replica of a Lease stood by");
    Ok(())
}

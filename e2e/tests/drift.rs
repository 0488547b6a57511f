//! Drift, field by field (issue 29), on a real API server and fakecloud:
//! an observe-only VPC shows an outside change and mutates nothing; a
//! managed one corrects it and clears it; one whose policies lack `Create`
//! previews the create. Every test counts the VPCs in fakecloud. The
//! stories are the demo's too ([`e2e::scenarios::drift`]).

use e2e::scenarios::{Verdict, drift};
use e2e::scope::{Legacy, Namespaced, Scope};
use e2e::world::World;

/// The VPCs fakecloud holds in the scenarios' region.
async fn cloud_vpcs(world: &World) -> anyhow::Result<usize> {
    Ok(world
        .cloud
        .list_vpcs(e2e::scenarios::REGION, &Default::default())
        .await?
        .items
        .len())
}

#[tokio::test]
async fn an_observe_only_vpc_shows_an_outside_change_as_drift_and_never_mutates()
-> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = Namespaced::objects(&world.objects);
    let mut verdict = Verdict::default();
    drift::observed::<Namespaced>(
        &world.stage().with(&objects),
        &e2e::unique_name("observed"),
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    assert_eq!(cloud_vpcs(&world).await?, 1, "only team B's VPC exists");
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_managed_vpc_corrects_an_outside_change_and_clears_its_drift() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = Legacy::objects(&world.objects);
    let mut verdict = Verdict::default();
    drift::corrected::<Legacy>(
        &world.stage().with(&objects),
        &e2e::unique_name("corrected"),
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    assert_eq!(cloud_vpcs(&world).await?, 1, "one VPC, created once");
    let corrections = world
        .metrics
        .total("provider_drift_correction_seconds_count");
    assert_eq!(
        corrections,
        1.0,
        "one correction timed:\n{}",
        world.metrics.encode()
    );
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_vpc_without_create_previews_the_create_and_creates_nothing() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = Namespaced::objects(&world.objects);
    let mut verdict = Verdict::default();
    drift::create_preview::<Namespaced>(
        &world.stage().with(&objects),
        &e2e::unique_name("preview"),
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    assert_eq!(
        cloud_vpcs(&world).await?,
        1,
        "created once, after the preview"
    );
    world.shutdown().await;
    Ok(())
}

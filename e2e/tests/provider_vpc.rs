//! The provider against a real kube-apiserver and fakecloud: a VPC's full
//! lifecycle (the scenario `containers.rs` plays on the compose images and
//! the demo shows).

use e2e::scenarios::network;
use e2e::world::World;

#[tokio::test]
async fn vpc_is_created_updated_once_and_deleted() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    network::lifecycle(&world.stage(), &e2e::unique_name("vpc"))
        .await?
        .require()?;
    world.shutdown().await;
    Ok(())
}

//! The provider against a real kube-apiserver and fakecloud: a VPC's full
//! lifecycle (the scenario `containers.rs` plays on the compose images and
//! the demo shows), in both scopes.

use e2e::scenarios::network;
use e2e::scope::{Legacy, Namespaced, Scope};
use e2e::world::World;

async fn lifecycle<S: Scope>() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = S::objects(&world.objects);
    network::lifecycle::<S>(&world.stage().with(&objects), &e2e::unique_name("vpc"))
        .await?
        .require()?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn vpc_is_created_updated_once_and_deleted() -> anyhow::Result<()> {
    lifecycle::<Legacy>().await
}

#[tokio::test]
async fn a_namespaced_vpc_is_created_updated_once_and_deleted() -> anyhow::Result<()> {
    lifecycle::<Namespaced>().await
}

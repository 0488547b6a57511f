//! The provider against a real kube-apiserver and fakecloud: a VPC's full
//! lifecycle (shared with `containers.rs`, which plays it on the compose
//! images).

use e2e::world::World;

#[path = "shared/vpc_lifecycle.rs"]
mod vpc_lifecycle;

#[tokio::test]
async fn vpc_is_created_updated_once_and_deleted() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    vpc_lifecycle::create_update_delete(&world).await?;
    world.shutdown().await;
    Ok(())
}

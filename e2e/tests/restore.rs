//! Disaster recovery with fakecloud's snapshots, on the real API server
//! (issue 43): a snapshot, both VPCs lost behind the provider's back, the
//! snapshot loaded; the provider adopts the restored managed VPC instead of
//! creating a third, and finds the observed one again. The story is the
//! demo's too ([`e2e::scenarios::restore`]).

use e2e::scenarios::restore::{self, Names};
use e2e::scope::{Namespaced, Scope};
use e2e::world::World;

#[tokio::test]
async fn a_loaded_snapshot_is_adopted_without_a_duplicate() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let objects = Namespaced::objects(&world.objects);
    let names = Names {
        managed: e2e::unique_name("restored"),
        observed: e2e::unique_name("seen"),
        snapshot: e2e::unique_name("before-loss"),
    };
    restore::play::<Namespaced>(&world.stage().with(&objects), &names)
        .await?
        .require()?;
    // Exactly the two VPCs of the story: the managed one's restored
    // original and team B's.
    let vpcs = world
        .cloud
        .list_vpcs("us-east-1", &Default::default())
        .await?;
    assert_eq!(vpcs.items.len(), 2, "{:?}", vpcs.items);
    world.shutdown().await;
    Ok(())
}

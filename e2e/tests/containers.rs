//! The container backend (`E2E_CLUSTER=containers`, issue 14): etcd,
//! kube-apiserver and kube-controller-manager from docker-compose.yml's
//! images and fakecloud from its image, started through testcontainers; the
//! provider in-process against them. Plays the VPC lifecycle and the
//! observe-only import, the same scenarios as the local backend's tests.
//!
//! Needs a Docker engine; without one these tests fail, never skip. The
//! images are built first (cheaply when present).

use e2e::Backend;
use e2e::ClusterError;
use e2e::scenarios::{network, observe};
use e2e::world::{World, WorldOptions};

async fn world() -> anyhow::Result<World> {
    e2e::init_tracing();
    tokio::task::spawn_blocking(e2e::containers::build_images).await??;
    Ok(World::start_with(WorldOptions {
        backend: Some(Backend::Containers),
        ..WorldOptions::default()
    })
    .await?)
}

#[tokio::test]
async fn a_vpc_lives_its_whole_lifecycle_on_the_compose_images() -> anyhow::Result<()> {
    let world = world().await?;
    network::lifecycle::<e2e::scope::Legacy>(&world.stage(), &e2e::unique_name("vpc"))
        .await?
        .require()?;
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn observe_only_import_never_mutates_on_the_compose_images() -> anyhow::Result<()> {
    let world = world().await?;
    observe::import_and_release::<e2e::scope::Legacy>(
        &world.stage(),
        &e2e::unique_name("imported"),
    )
    .await?
    .require()?;
    world.shutdown().await;
    Ok(())
}

#[test]
fn a_missing_image_names_the_commands_that_make_it() {
    let err = e2e::containers::ensure_images(&[("fakecloud-provider-test/missing", "none")])
        .expect_err("no such image");
    assert!(matches!(err, ClusterError::ImageMissing { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("fakecloud-provider-test/missing:none")
            && message.contains("scripts/images")
            && message.contains("scripts/host-images")
            && message.contains("scripts/compose build"),
        "{message}"
    );
}

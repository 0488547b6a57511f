//! Reproducible ids: a seed makes the same requests give the same ids,
//! salts and request ids; unseeded they are random.

mod common;

use common::*;
use fakecloud::model::*;
use serde_json::json;

/// Ids, request id and password hash of one fixed sequence of calls.
async fn run(cloud: &Cloud) -> (Vec<String>, String, String) {
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let subnets = [
        cloud.subnet(&vpc.id, "10.0.1.0/24").await,
        cloud.subnet(&vpc.id, "10.0.2.0/24").await,
    ];
    cloud
        .a
        .create_database_instance(
            REGION,
            &CreateDatabaseInstance {
                identifier: "orders".into(),
                engine: Engine::Postgres,
                master_username: "admin".into(),
                master_password: "orders-password".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let response = cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs"))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    cloud.admin.save_snapshot("s").await.unwrap();
    let lines = snapshot_lines(&cloud.admin.download_snapshot("s").await.unwrap());
    let hash = lines
        .iter()
        .find_map(|l| l["resource"]["secretHash"].as_str())
        .unwrap()
        .to_string();
    let mut ids = vec![vpc.id];
    ids.extend(subnets.map(|s| s.id));
    (ids, request_id, hash)
}

#[tokio::test]
async fn the_same_seed_makes_the_same_ids_and_secrets_and_another_does_not() {
    let seeded = |seed| Cloud::start_configured(move |config| config.seed = Some(seed));
    let (first, second, other, random) = (
        seeded(42).await,
        seeded(42).await,
        seeded(43).await,
        Cloud::start().await,
    );
    let first = run(&first).await;
    assert_eq!(first, run(&second).await);
    let other = run(&other).await;
    let random = run(&random).await;
    for different in [&other, &random] {
        assert_ne!(first.0, different.0);
        assert_ne!(first.1, different.1);
        assert_ne!(first.2, different.2);
    }
}

#[tokio::test]
async fn the_admin_api_seeds_the_generator_at_a_position() {
    let cloud = Cloud::start().await;
    assert_eq!(cloud.admin.seed().await.unwrap(), SeedState::default());
    let state = cloud.admin.set_seed(7, 0).await.unwrap();
    assert_eq!(
        state,
        SeedState {
            seed: Some(7),
            position: 0
        }
    );
    let first = cloud.vpc("10.0.0.0/16").await;
    let second = cloud.vpc("10.1.0.0/16").await;
    assert_eq!(cloud.admin.seed().await.unwrap().position, 2);

    // Another server set to position 1 draws the second id first.
    let other = Cloud::start().await;
    other.admin.set_seed(7, 1).await.unwrap();
    assert_eq!(other.vpc("10.1.0.0/16").await.id, second.id);

    // The same seed again over what it made: a taken id is drawn past.
    cloud.admin.set_seed(7, 0).await.unwrap();
    let third = cloud.vpc("10.2.0.0/16").await;
    assert!(third.id != first.id && third.id != second.id);
    assert_eq!(cloud.admin.seed().await.unwrap().position, 3);

    cloud.admin.clear_seed().await.unwrap();
    assert_eq!(cloud.admin.seed().await.unwrap(), SeedState::default());
    for body in [json!({"seed": -1}), json!({"seed": "7"}), json!({})] {
        let response = cloud
            .http
            .put(cloud.url("/admin/seed"))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
    }
}

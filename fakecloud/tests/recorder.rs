//! The recorder and replay: what a recording keeps (and never keeps), and
//! that replaying it onto an empty seeded fakecloud makes the same state.

mod common;

use std::time::Duration;

use common::*;
use fakecloud::ApiKey;
use fakecloud::model::*;
use fakecloud::replay::{ReplayError, ReplayOptions, replay};
use serde_json::{Value, json};

const PASSWORD: &str = "orders-Passw0rd";
const NEW_PASSWORD: &str = "changed-Passw0rd";
const WRONG_PASSWORD: &str = "wrong-Passw0rd";

fn database(identifier: &str, subnet: &str) -> CreateDatabaseInstance {
    CreateDatabaseInstance {
        identifier: identifier.into(),
        engine: Engine::Postgres,
        master_username: "admin".into(),
        master_password: PASSWORD.into(),
        subnet_ids: Some(vec![subnet.to_string()]),
        ..Default::default()
    }
}

async fn authenticate(cloud: &Cloud, password: &str) -> bool {
    cloud
        .a
        .authenticate_database_instance(
            REGION,
            "orders",
            &Credentials {
                username: "admin".into(),
                password: password.into(),
            },
        )
        .await
        .unwrap()
}

/// Calls of every sort, successes and refusals, from both accounts.
async fn workload(cloud: &Cloud) {
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let subnets = [
        cloud.subnet(&vpc.id, "10.0.1.0/24").await,
        cloud.subnet(&vpc.id, "10.0.2.0/24").await,
        cloud.subnet(&vpc.id, "10.0.3.0/24").await,
    ];
    let overlapping = cloud
        .a
        .create_subnet(
            REGION,
            &CreateSubnet {
                vpc_id: vpc.id.clone(),
                cidr_block: "10.0.1.128/25".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(overlapping.status(), Some(409));
    cloud
        .node_group("workers", &subnets[0].id, Some("workers-once"))
        .await;
    let group = cloud
        .a
        .get_node_group(REGION, "c1", "workers")
        .await
        .unwrap();
    cloud
        .a
        .patch_node_group(
            REGION,
            "c1",
            "workers",
            &json!({"scalingConfig": {"maxSize": 5, "desiredSize": 3}}),
            Some(&group.etag),
        )
        .await
        .unwrap();
    cloud
        .a
        .create_database_instance(REGION, &database("orders", &subnets[1].id), None)
        .await
        .unwrap();
    assert!(authenticate(cloud, PASSWORD).await);
    assert!(!authenticate(cloud, WRONG_PASSWORD).await);
    cloud
        .a
        .patch_database_instance(
            REGION,
            "orders",
            &json!({"masterPassword": NEW_PASSWORD, "tags": {"env": "test"}}),
            None,
        )
        .await
        .unwrap();
    assert!(authenticate(cloud, NEW_PASSWORD).await);
    assert!(!authenticate(cloud, PASSWORD).await);
    cloud.a.delete_subnet(REGION, &subnets[2].id).await.unwrap();
    cloud
        .a
        .patch_vpc(REGION, &vpc.id, &json!({"tags": {"team": "a"}}), None)
        .await
        .unwrap();
    let malformed = cloud
        .raw(
            reqwest::Method::POST,
            "/v1/regions/us-east-1/vpcs",
            "{\"masterPassword\": \"in-a-broken-body\"",
        )
        .await;
    assert_eq!(malformed.status(), 400);
    cloud
        .a
        .list_vpcs(
            REGION,
            &fakecloud::client::ListOptions {
                page_size: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    cloud
        .b
        .create_vpc(
            "us-west-2",
            &CreateVpc {
                cidr_block: "192.168.0.0/16".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
}

fn keys() -> Vec<ApiKey> {
    vec![ApiKey::new(KEY_A, ACCOUNT_A), ApiKey::new(KEY_B, ACCOUNT_B)]
}

fn options(target: &Cloud, fast: bool) -> ReplayOptions {
    ReplayOptions {
        target: target.base.clone(),
        api_keys: keys(),
        admin_token: Some(ADMIN.into()),
        as_fast_as_possible: fast,
    }
}

#[tokio::test]
async fn a_recording_keeps_the_calls_served_and_no_secret() {
    let cloud = Cloud::start().await;
    let err = cloud.admin.recording().await.unwrap_err();
    assert_problem(&err, 404, "NoRecording", None);
    let started = cloud.admin.start_recorder().await.unwrap();
    assert!(started.recording && started.requests == 0 && started.started_at.is_some());
    let err = cloud.admin.start_recorder().await.unwrap_err();
    assert_problem(&err, 409, "RecorderRunning", None);
    workload(&cloud).await;
    // Refused before the service: not recorded.
    let anonymous = cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let stopped = cloud.admin.stop_recorder().await.unwrap();
    assert!(!stopped.recording);
    assert_eq!(cloud.admin.stop_recorder().await.unwrap(), stopped);
    // Not recording: not kept.
    cloud.vpc("10.200.0.0/16").await;

    let file = cloud.admin.recording().await.unwrap();
    let text = String::from_utf8(file).unwrap();
    for secret in [PASSWORD, NEW_PASSWORD, WRONG_PASSWORD, "in-a-broken-body"] {
        assert!(!text.contains(secret), "{secret} in the recording");
    }
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["format"], "fakecloud-recording");
    assert_eq!(lines[0]["formatVersion"], 1);
    assert_eq!(lines[0]["seed"], json!({"seed": null, "position": 0}));
    let calls = &lines[1..];
    assert_eq!(calls.len() as u64, stopped.requests);
    let statuses: Vec<u64> = calls
        .iter()
        .map(|c| c["status"].as_u64().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            201, 201, 201, 201, 409, 201, 200, 200, 201, 200, 401, 200, 200, 401, 204, 200, 400,
            200, 201
        ]
    );
    assert!(
        calls
            .iter()
            .all(|c| c["account"] == ACCOUNT_A || c["account"] == ACCOUNT_B)
    );
    let create_group = calls
        .iter()
        .find(|c| c["path"] == "/v1/regions/us-east-1/clusters/c1/nodegroups")
        .unwrap();
    assert_eq!(create_group["idempotencyKey"], "workers-once");
    assert!(calls.iter().any(|c| c["ifMatch"].is_string()));
    assert!(calls.iter().any(|c| c["query"] == "pageSize=1"));
    assert!(
        calls
            .iter()
            .any(|c| c["malformedBody"] == true && c["body"].is_null())
    );
    let create_database = calls
        .iter()
        .find(|c| c["path"] == "/v1/regions/us-east-1/databaseInstances")
        .unwrap();
    let body: Value = serde_json::from_str(create_database["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["identifier"], "orders");
    assert_eq!(
        body["masterPassword"].as_str().unwrap().len(),
        PASSWORD.len(),
        "a stand-in of the same length"
    );
    let offsets: Vec<u64> = calls
        .iter()
        .map(|c| c["offsetMs"].as_u64().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");

    // A new recording starts empty.
    assert_eq!(cloud.admin.start_recorder().await.unwrap().requests, 0);
}

#[tokio::test]
async fn a_replay_onto_an_empty_seeded_fakecloud_makes_the_same_state() {
    let original = Cloud::start_configured(|config| config.seed = Some(42)).await;
    // Made before the recording: the generator has moved on when it starts.
    let earlier = original
        .b
        .create_vpc(
            REGION,
            &CreateVpc {
                cidr_block: "10.50.0.0/16".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
        .resource;
    original.admin.start_recorder().await.unwrap();
    workload(&original).await;
    original.admin.stop_recorder().await.unwrap();
    let recording = original.admin.recording().await.unwrap();

    let target = Cloud::start().await;
    let summary = replay(&recording, &options(&target, true)).await.unwrap();
    assert_eq!(summary.diverged, [], "every call answered as recorded");
    assert_eq!(summary.calls, 19);
    assert_eq!(
        summary.seeded,
        Some(SeedState {
            seed: Some(42),
            position: 1
        })
    );
    let recorded: Vec<_> = resources(&original.admin)
        .await
        .into_iter()
        .filter(|r| r.id != earlier.id)
        .collect();
    let replayed = resources(&target.admin).await;
    assert_eq!(timeless(&replayed), timeless(&recorded));
    // The replayed password is the stand-in, not the password: the
    // recording never held it.
    assert!(!authenticate(&target, NEW_PASSWORD).await);

    // Replayed again onto the same target, the creates meet what the
    // first replay made: the report names each call answered otherwise.
    let again = replay(&recording, &options(&target, true)).await.unwrap();
    assert!(!again.diverged.is_empty());
    // (Creates replay their first answer: they carry idempotency keys.)
    let deleted = again
        .diverged
        .iter()
        .find(|d| d.method == "DELETE")
        .unwrap();
    assert_eq!((deleted.recorded, deleted.answered), (204, 404));
}

#[tokio::test]
async fn a_replay_keeps_the_recorded_pace_unless_told_not_to() {
    let original = Cloud::start().await;
    original.admin.start_recorder().await.unwrap();
    original.vpc("10.0.0.0/16").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    original.vpc("10.1.0.0/16").await;
    original.admin.stop_recorder().await.unwrap();
    let recording = original.admin.recording().await.unwrap();

    let paced = replay(&recording, &options(&Cloud::start().await, false))
        .await
        .unwrap();
    assert!(paced.elapsed >= Duration::from_millis(600), "{paced:?}");
    let fast = replay(&recording, &options(&Cloud::start().await, true))
        .await
        .unwrap();
    assert!(fast.elapsed < paced.elapsed, "{fast:?} vs {paced:?}");
    assert_eq!((paced.seeded, fast.seeded), (None, None), "not seeded");
}

#[tokio::test]
async fn a_replay_needs_a_key_for_every_account_and_a_recording() {
    let original = Cloud::start().await;
    original.admin.start_recorder().await.unwrap();
    workload(&original).await;
    let recording = original.admin.recording().await.unwrap();
    let target = Cloud::start().await;
    let only_a = ReplayOptions {
        api_keys: vec![ApiKey::new(KEY_A, ACCOUNT_A)],
        ..options(&target, true)
    };
    let err = replay(&recording, &only_a).await.unwrap_err();
    assert!(
        matches!(&err, ReplayError::NoKey(missing) if missing == &[ACCOUNT_B]),
        "{err}"
    );
    assert!(resources(&target.admin).await.is_empty(), "nothing sent");
    let err = replay(
        b"{\"format\":\"fakecloud-snapshot\"}\n",
        &options(&target, true),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("not a fakecloud recording"),
        "{err}"
    );
    let newer = String::from_utf8(recording).unwrap().replacen(
        "\"formatVersion\":1",
        "\"formatVersion\":2",
        1,
    );
    let err = replay(newer.as_bytes(), &options(&target, true))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");
}

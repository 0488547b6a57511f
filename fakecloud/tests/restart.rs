//! Transitions survive a restart: deadlines are stored, not held in memory.

mod common;

use std::str::FromStr;
use std::time::Duration;

use common::*;
use fakecloud::model::*;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, Row};

/// The state column as stored, bypassing the server's read-time view.
async fn stored_state(db_path: &str, name: &str) -> Option<String> {
    let mut conn = SqliteConnectOptions::from_str(&format!("sqlite://{db_path}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    sqlx::query("SELECT state FROM resources WHERE name = ?")
        .bind(name)
        .fetch_optional(&mut conn)
        .await
        .unwrap()
        .map(|row| row.get::<String, _>(0))
}

#[tokio::test]
async fn a_restart_mid_transition_keeps_state_and_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("cloud.db").display().to_string();
    let delay = Duration::from_millis(800);
    let cloud = Cloud::start_on(&db_path, delay).await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    assert_eq!(vpc.state, NetworkState::Pending);
    let db = cloud
        .a
        .create_database_instance(
            REGION,
            &CreateDatabaseInstance {
                identifier: "orders".into(),
                engine: Engine::Postgres,
                master_username: "admin".into(),
                master_password: "secret-password".into(),
                ..Default::default()
            },
            Some("create-orders"),
        )
        .await
        .unwrap();
    cloud.server.shutdown().await.unwrap();
    assert_eq!(
        stored_state(&db_path, &vpc.id).await.as_deref(),
        Some("pending")
    );

    // Back up at once: still mid-transition, everything intact.
    let cloud = Cloud::start_on(&db_path, delay).await;
    let seen = cloud.a.get_vpc(REGION, &vpc.id).await.unwrap().resource;
    assert_eq!(seen.state, NetworkState::Pending);
    assert_eq!(seen.cidr_block, vpc.cidr_block);
    let replay = cloud
        .a
        .create_database_instance(
            REGION,
            &CreateDatabaseInstance {
                identifier: "orders".into(),
                engine: Engine::Postgres,
                master_username: "admin".into(),
                master_password: "secret-password".into(),
                ..Default::default()
            },
            Some("create-orders"),
        )
        .await
        .unwrap();
    assert_eq!(replay, db, "idempotency records survive too");

    // The ticker completes the transitions and writes them down.
    eventually("stored state available", || async {
        stored_state(&db_path, &vpc.id).await.as_deref() == Some("available")
            && stored_state(&db_path, "orders").await.as_deref() == Some("available")
    })
    .await;
    assert_eq!(
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .state,
        NetworkState::Available
    );
    assert!(
        cloud
            .a
            .authenticate_database_instance(
                REGION,
                "orders",
                &Credentials {
                    username: "admin".into(),
                    password: "secret-password".into()
                }
            )
            .await
            .unwrap()
    );
    cloud.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_deadline_that_passed_while_down_completes_on_start() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("cloud.db").display().to_string();
    let cloud = Cloud::start_on(&db_path, Duration::from_millis(200)).await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    cloud.server.shutdown().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        stored_state(&db_path, &vpc.id).await.as_deref(),
        Some("pending")
    );
    let cloud = Cloud::start_on(&db_path, Duration::from_millis(200)).await;
    eventually("completed after start", || async {
        stored_state(&db_path, &vpc.id).await.as_deref() == Some("available")
    })
    .await;
    cloud.server.shutdown().await.unwrap();
}

/// A database file from before fakecloud kept user agents (only the first
/// migration applied) still opens: the column is added, the calls it
/// already held read without a user agent, new calls keep theirs.
#[tokio::test]
async fn a_database_from_before_user_agents_opens_with_its_audit() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("old.db").display().to_string();
    let first_only = dir.path().join("migrations");
    std::fs::create_dir(&first_only).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/0001_init.sql"),
        first_only.join("0001_init.sql"),
    )
    .unwrap();
    let mut conn = SqliteConnectOptions::from_str(&format!("sqlite://{db_path}"))
        .unwrap()
        .create_if_missing(true)
        .connect()
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(first_only.as_path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO audit (time, account, actor, method, path, status, request_id) \
         VALUES (0, ?, 'api', 'GET', '/v1/regions/us-east-1/vpcs', 200, 'before')",
    )
    .bind(ACCOUNT_A)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let cloud = Cloud::start_on(&db_path, Duration::ZERO).await;
    let listed = cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs"))
        .bearer_auth(KEY_A)
        .header(reqwest::header::USER_AGENT, "after")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let calls = cloud
        .admin
        .audit(&AuditQuery {
            account: Some(ACCOUNT_A.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let seen: Vec<_> = calls
        .iter()
        .map(|e| (e.request_id.as_str() == "before", e.user_agent.as_deref()))
        .collect();
    assert_eq!(seen, [(true, None), (false, Some("after"))]);
    cloud.server.shutdown().await.unwrap();
}

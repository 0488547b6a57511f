//! Snapshots: save, list, download, upload, load (overwrite and merge),
//! delete, `Config::load` at start, and every bad input left harmless.

mod common;

use std::time::Duration;

use common::*;
use fakecloud::client::AdminClient;
use fakecloud::model::*;
use fakecloud::{ApiKey, Config};
use reqwest::Method;
use serde_json::{Value, json};

/// A state with something of everything: two accounts, every kind, a
/// password, an idempotency record, a fault rule, throttling, a timing
/// change, and the audit of it all.
async fn build_world(cloud: &Cloud) {
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let subnet = cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    cloud
        .node_group("workers", &subnet.id, Some("workers-once"))
        .await;
    cloud
        .a
        .create_database_instance(REGION, &database("orders"), None)
        .await
        .unwrap();
    cloud
        .b
        .create_vpc(
            "eu-west-1",
            &CreateVpc {
                cidr_block: "172.16.0.0/16".into(),
                tags: Some([("team".to_string(), "b".to_string())].into()),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    cloud
        .admin
        .add_fault(&FaultRuleSpec {
            path_prefix: "/v1/regions/us-west-2/".into(),
            status: Some(503),
            ..Default::default()
        })
        .await
        .unwrap();
    cloud
        .admin
        .set_account_throttling(
            ACCOUNT_B,
            Some(Throttling {
                rate_per_second: 500.0,
                burst: 500,
            }),
        )
        .await
        .unwrap();
    cloud
        .admin
        .set_timing(Kind::Subnet, Duration::from_millis(1234))
        .await
        .unwrap();
}

fn database(identifier: &str) -> CreateDatabaseInstance {
    CreateDatabaseInstance {
        identifier: identifier.into(),
        engine: Engine::Postgres,
        master_username: "admin".into(),
        master_password: "orders-password".into(),
        subnet_ids: None,
        ..Default::default()
    }
}

async fn authenticates(cloud: &Cloud, identifier: &str) -> bool {
    cloud
        .a
        .authenticate_database_instance(
            REGION,
            identifier,
            &Credentials {
                username: "admin".into(),
                password: "orders-password".into(),
            },
        )
        .await
        .unwrap()
}

/// What the admin API shows of the settings.
async fn settings(admin: &AdminClient) -> (TimingTable, Vec<FaultRule>, Vec<AccountThrottling>) {
    (
        admin.timing().await.unwrap(),
        admin.faults().await.unwrap(),
        admin.account_throttling().await.unwrap(),
    )
}

#[tokio::test]
async fn a_snapshot_is_saved_listed_downloaded_and_deleted() {
    let cloud = Cloud::start().await;
    build_world(&cloud).await;
    let saved = cloud.admin.save_snapshot("first").await.unwrap();
    assert_eq!(saved.name, "first");
    assert_eq!(saved.format_version, 1);
    assert_eq!(saved.fakecloud_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(saved.accounts, [ACCOUNT_A, ACCOUNT_B]);
    assert_eq!(
        saved.resources,
        ResourceCounts {
            vpc: 2,
            subnet: 1,
            node_group: 1,
            database_instance: 1
        }
    );
    assert_eq!(
        cloud.admin.snapshots().await.unwrap(),
        std::slice::from_ref(&saved)
    );

    let file = cloud.admin.download_snapshot("first").await.unwrap();
    assert_eq!(file.len() as u64, saved.size);
    assert_eq!(file[..2], [0x1f, 0x8b], "gzip");
    let lines = snapshot_lines(&file);
    let header = &lines[0];
    assert_eq!(header["format"], "fakecloud-snapshot");
    assert_eq!(header["formatVersion"], 1);
    assert_eq!(header["timing"]["subnet"]["delayMs"], 1234);
    assert_eq!(header["faults"]["rules"][0]["status"], 503);
    assert_eq!(header["throttling"]["accounts"][0]["account"], ACCOUNT_B);
    let record_types: Vec<&str> = lines[1..]
        .iter()
        .map(|line| line.as_object().unwrap().keys().next().unwrap().as_str())
        .collect();
    assert_eq!(record_types.iter().filter(|t| **t == "resource").count(), 5);
    // The client sends an idempotency key with every create.
    assert_eq!(
        record_types.iter().filter(|t| **t == "idempotency").count(),
        5
    );
    assert!(record_types.iter().filter(|t| **t == "audit").count() >= 5);
    let database = lines
        .iter()
        .find(|line| line["resource"]["kind"] == "databaseInstance")
        .unwrap();
    let secret = database["resource"]["secretHash"].as_str().unwrap();
    assert!(secret.contains('$'), "a salted hash: {secret}");
    let text = String::from_utf8(
        lines
            .iter()
            .flat_map(|l| l.to_string().into_bytes())
            .collect(),
    )
    .unwrap();
    assert!(!text.contains("orders-password"), "never the password");

    let response = cloud
        .http
        .get(cloud.url("/admin/snapshots/first"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/gzip");
    assert_eq!(
        response.headers()["content-disposition"],
        "attachment; filename=\"first.jsonl.gz\""
    );

    cloud.admin.delete_snapshot("first").await.unwrap();
    assert!(cloud.admin.snapshots().await.unwrap().is_empty());
    for err in [
        cloud.admin.download_snapshot("first").await.unwrap_err(),
        cloud.admin.delete_snapshot("first").await.unwrap_err(),
        cloud
            .admin
            .load_snapshot("first", LoadStrategy::Overwrite)
            .await
            .unwrap_err(),
    ] {
        assert_problem(&err, 404, "SnapshotNotFound", None);
    }
    // Deleting a snapshot leaves the state alone.
    assert_eq!(resources(&cloud.admin).await.len(), 5);
}

#[tokio::test]
async fn save_load_save_gives_the_same_file_and_the_same_state() {
    let cloud = Cloud::start().await;
    build_world(&cloud).await;
    let before = (resources(&cloud.admin).await, settings(&cloud.admin).await);
    cloud.admin.save_snapshot("one").await.unwrap();

    // Change everything the snapshot holds.
    let extra = cloud.vpc("10.9.0.0/16").await;
    for resource in resources(&cloud.admin).await {
        if resource.kind == Kind::Vpc && resource.account == ACCOUNT_B {
            cloud
                .b
                .delete_vpc(&resource.region, &resource.id)
                .await
                .unwrap();
        }
    }
    cloud.admin.clear_faults().await.unwrap();
    cloud
        .admin
        .set_account_throttling(ACCOUNT_B, None)
        .await
        .unwrap();
    cloud
        .admin
        .set_timing_all(Duration::from_millis(5))
        .await
        .unwrap();

    // Load, then save again at once: nothing in between, not even a read
    // of the audit (which is audited).
    let loaded = cloud
        .admin
        .load_snapshot("one", LoadStrategy::Overwrite)
        .await
        .unwrap();
    assert_eq!(loaded.strategy, LoadStrategy::Overwrite);
    assert_eq!(loaded.resources.total(), 5);
    cloud.admin.save_snapshot("two").await.unwrap();
    let one = cloud.admin.download_snapshot("one").await.unwrap();
    let two = cloud.admin.download_snapshot("two").await.unwrap();
    assert!(one == two, "save, load, save: the files differ");

    let after = (resources(&cloud.admin).await, settings(&cloud.admin).await);
    assert_eq!(after, before);
    assert!(after.0.iter().all(|r| r.id != extra.id));
    assert!(authenticates(&cloud, "orders").await, "the password hash");
    // The idempotency record came back: the same key replays the create.
    let subnet = after.0.iter().find(|r| r.kind == Kind::Subnet).unwrap();
    let replayed = cloud
        .node_group("workers", &subnet.id, Some("workers-once"))
        .await;
    let stored = after.0.iter().find(|r| r.id == "workers").unwrap();
    assert_eq!(replayed.etag, stored.etag);
}

#[tokio::test]
async fn the_audit_after_an_overwrite_is_the_files_and_the_load_is_not_in_it() {
    let cloud = Cloud::start().await;
    cloud.vpc("10.0.0.0/16").await;
    cloud.admin.save_snapshot("s").await.unwrap();
    cloud.vpc("10.1.0.0/16").await;
    cloud
        .admin
        .load_snapshot("s", LoadStrategy::Overwrite)
        .await
        .unwrap();
    cloud
        .b
        .list_vpcs(REGION, &Default::default())
        .await
        .unwrap();
    let audit = cloud.admin.audit(&AuditQuery::default()).await.unwrap();
    let calls: Vec<(i64, &str, Option<&str>)> = audit
        .iter()
        .map(|e| (e.seq, e.method.as_str(), e.account.as_deref()))
        .collect();
    // The file's one call; then, numbered on from the file's, the call
    // after the load: neither the save, the second create nor the load.
    assert_eq!(
        calls,
        [(1, "POST", Some(ACCOUNT_A)), (2, "GET", Some(ACCOUNT_B))]
    );
}

/// A second server with only account A's key: its snapshots hold account
/// A alone.
async fn account_a_only() -> Cloud {
    Cloud::start_configured(|config| config.api_keys = vec![ApiKey::new(KEY_A, ACCOUNT_A)]).await
}

#[tokio::test]
async fn merge_replaces_the_files_accounts_and_overwrite_everything() {
    let cloud = Cloud::start().await;
    let a_before = cloud.vpc("10.0.0.0/16").await;
    let b_vpc = cloud
        .b
        .create_vpc(
            REGION,
            &CreateVpc {
                cidr_block: "10.1.0.0/16".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
        .resource;
    cloud
        .admin
        .add_fault(&FaultRuleSpec {
            path_prefix: "/v1/none".into(),
            status: Some(500),
            ..Default::default()
        })
        .await
        .unwrap();

    let other = account_a_only().await;
    let a_other = other.vpc("10.2.0.0/16").await;
    let info = other.admin.save_snapshot("a-world").await.unwrap();
    assert_eq!(info.accounts, [ACCOUNT_A]);
    let file = other.admin.download_snapshot("a-world").await.unwrap();

    // Portable: uploaded to the first server.
    let uploaded = cloud.admin.upload_snapshot("a-world", file).await.unwrap();
    assert_eq!(
        (uploaded.accounts, uploaded.size),
        (info.accounts, info.size)
    );

    let merged = cloud
        .admin
        .load_snapshot("a-world", LoadStrategy::Merge)
        .await
        .unwrap();
    assert_eq!(merged.accounts, [ACCOUNT_A]);
    let ids = |all: Vec<AdminResource>| -> Vec<(String, String)> {
        all.into_iter().map(|r| (r.account, r.id)).collect()
    };
    assert_eq!(
        ids(resources(&cloud.admin).await),
        [
            (ACCOUNT_A.to_string(), a_other.id.clone()),
            (ACCOUNT_B.to_string(), b_vpc.id.clone())
        ],
        "A's VPC {} replaced by the file's; B's stays",
        a_before.id
    );
    assert_eq!(
        cloud.admin.faults().await.unwrap().len(),
        1,
        "settings stay"
    );
    // B's audit stays; A's is the other server's.
    let b_audit = cloud
        .admin
        .audit(&AuditQuery {
            account: Some(ACCOUNT_B.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(b_audit.len(), 1);
    let a_audit = cloud
        .admin
        .audit(&AuditQuery {
            account: Some(ACCOUNT_A.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(a_audit.len(), 1);
    assert!(a_audit[0].seq > b_audit[0].seq, "merged entries come after");
    // The merged resources are served to their owner.
    cloud.a.get_vpc(REGION, &a_other.id).await.unwrap();
    assert!(
        cloud
            .a
            .get_vpc(REGION, &a_before.id)
            .await
            .unwrap_err()
            .is_not_found()
    );

    let overwritten = cloud
        .admin
        .load_snapshot("a-world", LoadStrategy::Overwrite)
        .await
        .unwrap();
    assert_eq!(overwritten.strategy, LoadStrategy::Overwrite);
    assert_eq!(
        ids(resources(&cloud.admin).await),
        [(ACCOUNT_A.to_string(), a_other.id.clone())]
    );
    assert!(cloud.admin.faults().await.unwrap().is_empty(), "the file's");
    assert!(
        cloud
            .b
            .get_vpc(REGION, &b_vpc.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test]
async fn transitions_under_way_resume_with_their_time_left() {
    let delay = Duration::from_millis(2500);
    let cloud = Cloud::start_with_delay(delay).await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    assert_eq!(vpc.state, NetworkState::Pending);
    // A node group created at once, then deleted slowly.
    cloud.admin.set_timing_all(Duration::ZERO).await.unwrap();
    let ready_vpc = cloud.vpc("10.1.0.0/16").await;
    let subnet = cloud.subnet(&ready_vpc.id, "10.1.1.0/24").await;
    cloud.node_group("going", &subnet.id, None).await;
    cloud
        .admin
        .set_timing(Kind::NodeGroup, delay)
        .await
        .unwrap();
    cloud
        .a
        .delete_node_group(REGION, "c1", "going")
        .await
        .unwrap();
    cloud.admin.save_snapshot("mid").await.unwrap();

    let lines = snapshot_lines(&cloud.admin.download_snapshot("mid").await.unwrap());
    let record = |name: &str| {
        lines
            .iter()
            .find(|l| l["resource"]["name"] == name)
            .map(|l| l["resource"].clone())
            .unwrap()
    };
    for (name, state, pending) in [
        (vpc.id.as_str(), "pending", "available"),
        ("going", "DELETING", "<gone>"),
    ] {
        let r = record(name);
        assert_eq!(
            (r["state"].as_str(), r["pendingState"].as_str()),
            (Some(state), Some(pending))
        );
        let left = r["remainingMs"].as_i64().unwrap();
        assert!(left > 0 && left <= 2500, "{name}: {left} ms left");
    }

    eventually("the live VPC available and the node group gone", || async {
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .state
            == NetworkState::Available
            && cloud.a.get_node_group(REGION, "c1", "going").await.is_err()
    })
    .await;

    cloud
        .admin
        .load_snapshot("mid", LoadStrategy::Overwrite)
        .await
        .unwrap();
    assert_eq!(
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .state,
        NetworkState::Pending,
        "the clock restarts at the load"
    );
    assert_eq!(
        cloud
            .a
            .get_node_group(REGION, "c1", "going")
            .await
            .unwrap()
            .resource
            .status,
        NodeGroupStatus::Deleting
    );
    eventually("the loaded transitions complete", || async {
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .state
            == NetworkState::Available
            && cloud
                .a
                .get_node_group(REGION, "c1", "going")
                .await
                .is_err_and(|e| e.is_not_found())
    })
    .await;
}

/// Every way a file can be wrong: refused with its code, and neither the
/// state nor the stored snapshots change.
#[tokio::test]
async fn bad_files_are_refused_and_change_nothing() {
    let cloud = Cloud::start().await;
    build_world(&cloud).await;
    cloud.admin.save_snapshot("good").await.unwrap();
    let good = cloud.admin.download_snapshot("good").await.unwrap();
    let lines = snapshot_lines(&good);
    let text = to_text(&lines);
    let before = (
        resources(&cloud.admin).await,
        cloud.admin.snapshots().await.unwrap(),
    );

    let mut newer = lines.clone();
    newer[0]["formatVersion"] = json!(2);
    newer[0]["fakecloudVersion"] = json!("9.9.9");
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    let mut bad_record = lines.clone();
    let last = bad_record.len() - 1;
    bad_record[last]["audit"]["actor"] = json!("robot");
    let mut unknown_field = lines.clone();
    unknown_field[1]["resource"]["colour"] = json!("red");
    let mut twice = lines.clone();
    twice.insert(2, lines[1].clone());
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "cut in half",
            good[..good.len() / 2].to_vec(),
            "CorruptSnapshot",
        ),
        (
            "cut at a line",
            gzip(&to_text(&lines[..lines.len() - 1])),
            "CorruptSnapshot",
        ),
        ("a flipped byte", flipped, "CorruptSnapshot"),
        (
            "a bad record",
            gzip(&to_text(&bad_record)),
            "CorruptSnapshot",
        ),
        (
            "an unknown field",
            gzip(&to_text(&unknown_field)),
            "CorruptSnapshot",
        ),
        ("a record twice", gzip(&to_text(&twice)), "CorruptSnapshot"),
        (
            "a newer version",
            gzip(&to_text(&newer)),
            "UnsupportedSnapshotVersion",
        ),
        ("JSON", b"{\"hello\": \"world\"}\n".to_vec(), "NotASnapshot"),
        ("gzip'd text", gzip("hello\n"), "NotASnapshot"),
        ("bytes", vec![0, 159, 146, 150], "NotASnapshot"),
        ("nothing", Vec::new(), "NotASnapshot"),
    ];
    for (what, file, code) in cases {
        let err = cloud.admin.upload_snapshot("bad", file).await.unwrap_err();
        assert_problem(&err, 400, code, None);
        if code == "UnsupportedSnapshotVersion" {
            let detail = err.to_string();
            assert!(detail.contains("9.9.9"), "{what}: {detail}");
        }
        assert_eq!(
            (
                resources(&cloud.admin).await,
                cloud.admin.snapshots().await.unwrap()
            ),
            before,
            "{what}"
        );
    }
    // The same lines uncompressed are a good file.
    let plain = cloud
        .admin
        .upload_snapshot("plain", text.into_bytes())
        .await
        .unwrap();
    assert_eq!(plain.resources, before.1[0].resources);
    let response = cloud
        .http
        .get(cloud.url("/admin/snapshots/plain"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    // Uploading over a name replaces it (200, not 201).
    let response = cloud
        .http
        .put(cloud.url("/admin/snapshots/plain"))
        .bearer_auth(ADMIN)
        .body(good.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = cloud
        .http
        .put(cloud.url("/admin/snapshots/fresh"))
        .bearer_auth(ADMIN)
        .body(good)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["location"], "/admin/snapshots/fresh");
}

/// A stored file that went bad (written behind the server's back) fails
/// its load whole: nothing of it is loaded.
#[tokio::test]
async fn a_load_is_all_or_nothing() {
    use sqlx::sqlite::SqliteConnectOptions;
    use sqlx::{ConnectOptions, Connection};
    use std::str::FromStr;

    let cloud = Cloud::start().await;
    build_world(&cloud).await;
    cloud.admin.save_snapshot("good").await.unwrap();
    let mut lines = snapshot_lines(&cloud.admin.download_snapshot("good").await.unwrap());
    // Every resource fine but the last record broken: a load that wrote
    // as it read would have replaced the resources before failing.
    for line in &mut lines {
        if let Some(resource) = line.get_mut("resource") {
            resource["spec"]["tags"] = json!({"loaded": "yes"});
        }
    }
    let last = lines.len() - 1;
    lines[last]["audit"]["status"] = json!(1000);
    let mut conn = SqliteConnectOptions::from_str(&format!("sqlite://{}", cloud.db_path))
        .unwrap()
        .connect()
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO snapshots (name, created_at, size, format_version, fakecloud_version, \
         accounts, counts, file) SELECT 'rotten', created_at, size, format_version, \
         fakecloud_version, accounts, counts, ? FROM snapshots WHERE name = 'good'",
    )
    .bind(gzip(&to_text(&lines)))
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let before = resources(&cloud.admin).await;
    let audit_before = cloud.admin.audit(&AuditQuery::default()).await.unwrap();
    for strategy in [LoadStrategy::Overwrite, LoadStrategy::Merge] {
        let err = cloud
            .admin
            .load_snapshot("rotten", strategy)
            .await
            .unwrap_err();
        assert_problem(&err, 400, "CorruptSnapshot", None);
        assert!(err.to_string().contains("status 1000"), "{err}");
    }
    assert_eq!(resources(&cloud.admin).await, before);
    let audit_after = cloud.admin.audit(&AuditQuery::default()).await.unwrap();
    assert_eq!(audit_after[..audit_before.len()], audit_before[..]);
}

#[tokio::test]
async fn names_strategies_and_taken_names_are_checked() {
    let cloud = Cloud::start().await;
    for name in ["../etc", ".hidden", "a/b", "a b", "", &"n".repeat(64)] {
        let (status, problem) = call(
            &cloud,
            Method::POST,
            "/admin/snapshots",
            json!({"name": name}),
        )
        .await;
        assert_eq!(
            (status, problem["code"].as_str(), problem["field"].as_str()),
            (400, Some("InvalidParameterValue"), Some("name")),
            "{name:?}"
        );
    }
    for path in [
        "/admin/snapshots/.hidden",
        "/admin/snapshots/a%2Fb",
        "/admin/snapshots/a%20b",
    ] {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            let (status, problem) = call(&cloud, method.clone(), path, Value::Null).await;
            assert_eq!(
                (status, problem["field"].as_str()),
                (400, Some("name")),
                "{method} {path}"
            );
        }
    }
    cloud.admin.save_snapshot("taken").await.unwrap();
    let err = cloud.admin.save_snapshot("taken").await.unwrap_err();
    assert_problem(&err, 409, "SnapshotAlreadyExists", None);
    for body in [
        json!({"strategy": "replace"}),
        json!({}),
        json!({"strategy": "merge", "x": 1}),
    ] {
        let (status, problem) = call(
            &cloud,
            Method::POST,
            "/admin/snapshots/taken/load",
            body.clone(),
        )
        .await;
        assert_eq!((status, problem["code"].is_string()), (400, true), "{body}");
    }
    let (_, problem) = call(
        &cloud,
        Method::POST,
        "/admin/snapshots/taken/load",
        json!({"strategy": "replace"}),
    )
    .await;
    assert_eq!(problem["field"], "strategy");
    let (status, problem) = call(
        &cloud,
        Method::POST,
        "/admin/snapshots/nowhere/load",
        json!({"strategy": "merge"}),
    )
    .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("SnapshotNotFound"))
    );
}

async fn call(cloud: &Cloud, method: Method, path: &str, body: Value) -> (u16, Value) {
    let mut request = cloud
        .http
        .request(method, cloud.url(path))
        .bearer_auth(ADMIN);
    if !body.is_null() {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A file of `n` VPCs of account A, written as the format says.
fn many_vpcs(n: i64) -> Vec<u8> {
    let header = json!({
        "format": "fakecloud-snapshot", "formatVersion": 1, "fakecloudVersion": "test",
        "accounts": [ACCOUNT_A],
        "counts": {"resources": {"vpc": n, "subnet": 0, "nodeGroup": 0, "databaseInstance": 0},
                   "idempotency": 0, "audit": 0},
        "sequences": {"resources": n, "audit": 0},
        "timing": {"vpc": {"delayMs": 0}, "subnet": {"delayMs": 0}, "nodeGroup": {"delayMs": 0},
                   "databaseInstance": {"delayMs": 0}},
        "throttling": {"default": null, "accounts": []},
        "faults": {"nextId": 1, "rules": []}
    });
    let mut text = format!("{header}\n");
    for seq in 1..=n {
        let record = json!({"resource": {
            "seq": seq, "account": ACCOUNT_A, "kind": "vpc", "region": REGION, "scope": "",
            "name": format!("vpc-{seq:017x}"), "parent": "",
            "spec": {"cidrBlock": "10.0.0.0/16", "enableDnsHostnames": false,
                     "enableDnsSupport": true, "instanceTenancy": "default", "tags": {}},
            "state": "available", "version": 1, "createdAtMs": 0, "updatedAtMs": 0
        }});
        text.push_str(&format!("{record}\n"));
    }
    gzip(&text)
}

#[tokio::test]
async fn a_load_while_another_runs_is_refused() {
    let cloud = Cloud::start().await;
    let info = cloud
        .admin
        .upload_snapshot("big", many_vpcs(20_000))
        .await
        .unwrap();
    assert_eq!(info.resources.vpc, 20_000);
    let first = {
        let admin = cloud.admin.clone();
        tokio::spawn(async move { admin.load_snapshot("big", LoadStrategy::Overwrite).await })
    };
    let mut refused = Vec::new();
    while !first.is_finished() {
        if let Err(err) = cloud
            .admin
            .load_snapshot("big", LoadStrategy::Overwrite)
            .await
        {
            refused.push(err);
        }
    }
    if let Err(err) = first.await.unwrap() {
        refused.push(err);
    }
    assert!(!refused.is_empty(), "no load was refused");
    for err in &refused {
        assert_problem(err, 409, "LoadInProgress", None);
    }
    assert_eq!(
        cloud
            .admin
            .resources(Some(Kind::Vpc), None)
            .await
            .unwrap()
            .len(),
        20_000
    );
}

#[tokio::test]
async fn a_server_can_start_from_a_snapshot_file() {
    let cloud = Cloud::start().await;
    build_world(&cloud).await;
    cloud.admin.save_snapshot("world").await.unwrap();
    let file = cloud.admin.download_snapshot("world").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.jsonl.gz");
    std::fs::write(&path, &file).unwrap();

    let started = Cloud::start_configured(|config| config.load = Some(path.clone())).await;
    assert_eq!(
        (
            resources(&started.admin).await,
            settings(&started.admin).await
        ),
        (resources(&cloud.admin).await, settings(&cloud.admin).await)
    );
    assert!(authenticates(&started, "orders").await);

    let bad = dir.path().join("bad.jsonl.gz");
    std::fs::write(&bad, &file[..file.len() / 2]).unwrap();
    let db = dir.path().join("other.db").display().to_string();
    for (path, message) in [
        (&bad, "corrupt snapshot"),
        (&dir.path().join("none"), "reading snapshot"),
    ] {
        let err = fakecloud::spawn(Config {
            load: Some(path.clone()),
            ..Config::new(&db)
        })
        .await
        .err()
        .expect("a bad file stops the start");
        assert!(err.to_string().contains(message), "{err}");
    }
}

#[tokio::test]
async fn snapshots_work_over_an_in_memory_database() {
    let cloud =
        Cloud::start_configured(|config| config.database = fakecloud::IN_MEMORY.into()).await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    cloud.admin.save_snapshot("memory").await.unwrap();
    cloud.a.delete_vpc(REGION, &vpc.id).await.unwrap();
    cloud
        .admin
        .load_snapshot("memory", LoadStrategy::Overwrite)
        .await
        .unwrap();
    assert_eq!(
        cloud.a.get_vpc(REGION, &vpc.id).await.unwrap().resource,
        vpc
    );
}

/// Saves while calls keep creating: every file is one instant's state (its
/// tables are read in transactions that see the same state), so each VPC
/// in it comes with its create's idempotency record, and the counts of its
/// header are the records it holds (a later upload checks them).
#[tokio::test]
async fn a_save_while_the_api_writes_is_one_instants_state() {
    let cloud = Cloud::start().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (client, stop) = (cloud.a.clone(), stop.clone());
        tokio::spawn(async move {
            let mut made = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = CreateVpc {
                    cidr_block: "10.0.0.0/16".into(),
                    ..Default::default()
                };
                client.create_vpc(REGION, &body, None).await.unwrap();
                made += 1;
            }
            made
        })
    };
    for i in 0..5 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let name = format!("busy-{i}");
        cloud.admin.save_snapshot(&name).await.unwrap();
        let file = cloud.admin.download_snapshot(&name).await.unwrap();
        let lines = snapshot_lines(&file);
        let vpcs = lines.iter().filter(|l| l["resource"].is_object()).count();
        let records = lines
            .iter()
            .filter(|l| l["idempotency"].is_object())
            .count();
        assert_eq!(vpcs, records, "{name}: the tables of one instant");
        cloud
            .admin
            .upload_snapshot(&format!("{name}-again"), file)
            .await
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(writer.await.unwrap() > 0);
}

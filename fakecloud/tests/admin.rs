//! The admin API: outside actors, timing, faults, throttling, audit.

mod common;

use std::time::Duration;

use common::*;
use fakecloud::client::{Address, Client, RetryPolicy};
use fakecloud::model::*;
use serde_json::json;

#[tokio::test]
async fn outside_actor_changes_are_visible_and_audited_as_external() {
    let cloud = Cloud::start().await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let subnet = cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    cloud
        .a
        .create_node_group(
            REGION,
            "c1",
            &CreateNodeGroup {
                name: "workers".into(),
                subnet_ids: vec![subnet.id.clone()],
                node_role: "role".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let before = cloud
        .a
        .get_node_group(REGION, "c1", "workers")
        .await
        .unwrap();
    let since = cloud
        .admin
        .audit(&AuditQuery::default())
        .await
        .unwrap()
        .last()
        .unwrap()
        .seq;

    // An autoscaler raises desiredSize; another team tags the VPC.
    let changed = cloud
        .admin
        .patch_resource(
            Kind::NodeGroup,
            "workers",
            &Address::default(),
            &json!({"scalingConfig": {"maxSize": 5, "desiredSize": 4}}),
        )
        .await
        .unwrap();
    assert_eq!(changed["scalingConfig"]["desiredSize"], 4);
    cloud
        .admin
        .patch_resource(
            Kind::Vpc,
            &vpc.id,
            &Address::default(),
            &json!({"tags": {"cost-center": "42"}}),
        )
        .await
        .unwrap();
    let after = cloud
        .a
        .get_node_group(REGION, "c1", "workers")
        .await
        .unwrap();
    assert_eq!(after.resource.scaling_config.desired_size, 4);
    assert_ne!(
        after.etag, before.etag,
        "owner's ETag is stale after an outside change"
    );
    assert_eq!(
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .tags["cost-center"],
        "42"
    );
    // Outside actors obey the same rules.
    let err = cloud
        .admin
        .patch_resource(
            Kind::NodeGroup,
            "workers",
            &Address::default(),
            &json!({"scalingConfig": {"desiredSize": 9}}),
        )
        .await
        .unwrap_err();
    assert_problem(
        &err,
        400,
        "InvalidParameterValue",
        Some("scalingConfig.desiredSize"),
    );

    let external = cloud
        .admin
        .audit(&AuditQuery {
            actor: Some(Actor::External),
            after_seq: Some(since),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(external.len(), 3, "{external:?}");
    assert!(
        external
            .iter()
            .all(|e| e.account.as_deref() == Some(ACCOUNT_A) && e.method == "PATCH")
    );
    assert_eq!(
        external.iter().map(|e| e.status).collect::<Vec<_>>(),
        vec![200, 200, 400]
    );
    // Reads by the owner since then: no mutating call by the API actor.
    let mutating = cloud
        .admin
        .audit(&AuditQuery {
            account: Some(ACCOUNT_A.into()),
            actor: Some(Actor::Api),
            mutating: Some(true),
            after_seq: Some(since),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(mutating.is_empty(), "{mutating:?}");
    let err = cloud
        .admin
        .patch_resource(
            Kind::Vpc,
            "vpc-00000000000000000",
            &Address::default(),
            &json!({}),
        )
        .await
        .unwrap_err();
    assert_problem(&err, 404, "ResourceNotFound", None);
}

#[tokio::test]
async fn audit_records_every_call_with_account_actor_and_request_id() {
    let cloud = Cloud::start().await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    cloud.b.get_vpc(REGION, &vpc.id).await.unwrap_err();
    cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs"))
        .send()
        .await
        .unwrap();
    let all = cloud.admin.audit(&AuditQuery::default()).await.unwrap();
    let calls: Vec<_> = all
        .iter()
        .map(|e| (e.account.as_deref(), e.actor, e.method.as_str(), e.status))
        .collect();
    assert_eq!(
        calls,
        vec![
            (Some(ACCOUNT_A), Actor::Api, "POST", 201),
            (Some(ACCOUNT_B), Actor::Api, "GET", 404),
            (None, Actor::Anonymous, "GET", 401),
        ]
    );
    assert!(all.iter().all(|e| !e.request_id.is_empty()));
    let by_b = cloud
        .admin
        .audit(&AuditQuery {
            account: Some(ACCOUNT_B.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(by_b.len(), 1);
    assert_eq!(
        by_b[0].path,
        format!("/v1/regions/us-east-1/vpcs/{}", vpc.id)
    );
    let posts = cloud
        .admin
        .audit(&AuditQuery {
            method: Some("POST".into()),
            path_prefix: Some("/v1/regions/us-east-1/".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(posts.len(), 1);

    cloud.admin.reset().await.unwrap();
    assert!(cloud.admin.resources(None, None).await.unwrap().is_empty());
    let after_reset = cloud
        .admin
        .audit(&AuditQuery {
            actor: Some(Actor::Api),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(after_reset.is_empty());
}

/// Who called: each call's `User-Agent` is in the audit (refused calls'
/// too), a call without one has none, and `userAgent` picks one client's.
#[tokio::test]
async fn audit_records_each_calls_user_agent_and_filters_by_it() {
    let cloud = Cloud::start().await;
    let vpcs = cloud.url("/v1/regions/us-east-1/vpcs");
    let long = format!("{}{}", "x".repeat(255), "é".repeat(100));
    for (agent, key) in [
        (Some("replica-a"), Some(KEY_A)),
        (Some("replica-b"), Some(KEY_A)),
        (Some("replica-a"), Some(KEY_B)),
        (None, Some(KEY_A)),
        (Some(long.as_str()), Some(KEY_A)),
        (Some("replica-b"), None),
    ] {
        let mut request = cloud.http.get(&vpcs);
        if let Some(agent) = agent {
            request = request.header(reqwest::header::USER_AGENT, agent);
        }
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let status = request.send().await.unwrap().status();
        assert_eq!(status, if key.is_some() { 200 } else { 401 });
    }
    // The cut is on a character boundary: 255 x, and no half of an é.
    let cut = "x".repeat(255);
    let all = cloud.admin.audit(&AuditQuery::default()).await.unwrap();
    let agents: Vec<_> = all.iter().map(|e| e.user_agent.as_deref()).collect();
    assert_eq!(
        agents,
        [
            Some("replica-a"),
            Some("replica-b"),
            Some("replica-a"),
            None,
            Some(cut.as_str()),
            Some("replica-b"),
        ]
    );

    let of = |agent: &str| AuditQuery {
        user_agent: Some(agent.into()),
        ..Default::default()
    };
    let replica_a = cloud.admin.audit(&of("replica-a")).await.unwrap();
    let accounts: Vec<_> = replica_a.iter().map(|e| e.account.as_deref()).collect();
    assert_eq!(accounts, [Some(ACCOUNT_A), Some(ACCOUNT_B)]);
    let replica_b = cloud.admin.audit(&of("replica-b")).await.unwrap();
    let actors: Vec<_> = replica_b.iter().map(|e| e.actor).collect();
    assert_eq!(actors, [Actor::Api, Actor::Anonymous]);
    // Exact, not a prefix; and as stored, so the long one matches cut.
    assert!(cloud.admin.audit(&of("replica")).await.unwrap().is_empty());
    assert!(cloud.admin.audit(&of(&long)).await.unwrap().is_empty());
    assert_eq!(cloud.admin.audit(&of(&cut)).await.unwrap().len(), 1);
    // Combined with the other filters (AND).
    let b_of_a = cloud
        .admin
        .audit(&AuditQuery {
            account: Some(ACCOUNT_B.into()),
            ..of("replica-a")
        })
        .await
        .unwrap();
    assert_eq!(b_of_a.len(), 1);

    // On the wire: `userAgent`, and no key at all for a call without one.
    let wire: serde_json::Value = cloud
        .http
        .get(cloud.url("/admin/audit?userAgent=replica-b&actor=anonymous"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wire.as_array().unwrap().len(), 1, "{wire}");
    assert_eq!(wire[0]["userAgent"], "replica-b", "{wire}");
    let wire: serde_json::Value = cloud
        .http
        .get(cloud.url("/admin/audit?account=acct-a"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let without = &wire[2];
    assert_eq!(without["status"], 200, "{wire}");
    assert!(
        without.as_object().unwrap().get("userAgent").is_none(),
        "{without}"
    );
}

#[tokio::test]
async fn timing_is_configurable_per_kind() {
    let cloud = Cloud::start_with_delay(Duration::from_secs(60)).await;
    let table = cloud
        .admin
        .set_timing(Kind::Vpc, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(table.vpc.delay_ms, 0);
    assert_eq!(table.subnet.delay_ms, 60_000);
    let vpc = cloud.vpc("10.0.0.0/16").await;
    assert_eq!(vpc.state, NetworkState::Available);
    let subnet = cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    assert_eq!(subnet.state, NetworkState::Pending);
    cloud
        .admin
        .set_timing(Kind::Subnet, Duration::from_millis(50))
        .await
        .unwrap();
    let quick = cloud.subnet(&vpc.id, "10.0.2.0/24").await;
    eventually("quick subnet available", || async {
        cloud
            .a
            .get_subnet(REGION, &quick.id)
            .await
            .unwrap()
            .resource
            .state
            == NetworkState::Available
    })
    .await;
    assert_eq!(
        cloud
            .a
            .get_subnet(REGION, &subnet.id)
            .await
            .unwrap()
            .resource
            .state,
        NetworkState::Pending
    );
}

#[tokio::test]
async fn fault_rules_fail_matching_calls_and_the_client_retries() {
    let cloud = Cloud::start().await;
    let rule = cloud
        .admin
        .add_fault(&FaultRuleSpec {
            method: Some("POST".into()),
            path_prefix: "/v1/regions/us-east-1/vpcs".into(),
            status: Some(503),
            code: Some("ServiceUnavailable".into()),
            times: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    let body = CreateVpc {
        cidr_block: "10.0.0.0/16".into(),
        ..Default::default()
    };
    let err = cloud.a.create_vpc(REGION, &body, None).await.unwrap_err();
    assert_problem(&err, 503, "ServiceUnavailable", None);
    assert!(err.is_retryable());
    // GETs do not match the rule.
    cloud
        .a
        .list_vpcs(REGION, &Default::default())
        .await
        .unwrap();
    // One firing left: a retrying client gets through, creating exactly once.
    let retrying = Client::new(&cloud.base, KEY_A).with_retry(RetryPolicy {
        max_retries: 3,
        min_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    });
    let vpc = retrying
        .create_vpc(REGION, &body, None)
        .await
        .unwrap()
        .resource;
    assert_eq!(
        cloud
            .admin
            .resources(Some(Kind::Vpc), None)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        cloud.admin.faults().await.unwrap().is_empty(),
        "rule used up"
    );
    let posts = cloud
        .admin
        .audit(&AuditQuery {
            method: Some("POST".into()),
            actor: Some(Actor::Api),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        posts.iter().map(|e| e.status).collect::<Vec<_>>(),
        vec![503, 503, 201]
    );
    let _ = rule;

    // Latency only: served normally, later.
    let slow = cloud
        .admin
        .add_fault(&FaultRuleSpec {
            path_prefix: format!("/v1/regions/us-east-1/vpcs/{}", vpc.id),
            latency_ms: Some(300),
            ..Default::default()
        })
        .await
        .unwrap();
    let started = std::time::Instant::now();
    cloud.a.get_vpc(REGION, &vpc.id).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    cloud.admin.remove_fault(slow.id).await.unwrap();
    let err = cloud.admin.remove_fault(slow.id).await.unwrap_err();
    assert_problem(&err, 404, "FaultRuleNotFound", None);

    // Probability 0 never fires; bad rules are refused.
    cloud
        .admin
        .add_fault(&FaultRuleSpec {
            path_prefix: "/v1".into(),
            status: Some(500),
            probability: Some(0.0),
            ..Default::default()
        })
        .await
        .unwrap();
    cloud.a.get_vpc(REGION, &vpc.id).await.unwrap();
    let err = cloud
        .admin
        .add_fault(&FaultRuleSpec {
            path_prefix: "/v1".into(),
            status: Some(200),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidParameterValue", Some("status"));
    cloud.admin.clear_faults().await.unwrap();
    assert!(cloud.admin.faults().await.unwrap().is_empty());
}

#[tokio::test]
async fn throttling_answers_429_with_retry_after_per_account() {
    let cloud = Cloud::start().await;
    cloud
        .admin
        .set_throttling(Some(Throttling {
            rate_per_second: 2.0,
            burst: 2,
        }))
        .await
        .unwrap();
    cloud
        .a
        .list_vpcs(REGION, &Default::default())
        .await
        .unwrap();
    cloud
        .a
        .list_vpcs(REGION, &Default::default())
        .await
        .unwrap();
    let response = cloud
        .raw(reqwest::Method::GET, "/v1/regions/us-east-1/vpcs", "")
        .await;
    assert_eq!(response.headers()["retry-after"], "1");
    problem(response, 429, "Throttling").await;
    // Account B has its own bucket.
    cloud
        .b
        .list_vpcs(REGION, &Default::default())
        .await
        .unwrap();
    // A retrying client waits as told and gets through.
    let retrying = Client::new(&cloud.base, KEY_A).with_retry(RetryPolicy {
        max_retries: 3,
        min_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    });
    retrying
        .list_vpcs(REGION, &Default::default())
        .await
        .unwrap();
    cloud.admin.set_throttling(None).await.unwrap();
    for _ in 0..5 {
        cloud
            .a
            .list_vpcs(REGION, &Default::default())
            .await
            .unwrap();
    }
}

/// Calls of `client` answered 429, out of `calls`.
async fn throttled(client: &Client, calls: usize) -> usize {
    let mut refused = 0;
    for _ in 0..calls {
        match client.list_vpcs(REGION, &Default::default()).await {
            Ok(_) => {}
            Err(err) if err.status() == Some(429) => refused += 1,
            Err(err) => panic!("{err}"),
        }
    }
    refused
}

#[tokio::test]
async fn one_account_is_throttled_on_its_own_and_the_other_left_alone() {
    let cloud = Cloud::start().await;
    let cut_off = Throttling {
        rate_per_second: 0.0,
        burst: 1,
    };
    cloud
        .admin
        .set_account_throttling(ACCOUNT_A, Some(cut_off))
        .await
        .unwrap();
    assert_eq!(
        cloud.admin.account_throttling().await.unwrap(),
        [AccountThrottling {
            account: ACCOUNT_A.into(),
            throttling: cut_off,
        }]
    );
    assert_eq!(cloud.admin.throttling().await.unwrap(), None);
    assert_eq!(throttled(&cloud.a, 5).await, 5, "rate 0 refuses every call");
    assert_eq!(throttled(&cloud.b, 5).await, 0);
    let response = cloud
        .raw(reqwest::Method::GET, "/v1/regions/us-east-1/vpcs", "")
        .await;
    assert_eq!(response.headers()["retry-after"], "60");
    let body = problem(response, 429, "Throttling").await;
    assert!(
        body["detail"].as_str().unwrap().contains(ACCOUNT_A),
        "{body}"
    );

    // The account's own bucket wins over the default, both ways.
    cloud
        .admin
        .set_throttling(Some(Throttling {
            rate_per_second: 0.0,
            burst: 1,
        }))
        .await
        .unwrap();
    cloud
        .admin
        .set_account_throttling(
            ACCOUNT_A,
            Some(Throttling {
                rate_per_second: 0.001,
                burst: 3,
            }),
        )
        .await
        .unwrap();
    assert_eq!(throttled(&cloud.a, 5).await, 2, "a bucket of 3, full");
    assert_eq!(throttled(&cloud.b, 5).await, 5, "the default holds for B");
    let response = cloud
        .raw(reqwest::Method::GET, "/v1/regions/us-east-1/vpcs", "")
        .await;
    assert_eq!(response.headers()["retry-after"], "1000");

    // Back on the default (which refuses everything), then with none.
    cloud
        .admin
        .set_account_throttling(ACCOUNT_A, None)
        .await
        .unwrap();
    assert!(cloud.admin.account_throttling().await.unwrap().is_empty());
    assert_eq!(throttled(&cloud.a, 2).await, 2);
    cloud.admin.set_throttling(None).await.unwrap();
    assert_eq!(throttled(&cloud.a, 5).await, 0);
    assert_eq!(throttled(&cloud.b, 5).await, 0);
    // Clearing an account without a bucket of its own is no error.
    cloud
        .admin
        .set_account_throttling(ACCOUNT_B, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_reset_removes_every_accounts_own_throttling() {
    let cloud = Cloud::start().await;
    cloud
        .admin
        .set_account_throttling(
            ACCOUNT_B,
            Some(Throttling {
                rate_per_second: 0.0,
                burst: 1,
            }),
        )
        .await
        .unwrap();
    cloud.admin.reset().await.unwrap();
    assert!(cloud.admin.account_throttling().await.unwrap().is_empty());
    assert_eq!(throttled(&cloud.b, 3).await, 0);
}

#[tokio::test]
async fn bad_throttling_is_refused_with_the_field_and_why() {
    let cloud = Cloud::start().await;
    let put = |path: &'static str, body: &'static str| {
        cloud
            .http
            .put(cloud.url(path))
            .bearer_auth(ADMIN)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for path in ["/admin/throttling", "/admin/throttling/accounts/acct-a"] {
        for (body, code, field, why) in [
            (
                r#"{"ratePerSecond": -1, "burst": 1}"#,
                "InvalidParameterValue",
                "ratePerSecond",
                "non-negative",
            ),
            (
                r#"{"ratePerSecond": 1, "burst": 0}"#,
                "InvalidParameterValue",
                "burst",
                "at least 1",
            ),
            (
                r#"{"ratePerSecond": 1, "burst": 1.5}"#,
                "InvalidParameterValue",
                "burst",
                "",
            ),
            (
                r#"{"ratePerSecond": "fast", "burst": 1}"#,
                "InvalidParameterValue",
                "ratePerSecond",
                "",
            ),
            (
                r#"{"burst": 1}"#,
                "MissingParameter",
                "ratePerSecond",
                "required",
            ),
            (
                r#"{"ratePerSecond": 1, "burst": 1, "account": "acct-b"}"#,
                "UnknownParameter",
                "account",
                "unknown",
            ),
        ] {
            let body = problem(put(path, body).await.unwrap(), 400, code).await;
            assert_eq!(body["field"], field, "{path} {body}");
            let detail = body["detail"].as_str().unwrap();
            assert!(
                detail.contains(field) && detail.contains(why),
                "{path}: {detail}"
            );
        }
        problem(put(path, "{").await.unwrap(), 400, "MalformedJSON").await;
    }
    // Nothing was set by the refused calls.
    assert_eq!(cloud.admin.throttling().await.unwrap(), None);
    assert!(cloud.admin.account_throttling().await.unwrap().is_empty());

    // Only accounts an API key names can have a bucket of their own.
    let good = Some(Throttling {
        rate_per_second: 1.0,
        burst: 1,
    });
    let err = cloud
        .admin
        .set_account_throttling("acct-typo", good)
        .await
        .unwrap_err();
    assert_problem(&err, 404, "UnknownAccount", None);
    assert!(err.to_string().contains("acct-typo"), "{err}");
    let err = cloud
        .admin
        .set_account_throttling("acct-typo", None)
        .await
        .unwrap_err();
    assert_problem(&err, 404, "UnknownAccount", None);
    // An account name that is not a plain path segment still arrives whole.
    let err = cloud
        .admin
        .set_account_throttling("acct-a/../acct-b", good)
        .await
        .unwrap_err();
    assert_problem(&err, 404, "UnknownAccount", None);
    assert!(cloud.admin.account_throttling().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_bad_admin_query_is_a_problem_naming_the_parameter() {
    let cloud = Cloud::start().await;
    for (path, named) in [
        ("/admin/audit?colour=red", "colour"),
        ("/admin/audit?afterSeq=lots", "afterSeq"),
        ("/admin/resources?region=us-east-1", "region"),
    ] {
        let response = cloud
            .http
            .get(cloud.url(path))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        let body = problem(response, 400, "InvalidParameterValue").await;
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(named), "{path}: {detail}");
    }
    // A well-formed query still answers.
    let response = cloud
        .http
        .get(cloud.url("/admin/audit?afterSeq=0&mutating=true"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// `afterCall`: the create takes effect and only its answer is lost, so a
/// client that sends the same idempotency key again gets the resource the
/// first call made, not a second one.
#[tokio::test]
async fn a_lost_create_response_is_recovered_by_its_idempotency_key() {
    let cloud = Cloud::start().await;
    cloud
        .admin
        .add_fault(&FaultRuleSpec {
            method: Some("POST".into()),
            path_prefix: "/v1/regions/us-east-1/vpcs".into(),
            status: Some(502),
            times: Some(1),
            after_call: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let body = CreateVpc {
        cidr_block: "10.0.0.0/16".into(),
        ..Default::default()
    };
    // `cloud.a` does not retry: the client sees the lost answer itself.
    let once = &cloud.a;
    let err = once
        .create_vpc(REGION, &body, Some("mr-uid-1"))
        .await
        .unwrap_err();
    assert_problem(&err, 502, "InjectedFault", None);
    let stored = cloud.admin.resources(Some(Kind::Vpc), None).await.unwrap();
    assert_eq!(stored.len(), 1, "the call took effect: {stored:?}");

    let again = once
        .create_vpc(REGION, &body, Some("mr-uid-1"))
        .await
        .unwrap();
    assert_eq!(again.resource.id, stored[0].id);
    assert_eq!(
        cloud
            .admin
            .resources(Some(Kind::Vpc), None)
            .await
            .unwrap()
            .len(),
        1,
        "the retry made no second VPC"
    );
}

//! Cross-kind protocol: idempotency, ETags, isolation, pagination, auth, ops.

mod common;

use common::*;
use fakecloud::client::ListOptions;
use fakecloud::model::*;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn idempotency_key_replays_the_first_result() {
    let cloud = Cloud::start().await;
    let body = CreateVpc {
        cidr_block: "10.0.0.0/16".into(),
        ..Default::default()
    };
    let first = cloud
        .a
        .create_vpc(REGION, &body, Some("key-1"))
        .await
        .unwrap();
    let again = cloud
        .a
        .create_vpc(REGION, &body, Some("key-1"))
        .await
        .unwrap();
    assert_eq!(first, again);
    let raw = cloud
        .http
        .post(cloud.url("/v1/regions/us-east-1/vpcs"))
        .bearer_auth(KEY_A)
        .header("idempotency-key", "key-1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 201);
    assert_eq!(raw.headers()["idempotent-replayed"], "true");
    let other = CreateVpc {
        cidr_block: "10.1.0.0/16".into(),
        ..Default::default()
    };
    let err = cloud
        .a
        .create_vpc(REGION, &other, Some("key-1"))
        .await
        .unwrap_err();
    assert_problem(&err, 409, "IdempotentParameterMismatch", None);
    assert_eq!(
        cloud
            .admin
            .resources(Some(Kind::Vpc), None)
            .await
            .unwrap()
            .len(),
        1
    );
    // Keys are per account: B's "key-1" is a new create.
    let b = cloud
        .b
        .create_vpc(REGION, &other, Some("key-1"))
        .await
        .unwrap();
    assert_ne!(b.resource.id, first.resource.id);
}

#[tokio::test]
async fn if_match_guards_patches_and_deletes() {
    let cloud = Cloud::start().await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let current = cloud.a.get_vpc(REGION, &vpc.id).await.unwrap();
    let changed = cloud
        .a
        .patch_vpc(
            REGION,
            &vpc.id,
            &json!({"tags": {"a": "1"}}),
            Some(&current.etag),
        )
        .await
        .unwrap();
    assert_ne!(changed.etag, current.etag);
    let err = cloud
        .a
        .patch_vpc(
            REGION,
            &vpc.id,
            &json!({"tags": {"a": "2"}}),
            Some(&current.etag),
        )
        .await
        .unwrap_err();
    assert_problem(&err, 412, "PreconditionFailed", None);
    assert!(err.is_precondition_failed());
    assert_eq!(
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .tags["a"],
        "1"
    );
    // A patch that changes nothing keeps the ETag.
    let same = cloud
        .a
        .patch_vpc(
            REGION,
            &vpc.id,
            &json!({"tags": {"a": "1"}}),
            Some(&changed.etag),
        )
        .await
        .unwrap();
    assert_eq!(same.etag, changed.etag);
    let stale = cloud
        .http
        .delete(cloud.url(&format!("/v1/regions/us-east-1/vpcs/{}", vpc.id)))
        .bearer_auth(KEY_A)
        .header("if-match", current.etag.as_str())
        .send()
        .await
        .unwrap();
    problem(stale, 412, "PreconditionFailed").await;
    assert!(cloud.a.get_vpc(REGION, &vpc.id).await.is_ok());
}

#[tokio::test]
async fn accounts_never_see_each_other() {
    let cloud = Cloud::start().await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let err = cloud.b.get_vpc(REGION, &vpc.id).await.unwrap_err();
    assert_problem(&err, 404, "InvalidVpcID.NotFound", None);
    let err = cloud.b.delete_vpc(REGION, &vpc.id).await.unwrap_err();
    assert_problem(&err, 404, "InvalidVpcID.NotFound", None);
    let err = cloud
        .b
        .patch_vpc(REGION, &vpc.id, &json!({"tags": {}}), None)
        .await
        .unwrap_err();
    assert_problem(&err, 404, "InvalidVpcID.NotFound", None);
    assert!(
        cloud
            .b
            .list_vpcs(REGION, &ListOptions::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let err = cloud
        .b
        .create_subnet(
            REGION,
            &CreateSubnet {
                vpc_id: vpc.id.clone(),
                cidr_block: "10.0.1.0/24".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidVpcID.NotFound", Some("vpcId"));
    // Regions are separate too.
    let err = cloud.a.get_vpc("eu-west-1", &vpc.id).await.unwrap_err();
    assert!(err.is_not_found());
}

#[tokio::test]
async fn lists_page_and_filter_by_tag() {
    let cloud = Cloud::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let tags = [(
            "env".to_string(),
            if i % 2 == 0 { "prod" } else { "dev" }.to_string(),
        )]
        .into();
        let vpc = cloud
            .a
            .create_vpc(
                REGION,
                &CreateVpc {
                    cidr_block: format!("10.{i}.0.0/16"),
                    tags: Some(tags),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap()
            .resource;
        ids.push(vpc.id);
    }
    let mut seen = Vec::new();
    let mut options = ListOptions {
        page_size: Some(2),
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = cloud.a.list_vpcs(REGION, &options).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        seen.extend(page.items.into_iter().map(|v| v.id));
        match page.next_page_token {
            Some(token) => options.page_token = Some(token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ids, "every item once, in creation order");
    let prod = cloud
        .a
        .list_vpcs(
            REGION,
            &ListOptions {
                tags: vec![("env".into(), Some("prod".into()))],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        prod.items.iter().map(|v| v.id.clone()).collect::<Vec<_>>(),
        vec![ids[0].clone(), ids[2].clone(), ids[4].clone()]
    );
    let tagged = cloud
        .a
        .list_vpcs(
            REGION,
            &ListOptions {
                tags: vec![("env".into(), None)],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tagged.items.len(), 5);
    let none = cloud
        .a
        .list_vpcs(
            REGION,
            &ListOptions {
                tags: vec![("owner".into(), None)],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(none.items.is_empty());
    problem(
        cloud
            .raw(Method::GET, "/v1/regions/us-east-1/vpcs?pageSize=0", "")
            .await,
        400,
        "InvalidParameterValue",
    )
    .await;
    problem(
        cloud
            .raw(Method::GET, "/v1/regions/us-east-1/vpcs?pageToken=abc", "")
            .await,
        400,
        "InvalidParameterValue",
    )
    .await;
    problem(
        cloud
            .raw(Method::GET, "/v1/regions/us-east-1/vpcs?colour=red", "")
            .await,
        400,
        "UnknownParameter",
    )
    .await;
}

#[tokio::test]
async fn calls_need_a_known_key() {
    let cloud = Cloud::start().await;
    let anonymous = cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs"))
        .send()
        .await
        .unwrap();
    problem(anonymous, 401, "Unauthorized").await;
    let wrong = cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs"))
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    problem(wrong, 401, "Unauthorized").await;
    let admin_with_api_key = cloud
        .http
        .get(cloud.url("/admin/resources"))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    problem(admin_with_api_key, 401, "Unauthorized").await;
}

#[tokio::test]
async fn operations_endpoints_answer() {
    let cloud = Cloud::start().await;
    for path in ["/healthz", "/readyz"] {
        let response = cloud.http.get(cloud.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert!(response.headers().contains_key("x-request-id"));
    }
    cloud.vpc("10.0.0.0/16").await;
    let metrics = cloud
        .http
        .get(cloud.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"fakecloud_http_requests_total{method="POST",route="/v1/regions/{region}/vpcs",status="201"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains("fakecloud_http_request_duration_seconds_bucket"));
    let doc: serde_json::Value = cloud
        .http
        .get(cloud.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/v1/regions/{region}/vpcs/{id}",
        "/v1/regions/{region}/clusters/{cluster}/nodegroups/{name}",
        "/v1/regions/{region}/databaseInstances/{identifier}/authenticate",
        "/admin/audit",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from OpenAPI"
        );
    }
    assert!(doc["components"]["schemas"]["Vpc"]["properties"]["cidrBlock"].is_object());
    // A caller's request id is kept and echoed in problems.
    let response = cloud
        .http
        .get(cloud.url("/v1/regions/us-east-1/vpcs/vpc-0"))
        .bearer_auth(KEY_A)
        .header("x-request-id", "trace-123")
        .send()
        .await
        .unwrap();
    let body = problem(response, 404, "InvalidVpcID.NotFound").await;
    assert_eq!(body["requestId"], "trace-123");
}

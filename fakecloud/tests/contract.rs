//! The OpenAPI document as a contract: what it states, and the server
//! keeping rules it states (schemathesis checks the rest, scripts/schemathesis).

mod common;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

async fn document(cloud: &Cloud) -> Value {
    cloud
        .http
        .get(cloud.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn call(cloud: &Cloud, method: Method, path: &str, token: &str, body: Value) -> (u16, Value) {
    let response = cloud
        .http
        .request(method, cloud.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn every_operation_lists_its_errors_as_problems() {
    let cloud = Cloud::start().await;
    let doc = document(&cloud).await;
    let create_vpc = &doc["paths"]["/v1/regions/{region}/vpcs"]["post"];
    let statuses: Vec<&str> = create_vpc["responses"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        statuses,
        ["201", "400", "401", "404", "409", "429", "5XX"],
        "{create_vpc}"
    );
    assert_eq!(create_vpc["security"], json!([{"apiKey": []}]));
    let created = &create_vpc["responses"]["201"];
    for header in ["ETag", "Location", "x-request-id"] {
        assert!(
            created["headers"][header].is_object(),
            "{header}: {created}"
        );
    }
    for (name, component) in doc["components"]["responses"].as_object().unwrap() {
        let content = &component["content"]["application/problem+json"]["schema"];
        assert_eq!(content["$ref"], "#/components/schemas/Problem", "{name}");
        assert!(component["headers"]["x-request-id"].is_object(), "{name}");
    }
    assert!(doc["components"]["responses"]["Throttled"]["headers"]["Retry-After"].is_object());
    let remove_fault = &doc["paths"]["/admin/faults/{id}"]["delete"];
    assert_eq!(remove_fault["security"], json!([{"adminToken": []}]));
    assert!(remove_fault["responses"]["401"].is_object());
    assert!(
        remove_fault["responses"]["429"].is_null(),
        "admin is not throttled"
    );
    // `authenticate` keeps its own 401, which says more than the layer's.
    let authenticate =
        &doc["paths"]["/v1/regions/{region}/databaseInstances/{identifier}/authenticate"]["post"];
    let wrong = authenticate["responses"]["401"]["description"]
        .as_str()
        .unwrap();
    assert!(wrong.contains("AuthenticationFailed"), "{wrong}");
}

#[tokio::test]
async fn schemas_state_the_rules_the_server_checks() {
    let cloud = Cloud::start().await;
    let doc = document(&cloud).await;
    let schemas = &doc["components"]["schemas"];
    let region = &doc["paths"]["/v1/regions/{region}/subnets"]["post"]["parameters"][0];
    assert_eq!(region["name"], "region");
    assert_eq!(
        region["schema"]["enum"],
        json!(["us-east-1", "us-west-2", "eu-west-1"])
    );
    let spec = &schemas["FaultRuleSpec"]["properties"];
    assert_eq!(
        (
            spec["status"]["minimum"].clone(),
            spec["status"]["maximum"].clone()
        ),
        (json!(400), json!(599))
    );
    let rule = &schemas["FaultRule"];
    assert!(
        rule["properties"]["id"].is_object() && rule["properties"]["fired"].is_object(),
        "{rule}"
    );
    assert!(rule["properties"]["pathPrefix"].is_object(), "{rule}");
    let cidr = schemas["CreateSubnet"]["properties"]["cidrBlock"]["pattern"]
        .as_str()
        .unwrap();
    assert!(cidr.ends_with("/(1[6-9]|2[0-8])$"), "{cidr}");
    let tags = &schemas["CreateVpc"]["allOf"][0]["properties"]["tags"];
    assert_eq!(tags["maxProperties"], 50, "{tags}");
    let storage = &schemas["CreateDatabaseInstance"]["properties"]["allocatedStorage"];
    assert_eq!(
        (storage["minimum"].clone(), storage["maximum"].clone()),
        (json!(20), json!(65536))
    );
    let links = &doc["paths"]["/v1/regions/{region}/vpcs"]["post"]["responses"]["201"]["links"];
    assert_eq!(links["CreateSubnetInVpc"]["operationId"], "create_subnet");
    assert_eq!(
        links["PatchVpc"]["parameters"]["header.If-Match"],
        "$response.header.ETag"
    );
}

/// The audit's "who called": `userAgent` on each entry (optional, capped
/// as the server caps it) and as a query parameter of `GET /admin/audit`.
#[tokio::test]
async fn the_audit_documents_each_calls_user_agent() {
    let cloud = Cloud::start().await;
    let doc = document(&cloud).await;
    let entry = &doc["components"]["schemas"]["AuditEntry"];
    let agent = &entry["properties"]["userAgent"];
    assert_eq!(agent["maxLength"], 256, "{entry}");
    let required = entry["required"].as_array().unwrap();
    assert!(!required.contains(&json!("userAgent")), "{entry}");
    let parameters = doc["paths"]["/admin/audit"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let filter = parameters
        .iter()
        .find(|p| p["name"] == "userAgent")
        .unwrap_or_else(|| panic!("no userAgent parameter: {parameters:?}"));
    assert_eq!(filter["in"], "query", "{filter}");
    assert_ne!(filter["required"], true, "{filter}");
}

#[tokio::test]
async fn fault_rules_come_back_as_documented() {
    let cloud = Cloud::start().await;
    let (status, rule) = call(
        &cloud,
        Method::POST,
        "/admin/faults",
        ADMIN,
        json!({"pathPrefix": "/v1/none", "status": 503, "retryAfterSecs": 86400}),
    )
    .await;
    assert_eq!(status, 201, "{rule}");
    assert_eq!(
        (rule["fired"].clone(), rule["status"].clone()),
        (json!(0), json!(503))
    );
    for (body, field) in [
        (json!({"pathPrefix": "/", "status": 0}), "status"),
        (
            json!({"pathPrefix": "/", "latencyMs": 86_400_001}),
            "latencyMs",
        ),
        (
            json!({"pathPrefix": "/", "retryAfterSecs": 86_401}),
            "retryAfterSecs",
        ),
    ] {
        let (status, problem) = call(&cloud, Method::POST, "/admin/faults", ADMIN, body).await;
        assert_eq!(
            (status, problem["field"].as_str()),
            (400, Some(field)),
            "{problem}"
        );
    }
    let (status, problem) = call(
        &cloud,
        Method::DELETE,
        "/admin/faults/first",
        ADMIN,
        Value::Null,
    )
    .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("FaultRuleNotFound"))
    );
    let (status, problem) = call(
        &cloud,
        Method::PUT,
        "/admin/timing/vpc",
        ADMIN,
        json!({"delayMs": 86_400_001}),
    )
    .await;
    assert_eq!((status, problem["field"].as_str()), (400, Some("delayMs")));
}

/// JSON Schema counts `2.0` as an integer, so the server must too.
#[tokio::test]
async fn whole_numbers_written_as_floats_are_integers() {
    let cloud = Cloud::start().await;
    let (status, table) = call(
        &cloud,
        Method::PUT,
        "/admin/timing/vpc",
        ADMIN,
        json!({"delayMs": 250.0}),
    )
    .await;
    assert_eq!((status, table["vpc"]["delayMs"].clone()), (200, json!(250)));
    let (status, problem) = call(
        &cloud,
        Method::PUT,
        "/admin/timing/vpc",
        ADMIN,
        json!({"delayMs": 2.5}),
    )
    .await;
    assert_eq!((status, problem["field"].as_str()), (400, Some("delayMs")));
}

#[tokio::test]
async fn page_tokens_and_idempotency_keys_are_taken_as_documented() {
    let cloud = Cloud::start().await;
    for token in ["0", "007", "1234567890123456789", "x"] {
        let (status, problem) = call(
            &cloud,
            Method::GET,
            &format!("/v1/regions/us-east-1/vpcs?pageToken={token}"),
            KEY_A,
            Value::Null,
        )
        .await;
        assert_eq!(
            (status, problem["field"].as_str()),
            (400, Some("pageToken")),
            "{token}"
        );
    }
    let (status, page) = call(
        &cloud,
        Method::GET,
        "/v1/regions/us-east-1/vpcs?pageToken=7",
        KEY_A,
        Value::Null,
    )
    .await;
    assert_eq!((status, page["items"].clone()), (200, json!([])));
    let create = |key: &'static str| {
        cloud
            .http
            .post(cloud.url("/v1/regions/us-east-1/vpcs"))
            .bearer_auth(KEY_A)
            .header("idempotency-key", key)
            .json(&json!({"cidrBlock": "10.0.0.0/16"}))
            .send()
    };
    assert_eq!(create("a key").await.unwrap().status(), 201);
    assert_eq!(create("tab\there").await.unwrap().status(), 400);
}

/// Snapshots and the recorder in the document: a snapshot's `{name}`
/// states its pattern (and only a snapshot's), files are binary, an upload
/// may be too large, and a save links to what can follow it (not a load,
/// which replaces what a stateful scenario made before it).
#[tokio::test]
async fn snapshot_operations_state_their_names_files_and_answers() {
    let cloud = Cloud::start().await;
    let doc = document(&cloud).await;
    let pattern = json!("^[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}$");
    for (path, method) in [
        ("/admin/snapshots/{name}", "get"),
        ("/admin/snapshots/{name}", "put"),
        ("/admin/snapshots/{name}", "delete"),
        ("/admin/snapshots/{name}/load", "post"),
    ] {
        let name = &doc["paths"][path][method]["parameters"][0];
        assert_eq!(
            (&name["name"], &name["schema"]["pattern"]),
            (&json!("name"), &pattern),
            "{method} {path}"
        );
    }
    let node_group = &doc["paths"]["/v1/regions/{region}/clusters/{cluster}/nodegroups/{name}"]["get"]
        ["parameters"];
    let name = node_group
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "name")
        .unwrap();
    assert_ne!(name["schema"]["pattern"], pattern, "a node group's name");
    let put = &doc["paths"]["/admin/snapshots/{name}"]["put"];
    assert!(put["requestBody"]["content"]["application/octet-stream"].is_object());
    assert_eq!(
        doc["components"]["schemas"]["SnapshotFile"]["format"],
        "binary"
    );
    assert_eq!(
        put["responses"]["413"]["content"]["application/problem+json"]["schema"]["$ref"],
        "#/components/schemas/Problem"
    );
    let download = &doc["paths"]["/admin/snapshots/{name}"]["get"]["responses"]["200"]["content"];
    assert!(
        download["application/gzip"].is_object() && download["application/x-ndjson"].is_object()
    );
    let links = &doc["paths"]["/admin/snapshots"]["post"]["responses"]["201"]["links"];
    assert_eq!(links["GetSnapshot"]["operationId"], "get_snapshot");
    assert_eq!(
        links["GetSnapshot"]["parameters"]["name"],
        "$response.body#/name"
    );
    assert!(
        links["LoadSnapshot"].is_null(),
        "a load replaces what scenarios made"
    );
    assert_eq!(
        doc["components"]["schemas"]["LoadStrategy"]["enum"],
        json!(["overwrite", "merge"])
    );
    let recording = &doc["paths"]["/admin/recorder"]["get"]["responses"];
    assert!(recording["200"]["content"]["application/x-ndjson"].is_object());
    assert!(recording["404"].is_object());
    let seed = &doc["components"]["schemas"]["SeedSettings"]["properties"]["seed"];
    assert_eq!(seed["minimum"], 0);
}

//! Each kind's validation, lifecycle and error codes.

mod common;

use std::time::Duration;

use common::*;
use fakecloud::model::*;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn vpc_provisions_asynchronously_and_validates() {
    let cloud = Cloud::start_with_delay(Duration::from_millis(300)).await;
    let created = cloud
        .a
        .create_vpc(
            REGION,
            &CreateVpc {
                cidr_block: "10.1.2.3/16".into(),
                tags: Some([("team".to_string(), "net".to_string())].into()),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let vpc = created.resource;
    assert!(
        vpc.id.starts_with("vpc-") && vpc.id.len() == 21,
        "{}",
        vpc.id
    );
    assert_eq!(vpc.cidr_block, "10.1.0.0/16", "stored canonical");
    assert!(vpc.enable_dns_support && !vpc.enable_dns_hostnames);
    assert_eq!(vpc.instance_tenancy, InstanceTenancy::Default);
    assert_eq!(vpc.state, NetworkState::Pending);
    eventually("vpc available", || async {
        cloud
            .a
            .get_vpc(REGION, &vpc.id)
            .await
            .unwrap()
            .resource
            .state
            == NetworkState::Available
    })
    .await;

    // Tenancy may only move to "default"; hostnames need DNS support.
    let err = cloud
        .a
        .patch_vpc(
            REGION,
            &vpc.id,
            &json!({"instanceTenancy": "dedicated"}),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidParameterValue", Some("instanceTenancy"));
    let err = cloud
        .a
        .patch_vpc(
            REGION,
            &vpc.id,
            &json!({"enableDnsSupport": false, "enableDnsHostnames": true}),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(
        &err,
        400,
        "InvalidParameterCombination",
        Some("enableDnsHostnames"),
    );
    let err = cloud
        .a
        .patch_vpc(REGION, &vpc.id, &json!({"cidrBlock": "10.9.0.0/16"}), None)
        .await
        .unwrap_err();
    assert_problem(&err, 400, "ImmutableParameter", Some("cidrBlock"));
    let err = cloud
        .a
        .patch_vpc(REGION, &vpc.id, &json!({"state": "pending"}), None)
        .await
        .unwrap_err();
    assert_problem(&err, 400, "UnknownParameter", Some("state"));

    let patched = cloud
        .a
        .patch_vpc(
            REGION,
            &vpc.id,
            &VpcPatch {
                tags: Some(
                    [
                        ("team".to_string(), None),
                        ("env".to_string(), Some("dev".to_string())),
                    ]
                    .into(),
                ),
                enable_dns_hostnames: Some(true),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
        .resource;
    assert_eq!(
        patched.tags,
        [("env".to_string(), "dev".to_string())].into()
    );
    assert!(patched.enable_dns_hostnames);
    assert_eq!(patched.cidr_block, "10.1.0.0/16");

    for (cidr, field) in [
        ("10.0.0.0/8", "cidrBlock"),
        ("nope", "cidrBlock"),
        ("10.0.0.0/29", "cidrBlock"),
    ] {
        let err = cloud
            .a
            .create_vpc(
                REGION,
                &CreateVpc {
                    cidr_block: cidr.into(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap_err();
        assert_problem(&err, 400, "InvalidParameterValue", Some(field));
    }
    let err = cloud
        .a
        .create_vpc(
            "mars-1",
            &CreateVpc {
                cidr_block: "10.0.0.0/16".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 404, "InvalidRegion", None);

    cloud.a.delete_vpc(REGION, &vpc.id).await.unwrap();
    let err = cloud.a.get_vpc(REGION, &vpc.id).await.unwrap_err();
    assert_problem(&err, 404, "InvalidVpcID.NotFound", None);
    assert!(err.is_not_found());
    let err = cloud.a.delete_vpc(REGION, &vpc.id).await.unwrap_err();
    assert_problem(&err, 404, "InvalidVpcID.NotFound", None);
}

#[tokio::test]
async fn malformed_input_names_the_field_and_writes_nothing() {
    let cloud = Cloud::start().await;
    let path = "/v1/regions/us-east-1/vpcs";
    problem(
        cloud.raw(Method::POST, path, "{\"cidrBlock\": ").await,
        400,
        "MalformedJSON",
    )
    .await;
    problem(
        cloud
            .raw(
                Method::POST,
                path,
                r#"{"cidrBlock":"10.0.0.0/16"} trailing"#,
            )
            .await,
        400,
        "MalformedJSON",
    )
    .await;
    let body = problem(
        cloud
            .raw(
                Method::POST,
                path,
                r#"{"cidrBlock":"10.0.0.0/16","colour":"red"}"#,
            )
            .await,
        400,
        "UnknownParameter",
    )
    .await;
    assert_eq!(body["field"], "colour");
    let body = problem(
        cloud
            .raw(
                Method::POST,
                path,
                r#"{"cidrBlock":"10.0.0.0/16","enableDnsSupport":"yes"}"#,
            )
            .await,
        400,
        "InvalidParameterValue",
    )
    .await;
    assert_eq!(body["field"], "enableDnsSupport");
    let body = problem(
        cloud.raw(Method::POST, path, "{}").await,
        400,
        "MissingParameter",
    )
    .await;
    assert_eq!(body["field"], "cidrBlock");
    let body = problem(
        cloud
            .raw(
                Method::POST,
                "/v1/regions/us-east-1/clusters/c1/nodegroups",
                r#"{"name":"ng","subnetIds":["subnet-1"],"nodeRole":"r","scalingConfig":{"minSize":"1"}}"#,
            )
            .await,
        400,
        "InvalidParameterValue",
    )
    .await;
    assert_eq!(body["field"], "scalingConfig.minSize");
    let body = problem(
        cloud
            .raw(
                Method::POST,
                "/v1/regions/us-east-1/clusters/c1/nodegroups",
                r#"{"name":"ng","subnetIds":[],"nodeRole":"r","scalingConfig":{"min":1}}"#,
            )
            .await,
        400,
        "UnknownParameter",
    )
    .await;
    assert_eq!(body["field"], "scalingConfig.min");
    problem(
        cloud
            .raw(Method::PATCH, "/v1/regions/us-east-1/vpcs/vpc-1", "[1]")
            .await,
        400,
        "InvalidParameterValue",
    )
    .await;
    problem(
        cloud.raw(Method::GET, "/v1/nowhere", "").await,
        404,
        "NotFound",
    )
    .await;
    problem(
        cloud.raw(Method::PUT, path, "{}").await,
        405,
        "MethodNotAllowed",
    )
    .await;
    assert!(
        cloud.admin.resources(None, None).await.unwrap().is_empty(),
        "nothing written"
    );
}

#[tokio::test]
async fn subnets_stay_inside_their_vpc_and_block_its_deletion() {
    let cloud = Cloud::start().await;
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let subnet = cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    assert!(subnet.id.starts_with("subnet-") && subnet.id.len() == 24);
    assert_eq!(subnet.available_ip_address_count, 251);
    assert_eq!(subnet.availability_zone, "us-east-1a");
    assert_eq!(subnet.state, NetworkState::Available);

    let create = |vpc_id: &str, cidr: &str, zone: Option<&str>| CreateSubnet {
        vpc_id: vpc_id.into(),
        cidr_block: cidr.into(),
        availability_zone: zone.map(Into::into),
        ..Default::default()
    };
    let err = cloud
        .a
        .create_subnet(
            REGION,
            &create("vpc-00000000000000000", "10.0.2.0/24", None),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidVpcID.NotFound", Some("vpcId"));
    let err = cloud
        .a
        .create_subnet(REGION, &create(&vpc.id, "10.1.0.0/24", None), None)
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidSubnet.Range", Some("cidrBlock"));
    let err = cloud
        .a
        .create_subnet(REGION, &create(&vpc.id, "10.0.0.0/20", None), None)
        .await
        .unwrap_err();
    assert_problem(&err, 409, "InvalidSubnet.Conflict", Some("cidrBlock"));
    let err = cloud
        .a
        .create_subnet(
            REGION,
            &create(&vpc.id, "10.0.2.0/24", Some("us-west-2a")),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidParameterValue", Some("availabilityZone"));

    let err = cloud
        .a
        .patch_subnet(
            REGION,
            &subnet.id,
            &json!({"cidrBlock": "10.0.9.0/24"}),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "ImmutableParameter", Some("cidrBlock"));
    let patched = cloud
        .a
        .patch_subnet(
            REGION,
            &subnet.id,
            &SubnetPatch {
                map_public_ip_on_launch: Some(true),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
        .resource;
    assert!(patched.map_public_ip_on_launch);

    let err = cloud.a.delete_vpc(REGION, &vpc.id).await.unwrap_err();
    assert_problem(&err, 409, "DependencyViolation", None);
    assert!(
        cloud.a.get_vpc(REGION, &vpc.id).await.is_ok(),
        "refused delete left the vpc"
    );
    cloud.a.delete_subnet(REGION, &subnet.id).await.unwrap();
    let err = cloud.a.get_subnet(REGION, &subnet.id).await.unwrap_err();
    assert_problem(&err, 404, "InvalidSubnetID.NotFound", None);
    cloud.a.delete_vpc(REGION, &vpc.id).await.unwrap();
}

fn node_group(name: &str, subnets: &[&str]) -> CreateNodeGroup {
    CreateNodeGroup {
        name: name.into(),
        subnet_ids: subnets.iter().map(|s| s.to_string()).collect(),
        node_role: "arn:fake:iam::role/nodes".into(),
        scaling_config: Some(ScalingConfigInput {
            min_size: Some(1),
            max_size: Some(4),
            desired_size: Some(2),
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn node_groups_create_update_and_delete_through_their_states() {
    let cloud = Cloud::start_with_delay(Duration::from_millis(200)).await;
    cloud
        .admin
        .set_timing(Kind::Vpc, Duration::ZERO)
        .await
        .unwrap();
    cloud
        .admin
        .set_timing(Kind::Subnet, Duration::ZERO)
        .await
        .unwrap();
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let other = cloud.vpc("10.1.0.0/16").await;
    let s1 = cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    let s2 = cloud.subnet(&vpc.id, "10.0.2.0/24").await;
    let s3 = cloud.subnet(&other.id, "10.1.1.0/24").await;

    let group = cloud
        .a
        .create_node_group(
            REGION,
            "c1",
            &node_group("workers", &[&s1.id, &s2.id]),
            None,
        )
        .await
        .unwrap()
        .resource;
    assert_eq!(group.status, NodeGroupStatus::Creating);
    assert_eq!(group.cluster_name, "c1");
    assert_eq!(group.instance_types, vec!["t3.medium".to_string()]);
    assert_eq!(
        group.scaling_config,
        ScalingConfig {
            min_size: 1,
            max_size: 4,
            desired_size: 2
        }
    );
    let err = cloud
        .a
        .create_node_group(REGION, "c1", &node_group("workers", &[&s1.id]), None)
        .await
        .unwrap_err();
    assert_problem(&err, 409, "ResourceInUseException", None);
    // The same name in another cluster is another group.
    cloud
        .a
        .create_node_group(REGION, "c2", &node_group("workers", &[&s1.id]), None)
        .await
        .unwrap();

    let err = cloud
        .a
        .create_node_group(REGION, "c1", &node_group("mixed", &[&s1.id, &s3.id]), None)
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidParameterValue", Some("subnetIds"));
    let err = cloud
        .a
        .create_node_group(
            REGION,
            "c1",
            &node_group("ghost", &["subnet-00000000000000000"]),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidSubnetID.NotFound", Some("subnetIds"));
    let mut bad = node_group("bad", &[&s1.id]);
    bad.scaling_config = Some(ScalingConfigInput {
        min_size: Some(2),
        max_size: Some(3),
        desired_size: Some(5),
    });
    let err = cloud
        .a
        .create_node_group(REGION, "c1", &bad, None)
        .await
        .unwrap_err();
    assert_problem(
        &err,
        400,
        "InvalidParameterValue",
        Some("scalingConfig.desiredSize"),
    );
    bad.scaling_config = Some(ScalingConfigInput {
        min_size: Some(-1),
        ..Default::default()
    });
    let err = cloud
        .a
        .create_node_group(REGION, "c1", &bad, None)
        .await
        .unwrap_err();
    assert_problem(
        &err,
        400,
        "InvalidParameterValue",
        Some("scalingConfig.minSize"),
    );
    bad.scaling_config = Some(ScalingConfigInput {
        min_size: Some(0),
        max_size: Some(0),
        desired_size: Some(0),
    });
    let err = cloud
        .a
        .create_node_group(REGION, "c1", &bad, None)
        .await
        .unwrap_err();
    assert_problem(
        &err,
        400,
        "InvalidParameterValue",
        Some("scalingConfig.maxSize"),
    );

    eventually("group active", || async {
        cloud
            .a
            .get_node_group(REGION, "c1", "workers")
            .await
            .unwrap()
            .resource
            .status
            == NodeGroupStatus::Active
    })
    .await;
    let err = cloud
        .a
        .patch_node_group(
            REGION,
            "c1",
            "workers",
            &json!({"instanceTypes": ["m5.large"]}),
            None,
        )
        .await
        .unwrap_err();
    assert_problem(&err, 400, "ImmutableParameter", Some("instanceTypes"));
    // Each scaling size merges on its own.
    let updated = cloud
        .a
        .patch_node_group(
            REGION,
            "c1",
            "workers",
            &json!({"scalingConfig": {"desiredSize": 3}}),
            None,
        )
        .await
        .unwrap()
        .resource;
    assert_eq!(
        updated.scaling_config,
        ScalingConfig {
            min_size: 1,
            max_size: 4,
            desired_size: 3
        }
    );
    assert_eq!(updated.status, NodeGroupStatus::Updating);
    eventually("group active again", || async {
        cloud
            .a
            .get_node_group(REGION, "c1", "workers")
            .await
            .unwrap()
            .resource
            .status
            == NodeGroupStatus::Active
    })
    .await;
    // Tags alone do not roll the nodes.
    let tagged = cloud
        .a
        .patch_node_group(
            REGION,
            "c1",
            "workers",
            &json!({"tags": {"owner": "me"}}),
            None,
        )
        .await
        .unwrap()
        .resource;
    assert_eq!(tagged.status, NodeGroupStatus::Active);

    cloud
        .a
        .delete_node_group(REGION, "c1", "workers")
        .await
        .unwrap();
    let deleting = cloud
        .a
        .get_node_group(REGION, "c1", "workers")
        .await
        .unwrap()
        .resource;
    assert_eq!(deleting.status, NodeGroupStatus::Deleting);
    let err = cloud
        .a
        .patch_node_group(REGION, "c1", "workers", &json!({"version": "1.32"}), None)
        .await
        .unwrap_err();
    assert_problem(&err, 409, "ResourceInUseException", None);
    eventually("group gone", || async {
        cloud
            .a
            .get_node_group(REGION, "c1", "workers")
            .await
            .is_err_and(|e| e.code() == Some("ResourceNotFoundException"))
    })
    .await;
}

fn database(identifier: &str) -> CreateDatabaseInstance {
    CreateDatabaseInstance {
        identifier: identifier.into(),
        engine: Engine::Postgres,
        master_username: "admin".into(),
        master_password: "correct-horse-battery".into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn database_credentials_are_write_only_and_authenticate() {
    let cloud = Cloud::start().await;
    let response = cloud
        .raw(
            Method::POST,
            "/v1/regions/us-east-1/databaseInstances",
            &serde_json::to_string(&database("orders")).unwrap(),
        )
        .await;
    assert_eq!(response.status(), 201);
    let text = response.text().await.unwrap();
    assert!(
        !text.contains("correct-horse-battery") && !text.contains("masterPassword"),
        "{text}"
    );
    let db: DatabaseInstance = serde_json::from_str(&text).unwrap();
    assert_eq!(db.status, DatabaseStatus::Available);
    assert_eq!(db.endpoint.port, 5432);
    assert_eq!(db.engine_version, "16.4");
    assert_eq!(db.allocated_storage, 20);
    assert!(db.endpoint.address.starts_with("orders."));
    let admin_view = serde_json::to_string(
        &cloud
            .admin
            .resources(Some(Kind::DatabaseInstance), None)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(!admin_view.contains("correct-horse-battery"));

    let creds = |user: &str, password: &str| Credentials {
        username: user.into(),
        password: password.into(),
    };
    assert!(
        cloud
            .a
            .authenticate_database_instance(
                REGION,
                "orders",
                &creds("admin", "correct-horse-battery")
            )
            .await
            .unwrap()
    );
    assert!(
        !cloud
            .a
            .authenticate_database_instance(REGION, "orders", &creds("admin", "wrong-password"))
            .await
            .unwrap()
    );
    assert!(
        !cloud
            .a
            .authenticate_database_instance(
                REGION,
                "orders",
                &creds("root", "correct-horse-battery")
            )
            .await
            .unwrap()
    );

    let rotated = cloud
        .a
        .patch_database_instance(
            REGION,
            "orders",
            &DatabaseInstancePatch {
                master_password: Some("new-password-1".into()),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_ne!(rotated.etag, "");
    assert!(
        cloud
            .a
            .authenticate_database_instance(REGION, "orders", &creds("admin", "new-password-1"))
            .await
            .unwrap()
    );
    assert!(
        !cloud
            .a
            .authenticate_database_instance(
                REGION,
                "orders",
                &creds("admin", "correct-horse-battery")
            )
            .await
            .unwrap()
    );

    let err = cloud
        .a
        .create_database_instance(REGION, &database("orders"), None)
        .await
        .unwrap_err();
    assert_problem(&err, 409, "DBInstanceAlreadyExists", None);
    for (mutate, field) in [
        (
            Box::new(|d: &mut CreateDatabaseInstance| d.master_password = "has/slash-in-it".into())
                as Box<dyn Fn(&mut CreateDatabaseInstance)>,
            "masterPassword",
        ),
        (
            Box::new(|d: &mut CreateDatabaseInstance| d.master_password = "short".into()),
            "masterPassword",
        ),
        (
            Box::new(|d: &mut CreateDatabaseInstance| d.master_username = "1admin".into()),
            "masterUsername",
        ),
        (
            Box::new(|d: &mut CreateDatabaseInstance| d.allocated_storage = Some(10)),
            "allocatedStorage",
        ),
        (
            Box::new(|d: &mut CreateDatabaseInstance| d.identifier = "Bad_Name".into()),
            "identifier",
        ),
    ] {
        let mut body = database("other");
        mutate(&mut body);
        let err = cloud
            .a
            .create_database_instance(REGION, &body, None)
            .await
            .unwrap_err();
        assert_problem(&err, 400, "InvalidParameterValue", Some(field));
        assert!(
            !err.to_string().contains("has/slash-in-it"),
            "password echoed: {err}"
        );
    }

    let grown = cloud
        .a
        .patch_database_instance(REGION, "orders", &json!({"allocatedStorage": 100}), None)
        .await
        .unwrap()
        .resource;
    assert_eq!(grown.allocated_storage, 100);
    let err = cloud
        .a
        .patch_database_instance(REGION, "orders", &json!({"allocatedStorage": 50}), None)
        .await
        .unwrap_err();
    assert_problem(&err, 400, "InvalidParameterValue", Some("allocatedStorage"));
    let err = cloud
        .a
        .patch_database_instance(REGION, "orders", &json!({"engine": "mysql"}), None)
        .await
        .unwrap_err();
    assert_problem(&err, 400, "ImmutableParameter", Some("engine"));

    cloud
        .a
        .patch_database_instance(REGION, "orders", &json!({"deletionProtection": true}), None)
        .await
        .unwrap();
    let err = cloud
        .a
        .delete_database_instance(REGION, "orders")
        .await
        .unwrap_err();
    assert_problem(&err, 409, "InvalidParameterCombination", None);
    cloud
        .a
        .patch_database_instance(
            REGION,
            "orders",
            &json!({"deletionProtection": false}),
            None,
        )
        .await
        .unwrap();
    cloud
        .a
        .delete_database_instance(REGION, "orders")
        .await
        .unwrap();
    let err = cloud
        .a
        .get_database_instance(REGION, "orders")
        .await
        .unwrap_err();
    assert_problem(&err, 404, "DBInstanceNotFound", None);
}

#[tokio::test]
async fn database_goes_through_creating_and_modifying() {
    let cloud = Cloud::start_with_delay(Duration::from_millis(200)).await;
    let mut body = database("billing");
    body.engine = Engine::Mysql;
    let db = cloud
        .a
        .create_database_instance(REGION, &body, None)
        .await
        .unwrap()
        .resource;
    assert_eq!(
        (db.status, db.endpoint.port, db.engine_version.as_str()),
        (DatabaseStatus::Creating, 3306, "8.0.39")
    );
    let err = cloud
        .a
        .authenticate_database_instance(
            REGION,
            "billing",
            &Credentials {
                username: "admin".into(),
                password: "correct-horse-battery".into(),
            },
        )
        .await
        .unwrap_err();
    assert_problem(&err, 409, "InvalidDBInstanceState", None);
    eventually("db available", || async {
        cloud
            .a
            .get_database_instance(REGION, "billing")
            .await
            .unwrap()
            .resource
            .status
            == DatabaseStatus::Available
    })
    .await;
    let modified = cloud
        .a
        .patch_database_instance(
            REGION,
            "billing",
            &json!({"instanceClass": "db.m5.large"}),
            None,
        )
        .await
        .unwrap()
        .resource;
    assert_eq!(modified.status, DatabaseStatus::Modifying);
    eventually("db available after modify", || async {
        cloud
            .a
            .get_database_instance(REGION, "billing")
            .await
            .unwrap()
            .resource
            .status
            == DatabaseStatus::Available
    })
    .await;
    cloud
        .a
        .delete_database_instance(REGION, "billing")
        .await
        .unwrap();
    assert_eq!(
        cloud
            .a
            .get_database_instance(REGION, "billing")
            .await
            .unwrap()
            .resource
            .status,
        DatabaseStatus::Deleting
    );
    eventually("db gone", || async {
        cloud
            .a
            .get_database_instance(REGION, "billing")
            .await
            .is_err_and(|e| e.is_not_found())
    })
    .await;
}

#[tokio::test]
async fn subnets_in_use_by_node_groups_or_databases_cannot_be_deleted() {
    let cloud = Cloud::start_with_delay(Duration::from_millis(300)).await;
    for kind in [Kind::Vpc, Kind::Subnet] {
        cloud.admin.set_timing(kind, Duration::ZERO).await.unwrap();
    }
    let vpc = cloud.vpc("10.0.0.0/16").await;
    let nodes = cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    let data = cloud.subnet(&vpc.id, "10.0.2.0/24").await;
    let spare = cloud.subnet(&vpc.id, "10.0.3.0/24").await;
    cloud
        .a
        .create_node_group(REGION, "c1", &node_group("workers", &[&nodes.id]), None)
        .await
        .unwrap();
    let mut orders = database("orders");
    orders.subnet_ids = Some(vec![data.id.clone()]);
    cloud
        .a
        .create_database_instance(REGION, &orders, None)
        .await
        .unwrap();

    for (subnet, user) in [(&nodes, "workers"), (&data, "orders")] {
        let err = cloud.a.delete_subnet(REGION, &subnet.id).await.unwrap_err();
        assert_problem(&err, 409, "DependencyViolation", None);
        assert!(err.to_string().contains(user), "{err}");
        assert!(
            cloud.a.get_subnet(REGION, &subnet.id).await.is_ok(),
            "a refused delete left the subnet"
        );
    }
    // A subnet nothing uses goes at once.
    cloud.a.delete_subnet(REGION, &spare.id).await.unwrap();

    eventually("group active", || async {
        cloud
            .a
            .get_node_group(REGION, "c1", "workers")
            .await
            .is_ok_and(|g| g.resource.status == NodeGroupStatus::Active)
    })
    .await;
    cloud
        .a
        .delete_node_group(REGION, "c1", "workers")
        .await
        .unwrap();
    // Still DELETING: the group still holds the subnet.
    let err = cloud.a.delete_subnet(REGION, &nodes.id).await.unwrap_err();
    assert_problem(&err, 409, "DependencyViolation", None);
    eventually("group gone, subnet deletable", || async {
        cloud.a.delete_subnet(REGION, &nodes.id).await.is_ok()
    })
    .await;

    eventually("database available", || async {
        cloud
            .a
            .get_database_instance(REGION, "orders")
            .await
            .is_ok_and(|d| d.resource.status == DatabaseStatus::Available)
    })
    .await;
    cloud
        .a
        .delete_database_instance(REGION, "orders")
        .await
        .unwrap();
    eventually("database gone, subnet deletable", || async {
        cloud.a.delete_subnet(REGION, &data.id).await.is_ok()
    })
    .await;
    cloud.a.delete_vpc(REGION, &vpc.id).await.unwrap();
}

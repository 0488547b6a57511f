//! The `/v1` handlers: thin per-kind wrappers over `service`, kept separate
//! so each operation has its own OpenAPI entry.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;

use crate::error::ApiError;
use crate::kinds::ResourceKind;
use crate::kinds::database::DatabaseKind;
use crate::kinds::nodegroup::NodeGroupKind;
use crate::kinds::subnet::SubnetKind;
use crate::kinds::validate;
use crate::kinds::vpc::VpcKind;
use crate::layers::Account;
use crate::model::{
    AuthenticateResult, CreateDatabaseInstance, CreateNodeGroup, CreateSubnet, CreateVpc,
    Credentials, DatabaseInstance, DatabaseInstancePatch, NodeGroup, NodeGroupPatch, Page, Problem,
    Subnet, SubnetPatch, Vpc, VpcPatch,
};
use crate::openapi::{BadRequest, Conflict, NotFound, PreconditionFailed};
use crate::query::ProblemQuery;
use crate::service::{self, ListParams};
use crate::state::SharedState;
use crate::store::Location;

type Result<T> = std::result::Result<T, ApiError>;
type Query_ = ProblemQuery<Vec<(String, String)>>;

fn loc<K: ResourceKind>(account: Account, region: &str, cluster: Option<&str>) -> Result<Location> {
    validate::region(region)?;
    if let Some(cluster) = cluster {
        validate::name("clusterName", cluster)?;
    }
    Ok(Location {
        account: account.0,
        kind: K::KIND,
        region: region.to_string(),
        scope: cluster.unwrap_or_default().to_string(),
    })
}

// ---------------------------------------------------------------- VPC

#[utoipa::path(post, path = "/v1/regions/{region}/vpcs", tag = "vpc", request_body = CreateVpc,
    params(("region" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]([ -~]{0,253}[!-~])?$", description = "The same key with the same request replays the first answer; with another request it is `409 IdempotentParameterMismatch`. Keys are per account.")),
    responses(
        (status = 201, description = "Created.", body = Vpc,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."), ("Location" = String, description = "Path of the new resource."), ("idempotent-replayed" = String, description = "`true` when this answer replays an earlier request's with the same `Idempotency-Key`.")), links(
            ("GetVpc" = (operation_id = "get_vpc", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/id")))),
            ("PatchVpc" = (operation_id = "patch_vpc", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/id"), ("header.If-Match" = "$response.header.ETag")))),
            ("DeleteVpc" = (operation_id = "delete_vpc", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/id"), ("header.If-Match" = "$response.header.ETag")))),
            ("CreateSubnetInVpc" = (operation_id = "create_subnet", parameters(("region" = "$request.path.region")), request_body = json!({"vpcId": "$response.body#/id", "cidrBlock": "$response.body#/cidrBlock",
                "availabilityZone": "{$request.path.region}a"}))))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn create_vpc(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(region): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<VpcKind>(account, &region, None)?;
    service::create::<VpcKind>(&state, loc, uri.path(), &headers, body).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/vpcs", tag = "vpc", params(("region" = String, Path), ListParams),
    responses(
        (status = 200, description = "OK.", body = Page<Vpc>),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn list_vpcs(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(region): Path<String>,
    ProblemQuery(query): Query_,
) -> Result<Response> {
    service::list::<VpcKind>(&state, loc::<VpcKind>(account, &region, None)?, query).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/vpcs/{id}", tag = "vpc", params(("region" = String, Path), ("id" = String, Path)),
    responses(
        (status = 200, description = "OK.", body = Vpc,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 404, response = NotFound)))]
pub async fn get_vpc(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, id)): Path<(String, String)>,
) -> Result<Response> {
    service::get::<VpcKind>(&state, loc::<VpcKind>(account, &region, None)?, &id).await
}

#[utoipa::path(patch, path = "/v1/regions/{region}/vpcs/{id}", tag = "vpc", request_body = VpcPatch,
    params(("region" = String, Path), ("id" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 200, description = "OK.", body = Vpc,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 412, response = PreconditionFailed)))]
pub async fn patch_vpc(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<VpcKind>(account, &region, None)?;
    service::patch::<VpcKind>(&state, loc, &id, &headers, &body).await
}

#[utoipa::path(delete, path = "/v1/regions/{region}/vpcs/{id}", tag = "vpc", params(("region" = String, Path), ("id" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 412, response = PreconditionFailed)))]
pub async fn delete_vpc(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let loc = loc::<VpcKind>(account, &region, None)?;
    service::delete::<VpcKind>(&state, loc, &id, &headers).await
}

// ---------------------------------------------------------------- Subnet

#[utoipa::path(post, path = "/v1/regions/{region}/subnets", tag = "subnet", request_body = CreateSubnet,
    params(("region" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]([ -~]{0,253}[!-~])?$", description = "The same key with the same request replays the first answer; with another request it is `409 IdempotentParameterMismatch`. Keys are per account.")),
    responses(
        (status = 201, description = "Created.", body = Subnet,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."), ("Location" = String, description = "Path of the new resource."), ("idempotent-replayed" = String, description = "`true` when this answer replays an earlier request's with the same `Idempotency-Key`.")), links(
            ("GetSubnet" = (operation_id = "get_subnet", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/id")))),
            ("PatchSubnet" = (operation_id = "patch_subnet", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/id"), ("header.If-Match" = "$response.header.ETag")))),
            ("DeleteSubnet" = (operation_id = "delete_subnet", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/id"), ("header.If-Match" = "$response.header.ETag")))),
            ("DeleteParentVpc" = (operation_id = "delete_vpc", parameters(("region" = "$request.path.region"), ("id" = "$response.body#/vpcId")))),
            ("CreateNodeGroupInSubnet" = (operation_id = "create_node_group", parameters(("region" = "$request.path.region")), request_body = json!({"subnetIds": ["$response.body#/id"]}))),
            ("CreateDatabaseInSubnet" = (operation_id = "create_database", parameters(("region" = "$request.path.region")), request_body = json!({"subnetIds": ["$response.body#/id"]}))))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn create_subnet(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(region): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<SubnetKind>(account, &region, None)?;
    service::create::<SubnetKind>(&state, loc, uri.path(), &headers, body).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/subnets", tag = "subnet", params(("region" = String, Path), ListParams),
    responses(
        (status = 200, description = "OK.", body = Page<Subnet>),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn list_subnets(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(region): Path<String>,
    ProblemQuery(query): Query_,
) -> Result<Response> {
    service::list::<SubnetKind>(&state, loc::<SubnetKind>(account, &region, None)?, query).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/subnets/{id}", tag = "subnet", params(("region" = String, Path), ("id" = String, Path)),
    responses(
        (status = 200, description = "OK.", body = Subnet,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 404, response = NotFound)))]
pub async fn get_subnet(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, id)): Path<(String, String)>,
) -> Result<Response> {
    service::get::<SubnetKind>(&state, loc::<SubnetKind>(account, &region, None)?, &id).await
}

#[utoipa::path(patch, path = "/v1/regions/{region}/subnets/{id}", tag = "subnet", request_body = SubnetPatch,
    params(("region" = String, Path), ("id" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 200, description = "OK.", body = Subnet,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 412, response = PreconditionFailed)))]
pub async fn patch_subnet(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<SubnetKind>(account, &region, None)?;
    service::patch::<SubnetKind>(&state, loc, &id, &headers, &body).await
}

#[utoipa::path(delete, path = "/v1/regions/{region}/subnets/{id}", tag = "subnet", params(("region" = String, Path), ("id" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 412, response = PreconditionFailed)))]
pub async fn delete_subnet(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let loc = loc::<SubnetKind>(account, &region, None)?;
    service::delete::<SubnetKind>(&state, loc, &id, &headers).await
}

// ---------------------------------------------------------------- NodeGroup

#[utoipa::path(post, path = "/v1/regions/{region}/clusters/{cluster}/nodegroups", tag = "nodeGroup",
    request_body = CreateNodeGroup, params(("region" = String, Path), ("cluster" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]([ -~]{0,253}[!-~])?$", description = "The same key with the same request replays the first answer; with another request it is `409 IdempotentParameterMismatch`. Keys are per account.")),
    responses(
        (status = 201, description = "Created.", body = NodeGroup,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."), ("Location" = String, description = "Path of the new resource."), ("idempotent-replayed" = String, description = "`true` when this answer replays an earlier request's with the same `Idempotency-Key`.")), links(
            ("GetNodeGroup" = (operation_id = "get_node_group", parameters(("region" = "$request.path.region"), ("cluster" = "$request.path.cluster"), ("name" = "$response.body#/name")))),
            ("PatchNodeGroup" = (operation_id = "patch_node_group", parameters(("region" = "$request.path.region"), ("cluster" = "$request.path.cluster"), ("name" = "$response.body#/name"), ("header.If-Match" = "$response.header.ETag")))),
            ("DeleteNodeGroup" = (operation_id = "delete_node_group", parameters(("region" = "$request.path.region"), ("cluster" = "$request.path.cluster"), ("name" = "$response.body#/name"), ("header.If-Match" = "$response.header.ETag")))))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn create_node_group(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, cluster)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<NodeGroupKind>(account, &region, Some(&cluster))?;
    service::create::<NodeGroupKind>(&state, loc, uri.path(), &headers, body).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/clusters/{cluster}/nodegroups", tag = "nodeGroup",
    params(("region" = String, Path), ("cluster" = String, Path), ListParams),
    responses(
        (status = 200, description = "OK.", body = Page<NodeGroup>),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn list_node_groups(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, cluster)): Path<(String, String)>,
    ProblemQuery(query): Query_,
) -> Result<Response> {
    let loc = loc::<NodeGroupKind>(account, &region, Some(&cluster))?;
    service::list::<NodeGroupKind>(&state, loc, query).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/clusters/{cluster}/nodegroups/{name}", tag = "nodeGroup",
    params(("region" = String, Path), ("cluster" = String, Path), ("name" = String, Path)),
    responses(
        (status = 200, description = "OK.", body = NodeGroup,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn get_node_group(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, cluster, name)): Path<(String, String, String)>,
) -> Result<Response> {
    let loc = loc::<NodeGroupKind>(account, &region, Some(&cluster))?;
    service::get::<NodeGroupKind>(&state, loc, &name).await
}

#[utoipa::path(patch, path = "/v1/regions/{region}/clusters/{cluster}/nodegroups/{name}", tag = "nodeGroup",
    request_body = NodeGroupPatch, params(("region" = String, Path), ("cluster" = String, Path), ("name" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 200, description = "Changed; `UPDATING` until the nodes roll unless only tags changed.", body = NodeGroup,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 412, response = PreconditionFailed)))]
pub async fn patch_node_group(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, cluster, name)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<NodeGroupKind>(account, &region, Some(&cluster))?;
    service::patch::<NodeGroupKind>(&state, loc, &name, &headers, &body).await
}

#[utoipa::path(delete, path = "/v1/regions/{region}/clusters/{cluster}/nodegroups/{name}", tag = "nodeGroup",
    params(("region" = String, Path), ("cluster" = String, Path), ("name" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 202, description = "Deleting: the node group in state `DELETING` until it is gone.", body = NodeGroup,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 412, response = PreconditionFailed)))]
pub async fn delete_node_group(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, cluster, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let loc = loc::<NodeGroupKind>(account, &region, Some(&cluster))?;
    service::delete::<NodeGroupKind>(&state, loc, &name, &headers).await
}

// ---------------------------------------------------------------- DatabaseInstance

#[utoipa::path(post, path = "/v1/regions/{region}/databaseInstances", tag = "databaseInstance",
    request_body = CreateDatabaseInstance, params(("region" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]([ -~]{0,253}[!-~])?$", description = "The same key with the same request replays the first answer; with another request it is `409 IdempotentParameterMismatch`. Keys are per account.")),
    responses(
        (status = 201, description = "Created.", body = DatabaseInstance,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."), ("Location" = String, description = "Path of the new resource."), ("idempotent-replayed" = String, description = "`true` when this answer replays an earlier request's with the same `Idempotency-Key`.")), links(
            ("GetDatabase" = (operation_id = "get_database", parameters(("region" = "$request.path.region"), ("identifier" = "$response.body#/identifier")))),
            ("PatchDatabase" = (operation_id = "patch_database", parameters(("region" = "$request.path.region"), ("identifier" = "$response.body#/identifier"), ("header.If-Match" = "$response.header.ETag")))),
            ("DeleteDatabase" = (operation_id = "delete_database", parameters(("region" = "$request.path.region"), ("identifier" = "$response.body#/identifier"), ("header.If-Match" = "$response.header.ETag")))),
            ("AuthenticateDatabase" = (operation_id = "authenticate_database", parameters(("region" = "$request.path.region"), ("identifier" = "$response.body#/identifier")), request_body = json!({"username": "$response.body#/masterUsername", "password": "$request.body#/masterPassword"}))))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn create_database(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(region): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<DatabaseKind>(account, &region, None)?;
    service::create::<DatabaseKind>(&state, loc, uri.path(), &headers, body).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/databaseInstances", tag = "databaseInstance",
    params(("region" = String, Path), ListParams),
    responses(
        (status = 200, description = "OK.", body = Page<DatabaseInstance>),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn list_databases(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(region): Path<String>,
    ProblemQuery(query): Query_,
) -> Result<Response> {
    service::list::<DatabaseKind>(&state, loc::<DatabaseKind>(account, &region, None)?, query).await
}

#[utoipa::path(get, path = "/v1/regions/{region}/databaseInstances/{identifier}", tag = "databaseInstance",
    params(("region" = String, Path), ("identifier" = String, Path)),
    responses(
        (status = 200, description = "OK.", body = DatabaseInstance,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 404, response = NotFound)))]
pub async fn get_database(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, identifier)): Path<(String, String)>,
) -> Result<Response> {
    let loc = loc::<DatabaseKind>(account, &region, None)?;
    service::get::<DatabaseKind>(&state, loc, &identifier).await
}

#[utoipa::path(patch, path = "/v1/regions/{region}/databaseInstances/{identifier}", tag = "databaseInstance",
    request_body = DatabaseInstancePatch, params(("region" = String, Path), ("identifier" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 200, description = "Changed; `modifying` until done unless only tags changed.", body = DatabaseInstance,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 412, response = PreconditionFailed)))]
pub async fn patch_database(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, identifier)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<DatabaseKind>(account, &region, None)?;
    service::patch::<DatabaseKind>(&state, loc, &identifier, &headers, &body).await
}

#[utoipa::path(delete, path = "/v1/regions/{region}/databaseInstances/{identifier}", tag = "databaseInstance",
    params(("region" = String, Path), ("identifier" = String, Path),
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none is current.")),
    responses(
        (status = 202, description = "Deleting: the instance in state `deleting` until it is gone.", body = DatabaseInstance,
            headers(("ETag" = String, description = "Version of the resource's configuration, for `If-Match`."))),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 412, response = PreconditionFailed)))]
pub async fn delete_database(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, identifier)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let loc = loc::<DatabaseKind>(account, &region, None)?;
    service::delete::<DatabaseKind>(&state, loc, &identifier, &headers).await
}

#[utoipa::path(post, path = "/v1/regions/{region}/databaseInstances/{identifier}/authenticate",
    tag = "databaseInstance", request_body = Credentials, params(("region" = String, Path), ("identifier" = String, Path)),
    responses(
        (status = 200, description = "The credentials are the master credentials.", body = AuthenticateResult),
        (status = 401, description = "Wrong username or password (`AuthenticationFailed`), or missing or unknown API key (`Unauthorized`).", body = Problem, content_type = "application/problem+json"),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn authenticate_database(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, identifier)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response> {
    let loc = loc::<DatabaseKind>(account, &region, None)?;
    service::authenticate(&state, loc, &identifier, &body).await
}
